//! Scripted computers: WebSocket clients that link with a `hello` and answer every request at
//! once, so what is measured is the host, not a computer. Also the child process that links
//! thousands of them at once (`--role computers`), kept out of the host's process so that the
//! host's resident memory is the host's alone.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::AsyncBufReadExt;
use tokio::sync::Semaphore;
use tokio_tungstenite::tungstenite::Message as Ws;

pub fn hello(id: u64, label: &str, secret: &str) -> String {
    json!({"type": "hello", "protocol": 1, "computer_id": id, "label": label, "secret": secret,
           "serves": ["exec-lua"], "client": "loadgen/1", "host": "loadgen", "max_message": 131072})
    .to_string()
}

/// Links one computer; `permit` is held until the welcome came (the handshake limit).
/// Returns when the host closes the socket.
pub async fn computer(
    url: String,
    id: u64,
    label: String,
    secret: String,
    permit: Option<Arc<Semaphore>>,
    welcomed_tx: Option<tokio::sync::mpsc::UnboundedSender<bool>>,
) -> Result<(), String> {
    let guard = match &permit {
        Some(s) => Some(s.clone().acquire_owned().await.map_err(|e| e.to_string())?),
        None => None,
    };
    // Like CC: Tweaked's Netty client, the computer's side disables Nagle too. A small read
    // buffer like the gateway's: tungstenite's default zeroes 128 KiB for every frame it reads
    // (`BytesMut::resize`), a third of an exec-lua call's instructions in this process, spent
    // by the stand-in for a computer that is not on the host's cores at all (BENCHMARKS.md,
    // "The host's own share").
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(2048)
        .write_buffer_size(0);
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    ws.send(Ws::Text(hello(id, &label, &secret).into()))
        .await
        .map_err(|e| format!("hello: {e}"))?;
    let mut welcomed = false;
    let mut guard = guard;
    while let Some(frame) = ws.next().await {
        let Ok(Ws::Text(t)) = frame else {
            if frame.is_err() {
                break;
            }
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(&t) else {
            continue;
        };
        let reply = match v["type"].as_str() {
            Some("welcome") => {
                welcomed = true;
                guard.take();
                if let Some(tx) = &welcomed_tx {
                    let _ = tx.send(true);
                }
                continue;
            }
            Some("gateway_request") if v["request"] == "ping" => {
                json!({"type": "computer_response", "id": v["id"], "ok": true,
                       "payload": {"pong": true, "epoch_ms": 0}})
            }
            Some("gateway_request") => {
                json!({"type": "computer_response", "id": v["id"], "ok": true,
                "payload": {"ok": true, "returns": [{"type": "number", "value": 1}], "n": 1, "output": ""}})
            }
            Some("ping") => json!({"type": "pong", "t": v["t"]}),
            _ => continue,
        };
        if ws.send(Ws::Text(reply.to_string().into())).await.is_err() {
            break;
        }
    }
    if welcomed {
        Ok(())
    } else {
        Err("closed before welcome".into())
    }
}

/// `--role computers`: waits for `go` on stdin, links `n` computers with at most `handshakes`
/// handshakes at once, prints `linked <errors>` when every handshake ended, and keeps them
/// linked until stdin closes.
pub async fn child(url: String, secret: String, first_id: u64, n: u64, handshakes: usize) {
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let Ok(Some(_go)) = lines.next_line().await else {
        return;
    };
    let gate = Arc::new(Semaphore::new(handshakes.max(1)));
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<bool>();
    for i in 0..n {
        let (url, secret, gate, done) =
            (url.clone(), secret.clone(), gate.clone(), done_tx.clone());
        tokio::spawn(async move {
            let id = first_id + i;
            let r = computer(
                url,
                id,
                format!("idle-{id}"),
                secret,
                Some(gate),
                Some(done.clone()),
            )
            .await;
            if let Err(e) = r {
                eprintln!("computer {id}: {e}");
                let _ = done.send(false);
            }
        });
    }
    drop(done_tx);
    // One report per computer: its welcome, or its failure before one.
    let mut errors = 0;
    for _ in 0..n {
        match done_rx.recv().await {
            Some(true) => {}
            Some(false) => errors += 1,
            None => break,
        }
    }
    println!("linked {errors}");
    while let Ok(Some(_)) = lines.next_line().await {}
}

//! `--abuse`: what the host's memory does when MCP clients push instead of computers — huge
//! request bodies (100 MB each, and a 50 MB `exec-lua` code string) and streaming calls whose
//! SSE stream is never read while their computers flood output. Prints RSS before, at the
//! peak and after each phase, beside the bound the configuration sets. See RELIABILITY.md.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as Ws;

use trapdesk::config::Settings;
use trapdesk::host::Host;

use crate::sim::{hello, rss_kb};

const SECRET: &str = "abuse-secret";

/// Samples RSS every 20 ms until dropped; `peak()` is the highest seen.
struct Peak {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Peak {
    fn start() -> Peak {
        let peak = Arc::new(AtomicU64::new(rss_kb()));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        tokio::spawn(async move {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss_kb(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        Peak { peak, stop }
    }

    fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed).max(rss_kb())
    }
}

impl Drop for Peak {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "abuse", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// The host's local token: every request needs it, or it is refused before its body is read
/// (and the body limit would go untested).
static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn head(addr: &str, length: usize) -> String {
    let token = TOKEN.get().map_or("", String::as_str);
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: exec-lua\r\nContent-Length: {length}\r\n\r\n"
    )
}

/// Posts a call whose `code` is `size` bytes, made up 64 KiB at a time (the client never
/// holds it whole, so RSS is the host's). Returns the bytes the host took before it closed.
async fn huge_post(addr: String, size: usize) -> usize {
    let Ok(mut tcp) = TcpStream::connect(&addr).await else {
        return 0;
    };
    let start = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{},"name":"exec-lua","arguments":{{"traposId":"0","code":""#,
        meta()
    );
    let end = r#""}}}"#;
    let total = start.len() + size + end.len();
    if tcp.write_all(head(&addr, total).as_bytes()).await.is_err()
        || tcp.write_all(start.as_bytes()).await.is_err()
    {
        return 0;
    }
    let piece = vec![b'x'; 64 * 1024];
    let mut sent = 0;
    while sent < size {
        let n = piece.len().min(size - sent);
        if tcp.write_all(&piece[..n]).await.is_err() {
            return sent;
        }
        sent += n;
    }
    let _ = tcp.write_all(end.as_bytes()).await;
    sent
}

/// A computer that answers every request; for code `flood:N` it first sends N lines of 1 KiB.
async fn computer(url: String, id: u64, flooded: Arc<AtomicU64>) {
    let Ok((ws, _)) = tokio_tungstenite::connect_async(url.as_str()).await else {
        return;
    };
    let (mut tx, mut rx) = ws.split();
    if tx.send(hello(id, SECRET, "abuse")).await.is_err() {
        return;
    }
    let line = format!("{}\n", "y".repeat(1023));
    while let Some(Ok(frame)) = rx.next().await {
        let Ws::Text(text) = frame else { continue };
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        // Sent one message at a time, never gathered: this process's RSS is the host's.
        let reply = match v["type"].as_str() {
            Some("ping") => json!({"type": "pong", "t": v["t"]}),
            Some("gateway_request") => {
                let rid = v["id"].clone();
                let n: usize = v["payload"]["code"]
                    .as_str()
                    .and_then(|c| c.strip_prefix("flood:"))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                for _ in 0..n {
                    let m = json!({"type": "output", "id": rid, "text": line});
                    if tx.send(Ws::Text(m.to_string().into())).await.is_err() {
                        return;
                    }
                    flooded.fetch_add(1, Ordering::Relaxed);
                }
                json!({"type": "computer_response", "id": rid, "ok": true,
                    "payload": {"ok": true, "returns": [], "n": 0}})
            }
            _ => continue,
        };
        if tx.send(Ws::Text(reply.to_string().into())).await.is_err() {
            return;
        }
    }
}

/// A streaming call (with a progress token) whose response stream is never read; the socket
/// is kept open until `hold` ends.
async fn unread_stream(addr: String, target: u64, lines: usize, hold: Duration) {
    let mut m = meta();
    m["progressToken"] = json!(format!("p{target}"));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": m, "name": "exec-lua",
        "arguments": {"traposId": target.to_string(), "code": format!("flood:{lines}")}}})
    .to_string();
    let Ok(mut tcp) = TcpStream::connect(&addr).await else {
        return;
    };
    if tcp
        .write_all(head(&addr, body.len()).as_bytes())
        .await
        .is_ok()
        && tcp.write_all(body.as_bytes()).await.is_ok()
    {
        tokio::time::sleep(hold).await;
    }
}

/// Runs both phases and prints the figures.
///
/// # Errors
/// When the host cannot start.
pub async fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let settings = Settings {
        gateway_bind: "127.0.0.1:0".parse()?,
        mcp_bind: "127.0.0.1:0".parse()?,
        secret: SECRET.into(),
        data_dir: dir.path().to_owned(),
        scrollback_lines: 200,
        ..Settings::default()
    };
    let (body_limit, stream_buffer) = (settings.max_body_bytes, settings.stream_buffer);
    let host = Host::start(settings, false).await?;
    let _ = TOKEN.set(host.local_token.clone());
    let addr = host
        .mcp_url()
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let flooded = Arc::new(AtomicU64::new(0));
    let computers = 20u64;
    for id in 0..computers {
        tokio::spawn(computer(host.gateway_url(), id, flooded.clone()));
    }
    while host.session.computers().iter().filter(|c| c.online).count() < computers as usize {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "abuse: max_body_bytes={body_limit} stream_buffer={stream_buffer} computers={computers}"
    );

    // Phase 1: 16 bodies of 100 MB, 4 at a time, and one 50 MB exec-lua code string.
    let before = rss_kb();
    let peak = Peak::start();
    let started = Instant::now();
    let mut taken = Vec::new();
    for _round in 0..4 {
        let posts: Vec<_> = (0..4)
            .map(|_| tokio::spawn(huge_post(addr.clone(), 100 << 20)))
            .collect();
        for p in posts {
            taken.push(p.await?);
        }
    }
    taken.push(huge_post(addr.clone(), 50 << 20).await);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (top, after) = (peak.peak(), rss_kb());
    drop(peak);
    println!(
        "huge bodies       16 x 100 MB (4 at once) + 1 x 50 MB in {:.1} s: host took at most {} KiB of each; requests started {}",
        started.elapsed().as_secs_f64(),
        taken.iter().max().copied().unwrap_or(0) / 1024,
        host.session.tool_calls().len()
    );
    println!(
        "  rss (KiB)       before={before} peak={top} after={after} (peak {:+} KiB; bound 4 at once x 2 x max_body_bytes (the buffer doubles) = {} KiB)",
        top as i64 - before as i64,
        8 * body_limit / 1024
    );

    // Phase 2: one streaming call per computer, each flooding 5 000 lines of 1 KiB (100 MB in
    // all) toward an SSE stream nobody reads, twice: the second round shows whether what the
    // first kept is a bound or growth.
    for round in 1..=2 {
        let lines = 5_000usize;
        let before = rss_kb();
        let peak = Peak::start();
        let started = Instant::now();
        let hold = Duration::from_secs(30);
        let want = flooded.load(Ordering::Relaxed) + computers * lines as u64;
        let readers: Vec<_> = (0..computers)
            .map(|id| tokio::spawn(unread_stream(addr.clone(), id, lines, hold)))
            .collect();
        while flooded.load(Ordering::Relaxed) < want && started.elapsed() < hold {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let sent = started.elapsed();
        // The requests end in the session although nobody reads their streams.
        while !host.session.pending().is_empty() && started.elapsed() < hold {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let ended = started.elapsed();
        let pending = host.session.pending().len();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let during = rss_kb();
        for r in readers {
            r.abort();
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (top, after) = (peak.peak(), rss_kb());
        drop(peak);
        println!(
            "unread streams #{round} {computers} calls x {lines} lines of 1 KiB: computers done in {:.1} s, requests ended in {:.1} s (pending after: {pending})",
            sent.as_secs_f64(),
            ended.as_secs_f64()
        );
        println!(
            "  rss (KiB)       before={before} peak={top} held-open={during} after-close={after} (peak {:+} KiB; bound {computers} x 2 x stream_buffer x 1 KiB = {} KiB + socket buffers)",
            top as i64 - before as i64,
            computers as usize * 2 * stream_buffer
        );
    }
    host.stop().await;
    Ok(())
}

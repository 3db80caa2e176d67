//! The emulator enforces what a default CC: Tweaked world enforces (docs/lua-client.md, "What the
//! emulator enforces"): one test per rule, Lua run directly on an emulated computer through its
//! Rust API, with real sockets where sockets matter.
#![allow(clippy::panic)] // test helpers fail the test by panicking

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use trapdesk::emu::{Computer, ComputerSpec};

fn spawn(spec: ComputerSpec) -> Computer {
    Computer::spawn(spec, tokio::runtime::Handle::current()).expect("spawn")
}

fn spec(dir: &tempfile::TempDir) -> ComputerSpec {
    ComputerSpec::new(5, Some("world".into()), dir.path().to_path_buf())
}

async fn run(c: &Computer, code: &str) -> String {
    match tokio::time::timeout(Duration::from_secs(20), c.run_lua(code)).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => panic!("lua failed: {e}\n--- code:\n{code}"),
        Err(_) => panic!("timed out:\n{code}"),
    }
}

/// A websocket server: "send N" answers with a text frame of N `x`, "burst N" with N frames
/// "1" .. "N" at once; anything else is echoed.
async fn ws_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async_with_config(
                    tcp,
                    Some(
                        tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
                            .max_message_size(None)
                            .max_frame_size(None),
                    ),
                )
                .await
                else {
                    return;
                };
                while let Some(Ok(msg)) = ws.next().await {
                    let text = match &msg {
                        Message::Text(t) => t.as_str().to_owned(),
                        Message::Binary(_) => String::new(),
                        _ => continue,
                    };
                    let replies: Vec<Message> = if let Some(n) = text.strip_prefix("send ") {
                        let n: usize = n.parse().expect("n");
                        vec![Message::Text("x".repeat(n).into())]
                    } else if let Some(n) = text.strip_prefix("burst ") {
                        let n: usize = n.parse().expect("n");
                        (1..=n).map(|i| Message::Text(i.to_string().into())).collect()
                    } else {
                        vec![msg.clone()]
                    };
                    for r in replies {
                        if ws.feed(r).await.is_err() {
                            return;
                        }
                    }
                    if ws.flush().await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// `max_websocket_message` as the http rule sets it: a send above it raises "Message is too
/// large" (`WebsocketHandle.send`), a frame above it closes the socket with that reason and no
/// code (`WebsocketHandler.fail`); 0 is no limit either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_websocket_message_limit_is_the_rules() {
    let port = ws_server().await;
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir).with_max_websocket_message(1000));
    let code = format!(
        r##"
        local url = "ws://127.0.0.1:{port}/"
        local ws = assert(http.websocket(url))
        print(pcall(ws.send, string.rep("y", 1001)))
        print(pcall(ws.send, string.rep("y", 1001), true))
        ws.send(string.rep("y", 1000))
        print(#ws.receive(5))
        ws.send("send 1000")
        print(#ws.receive(5))
        ws.send("send 1001")
        local _, u, reason, code = os.pullEvent("websocket_closed")
        print(u == url, reason, code)
        print(pcall(ws.send, "after"))
        "##
    );
    assert_eq!(
        run(&c, &code).await,
        "false\tMessage is too large\nfalse\tMessage is too large\n1000\n1000\ntrue\tMessage is too large\tnil\nfalse\tattempt to use a closed file\n"
    );

    // The default is CC's default rule's 131072.
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir));
    let code = format!(
        r##"
        local ws = assert(http.websocket("ws://127.0.0.1:{port}/"))
        print(pcall(ws.send, string.rep("y", 131073)))
        ws.send("send 131072")
        print(#ws.receive(5))
        ws.send("send 131073")
        print(select(3, os.pullEvent("websocket_closed")))
        "##
    );
    assert_eq!(
        run(&c, &code).await,
        "false\tMessage is too large\n131072\nMessage is too large\tnil\n"
    );

    // 0: no limit.
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir).with_max_websocket_message(0));
    let code = format!(
        r##"
        local ws = assert(http.websocket("ws://127.0.0.1:{port}/"))
        ws.send(string.rep("y", 300000))
        print(#ws.receive(5))
        ws.send("send 400000")
        print(#ws.receive(5))
        ws.close()
        "##
    );
    assert_eq!(run(&c, &code).await, "300000\n400000\n");
}

/// Busy for `ms` without yielding, so that events pile up in the queue meanwhile.
fn busy(ms: u32) -> String {
    format!("local t = os.epoch('utc') + {ms} while os.epoch('utc') < t do end")
}

/// CC: Tweaked's `ComputerExecutor` keeps at most 256 queued events and drops the rest
/// silently: socket messages and timers as much as `os.queueEvent`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_holds_256_events_of_every_kind() {
    let port = ws_server().await;
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir));
    let code = format!(
        r##"
        -- Counts events of a kind until the queue is drained: a marker is queued once the
        -- first event is taken (a full queue would drop it before).
        local function drain(kind)
            local n, last, marked = 0, nil, false
            while true do
                local ev, a, b = os.pullEvent()
                if ev == "drained" then return n, last end
                if ev == kind then n = n + 1 last = kind == "timer" and a or b end
                if not marked then os.queueEvent("drained") marked = true end
            end
        end
        for i = 1, 300 do os.queueEvent("q", "", i) end
        print("queueEvent", drain("q"))

        local first
        for i = 1, 300 do
            local id = os.startTimer(0)
            first = first or id
        end
        {busy}
        local n, last = drain("timer")
        print("timer", n, last - first + 1)

        local ws = assert(http.websocket("ws://127.0.0.1:{port}/"))
        ws.send("burst 300")
        {busy}
        print("websocket_message", drain("websocket_message"))
        ws.close()
        "##,
        busy = busy(1000)
    );
    assert_eq!(
        run(&c, &code).await,
        "queueEvent\t256\t256\ntimer\t256\t256\nwebsocket_message\t256\t256\n"
    );
}

//! The emulated computer's `http` API follows CC: Tweaked's byte rules against real sockets:
//! received text frames are raw UTF-8 bytes, sent strings are UTF-8 with invalid bytes replaced,
//! size limits hold, failures read as CC's, and `http.get` reads a local server byte for byte.
#![allow(clippy::panic)] // test helpers fail the test by panicking

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;
use trapdesk::emu::{Computer, ComputerSpec};

fn boot(dir: &tempfile::TempDir) -> Computer {
    Computer::spawn(
        ComputerSpec::new(3, Some("lab".into()), dir.path().to_path_buf()),
        tokio::runtime::Handle::current(),
    )
    .expect("spawn")
}

async fn run(c: &Computer, code: &str) -> String {
    match tokio::time::timeout(Duration::from_secs(10), c.run_lua(code)).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => panic!("lua failed: {e}"),
        Err(_) => panic!("timed out"),
    }
}

/// A websocket server that echoes frames as they came, and answers "big" with a frame above
/// CC's limit and "utf8" with a text frame holding "é".
async fn ws_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                while let Some(Ok(msg)) = ws.next().await {
                    let reply = match &msg {
                        Message::Text(t) if t.as_str() == "big" => {
                            Message::Text("x".repeat(131_073).into())
                        }
                        Message::Text(t) if t.as_str() == "utf8" => Message::Text("é".into()),
                        Message::Text(_) | Message::Binary(_) => msg.clone(),
                        _ => continue,
                    };
                    if ws.send(reply).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_byte_rules() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let port = ws_server().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead_port = closed.local_addr().expect("addr").port();
    drop(closed);
    let code = format!(
        r##"
        print(http.websocket("ws://127.0.0.1:{dead_port}/"))
        local url = "ws://127.0.0.1:{port}/a"
        local ws = assert(http.websocket(url))
        ws.send("utf8")
        local m, bin = ws.receive(2)
        print(m == "\195\169", bin)
        ws.send("a\255b")
        print(ws.receive(2) == "a\239\191\189b")
        ws.send("\255\0", true)
        m, bin = ws.receive(2)
        print(m == "\255\0", bin)
        print(pcall(ws.send, string.rep("x", 131073)))
        http.websocketAsync(url .. "?2")
        local ev, u, ws2 = os.pullEvent("websocket_success")
        print(ev, u == url .. "?2")
        ws2.send("big")
        local ev2, u2, reason, code = os.pullEvent("websocket_closed")
        print(u2 == url .. "?2", code)
        ws.close()
        "##
    );
    let out = run(&c, &code).await;
    assert_eq!(
        out,
        "false\tConnection refused\ntrue\tfalse\ntrue\ntrue\ttrue\nfalse\tMessage is too large\nwebsocket_success\ttrue\ntrue\tnil\n"
    );
}

/// An HTTP server answering `/bytes` with all 256 bytes and anything else with a 404.
async fn http_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tcp.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let (status, body): (&str, Vec<u8>) = if got.starts_with(b"GET /bytes ") {
                    ("200 OK", (0..=255u8).collect())
                } else {
                    ("404 Not Found", b"nope".to_vec())
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nX-Test: yes\r\n\r\n",
                    body.len()
                );
                let _ = tcp.write_all(head.as_bytes()).await;
                let _ = tcp.write_all(&body).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_get_reads_bytes() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let port = http_server().await;
    let code = format!(
        r##"
        local all = {{}}
        for i = 0, 255 do all[#all + 1] = string.char(i) end
        local r = assert(http.get("http://127.0.0.1:{port}/bytes", nil, true))
        print(r.getResponseCode(), r.getResponseHeaders()["X-Test"], r.readAll() == table.concat(all))
        r.close()
        r = assert(http.get{{ url = "http://127.0.0.1:{port}/bytes", binary = true }})
        print(r.read(), r.read())
        local ok, err, resp = http.get("http://127.0.0.1:{port}/missing")
        print(ok, err, resp.getResponseCode(), resp.readAll())
        print(http.checkURL("http://x/"), http.checkURL("ftp://x/"))
        "##
    );
    let out = run(&c, &code).await;
    assert_eq!(
        out,
        // A failure's message is the status line's reason, as CC: Tweaked's.
        "200\tyes\ttrue\n0\t1\nnil\tNot Found\t404\tnope\ntrue\tfalse\tInvalid protocol 'ftp'\n"
    );
}

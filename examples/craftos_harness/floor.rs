//! The floors: what the same CraftOS-PC runtime costs with no trapdesk in the way. A second
//! headless computer runs [`FLOOR_LUA`], a dozen lines of plain CC Lua that open one WebSocket
//! to [`Peer`] (a tokio-tungstenite server in the harness) and do exactly three things on
//! command:
//!
//! - **echo** (`e…`, a text frame the size of an exec-lua request): `ws.receive()`, then
//!   `ws.send()` of the same string. The round trip, as the harness sees it, is the floor of
//!   exec-lua (every exec-lua is at least one such frame each way, plus the host and the MCP
//!   hop, which the floor leaves out on purpose: the target says how much of the computer's
//!   round trip the whole path may cost).
//! - **write** (`w SIZE PATH`): the harness sends the bytes as binary frames of at most
//!   131,072 bytes (CC: Tweaked's default `max_websocket_message`); the computer receives each
//!   and writes it to an open `fs.open(PATH, "wb")` handle, closes it after SIZE bytes, and
//!   answers `w done SIZE`. Timed from the command's send to that answer.
//! - **read** (`r PATH`): the computer opens PATH with `"rb"`, reads it in pieces of 131,072
//!   bytes, sends each as a binary frame (`ws.send(piece, true)`), closes it and answers
//!   `r done`. Timed from the command's send to that answer, with the bytes checked.
//!
//! So a transfer's floor includes one WebSocket message per 128 KiB each way and CC's `fs`
//! on the same disk; no base64, no JSON, no request bookkeeping, no yields beyond the
//! receives. This is the least any client can do on this runtime to move the same bytes.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as Ws;

/// The largest frame either side sends: CC: Tweaked's default `max_websocket_message`
/// (`AddressRule.WEBSOCKET_MESSAGE`, 128 * 1024), which `WebsocketHandle.send` allows up to and
/// including (`text.remaining() > options.websocketMessage()` is the refusal).
pub const FRAME: usize = 131_072;

/// The floor computer's `startup.lua`; `PORT` is replaced by the peer's port.
pub const FLOOR_LUA: &str = r#"-- trapdesk harness floor: a bare WebSocket echo, write and read, nothing else.
local ws = assert(http.websocket("ws://127.0.0.1:PORT/floor"))
while true do
    local msg = ws.receive()
    if not msg then break end
    local op = msg:sub(1, 1)
    if op == "e" then
        ws.send(msg)
    elseif op == "w" then
        local size, path = msg:match("^w (%d+) (.+)$")
        size = tonumber(size)
        local h = assert(fs.open(path, "wb"))
        local got = 0
        while got < size do
            local part = assert(ws.receive())
            h.write(part)
            got = got + #part
        end
        h.close()
        ws.send("w done " .. got)
    elseif op == "r" then
        local h = assert(fs.open(msg:sub(3), "rb"))
        while true do
            local part = h.read(131072)
            if not part then break end
            ws.send(part, true)
        end
        h.close()
        ws.send("r done")
    elseif op == "q" then
        break
    end
end
ws.close()
"#;

/// The floor program for a peer on `port`.
pub fn floor_lua(port: u16) -> String {
    FLOOR_LUA.replace("PORT", &port.to_string())
}

/// The harness's end of the floor: a listener on port 0 that takes the floor computer's one
/// WebSocket.
pub struct Listening {
    listener: TcpListener,
    pub port: u16,
}

impl Listening {
    pub async fn bind() -> Listening {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        Listening { listener, port }
    }

    /// Waits (up to `limit`) for the floor computer to connect.
    pub async fn accept(self, limit: Duration) -> Peer {
        let (tcp, _) = tokio::time::timeout(limit, self.listener.accept())
            .await
            .expect("the floor computer never connected")
            .unwrap();
        // As the gateway does: no Nagle delay on small frames.
        tcp.set_nodelay(true).unwrap();
        let ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        Peer { ws }
    }
}

/// The floor computer's connection, driven by the harness.
pub struct Peer {
    ws: WebSocketStream<TcpStream>,
}

/// A message the size of an exec-lua request on the gateway wire (what the host sends for
/// `return 1`), starting with the echo command.
pub const ECHO: &str = r#"e{"type":"gateway_request","id":"h-1","request":"exec-lua","payload":{"code":"return 1","name":"=exec"},"timeout_ms":30000}"#;

impl Peer {
    async fn next(&mut self) -> Ws {
        loop {
            match self.ws.next().await {
                Some(Ok(m @ (Ws::Text(_) | Ws::Binary(_)))) => return m,
                Some(Ok(_)) => continue,
                other => panic!("the floor computer's socket ended: {other:?}"),
            }
        }
    }

    async fn next_text(&mut self) -> String {
        match self.next().await {
            Ws::Text(t) => t.to_string(),
            other => panic!("expected a text frame, got {other:?}"),
        }
    }

    /// One echo round trip; checks the answer is the message.
    pub async fn echo(&mut self) -> Duration {
        let t = Instant::now();
        self.ws.send(Ws::Text(ECHO.into())).await.unwrap();
        let back = self.next_text().await;
        let took = t.elapsed();
        assert_eq!(back, ECHO, "the echo changed the message");
        took
    }

    /// Writes `bytes` to `path` on the floor computer (frames of [`FRAME`]); returns the time
    /// until the computer said it closed the file.
    pub async fn write(&mut self, path: &str, bytes: &[u8]) -> Duration {
        let t = Instant::now();
        self.ws
            .send(Ws::Text(format!("w {} {path}", bytes.len()).into()))
            .await
            .unwrap();
        for piece in bytes.chunks(FRAME) {
            self.ws
                .send(Ws::Binary(piece.to_vec().into()))
                .await
                .unwrap();
        }
        let said = self.next_text().await;
        let took = t.elapsed();
        assert_eq!(said, format!("w done {}", bytes.len()), "the floor write");
        took
    }

    /// Reads `path` from the floor computer; returns the time until its end marker and the
    /// bytes.
    pub async fn read(&mut self, path: &str) -> (Duration, Vec<u8>) {
        let t = Instant::now();
        self.ws
            .send(Ws::Text(format!("r {path}").into()))
            .await
            .unwrap();
        let mut got = Vec::new();
        loop {
            match self.next().await {
                Ws::Binary(b) => {
                    assert!(b.len() <= FRAME, "a frame of {} bytes", b.len());
                    got.extend_from_slice(&b);
                }
                Ws::Text(t) if t.as_str() == "r done" => break,
                other => panic!("the floor read said {other:?}"),
            }
        }
        (t.elapsed(), got)
    }

    /// Ends the floor program.
    pub async fn quit(mut self) {
        let _ = self.ws.send(Ws::Text("q".into())).await;
        let _ = self.ws.close(None).await;
    }
}

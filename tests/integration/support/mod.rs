//! Helpers shared by the integration tests: a host on port 0 with a temporary data dir, and a
//! scripted fake computer that speaks `docs/protocol.md` over a real WebSocket.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

pub mod agent_seat;
pub mod craftos;
pub mod mcp_fake;
pub mod tear;
pub mod truth_cases;
pub mod tui_common;
pub mod wait;
pub mod world;

// Not every includer uses each (tests/process.rs, examples/craftos_harness).
#[allow(unused_imports)]
pub use wait::{
    exit_within, holds_within, holds_within_blocking, lua_mark, wait_blocking, wait_for, wait_mark,
    wait_ok, wait_some, wait_until,
};

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as Ws;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use trapdesk::config::Settings;
use trapdesk::host::Host;

pub const SECRET: &str = "test-secret-7kq2m9xw";

/// The `trapdesk` binary cargo built for the tests. Read with `option_env!`, because
/// examples/craftos_harness includes this module too, and cargo names the binary (and the
/// folder of [`target_tmpdir`]) to tests only: an example that calls these panics.
pub fn trapdesk_exe() -> &'static str {
    match option_env!("CARGO_BIN_EXE_trapdesk") {
        Some(v) => v,
        None => panic!("CARGO_BIN_EXE_trapdesk is set for tests only"),
    }
}

/// `target/tmp`, cargo's scratch folder for integration tests (see [`trapdesk_exe`]).
pub fn target_tmpdir() -> &'static str {
    match option_env!("CARGO_TARGET_TMPDIR") {
        Some(v) => v,
        None => panic!("CARGO_TARGET_TMPDIR is set for tests only"),
    }
}

/// A running host and the temp dir it writes to (kept alive as long as the host).
pub struct TestHost {
    pub host: Host,
    pub dir: tempfile::TempDir,
}

impl std::ops::Deref for TestHost {
    type Target = Host;
    fn deref(&self) -> &Host {
        &self.host
    }
}

impl std::ops::DerefMut for TestHost {
    fn deref_mut(&mut self) -> &mut Host {
        &mut self.host
    }
}

/// Settings for tests: loopback port 0, fixed secret, temp data dir.
pub fn settings(dir: &std::path::Path) -> Settings {
    Settings {
        gateway_bind: "127.0.0.1:0".parse().unwrap(),
        mcp_bind: "127.0.0.1:0".parse().unwrap(),
        secret: SECRET.into(),
        data_dir: dir.to_owned(),
        ..Settings::default()
    }
}

/// Starts a host, letting the test adjust the settings first.
pub async fn start_host_with(adjust: impl FnOnce(&mut Settings)) -> TestHost {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    adjust(&mut s);
    let host = Host::start(s, true).await.unwrap();
    TestHost { host, dir }
}

pub async fn start_host() -> TestHost {
    start_host_with(|_| {}).await
}

/// A `hello` for a computer, to be adjusted by the test.
pub fn hello(id: u64, label: Option<&str>) -> Value {
    json!({
        "type": "hello", "protocol": 1, "computer_id": id, "label": label,
        "secret": SECRET, "serves": ["exec-lua", "run-file", "write-file", "read-file", "list-files"],
        "client": "fake-computer/0", "host": "test", "max_message": 131072
    })
}

/// A scripted computer: a raw WebSocket client with helpers for the protocol.
pub struct FakeComputer {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

/// How long a test waits for something that should happen promptly.
pub const PROMPT: Duration = Duration::from_secs(5);

impl FakeComputer {
    /// Opens the WebSocket without saying anything.
    pub async fn connect_raw(host: &Host) -> FakeComputer {
        let (ws, _) = tokio_tungstenite::connect_async(host.gateway_url())
            .await
            .unwrap();
        FakeComputer { ws }
    }

    /// Connects and completes the handshake with `hello`; returns the computer and `welcome`.
    pub async fn link_with(host: &Host, hello: Value) -> (FakeComputer, Value) {
        let mut c = FakeComputer::connect_raw(host).await;
        c.send(&hello).await;
        let welcome = c.recv().await;
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        (c, welcome)
    }

    /// Links computer `id` with `label` and waits until the session lists it.
    pub async fn link(host: &Host, id: u64, label: Option<&str>) -> FakeComputer {
        let (c, welcome) = FakeComputer::link_with(host, hello(id, label)).await;
        let trapos = welcome["trapos_id"].as_str().unwrap().to_owned();
        wait_until(|| host.session.computer(&trapos).is_some_and(|c| c.online)).await;
        c
    }

    pub async fn send(&mut self, v: &Value) {
        self.ws.send(Ws::Text(v.to_string().into())).await.unwrap();
    }

    pub async fn send_text(&mut self, s: &str) {
        self.ws.send(Ws::Text(s.to_owned().into())).await.unwrap();
    }

    /// The next protocol message, skipping heartbeat pings (answered) and WebSocket control
    /// frames. Panics after [`PROMPT`].
    pub async fn recv(&mut self) -> Value {
        loop {
            let v = self.recv_any().await;
            if v["type"] == "ping" {
                let t = v["t"].clone();
                self.send(&json!({"type": "pong", "t": t})).await;
                continue;
            }
            return v;
        }
    }

    /// The next protocol message including pings.
    pub async fn recv_any(&mut self) -> Value {
        loop {
            let frame = tokio::time::timeout(PROMPT, self.ws.next())
                .await
                .expect("no frame in time")
                .expect("socket ended")
                .expect("socket error");
            match frame {
                Ws::Text(t) => {
                    assert!(t.is_ascii(), "host sent non-ASCII JSON: {t}");
                    return serde_json::from_str(&t).unwrap();
                }
                Ws::Close(f) => panic!("closed: {f:?}"),
                _ => continue,
            }
        }
    }

    /// The raw text of the next text frame.
    pub async fn recv_text(&mut self) -> String {
        loop {
            let frame = tokio::time::timeout(PROMPT, self.ws.next())
                .await
                .expect("no frame in time")
                .expect("socket ended")
                .expect("socket error");
            if let Ws::Text(t) = frame {
                return t.to_string();
            }
        }
    }

    /// Reads until the host closes; returns the close code and reason. Messages before the
    /// close are collected.
    pub async fn recv_close(&mut self) -> (Option<u16>, Vec<Value>) {
        let mut seen = Vec::new();
        loop {
            let frame = tokio::time::timeout(PROMPT, self.ws.next())
                .await
                .expect("no close in time");
            match frame {
                None => return (None, seen),
                Some(Err(_)) => return (None, seen),
                Some(Ok(Ws::Close(f))) => {
                    return (f.map(|f| u16::from(f.code)), seen);
                }
                Some(Ok(Ws::Text(t))) => seen.push(serde_json::from_str(&t).unwrap()),
                Some(Ok(_)) => {}
            }
        }
    }

    /// Waits for the next `gateway_request`.
    pub async fn recv_request(&mut self) -> Value {
        let v = self.recv().await;
        assert_eq!(v["type"], "gateway_request", "{v}");
        v
    }

    pub async fn respond(&mut self, id: &str, payload: Value) {
        self.send(&json!({"type": "computer_response", "id": id, "ok": true, "payload": payload}))
            .await;
    }

    pub async fn close(mut self) {
        let _ = self
            .ws
            .close(Some(tokio_tungstenite::tungstenite::protocol::CloseFrame {
                code: CloseCode::Normal,
                reason: "bye".into(),
            }))
            .await;
    }
}

/// Boots an emulated computer with the real client installed (as the installer would) and
/// waits until it is linked.
pub async fn emulated(host: &TestHost, id: u64, label: Option<&str>) -> trapdesk::emu::Computer {
    emulated_sized(host, id, label, trapdesk::emu::COMPUTER_SIZE).await
}

/// [`emulated`] with a terminal of another size (a turtle's, a pocket computer's).
pub async fn emulated_sized(
    host: &TestHost,
    id: u64,
    label: Option<&str>,
    size: (usize, usize),
) -> trapdesk::emu::Computer {
    emulated_with(host, id, label, |s| s.with_size(size)).await
}

/// [`emulated`] with its spec changed by `adjust` (a size, a raised disk quota).
pub async fn emulated_with(
    host: &TestHost,
    id: u64,
    label: Option<&str>,
    adjust: impl FnOnce(trapdesk::emu::ComputerSpec) -> trapdesk::emu::ComputerSpec,
) -> trapdesk::emu::Computer {
    use trapdesk::emu::{Computer, ComputerSpec, install_client};
    let root = host.dir.path().join("computers").join(id.to_string());
    std::fs::create_dir_all(&root).unwrap();
    install_client(&root, &host.gateway_url(), SECRET).unwrap();
    let spec = adjust(ComputerSpec::new(id, label.map(str::to_owned), root));
    let computer = Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap();
    let trapos = format!("{id}:{}", label.unwrap_or(""));
    wait_until(|| {
        host.session.computer(&trapos).is_some_and(|c| {
            c.online && !c.serves.is_empty() && c.serves.iter().any(|s| s == "exec-lua")
        })
    })
    .await;
    computer
}

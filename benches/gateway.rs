//! Request round trips through the host, printed as a table, so the cost of each layer is
//! visible as a ratio measured in one run:
//!
//! 1. the session alone (a channel stands in for the connection),
//! 2. session + gateway + a WebSocket peer that answers at once (the host's own overhead),
//! 3. session + gateway + an emulated computer running the real Lua client (`return 1`).
//!
//! `cargo bench --bench gateway` (release). Sequential round trips give latency; eight at once
//! give throughput.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as Ws;
use trapdesk::config::Settings;
use trapdesk::gateway::protocol::{Hello, Response};
use trapdesk::host::Host;
use trapdesk::session::{Origin, Outbound, RequestSpec, Session};

const SECRET: &str = "bench";

fn row(name: &str, mut samples: Vec<Duration>, base: Option<f64>) -> f64 {
    samples.sort();
    let n = samples.len().max(1);
    let pct = |p: f64| samples[((n as f64 * p) as usize).min(n - 1)].as_secs_f64() * 1e6;
    let mean = samples.iter().sum::<Duration>().as_secs_f64() * 1e6 / n as f64;
    let ratio = base
        .map(|b| format!("{:.1}×", mean / b))
        .unwrap_or_else(|| "1×".into());
    println!(
        "| {name:<44} | {n:>6} | {mean:>9.1} | {:>9.1} | {:>9.1} | {ratio:>7} |",
        pct(0.5),
        pct(0.99)
    );
    mean
}

fn exec() -> RequestSpec {
    RequestSpec::new(
        trapdesk::protocol::Kind::ExecLua,
        json!({"code": "return 1"}),
    )
}

async fn sequential(session: &Session, target: &str, n: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = session.request(target, exec(), Origin::Person).await;
        assert!(r.is_ok(), "{r:?}");
        out.push(t.elapsed());
    }
    out
}

async fn throughput(session: &Session, target: &str, n: usize) -> f64 {
    let t = Instant::now();
    let mut left = n;
    while left > 0 {
        let batch = left.min(8);
        let waits: Vec<_> = (0..batch)
            .map(|_| session.request(target, exec(), Origin::Person))
            .collect();
        for r in futures_util::future::join_all(waits).await {
            assert!(r.is_ok(), "{r:?}");
        }
        left -= batch;
    }
    n as f64 / t.elapsed().as_secs_f64()
}

fn hello(id: u64) -> Value {
    json!({"type": "hello", "protocol": 1, "computer_id": id, "label": "bench", "secret": SECRET,
           "serves": ["exec-lua"], "max_message": 131072})
}

/// A WebSocket computer that answers every request at once.
async fn echo_computer(url: String, id: u64) {
    // Like CC: Tweaked's Netty client, disable Nagle on the computer's side too.
    let Ok((mut ws, _)) = tokio_tungstenite::connect_async_with_config(url, None, true).await
    else {
        return;
    };
    let _ = ws.send(Ws::Text(hello(id).to_string().into())).await;
    while let Some(Ok(frame)) = ws.next().await {
        let Ws::Text(t) = frame else { continue };
        let Ok(v) = serde_json::from_str::<Value>(&t) else {
            continue;
        };
        let reply = match v["type"].as_str() {
            Some("gateway_request") => {
                json!({"type": "computer_response", "id": v["id"], "ok": true,
                "payload": {"ok": true, "returns": [{"type": "number", "value": 1}], "n": 1, "output": ""}})
            }
            Some("ping") => json!({"type": "pong", "t": v["t"]}),
            _ => continue,
        };
        let _ = ws.send(Ws::Text(reply.to_string().into())).await;
    }
}

async fn wait_linked(session: &Session, trapos: &str) {
    while !session
        .computer(trapos)
        .is_some_and(|c| c.online && c.serves.iter().any(|s| s == "exec-lua"))
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Resident memory of this process, from `/proc/self/status` (Linux), in KiB.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// What full scrollback costs: 50 computers, each with its output ring filled to the default
/// 10,000 lines of 60 bytes.
fn scrollback_memory(settings: &Settings) {
    let session = Session::new(settings.clone(), false);
    let before = rss_kib();
    let mut links = Vec::new();
    for id in 0..50u64 {
        let (tx, _rx) = mpsc::channel(1024);
        let link = session.link(&Hello::from_value(&hello(100 + id)).expect("hello"), tx);
        for i in 0..10_000u64 {
            link.output(
                "none",
                trapdesk::session::Stream::Out,
                &format!("{i:>8} {}\n", "x".repeat(50)),
            );
        }
        links.push(link);
    }
    let after = rss_kib();
    if let (Some(a), Some(b)) = (before, after) {
        let lines = 50.0 * 10_000.0;
        println!(
            "memory: 50 computers x 10,000 lines of scrollback = {:.1} MiB resident ({:.0} bytes per 60-byte line)",
            (b.saturating_sub(a)) as f64 / 1024.0,
            (b.saturating_sub(a)) as f64 * 1024.0 / lines
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = std::env::temp_dir().join(format!("trapdesk-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let settings = Settings {
        gateway_bind: "127.0.0.1:0".parse().expect("addr"),
        mcp_bind: "127.0.0.1:0".parse().expect("addr"),
        secret: SECRET.into(),
        data_dir: dir.clone(),
        ..Settings::default()
    };
    println!(
        "| path                                         | calls  |  mean µs  |  p50 µs   |  p99 µs   | vs 1    |"
    );
    println!(
        "|----------------------------------------------|--------|-----------|-----------|-----------|---------|"
    );

    // 1. Session only: a task answers on the channel.
    let session = Session::new(settings.clone(), false);
    let (tx, mut rx) = mpsc::channel(1024);
    let link = session.link(&Hello::from_value(&hello(1)).expect("hello"), tx);
    let answerer = tokio::spawn(async move {
        while let Some(cmd) = rx.recv().await {
            if let Outbound::Request(r) = cmd {
                link.response(Response {
                    id: r.id,
                    ok: true,
                    payload: Some(json!({"ok": true, "returns": [], "n": 0})),
                    error: None,
                });
            }
        }
    });
    let base = row(
        "session only (channel peer)",
        sequential(&session, "1", 5000).await,
        None,
    );
    let tp_session = throughput(&session, "1", 5000).await;
    answerer.abort();

    // 2 and 3. A real host.
    let host = Host::start(settings, false).await.expect("host");
    tokio::spawn(echo_computer(host.gateway_url(), 2));
    wait_linked(&host.session, "2:bench").await;
    row(
        "gateway + WebSocket peer answering at once",
        sequential(&host.session, "2", 5000).await,
        Some(base),
    );
    let tp_ws = throughput(&host.session, "2", 5000).await;

    let root = dir.join("emu");
    let _ = std::fs::create_dir_all(&root);
    trapdesk::emu::install_client(&root, &host.gateway_url(), SECRET).expect("install");
    let computer = trapdesk::emu::Computer::spawn(
        trapdesk::emu::ComputerSpec::new(3, Some("bench".into()), root),
        tokio::runtime::Handle::current(),
    )
    .expect("spawn");
    wait_linked(&host.session, "3:bench").await;
    row(
        "gateway + emulated computer (real Lua client)",
        sequential(&host.session, "3", 500).await,
        Some(base),
    );
    let tp_emu = throughput(&host.session, "3", 500).await;
    println!();
    println!(
        "throughput, 8 in flight: session only {tp_session:.0}/s, WebSocket peer {tp_ws:.0}/s, emulated computer {tp_emu:.0}/s"
    );
    computer.shutdown();
    host.stop().await;
    scrollback_memory(&Settings {
        data_dir: dir.clone(),
        ..Settings::default()
    });
    let _ = std::fs::remove_dir_all(&dir);
}

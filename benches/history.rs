//! What the history (`history.db`) costs, measured beside the same work without it in one run:
//!
//! 1. exec-lua through the session (a channel peer that prints 10 lines, then answers), with
//!    the transcript on in both and the history off / on, in alternating rounds;
//! 2. the session's side of one output line (what the request path pays), off / on;
//! 3. the writer: lines committed per second, and bytes on disk per line.
//!
//! `cargo bench --bench history` (release).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use trapdesk::config::Settings;
use trapdesk::gateway::protocol::{Hello, Response};
use trapdesk::session::{Origin, Outbound, RequestSpec, Session, Stream};

const SECRET: &str = "bench";
const LINE: &str = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTU\n";

fn hello(id: u64) -> Value {
    json!({"type": "hello", "protocol": 1, "computer_id": id, "label": "bench", "secret": SECRET,
           "serves": ["exec-lua"], "max_message": 131072})
}

fn settings(dir: &std::path::Path, history: bool) -> Settings {
    Settings {
        secret: SECRET.into(),
        data_dir: dir.to_owned(),
        history,
        ..Settings::default()
    }
}

/// A session with one computer whose peer prints 10 lines per request, then answers.
fn session_with_peer(s: Settings) -> Session {
    let session = Session::new(s, true);
    let (tx, mut rx) = mpsc::channel(1024);
    let link = session.link(&Hello::from_value(&hello(1)).expect("hello"), tx);
    tokio::spawn(async move {
        while let Some(cmd) = rx.recv().await {
            if let Outbound::Request(r) = cmd {
                for _ in 0..10 {
                    link.output(&r.id, Stream::Out, LINE);
                }
                link.response(Response {
                    id: r.id,
                    ok: true,
                    payload: Some(json!({"ok": true, "returns": [], "n": 0})),
                    error: None,
                });
            }
        }
    });
    session
}

async fn calls(session: &Session, n: usize, into: &mut Vec<Duration>) {
    for _ in 0..n {
        let spec = RequestSpec::new(
            trapdesk::protocol::Kind::ExecLua,
            json!({"code": "for i = 1, 10 do print(i) end"}),
        );
        let t = Instant::now();
        let r = session.request("1", spec, Origin::Person).await;
        assert!(r.is_ok(), "{r:?}");
        into.push(t.elapsed());
    }
}

fn stats(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let n = samples.len().max(1);
    let pct = |p: f64| samples[((n as f64 * p) as usize).min(n - 1)].as_secs_f64() * 1e6;
    let mean = samples.iter().sum::<Duration>().as_secs_f64() * 1e6 / n as f64;
    (mean, pct(0.5), pct(0.99))
}

/// Pushes `n` lines through a linked computer's scrollback; returns the time per line (ns).
fn push_lines(session: &Session, id: u64, n: usize) -> f64 {
    let (tx, _rx) = mpsc::channel(1024);
    let link = session.link(&Hello::from_value(&hello(id)).expect("hello"), tx);
    let t = Instant::now();
    for _ in 0..n {
        link.output("none", Stream::Out, LINE);
    }
    t.elapsed().as_secs_f64() * 1e9 / n as f64
}

fn size(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = std::env::temp_dir().join(format!("trapdesk-history-bench-{}", std::process::id()));
    let (off_dir, on_dir, w_dir) = (root.join("off"), root.join("on"), root.join("writer"));
    for d in [&off_dir, &on_dir, &w_dir] {
        std::fs::create_dir_all(d).expect("bench dir");
    }

    // 1. exec-lua, history off and on, alternating rounds so that the machine's load falls on both.
    let off = session_with_peer(settings(&off_dir, false));
    let on = session_with_peer(settings(&on_dir, true));
    let (mut t_off, mut t_on) = (Vec::new(), Vec::new());
    calls(&off, 200, &mut Vec::new()).await;
    calls(&on, 200, &mut Vec::new()).await;
    for _ in 0..10 {
        calls(&off, 300, &mut t_off).await;
        calls(&on, 300, &mut t_on).await;
    }
    let (m_off, p50_off, p99_off) = stats(t_off);
    let (m_on, p50_on, p99_on) = stats(t_on);
    println!(
        "| exec-lua, 10 output lines, session + channel peer | calls | mean µs | p50 µs | p99 µs | vs off |"
    );
    println!("|---|---|---|---|---|---|");
    println!(
        "| history off (transcript on) | 3000 | {m_off:.1} | {p50_off:.1} | {p99_off:.1} | 1× |"
    );
    println!(
        "| history on | 3000 | {m_on:.1} | {p50_on:.1} | {p99_on:.1} | {:.2}× |",
        m_on / m_off
    );
    drop((off, on));

    // 2 and 3. 200,000 lines of 60 bytes: the session's side, then the writer's.
    const N: usize = 200_000;
    let plain = Session::new(settings(&off_dir, false), true);
    let ns_off = push_lines(&plain, 50, N);
    drop(plain);
    let kept = Session::new(
        Settings {
            history_queue: 1_000_000,
            ..settings(&w_dir, true)
        },
        true,
    );
    let t = Instant::now();
    let ns_on = push_lines(&kept, 51, N);
    let flushed = kept.flush_history(Duration::from_secs(600));
    let secs = t.elapsed().as_secs_f64();
    assert!(flushed, "the writer did not catch up");
    let history = kept.history().expect("history on");
    let (committed, commits) = history.stats();
    let lost = history.lost();
    let db = history.path().to_owned();
    let bytes = size(&db) + size(&db.with_extension("db-wal"));
    println!();
    println!("| one 60-byte output line | ns on the request path | vs off |");
    println!("|---|---|---|");
    println!("| history off | {ns_off:.0} | 1× |");
    println!("| history on | {ns_on:.0} | {:.2}× |", ns_on / ns_off);
    println!();
    println!(
        "writer: {N} lines committed in {secs:.2} s = {:.0} lines/s ({committed} records in {commits} transactions, {lost} dropped); \
         disk {:.1} MiB = {:.0} bytes per 60-byte line (history.db + WAL)",
        N as f64 / secs,
        bytes as f64 / (1 << 20) as f64,
        bytes as f64 / N as f64
    );
    drop(kept);
    let _ = std::fs::remove_dir_all(&root);
}

//! What the harness measures, in one run on CraftOS-PC, each figure beside its floor
//! (`floor.rs`): exec-lua `return 1`, a `write-file` and a paged `read-file` of the same bytes
//! (binary and text), the events a player's program at the shell is woken by (idle, during the
//! exec-lua calls, during each transfer), and the client's files on the computer's disk.
//!
//! Everything goes through the MCP endpoint an agent uses (rmcp's client over Streamable
//! HTTP, `tests/integration/support/mcp_fake.rs`) to a host started in this process, and every
//! result is checked (returns, bytes on disk, bytes read back, page offsets), so the quick form in
//! `tests/integration/craftos/craftos_harness.rs` asserts correctness with the same code.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use super::craftos::{self, CraftComputer};
use super::fake::{data, text};
use super::floor;
use super::report::{Disk, Events, Machine, Report, Series, Transfer};
use super::world::{Runtime, World};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// How much to measure.
#[derive(Debug, Clone)]
pub struct Config {
    /// Sequential exec-lua calls (and as many echo round trips), after 5 warm-up calls each.
    pub calls: usize,
    /// The transferred file's size in bytes.
    pub size: usize,
    /// Seconds of idle event counting.
    pub idle_secs: u64,
    /// Repetitions of each transfer (the table shows the median).
    pub reps: usize,
    /// Seconds to let the client settle after it links (its first-word timer is 5 s).
    pub settle_secs: u64,
}

impl Config {
    /// The figures for BENCHMARKS.md: 200 calls, 500 KiB, 10 s idle, 3 transfers each.
    pub fn full() -> Config {
        Config {
            calls: 200,
            size: 500 * 1024,
            idle_secs: 10,
            reps: 3,
            settle_secs: 6,
        }
    }

    /// The quick form CI runs: enough to cross every path (a file of two frames), few
    /// iterations.
    pub fn quick() -> Config {
        Config {
            calls: 10,
            size: 150_000,
            idle_secs: 2,
            reps: 1,
            settle_secs: 6,
        }
    }
}

/// A counting program the player types at the shell: every event it is resumed with, by
/// name, written to `/events.txt` as `count name=n ...` (as in
/// `tests/integration/craftos/player_computer.rs`), and once at its start so the harness knows it
/// runs.
const COUNT: &str = r#"
local n, names = 0, {}
local function save()
    local parts = {}
    for k, v in pairs(names) do parts[#parts + 1] = k .. "=" .. v end
    table.sort(parts)
    local h = fs.open("/events.txt", "w") h.write(n .. " " .. table.concat(parts, " ")) h.close()
end
save()
while true do
    local ev = os.pullEventRaw()
    n = n + 1
    names[ev] = (names[ev] or 0) + 1
    save()
end
"#;

/// The counting program's `/events.txt`: the count and the count by name.
fn seen(files: &Path) -> Option<(u64, BTreeMap<String, u64>)> {
    let s = std::fs::read_to_string(files.join("events.txt")).ok()?;
    let mut words = s.split_whitespace();
    let n = words.next()?.parse().ok()?;
    let mut by_name = BTreeMap::new();
    for w in words {
        let (k, v) = w.split_once('=')?;
        by_name.insert(k.to_owned(), v.parse().ok()?);
    }
    // A whole file: the count is the sum of the counts by name. The program rewrites it on
    // every event, so a read may catch it truncated or half written.
    (n == by_name.values().sum::<u64>()).then_some((n, by_name))
}

/// [`seen`], read again until the file is whole (the program may be writing it); panics
/// with `what` after 5 s.
async fn seen_whole(files: &Path, what: &str) -> (u64, BTreeMap<String, u64>) {
    let start = Instant::now();
    loop {
        if let Some(s) = seen(files) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{what}: /events.txt is {:?}",
            std::fs::read_to_string(files.join("events.txt"))
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A window of event counting.
struct Window {
    n: u64,
    by_name: BTreeMap<String, u64>,
    at: Instant,
}

impl Window {
    async fn open(files: &Path) -> Window {
        let (n, by_name) = seen_whole(files, "the counting program is not running").await;
        Window {
            n,
            by_name,
            at: Instant::now(),
        }
    }

    /// Closes the window after giving the program a moment to write its last count.
    async fn close(self, files: &Path) -> Events {
        let secs = self.at.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (n, after) = seen_whole(files, "the counting program stopped").await;
        let mut by_name = BTreeMap::new();
        for (k, v) in after {
            let d = v - self.by_name.get(&k).copied().unwrap_or(0);
            if d > 0 {
                by_name.insert(k, d);
            }
        }
        Events {
            count: n - self.n,
            by_name,
            secs,
        }
    }
}

/// The file's bytes: `binary` every byte value in a long-period pattern, `text` ASCII lines.
pub fn content(kind: &str, size: usize) -> Vec<u8> {
    match kind {
        "binary" => (0..size).map(|k| (k * 7919 + k / 251) as u8).collect(),
        _ => (0..size)
            .map(|k| {
                if k % 64 == 63 {
                    b'\n'
                } else {
                    b'a' + (k % 26) as u8
                }
            })
            .collect(),
    }
}

fn ok(r: &rmcp::model::CallToolResult, what: &str) -> Value {
    assert_ne!(r.is_error, Some(true), "{what}: {}", text(r));
    data(r)
}

/// One `write-file` of `body` as an agent sends it (base64 for bytes, the text as it is).
async fn write_file(f: &World, id: &str, path: &str, kind: &str, body: &[u8]) -> Duration {
    let (content, encoding) = match kind {
        "binary" => (B64.encode(body), "base64"),
        _ => (String::from_utf8(body.to_vec()).unwrap(), "utf8"),
    };
    let t = Instant::now();
    let r = f
        .call(
            "write-file",
            json!({"traposId": id, "path": path, "content": content, "encoding": encoding}),
        )
        .await;
    let took = t.elapsed();
    let d = ok(&r, "write-file");
    assert_eq!(d["ok"], true, "{d}");
    assert_eq!(d["bytes"].as_u64(), Some(body.len() as u64), "{d}");
    took
}

/// Reads `path` to its end through `read-file`'s pages, checking each page's offsets; returns
/// the time, the number of calls and the bytes.
async fn read_file(f: &World, id: &str, path: &str) -> (Duration, usize, Vec<u8>) {
    let t = Instant::now();
    let (mut offset, mut calls, mut back) = (0u64, 0usize, Vec::new());
    loop {
        let r = f
            .call(
                "read-file",
                json!({"traposId": id, "path": path, "offset": offset}),
            )
            .await;
        let d = ok(&r, "read-file");
        calls += 1;
        let piece = match d["encoding"].as_str() {
            Some("base64") => B64.decode(d["content"].as_str().unwrap()).unwrap(),
            Some("utf8") => d["content"].as_str().unwrap().as_bytes().to_vec(),
            other => panic!("read-file encoding {other:?}: {d}"),
        };
        assert_eq!(d["offset"].as_u64(), Some(offset), "{d}");
        assert_eq!(d["bytes"].as_u64(), Some(piece.len() as u64), "{d}");
        back.extend_from_slice(&piece);
        match d["nextOffset"].as_u64() {
            Some(n) => {
                assert_eq!(n, offset + piece.len() as u64, "nextOffset: {d}");
                assert!(!piece.is_empty(), "an empty page before the end: {d}");
                offset = n;
            }
            None => {
                assert_eq!(d["total"].as_u64(), Some(back.len() as u64), "{d}");
                break;
            }
        }
    }
    (t.elapsed(), calls, back)
}

/// Walks the computer's files right after the client installed and settled, before the
/// harness writes anything: all of them are the client's (the installer's own `startup.lua`
/// deletes itself first, `tests/integration/support/craftos.rs`). The root folder itself is not
/// counted, as CC: Tweaked gives it back (`WritableFileMount`: capacity + `MINIMUM_FILE_SIZE`).
fn client_disk(files: &Path) -> Disk {
    fn walk(dir: &Path, d: &mut Disk) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                d.dirs += 1;
                d.counted += 500;
                walk(&e.path(), d);
            } else {
                d.files += 1;
                d.bytes += m.len();
                d.counted += m.len().max(500);
                if e.path().extension().is_some_and(|x| x == "log") {
                    d.log_bytes += m.len();
                }
            }
        }
    }
    let mut d = Disk::default();
    walk(files, &mut d);
    d.top = std::fs::read_dir(files)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    d.top.sort();
    d
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn machine() -> Machine {
    let run = |cmd: &str, args: &[&str]| {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_else(|| "?".into())
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "?".into());
    Machine {
        date: run("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        cpu,
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before: load(),
        profile: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        commit: run("git", &["rev-parse", "--short", "HEAD"]),
        client_version: trapdesk::lua_files::version().to_owned(),
        ..Machine::default()
    }
}

/// One exec-lua `return 1`, checked; its time.
async fn exec_one(f: &World, id: &str) -> Duration {
    let t = Instant::now();
    let r = f
        .call("exec-lua", json!({"traposId": id, "code": "return 1"}))
        .await;
    let took = t.elapsed();
    let d = ok(&r, "exec-lua");
    assert_eq!(d["returns"][0]["value"], 1, "{d}");
    took
}

/// One MCP `ping` through the same endpoint: the SDK's own round trip (HTTP, the bearer
/// check, rmcp's client and server) with no tool and no computer behind it.
async fn ping_one(f: &World) -> Duration {
    let peer = f.client.peer().clone();
    let t = Instant::now();
    let r = peer
        .send_request(rmcp::model::ClientRequest::PingRequest(
            rmcp::model::PingRequest::default(),
        ))
        .await;
    let took = t.elapsed();
    assert!(r.is_ok(), "ping: {r:?}");
    took
}

/// Waits until the computer serves everything in `what` (the shell's input among them).
async fn wait_serves(f: &World, id: &str, what: &[&str]) {
    let start = Instant::now();
    loop {
        let c = f.host.session.computer(id);
        if c.is_some_and(|c| c.online && what.iter().all(|w| c.serves.iter().any(|s| s == w))) {
            return;
        }
        assert!(
            start.elapsed() < craftos::LINK_TIMEOUT,
            "{id} never served {what:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `cond` holds, for at most `limit`.
async fn wait_until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "{what} within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs the whole harness. `progress` is told what is being measured as it goes.
pub async fn run(cfg: &Config, progress: impl Fn(&str)) -> Report {
    let mut report = Report {
        machine: machine(),
        ..Report::default()
    };
    // The floor computer first, so it boots while the client installs.
    let listening = floor::Listening::bind().await;
    let floor_pc = CraftComputer::spawn_program(
        &craftos::launcher(),
        2,
        "floor",
        &floor::floor_lua(listening.port),
    );
    progress("booting the client's computer and the floor's");
    let f = World::boot(Runtime::CraftOs, &["bench"]).await;
    let mut peer = listening.accept(craftos::LINK_TIMEOUT).await;
    let pc = &f.computers[0];
    let id = pc.trapos_id.clone();
    let files = pc.files();
    wait_serves(&f, &id, &["exec-lua", "write-file", "read-file", "input"]).await;
    tokio::time::sleep(Duration::from_secs(cfg.settle_secs)).await;

    // The client's files, before anything else is written.
    report.disk = client_disk(&files);
    let r = f
        .call("exec-lua", json!({"traposId": id, "code": "return _HOST"}))
        .await;
    let d = ok(&r, "exec-lua _HOST");
    report.machine.runtime = d["returns"][0]["value"].as_str().unwrap_or("?").to_owned();

    // The player's counting program, typed at the shell.
    std::fs::write(files.join("count.lua"), COUNT).unwrap();
    let r = f
        .call("send-input", json!({"traposId": id, "text": "count\n"}))
        .await;
    ok(&r, "send-input");
    wait_until(
        Duration::from_secs(20),
        "the counting program started",
        || seen(&files).is_some(),
    )
    .await;

    progress("idle");
    let w = Window::open(&files).await;
    tokio::time::sleep(Duration::from_secs(cfg.idle_secs)).await;
    report.idle = w.close(&files).await;

    progress("exec-lua, MCP ping and the echo, interleaved");
    for _ in 0..5 {
        exec_one(&f, &id).await;
        ping_one(&f).await;
        peer.echo().await;
    }
    // In blocks of ten, so a change of the machine's load falls on the three series alike.
    let w = Window::open(&files).await;
    let mut left = cfg.calls;
    while left > 0 {
        let n = left.min(10);
        for _ in 0..n {
            report.echo.0.push(peer.echo().await);
        }
        for _ in 0..n {
            report.ping.0.push(ping_one(&f).await);
        }
        for _ in 0..n {
            report.exec.0.push(exec_one(&f, &id).await);
        }
        left -= n;
    }
    report.exec_events = w.close(&files).await;

    for kind in ["binary", "text"] {
        progress(&format!("{kind} transfers"));
        let body = content(kind, cfg.size);
        let mut t = Transfer {
            kind,
            size: body.len(),
            write: Series::default(),
            read: Series::default(),
            read_calls: 0,
            floor_write: Series::default(),
            floor_read: Series::default(),
            events_write: Events::default(),
            events_read: Events::default(),
        };
        for rep in 0..cfg.reps {
            // The floor, then the same bytes through trapdesk.
            let path = format!("floor-{kind}.bin");
            t.floor_write.0.push(peer.write(&path, &body).await);
            assert!(
                std::fs::read(floor_pc.files().join(&path)).unwrap() == body,
                "the floor wrote other bytes"
            );
            let (took, back) = peer.read(&path).await;
            assert!(back == body, "the floor read other bytes");
            t.floor_read.0.push(took);

            let path = format!("bench-{kind}.bin");
            let w = Window::open(&files).await;
            t.write
                .0
                .push(write_file(&f, &id, &path, kind, &body).await);
            let ev = w.close(&files).await;
            assert!(
                std::fs::read(files.join(&path)).unwrap() == body,
                "write-file wrote other bytes"
            );
            let w = Window::open(&files).await;
            let (took, calls, back) = read_file(&f, &id, &path).await;
            let ev_read = w.close(&files).await;
            assert!(back == body, "read-file read other bytes");
            t.read.0.push(took);
            if rep == 0 {
                t.read_calls = calls;
                t.events_write = ev;
                t.events_read = ev_read;
            } else {
                assert_eq!(calls, t.read_calls, "the same file read in other pages");
            }
            // Room for the next one: a default disk does not hold two copies beside the
            // client.
            let r = f
                .call(
                    "exec-lua",
                    json!({"traposId": id, "code": format!("fs.delete('{path}') return not fs.exists('{path}')")}),
                )
                .await;
            assert_eq!(ok(&r, "fs.delete")["returns"][0]["value"], true);
        }
        report.transfers.push(t);
    }
    peer.quit().await;
    report.machine.load_after = load();
    drop(floor_pc);
    drop(f);
    report
}

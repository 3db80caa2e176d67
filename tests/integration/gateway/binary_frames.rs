//! Binary frames end to end (docs/protocol.md, "Binary frames"), one body on the emulator and
//! on CraftOS-PC: every byte value, 500 KB and 1 MiB byte-exact through `write-file`/`read-file`
//! (rmcp's client) and through the CLI's `put`/`get`, with the binary path in use (the hello said
//! `binary` and the host took it) and again with the client forced to the base64 path (the
//! setting `trapdesk.binary` false, then a reboot); and, under a small `max_websocket_message`,
//! no frame over the limit either way (CC closes the socket on a larger incoming frame and
//! refuses a larger send, so a link that stays up at the same limit proves it).
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use std::process::Command;

use crate::support::world::on_both_runtimes;
use base64::Engine;
use fake::{data, text};
use serde_json::json;
use world::{Runtime, Spec, World};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Every byte value, then pseudo-random bytes (not a short cycle) up to `len`.
fn bytes(len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..=255u8).collect();
    let mut x: u32 = 0x9e37_79b9;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push((x >> 24) as u8);
    }
    v.truncate(len);
    v
}

async fn write(w: &World, path: &str, content: &[u8]) {
    let r = w
        .call(
            "write-file",
            json!({"traposId": "store", "path": path, "content": B64.encode(content),
                "encoding": "base64"}),
        )
        .await;
    assert_ne!(
        r.is_error,
        Some(true),
        "{path}: {}\n{}",
        text(&r),
        w.computer("store").dump()
    );
}

/// `read-file` calls made by [`read_back`], for the measurement's figures.
static PAGES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Reads `path` back through `read-file`'s pages, as an agent does.
async fn read_back(w: &World, path: &str) -> Vec<u8> {
    let mut got = Vec::new();
    let mut offset = 0u64;
    loop {
        PAGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let r = w
            .call(
                "read-file",
                json!({"traposId": "store", "path": path, "offset": offset}),
            )
            .await;
        assert_ne!(r.is_error, Some(true), "{path}@{offset}: {}", text(&r));
        let d = data(&r);
        let content = d["content"].as_str().unwrap();
        match d["encoding"].as_str() {
            Some("base64") => got.extend(B64.decode(content).unwrap()),
            _ => got.extend(content.as_bytes()),
        }
        match d["nextOffset"].as_u64() {
            Some(n) => {
                assert!(n > offset, "{d}");
                offset = n;
            }
            None => return got,
        }
    }
}

fn cli(w: &World, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.arg(args[0])
        .args(["--connect", &w.host.mcp_url()])
        .args(&args[1..])
        .env("TRAPDESK_DATA_DIR", &w.host.settings.data_dir)
        .env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN");
    c
}

async fn run(mut cmd: Command) {
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Large returned strings (blobs on a binary link) read the same either way: text as text,
/// bytes that are not UTF-8 as base64, small ones and other values as they were.
async fn returns(w: &World) {
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "store",
                "code": "return ('h\u{e9}llo '):rep(1000), string.char(0, 255, 167):rep(2000), 42, 'small'"}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let d = data(&r);
    let bin: Vec<u8> = [0u8, 255, 167].repeat(2000);
    assert_eq!(
        d["returns"][0],
        json!({"type": "string", "value": "h\u{e9}llo ".repeat(1000)})
    );
    assert_eq!(
        d["returns"][1],
        json!({"type": "string", "encoding": "base64", "value": B64.encode(&bin)})
    );
    assert_eq!(d["returns"][2], json!({"type": "number", "value": 42}));
    assert_eq!(d["returns"][3], json!({"type": "string", "value": "small"}));
}

/// The three sizes both ways, by MCP and by the CLI, compared with the computer's own disk.
async fn round_trips(w: &World, tag: &str) {
    returns(w).await;
    let work = tempfile::tempdir().unwrap();
    for (name, content) in [
        ("every-byte", (0..=255u8).collect::<Vec<u8>>()),
        ("500k", bytes(500 * 1024)),
        ("1m", bytes(1024 * 1024)),
    ] {
        let path = format!("{tag}/{name}.bin");
        write(w, &path, &content).await;
        let disk = std::fs::read(w.files("store").join(&path)).unwrap();
        // Where they part, so that a rare failure says what kind it is (short, or changed).
        let first = disk.iter().zip(&content).position(|(a, b)| a != b);
        assert!(
            disk == content,
            "{path}: the computer's copy differs: {} bytes on disk of {}, first difference at {first:?}",
            disk.len(),
            content.len()
        );
        assert!(
            read_back(w, &path).await == content,
            "{path}: read back differs"
        );

        let local = work.path().join(format!("{name}.bin"));
        std::fs::write(&local, &content).unwrap();
        let remote = format!("store:/{tag}/put-{name}.bin");
        run(cli(w, &["put", local.to_str().unwrap(), &remote])).await;
        let disk = std::fs::read(w.files("store").join(format!("{tag}/put-{name}.bin"))).unwrap();
        assert!(disk == content, "{remote}: the put copy differs");
        let back = work.path().join(format!("{name}.back"));
        run(cli(w, &["get", &remote, back.to_str().unwrap()])).await;
        assert!(
            std::fs::read(&back).unwrap() == content,
            "{remote}: the get copy differs"
        );
    }
}

fn binary_link(w: &World) -> Option<bool> {
    w.session()
        .computer(&w.trapos("store"))
        .unwrap()
        .machine
        .binary
}

async fn byte_exact_both_ways_binary_and_base64(rt: Runtime) {
    // 1 MiB twice over (the new copy beside the old) does not fit a default disk of 1,000,000
    // bytes: a raised computer_space_limit (CraftOS-PC does not limit writes).
    let spec = Spec {
        disk_space: Some(16_000_000),
        ..Spec::default()
    };
    let w = World::boot_with(rt, &[("store", spec)]).await;
    assert_eq!(binary_link(&w), Some(true), "the hello said binary");
    round_trips(&w, "bin").await;

    // Forced to the base64 path: the client no longer says it takes binary frames.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "store",
                "code": "settings.set('trapdesk.binary', false) settings.save() return true"}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let r = w
        .call("reboot-computer", json!({"traposId": "store"}))
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    w.wait_serves("store", &["write-file", "read-file"]).await;
    assert_eq!(binary_link(&w), None, "the hello no longer says binary");
    round_trips(&w, "b64").await;
}

on_both_runtimes!(byte_exact_both_ways_binary_and_base64);

/// Under a 16 KiB rule the host cuts a write's content into frames that fit and the client cuts
/// a page and its output: the link stays up at the same limit (a larger incoming frame would
/// close the socket; a larger send would be refused and halve the limit).
async fn no_frame_over_the_limit(rt: Runtime) {
    let spec = Spec {
        max_websocket_message: Some(16384),
        disk_space: Some(4_000_000),
        ..Spec::default()
    };
    let w = World::boot_with(rt, &[("store", spec)]).await;
    let t = w.trapos("store");
    assert_eq!(binary_link(&w), Some(true));
    // The first link's hello can only say CC's default (131072): the computer finds the rule's
    // limit right after `welcome` and says it with `limit` (docs/protocol.md, "Frame limit").
    // A large request sent before that arrives is refused by CC as any frame over the rule is,
    // text or binary, so the test waits for it as a second link would not need to.
    crate::support::wait_for(
        rt.link_timeout(),
        || w.session().computer(&t).unwrap().max_message == 16384,
        || "no limit from the computer".to_owned(),
    )
    .await;
    let since = w.session().computer(&t).unwrap().connected_at;
    let content = bytes(300 * 1024);
    write(&w, "big.bin", &content).await;
    // The whole file returned in one answer (a blob of 300 KB) and 100 KB of output: the client
    // must cut both.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "store",
                "code": "print(('x'):rep(100000)) local h = fs.open('big.bin', 'rb') local s = h.readAll() h.close() return s"}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let d = data(&r);
    assert_eq!(d["outputBytes"], 100_001, "{}", text(&r));
    assert_eq!(d["returns"][0]["type"], "string", "{}", text(&r));
    assert_eq!(d["returns"][0]["encoding"], "base64", "{}", text(&r));
    assert!(
        read_back(&w, "big.bin").await == content,
        "read back differs"
    );
    let disk = std::fs::read(w.files("store").join("big.bin")).unwrap();
    assert!(disk == content, "the computer's copy differs");
    let c = w.session().computer(&t).unwrap();
    assert!(c.online, "the link dropped");
    assert_eq!(c.connected_at, since, "the computer linked again");
    assert_eq!(c.max_message, 16384, "a frame was refused as too large");
}

on_both_runtimes!(no_frame_over_the_limit);

/// The median of `v`.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One mode's figures on CraftOS-PC: wall time through MCP and the CraftOS-PC process's own CPU
/// time (the computer's Lua thread, the part a server pays for; it holds under a loaded machine
/// where wall time does not).
async fn measure_mode(w: &World, mode: &str) {
    let cpu = || w.computer("store").craft().cpu_ms().unwrap_or(f64::NAN);
    let exec = |code: &'static str| w.call("exec-lua", json!({"traposId": "store", "code": code}));
    for _ in 0..5 {
        exec("return 1").await;
    }
    let (mut wall, mut c) = (Vec::new(), Vec::new());
    for _ in 0..100 {
        let (t, c0) = (std::time::Instant::now(), cpu());
        let r = exec("return 1").await;
        wall.push(t.elapsed().as_secs_f64() * 1e3);
        c.push(cpu() - c0);
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
    }
    println!(
        "{mode}: exec-lua return 1: median {:.2} ms wall, {:.2} ms CraftOS-PC CPU per call (the mean: CPU time counts in 10 ms ticks)",
        median(wall),
        c.iter().sum::<f64>() / c.len() as f64
    );
    let content = bytes(500 * 1024);
    let (mut wall, mut c, mut rwall, mut rc) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    PAGES.store(0, std::sync::atomic::Ordering::Relaxed);
    for i in 0..5 {
        let path = format!("m/{i}.bin");
        let (t, c0) = (std::time::Instant::now(), cpu());
        write(w, &path, &content).await;
        wall.push(t.elapsed().as_secs_f64() * 1e3);
        c.push(cpu() - c0);
        let (t, c0) = (std::time::Instant::now(), cpu());
        assert!(read_back(w, &path).await == content);
        rwall.push(t.elapsed().as_secs_f64() * 1e3);
        rc.push(cpu() - c0);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "{mode}: 500 KB write-file: median {:.1} ms wall, {:.1} ms CPU (mean); paged read-file back in {} calls: median {:.1} ms wall, {:.1} ms CPU (mean)",
        median(wall.clone()),
        mean(&c),
        PAGES.swap(0, std::sync::atomic::Ordering::Relaxed) / 5,
        median(rwall.clone()),
        mean(&rc)
    );
}

/// The floors, measured inside the computer: a bare `fs` write and read of the same 500 KB, each
/// 100 times in one call, by `os.epoch` inside and by the process's CPU time.
async fn measure_floor(w: &World) {
    let cpu = || w.computer("store").craft().cpu_ms().unwrap_or(f64::NAN);
    for (what, body) in [
        (
            "write",
            "local h = fs.open('floor.bin', 'wb') h.write(s) h.close()",
        ),
        (
            "read",
            "local h = fs.open('floor.bin', 'rb') local r = h.read(#s) h.close()",
        ),
    ] {
        let code = format!(
            "local s = ('x'):rep(500 * 1024) local h = fs.open('floor.bin', 'wb') h.write(s) h.close() \
             local t0 = os.epoch('utc') for i = 1, 100 do {body} end return (os.epoch('utc') - t0) / 100"
        );
        let c0 = cpu();
        let r = w
            .call(
                "exec-lua",
                json!({"traposId": "store", "code": code, "timeoutMs": 120000}),
            )
            .await;
        let used = cpu() - c0;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        println!(
            "floor: bare 500 KB fs {what}: {} ms wall (os.epoch inside the computer), {:.2} ms CPU, each the mean of 100",
            data(&r)["returns"][0]["value"],
            used / 100.0
        );
    }
}

/// The figures of BENCHMARKS.md's "Binary frames" section: `CRAFTOS_PC=… cargo test --release
/// --test integration gateway::binary_frames::measure -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: run it with --ignored --nocapture (needs CRAFTOS_PC)"]
async fn measure_on_craftos_pc() {
    let spec = Spec {
        disk_space: Some(16_000_000),
        ..Spec::default()
    };
    let w = World::boot_with(Runtime::CraftOs, &[("store", spec)]).await;
    measure_floor(&w).await;
    measure_mode(&w, "binary").await;
    w.call(
        "exec-lua",
        json!({"traposId": "store", "code": "settings.set('trapdesk.binary', false) settings.save()"}),
    )
    .await;
    w.call("reboot-computer", json!({"traposId": "store"}))
        .await;
    w.wait_serves("store", &["write-file", "read-file"]).await;
    assert_eq!(binary_link(&w), None);
    measure_mode(&w, "base64").await;
    measure_floor(&w).await;
}

/// The same figures with the client's direct hand-over (a request and its
/// answer as calls between the daemon and the server, one event per short request) and then,
/// in the same run on the same computer, with it switched off (the shared table emptied, so
/// both sides fall back to the `trapdesk_request` / `trapdesk_respond` events).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: run it with --ignored --nocapture (needs CRAFTOS_PC)"]
async fn measure_direct_and_events_on_craftos_pc() {
    let spec = Spec {
        disk_space: Some(16_000_000),
        ..Spec::default()
    };
    let w = World::boot_with(Runtime::CraftOs, &[("store", spec)]).await;
    measure_floor(&w).await;
    measure_mode(&w, "binary, direct").await;
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "store", "code": "_G.trapdeskClient.servers = {} _G.trapdeskClient.daemon = nil return true"}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    measure_mode(&w, "binary, events").await;
}

/// Where a 500 KB write-file's time goes on the computer: `files.writeFile` alone (journal,
/// quota checks, new copy, swap) against a bare write, timed inside CraftOS-PC.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: run it with --ignored --nocapture (needs CRAFTOS_PC)"]
async fn profile_write_on_craftos_pc() {
    let w = World::boot(Runtime::CraftOs, &["store"]).await;
    let code = "local files = dofile('/trapdesk/apis/files.lua') files.JOURNAL = '/trapdesk/journal' \
        local s = ('x'):rep(500 * 1024) local parts = {} for i = 1, 4 do parts[i] = s:sub((i - 1) * 128000 + 1, i * 128000) end \
        parts[5] = s:sub(512001) \
        local t0 = os.epoch('utc') for i = 1, 10 do fs.delete('p.bin') local h = fs.open('p.bin', 'wb') h.write(s) h.close() end \
        local t1 = os.epoch('utc') for i = 1, 10 do local r = files.writeFile('q.bin', parts) assert(r.ok, r.error) end \
        local t2 = os.epoch('utc') for i = 1, 10 do local h = fs.open('q.bin', 'rb') h.seek('set', 100000) local r = h.read(9000) h.close() end \
        local t3 = os.epoch('utc') for i = 1, 10 do local r = files.readFile('q.bin', 100000, 9000) end \
        return (t1 - t0) / 10, (t2 - t1) / 10, (t3 - t2) / 10, (os.epoch('utc') - t3) / 10";
    let r = w
        .call("exec-lua", json!({"traposId": "store", "code": code}))
        .await;
    let d = data(&r);
    println!(
        "bare write {} ms, files.writeFile {} ms, bare page read {} ms, files.readFile page {} ms",
        d["returns"][0]["value"],
        d["returns"][1]["value"],
        d["returns"][2]["value"],
        d["returns"][3]["value"]
    );
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
}

/// Where an `exec-lua` of `return 1` spends the computer's time, inside CraftOS-PC, by the
/// process's own CPU time (wall time on a loaded machine is mostly waiting for a core): the
/// daemon's decoding of the request frame, the server's decoding, running and encoding, and
/// one event through every coroutine of the client (queued and pulled by a chunk), each
/// repeated in one call and divided.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: run it with --ignored --nocapture (needs CRAFTOS_PC)"]
async fn profile_exec_on_craftos_pc() {
    let w = World::boot(Runtime::CraftOs, &["store"]).await;
    let setup = "local json = dofile('/trapdesk/apis/json.lua') local run = dofile('/trapdesk/apis/run.lua') \
        local captures = dofile('/trapdesk/apis/capture.lua') local N = 2000 \
        local frame = '{\"type\":\"gateway_request\",\"id\":\"h-k3x9qa-42\",\"request\":\"exec-lua\",\"payload\":{\"code\":\"return 1\",\"binary\":true},\"timeout_ms\":30000}' ";
    let parts = [
        ("nothing (the call itself)", "return 1"),
        (
            "the daemon decodes the request frame",
            "for i = 1, N do json.decode(frame, nil, 'payload') end",
        ),
        (
            "the server decodes, runs and encodes",
            "for i = 1, N do local p = json.decode('{\"code\":\"return 1\",\"binary\":true}') \
          local cap = captures.newCapture(function() end) local t = captures.newTerm(cap, term.current()) \
          local r = run.executeLua(p.code, nil, { capture = cap }) json.encodeParts(r) end",
        ),
        (
            "one event through the client",
            "for i = 1, N do os.queueEvent('trapdesk_probe_x') os.pullEvent('trapdesk_probe_x') end",
        ),
    ];
    let mut base = 0.0;
    for (i, (what, body)) in parts.iter().enumerate() {
        let code = format!("{setup} {body}");
        let c0 = w.computer("store").craft().cpu_ms().unwrap_or(f64::NAN);
        let r = w
            .call(
                "exec-lua",
                json!({"traposId": "store", "code": code, "timeoutMs": 120000}),
            )
            .await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let used = w.computer("store").craft().cpu_ms().unwrap_or(f64::NAN) - c0;
        if i == 0 {
            base = used;
            println!("{what}: {used:.0} ms CPU");
        } else {
            println!("{what}: {:.0} us CPU each", (used - base) * 1000.0 / 2000.0);
        }
    }
}

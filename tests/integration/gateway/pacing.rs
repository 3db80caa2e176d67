//! Large payloads in slices: the client's JSON (both ways), base64, file writes and output
//! batching pull events between slices, on the emulator and (with `CRAFTOS_PC`) on CraftOS-PC.
//!
//! The client's meter (`lua/apis/pace.lua`) is turned on by creating the global table
//! `trapdesk_measure`; each metered program (the daemon, the exec server) then records the
//! longest time it held the computer between two yields and how many of its pauses yielded.
//! This test asserts the pauses yielded (which cannot happen unless the work is sliced) and
//! prints the figures (BENCHMARKS.md, "Slices"); no time is asserted. The slices are asserted on
//! the base64 path (a client with `trapdesk.binary` false, as on an older runtime): on a binary
//! link (docs/protocol.md, "Binary frames") a file's bytes and a large returned string are not
//! worked on by Lua at all, so there is nothing to slice; its figures are printed first.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use base64::Engine as _;
use fake::{Client, call, data, text};
use serde_json::{Value, json};
use world::{Runtime, Spec, World};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
const MB: usize = 1024 * 1024;

/// Reads and resets the meter: `{daemon = {max_ms, slices, events}, ["mcp-computer-server"] = …}`.
async fn meter(client: &Client, who: &str) -> Value {
    let code = "local m = {} for k, v in pairs(trapdesk_measure) do m[k] = {max_ms = v.max_ms, slices = v.slices} \
                v.max_ms, v.slices = 0, 0 end return m";
    let r = call(client, "exec-lua", json!({"traposId": who, "code": code})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    data(&r)["returns"][0]["value"].clone()
}

fn figure(m: &Value, program: &str) -> (f64, u64) {
    (
        m[program]["max_ms"].as_f64().unwrap_or(0.0),
        m[program]["slices"].as_u64().unwrap_or(0),
    )
}

/// The computer labelled `miner` without binary frames from its next link on.
async fn force_base64(w: &World) {
    let r = call(
        &w.client,
        "exec-lua",
        json!({"traposId": w.trapos("miner"),
            "code": "settings.set('trapdesk.binary', false) settings.save() return true"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let r = call(
        &w.client,
        "reboot-computer",
        json!({"traposId": w.trapos("miner")}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    w.wait_serves("miner", &["write-file", "read-file"]).await;
}

/// Runs the large payloads on the computer labelled `miner`, printing one line per case;
/// `sliced`: the link is base64, and the write and the return must have been sliced.
async fn large_payloads_are_sliced(w: &World, sliced: bool) {
    let client = &w.client;
    let who = &*w.trapos("miner");
    let runtime = w.runtime.name();
    let dump = || w.computer("miner").dump();
    let files = w.files("miner");
    let r = call(
        client,
        "exec-lua",
        json!({"traposId": who, "code": "_G.trapdesk_measure = {} return true"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    meter(client, who).await;
    let report = |case: &str, m: &Value| {
        let (dmax, dslices) = figure(m, "daemon");
        let (smax, sslices) = figure(m, "mcp-computer-server");
        let case = format!("{case} ({})", if sliced { "base64" } else { "binary" });
        eprintln!(
            "pacing {runtime} | {case} | daemon held {dmax:.0} ms max, {dslices} slices | \
             server held {smax:.0} ms max, {sslices} slices"
        );
        sslices
    };

    // 1 MB written: the request's JSON (1.4 MB) decoded and the base64 decoded in slices,
    // written piece by piece.
    let body: Vec<u8> = (0..MB).map(|k| (k * 7919 + k / 251) as u8).collect();
    let r = call(
        client,
        "write-file",
        json!({"traposId": who, "path": "paced.bin", "content": B64.encode(&body), "encoding": "base64"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}\n{}", text(&r), dump());
    let m = meter(client, who).await;
    let slices = report("write-file 1 MB", &m);
    assert!(!sliced || slices > 0, "the 1 MB write was not sliced: {m}");

    // 1 MB returned: its JSON (every byte above 0x7F escaped, about 4 MB of text) encoded in
    // slices, the answer fragmented from the pieces.
    let r = call(
        client,
        "exec-lua",
        json!({"traposId": who, "code": "local h = fs.open('paced.bin', 'rb') local s = h.readAll() h.close() return s"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["returns"][0]["type"], "string", "{}", text(&r));
    let m = meter(client, who).await;
    let slices = report("exec-lua returning 1 MB of bytes", &m);
    assert!(!sliced || slices > 0, "the 1 MB answer was not sliced: {m}");

    // 1 MB read back page by page through read-file.
    let mut got = Vec::new();
    let mut offset = 0u64;
    loop {
        let r = call(
            client,
            "read-file",
            json!({"traposId": who, "path": "paced.bin", "offset": offset}),
        )
        .await;
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
        let d = data(&r);
        got.extend(B64.decode(d["content"].as_str().unwrap()).unwrap());
        match d["nextOffset"].as_u64() {
            Some(n) => offset = n,
            None => break,
        }
    }
    // Where they part, so that a rare failure says what kind it is (short, or changed), and
    // whether the computer's own copy was already wrong.
    let first = got.iter().zip(&body).position(|(a, b)| a != b);
    assert!(
        got == body,
        "read back differs: {} bytes of {}, first difference at {first:?}; the computer's copy \
         is {}",
        got.len(),
        body.len(),
        match std::fs::read(files.join("paced.bin")) {
            Ok(disk) if disk == body => "right".to_owned(),
            Ok(disk) => format!("wrong too ({} bytes)", disk.len()),
            Err(e) => format!("unreadable: {e}"),
        }
    );
    let m = meter(client, who).await;
    report("read-file 1 MB in pages", &m);

    // 1 MB of output in one print, then 1 MB in 1,024 lines with the chunk yielding every 64.
    let r = call(
        client,
        "exec-lua",
        json!({"traposId": who, "code": "print(('x'):rep(1048575)) return 1"}),
    )
    .await;
    assert_eq!(data(&r)["outputBytes"], MB, "{}", text(&r));
    let m = meter(client, who).await;
    report("output 1 MB in one print", &m);
    let r = call(
        client,
        "exec-lua",
        json!({"traposId": who, "code": "for i = 1, 1024 do print(('y'):rep(1023)) if i % 64 == 0 then sleep(0) end end return 1"}),
    )
    .await;
    assert_eq!(data(&r)["outputBytes"], MB, "{}", text(&r));
    let m = meter(client, who).await;
    report("output 1 MB in 1,024 lines", &m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_payloads_are_sliced_on_the_emulator() {
    // 1 MB files measure the slicing; a default computer holds 1,000,000 bytes with the client
    // on it, so this one's quota is raised, as a server's `computer_space_limit` can be.
    let spec = Spec {
        disk_space: Some(4_000_000),
        ..Spec::default()
    };
    let w = World::boot_with(Runtime::Emulator, &[("miner", spec)]).await;
    large_payloads_are_sliced(&w, false).await;
    force_base64(&w).await;
    large_payloads_are_sliced(&w, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn large_payloads_are_sliced_on_craftos_pc() {
    let w = World::boot(Runtime::CraftOs, &["miner"]).await;
    large_payloads_are_sliced(&w, false).await;
    force_base64(&w).await;
    large_payloads_are_sliced(&w, true).await;
}

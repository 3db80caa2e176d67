//! exec-lua round trips and 1 MB file transfers through the MCP endpoint, on a CraftOS-PC
//! computer (a real CC runtime) beside an emulated one, on the same host and client.
//!
//! `CRAFTOS_PC=<CraftOS-PC launcher> cargo run --example craftos_bench` (CI's launcher: `.ci/run`)
//! (prints a Markdown table; BENCHMARKS.md records the figures). Without `CRAFTOS_PC` it says
//! how to enable it and exits with status 2.
#![allow(clippy::unwrap_used, clippy::panic, dead_code)]

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "../tests/support/mcp_fake.rs"]
mod fake;

#[path = "../tests/support/craftos.rs"]
mod craftos;

use std::time::{Duration, Instant};

use base64::Engine as _;
use fake::{data, text};
use serde_json::json;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
const ROUND_TRIPS: usize = 200;
const MB: usize = 1024 * 1024;

fn stats(mut s: Vec<Duration>) -> (f64, f64, f64) {
    s.sort();
    let n = s.len();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = ms(s.iter().sum::<Duration>()) / n as f64;
    (mean, ms(s[n / 2]), ms(s[(n * 99 / 100).min(n - 1)]))
}

async fn measure(f: &craftos::Fleet, who: &str, name: &str) {
    // Warm up: the first calls load the chunk machinery.
    for _ in 0..5 {
        f.call("exec-lua", json!({"traposId": who, "code": "return 1"}))
            .await;
    }
    let mut samples = Vec::new();
    for _ in 0..ROUND_TRIPS {
        let t = Instant::now();
        let r = f
            .call("exec-lua", json!({"traposId": who, "code": "return 1"}))
            .await;
        samples.push(t.elapsed());
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
    }
    let (mean, p50, p99) = stats(samples);

    let body: Vec<u8> = (0..MB).map(|k| (k * 7919 + k / 251) as u8).collect();
    let t = Instant::now();
    let r = f
        .call(
            "write-file",
            json!({"traposId": who, "path": "bench.bin", "content": B64.encode(&body), "encoding": "base64"}),
        )
        .await;
    let write = t.elapsed();
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let t = Instant::now();
    let mut back = Vec::new();
    let mut offset = 0u64;
    let mut pages = 0;
    loop {
        let r = f
            .call(
                "read-file",
                json!({"traposId": who, "path": "bench.bin", "offset": offset}),
            )
            .await;
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
        let d = data(&r);
        back.extend(B64.decode(d["content"].as_str().unwrap()).unwrap());
        pages += 1;
        match d["nextOffset"].as_u64() {
            Some(n) => offset = n,
            None => break,
        }
    }
    let read = t.elapsed();
    assert!(back == body, "{name}: read back differs");
    println!(
        "| {name:<22} | {ROUND_TRIPS} | {mean:>6.2} | {p50:>6.2} | {p99:>6.2} | {:>7.2} | {:>7.2} ({pages} pages) |",
        write.as_secs_f64(),
        read.as_secs_f64()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os(craftos::ENV).is_none_or(|v| v.is_empty()) {
        eprintln!(
            "craftos_bench needs CraftOS-PC: set {} to its launcher (see the top of this file)",
            craftos::ENV
        );
        std::process::exit(2);
    }
    let f = craftos::Fleet::boot(&["craft"]).await;
    let _emu = support::emulated(&f.host, 50, Some("emu")).await;
    println!(
        "| computer               | calls | mean ms | p50 ms | p99 ms | 1 MB write s | 1 MB read s |"
    );
    println!("|---|---|---|---|---|---|---|");
    measure(&f, "craft", "CraftOS-PC 2.8.2").await;
    measure(&f, "emu", "emulator (src/emu)").await;
}

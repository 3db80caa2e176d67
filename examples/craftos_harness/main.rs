//! The harness on the real runtime: what trapdesk costs a CraftOS-PC computer, each
//! figure beside its floor measured in the same run on the same runtime, printed as one
//! Markdown table (BENCHMARKS.md keeps the figures).
//!
//! ```sh
//! cargo build --release --example craftos_harness
//! CRAFTOS_PC=$PWD/../shared/craftos/craftos target/release/examples/craftos_harness
//! ```
//!
//! Options: `--quick` (what `tests/integration/craftos/craftos_harness.rs` runs in CI: 10 calls,
//! 150,000 bytes, one transfer each), `--calls N`, `--size BYTES`, `--idle SECONDS`, `--reps N`.
//!
//! One host in this process, one rmcp client over Streamable HTTP (the endpoint an agent
//! uses), one headless CraftOS-PC computer running the real client (linked through the
//! installer one-liner, `tests/integration/support/craftos.rs`) with a counting program at the
//! player's shell, and a second CraftOS-PC computer running the floor program (`floor.rs`): a bare
//! WebSocket echo, write and read. What is measured and what each floor includes: `measure.rs` and
//! `floor.rs`. Without `CRAFTOS_PC` it says how to enable it and exits with status 2.
#![allow(clippy::unwrap_used, clippy::panic, dead_code)]

#[path = "../../tests/integration/support/mod.rs"]
mod support;

// measure.rs names them from its parent: this crate's root here, the test's module in
// tests/integration/craftos/craftos_harness.rs.
use support::{craftos, mcp_fake as fake, world};

mod floor;
mod measure;
mod report;

use measure::Config;

fn usage() -> ! {
    eprintln!(
        "usage: craftos_harness [--quick] [--calls N] [--size BYTES] [--idle SECONDS] [--reps N]"
    );
    std::process::exit(2);
}

fn parse() -> Config {
    let mut cfg = Config::full();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = || {
            args.next()
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or_else(|| usage())
        };
        match a.as_str() {
            "--quick" => cfg = Config::quick(),
            "--calls" => cfg.calls = num().max(1),
            "--size" => cfg.size = num().max(1),
            "--idle" => cfg.idle_secs = num().max(1) as u64,
            "--reps" => cfg.reps = num().max(1),
            _ => usage(),
        }
    }
    cfg
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let cfg = parse();
    if std::env::var_os(craftos::ENV).is_none_or(|v| v.is_empty()) {
        eprintln!(
            "craftos_harness needs CraftOS-PC: set {} to its launcher, e.g. \
             CRAFTOS_PC=$PWD/../shared/craftos/craftos (CI's is set in .ci/run)",
            craftos::ENV
        );
        std::process::exit(2);
    }
    let report = measure::run(&cfg, |what| eprintln!("craftos_harness: {what}")).await;
    println!("{}", report.markdown());
}

//! Soak run: many scripted computers that misbehave at random, callers on the session API and
//! over MCP at once; prints every outcome count, requests per second and RSS, and exits non-zero
//! when a guarantee broke. See RELIABILITY.md.
//!
//!     cargo run --release --example soak -- --computers 1000 --requests 100000
//!     cargo run --release --example soak -- --computers 200 --duration 600
//!     cargo run --release --example soak -- --abuse

mod abuse;
mod sim;

use std::time::Duration;

use clap::Parser;

#[derive(Parser)]
#[command(about = "trapdesk soak: faults at random, exactly-once outcomes, bounded memory")]
struct Args {
    /// Scripted computers linked at once.
    #[arg(long, default_value_t = 100)]
    computers: u64,
    /// Requests to run (ignored with --duration).
    #[arg(long, default_value_t = 10_000)]
    requests: u64,
    /// Run for this many seconds instead of a request count.
    #[arg(long, value_name = "SECS")]
    duration: Option<u64>,
    /// Session-API callers at once.
    #[arg(long, default_value_t = 64)]
    workers: usize,
    /// MCP agents (Streamable HTTP, rmcp client) at once.
    #[arg(long, default_value_t = 4)]
    agents: usize,
    /// Request deadline in milliseconds.
    #[arg(long, default_value_t = 1500)]
    timeout_ms: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Instead of the soak: huge MCP bodies and unread SSE streams, with RSS figures.
    #[arg(long)]
    abuse: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    if a.abuse {
        return abuse::run().await;
    }
    let cfg = sim::Config {
        computers: a.computers,
        requests: a.requests,
        duration: a.duration.map(Duration::from_secs),
        workers: a.workers,
        agents: a.agents,
        timeout: Duration::from_millis(a.timeout_ms),
        seed: a.seed,
        cancel_one_in: 10,
        verbose: true,
    };
    println!("soak: {cfg:?}");
    let report = sim::run(cfg).await?;
    report.print();
    if report.exactly_once() && report.memory_returned() {
        Ok(())
    } else {
        std::process::exit(1)
    }
}

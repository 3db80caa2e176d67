//! The CraftOS-PC harness (`examples/craftos_harness/`) runs in its quick form: the same code
//! that makes BENCHMARKS.md's top table, with 10 calls and a 150,000-byte file (two
//! WebSocket frames), on CraftOS-PC (ignored without `CRAFTOS_PC`, see
//! `tests/integration/support/craftos.rs`). It asserts correctness, never speed: every exec-lua
//! returned 1, every byte written and read back is the same through trapdesk and through the floor,
//! the paged read's offsets join up, the event counts add up, and the table has every row.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{craftos, mcp_fake as fake, world};

#[path = "../../../examples/craftos_harness/floor.rs"]
mod floor;

#[path = "../../../examples/craftos_harness/measure.rs"]
mod measure;

#[path = "../../../examples/craftos_harness/report.rs"]
mod report;

use std::path::PathBuf;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn the_harness_quick_form_measures_every_row_correctly() {
    let cfg = measure::Config::quick();
    let r = measure::run(&cfg, |what| eprintln!("harness: {what}")).await;
    let table = r.markdown();
    println!("{table}");

    assert_eq!(r.exec.0.len(), cfg.calls);
    assert_eq!(r.echo.0.len(), cfg.calls);
    assert_eq!(r.ping.0.len(), cfg.calls);
    assert!(r.machine.runtime.contains("CraftOS-PC"), "{:?}", r.machine);
    // Both kinds of content moved both ways, through trapdesk and the floor (byte for byte:
    // `measure::run` compares them), each in more than one page and more than one frame.
    let kinds: Vec<&str> = r.transfers.iter().map(|t| t.kind).collect();
    assert_eq!(kinds, ["binary", "text"]);
    for t in &r.transfers {
        assert_eq!(t.size, cfg.size);
        assert!(cfg.size > floor::FRAME, "the floor's file spans frames");
        for s in [&t.write, &t.read, &t.floor_write, &t.floor_read] {
            assert_eq!(s.0.len(), cfg.reps, "{t:?}");
        }
        assert!(t.read_calls >= 2, "one page cannot hold {} bytes", t.size);
        // A request wakes the player's program at most once.
        assert!(t.events_write.count <= 1, "{t:?}");
        assert!(t.events_read.count <= t.read_calls as u64, "{t:?}");
    }
    assert!(
        r.exec_events.count <= cfg.calls as u64,
        "{:?}",
        r.exec_events
    );
    assert!(r.idle.secs >= cfg.idle_secs as f64, "{:?}", r.idle);
    // The client's files were found, and CC's count is at least their bytes.
    let d = &r.disk;
    assert!(d.files >= 1 && d.bytes > 1_000, "{d:?}");
    assert!(d.top.iter().any(|n| n == "startup.lua"), "{d:?}");
    assert!(d.counted >= d.bytes, "{d:?}");
    // One row per target: exec-lua (with its ping and the rest), a write and a read per kind,
    // idle, exec-lua's events, two transfers' events per kind, the disk.
    let rows = table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| what"))
        .count();
    assert_eq!(rows, 3 + 2 * 2 + 1 + 1 + 2 * 2 + 1, "{table}");
}

/// `cargo test` builds the examples beside the test binaries: target/<profile>/examples.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|deps| deps.parent()).unwrap();
    profile
        .join("examples")
        .join(format!("craftos_harness{}", std::env::consts::EXE_SUFFIX))
}

#[test]
fn without_craftos_pc_the_harness_says_how_and_exits_2() {
    let bin = example();
    assert!(
        bin.exists(),
        "{} not built: a whole `cargo test` builds the examples; with `--test` alone, run \
         `cargo build --example craftos_harness` first",
        bin.display()
    );
    let out = std::process::Command::new(&bin)
        .env_remove("CRAFTOS_PC")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("CRAFTOS_PC="), "{err}");
    assert!(out.stdout.is_empty());
}

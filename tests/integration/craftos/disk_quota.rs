//! Writes within a default computer's disk quota (1,000,000 bytes, each file and folder
//! costing at least 500), on the emulator: a write that does not fit is refused with what it
//! needs and what is free and touches nothing; a replace that fits only over the old file is
//! refused unless the caller asks for `inPlace`, which then works; `trapdesk put --in-place`
//! does the same from the CLI.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use std::process::Command;

use base64::Engine as _;
use fake::{data, text};
use serde_json::{Value, json};
use world::{Runtime, World};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Free bytes on the computer's disk, as `fs.getFreeSpace` says.
async fn free(w: &World) -> u64 {
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos("miner"), "code": "return fs.getFreeSpace('/')"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    data(&r)["returns"][0]["value"].as_u64().unwrap()
}

async fn write(w: &World, path: &str, bytes: &[u8], in_place: bool) -> (bool, Value) {
    let r = w
        .call(
            "write-file",
            json!({"traposId": w.trapos("miner"), "path": path, "content": B64.encode(bytes),
                   "encoding": "base64", "inPlace": in_place}),
        )
        .await;
    (r.is_error == Some(true), data(&r))
}

/// Every file on the computer outside the ROM, with its size.
fn listing(w: &World) -> Vec<(String, u64)> {
    fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<(String, u64)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                out.push((format!("{rel}/"), 0));
                walk(&p, root, out);
            } else {
                out.push((rel, e.metadata().unwrap().len()));
            }
        }
    }
    let root = w.files("miner");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_stay_within_the_quota_on_the_emulator() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    let start = free(&w).await;
    // What the installed client leaves free on a default computer (docs/lua-client.md).
    eprintln!("free on a default computer with the client installed: {start} bytes");
    assert!(start < 1_000_000 && start > 700_000, "{start}");

    // Too large for the disk at all: refused with the numbers, nothing touched (not even the
    // missing folder).
    let before = listing(&w);
    let big = vec![7u8; start as usize + 1];
    let (failed, d) = write(&w, "far/away/big.bin", &big, false).await;
    assert!(failed, "{d}");
    assert_eq!(d["error"]["code"], "no_space", "{d}");
    assert_eq!(d["free"], start, "{d}");
    let needed = d["needed"].as_u64().unwrap();
    assert!(
        needed >= start + 3 * 500,
        "two folders and a journal entry count: {d}"
    );
    assert!(
        d["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{needed} bytes; {start} are free")),
        "{d}"
    );
    assert_eq!(listing(&w), before, "a refused write touches nothing");
    // In place does not make room that is not there.
    let (failed, d) = write(&w, "big.bin", &big, true).await;
    assert!(failed, "{d}");
    assert_eq!(d["error"]["code"], "no_space", "{d}");

    // A file of 60% of what is free fits; replacing it with another of the same size does
    // not (old and new together), and is refused touching nothing unless asked in place.
    let size = (start as usize) * 6 / 10;
    let old: Vec<u8> = (0..size).map(|k| (k * 31 % 251) as u8).collect();
    let new: Vec<u8> = (0..size).map(|k| (k * 17 % 253) as u8).collect();
    let (failed, d) = write(&w, "data/log.bin", &old, false).await;
    assert!(!failed, "{d}");
    let before = listing(&w);
    let (failed, d) = write(&w, "data/log.bin", &new, false).await;
    assert!(failed, "{d}");
    assert_eq!(d["error"]["code"], "no_space_to_replace", "{d}");
    assert!(
        d["neededInPlace"].as_u64().unwrap() <= d["free"].as_u64().unwrap(),
        "{d}"
    );
    assert!(
        d["error"]["message"].as_str().unwrap().contains("inPlace"),
        "{d}"
    );
    assert_eq!(listing(&w), before, "a refused replace touches nothing");
    let on_disk = w.files("miner").join("data/log.bin");
    assert!(
        std::fs::read(&on_disk).unwrap() == old,
        "the old file is intact"
    );

    let (failed, d) = write(&w, "data/log.bin", &new, true).await;
    assert!(!failed, "in place: {d}");
    assert_eq!(d["bytes"], size, "{d}");
    assert!(std::fs::read(&on_disk).unwrap() == new, "written in place");
    let names: Vec<String> = listing(&w).into_iter().map(|(n, _)| n).collect();
    assert!(
        !names.iter().any(|n| n.contains("trapdesk-new")),
        "no copy beside it: {names:?}"
    );

    // The CLI: `put` refuses the same replace and says so; `put --in-place` writes it (in
    // pieces straight into the file, larger than one write-file).
    let local = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(local.path(), &old).unwrap();
    let dest = "miner:data/log.bin";
    let refused = cli(&w, &["put", local.path().to_str().unwrap(), dest]).await;
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Out of space"), "{stderr}");
    assert!(
        std::fs::read(&on_disk).unwrap() == new,
        "untouched by a refused put"
    );
    let put = cli(
        &w,
        &["put", "--in-place", local.path().to_str().unwrap(), dest],
    )
    .await;
    let stderr = String::from_utf8_lossy(&put.stderr).into_owned();
    assert_eq!(put.status.code(), Some(0), "{stderr}");
    assert!(std::fs::read(&on_disk).unwrap() == old, "put in place");
}

/// The `trapdesk` binary against the world's host.
async fn cli(w: &World, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.arg(args[0])
        .args(["--connect", &w.host.mcp_url()])
        .args(&args[1..]);
    c.env("TRAPDESK_DATA_DIR", &w.host.settings.data_dir)
        .env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN");
    tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap()
}

/// Where a server raised `computer_space_limit`, the same client writes files as large as the
/// disk then holds: a 1 MiB file replaced atomically by another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raised_quota_holds_larger_files_on_the_emulator() {
    let spec = world::Spec {
        disk_space: Some(4_000_000),
        ..world::Spec::default()
    };
    let w = World::boot_with(Runtime::Emulator, &[("miner", spec)]).await;
    let free = free(&w).await;
    assert!(free > 3_000_000, "{free}");
    for seed in [1u8, 2] {
        let bytes: Vec<u8> = (0..1_048_576u32).map(|k| (k % 251) as u8 ^ seed).collect();
        let (failed, d) = write(&w, "big.bin", &bytes, false).await;
        assert!(!failed, "{d}");
        let on_disk = std::fs::read(w.files("miner").join("big.bin")).unwrap();
        assert!(on_disk == bytes, "1 MiB written");
    }
}

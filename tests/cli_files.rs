//! `trapdesk put`, `get` and `ls` through a real running host with an emulated computer:
//! binary content byte-exact both ways, files larger than one piece, stdin/stdout, exit codes.
#![allow(clippy::unwrap_used, clippy::panic)]

mod support;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use support::{emulated, start_host};

fn trapdesk(url: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.arg(args[0]).args(["--connect", url]).args(&args[1..]);
    c.env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN");
    c
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every byte value, then enough pseudo-random bytes to need several pieces both ways.
fn binary(len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..=255u8).collect();
    let mut x: u32 = 0x1234_5678;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push((x >> 24) as u8);
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_and_get_are_byte_exact_for_binary_files_of_many_pieces() {
    let host = start_host().await;
    let _c = emulated(&host, 4, Some("store")).await;
    let url = host.mcp_url();
    let work = tempfile::tempdir().unwrap();
    let data = binary(200_000);
    let local = work.path().join("blob.bin");
    std::fs::write(&local, &data).unwrap();

    let put = output(trapdesk(
        &url,
        &["put", local.to_str().unwrap(), "store:/data/blob.bin"],
    ))
    .await;
    assert_eq!(put.status.code(), Some(0), "{}", text(&put.stderr));
    let on_disk = std::fs::read(host.dir.path().join("computers/4/data/blob.bin")).unwrap();
    assert!(on_disk == data, "the computer's copy differs");

    let back = work.path().join("back.bin");
    let get = output(trapdesk(
        &url,
        &["get", "4:store:/data/blob.bin", back.to_str().unwrap()],
    ))
    .await;
    assert_eq!(get.status.code(), Some(0), "{}", text(&get.stderr));
    assert!(
        std::fs::read(&back).unwrap() == data,
        "the copy back differs"
    );

    // stdin in, stdout out.
    let mut cmd = trapdesk(&url, &["put", "-", "store:/small.txt"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"h\x00\xffi\n")
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let got = output(trapdesk(&url, &["get", "store:/small.txt", "-"])).await;
    assert_eq!(got.stdout, b"h\x00\xffi\n");

    let ls = output(trapdesk(&url, &["ls", "store:/data"])).await;
    assert_eq!(ls.status.code(), Some(0));
    assert_eq!(text(&ls.stdout), "   200000  blob.bin\n");
    let ls = output(trapdesk(&url, &["ls", "store", "--json"])).await;
    let v: serde_json::Value = serde_json::from_slice(&ls.stdout).unwrap();
    assert!(
        v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "data" && e["dir"] == true),
        "{v}"
    );

    let missing = output(trapdesk(&url, &["get", "store:/nope.txt", "-"])).await;
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(missing.stdout, b"");
    assert_eq!(text(&missing.stderr).lines().count(), 1);

    let gone = output(trapdesk(
        &url,
        &["put", local.to_str().unwrap(), "nobody:/x"],
    ))
    .await;
    assert_eq!(gone.status.code(), Some(3));

    let no_file = output(trapdesk(&url, &["put", "/no/such/file", "store:/x"])).await;
    assert_eq!(no_file.status.code(), Some(2));
    host.host.stop().await;
}

//! The native file requests (file-info, make-dir, move-file, delete-file) on a real CC runtime:
//! a headless CraftOS-PC computer running the installed client, driven through the MCP tools.
//! file-info's CRC-32, computed by the client's Lua on CraftOS-PC, must equal the host's own.
//! Skipped (with one printed line) unless `CRAFTOS_PC` names a CraftOS-PC launcher; see
//! `tests/support/craftos.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod support;

#[path = "support/mcp_fake.rs"]
mod fake;

#[path = "support/craftos.rs"]
mod craftos;

use base64::Engine as _;
use craftos::Fleet;
use fake::{data, text};
use serde_json::{Value, json};
use trapdesk::protocol::kind::crc32;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

async fn ok(f: &Fleet, tool: &'static str, args: Value) -> Value {
    let r = f.call(tool, args).await;
    assert_eq!(r.is_error, Some(false), "{tool}: {}", text(&r));
    data(&r)
}

async fn refused(f: &Fleet, tool: &'static str, args: Value) -> String {
    let r = f.call(tool, args).await;
    assert_eq!(r.is_error, Some(true), "{tool}: {}", text(&r));
    let d = data(&r);
    d["error"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| d["error"].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_requests_on_craftos() {
    let Some(f) = Fleet::boot("file_requests_on_craftos", &["files"]).await else {
        return;
    };
    let mut noise: Vec<u8> = Vec::new();
    let mut x: u32 = 0x2545_F491;
    while noise.len() < 50_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise.push((x >> 24) as u8);
    }
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.bin", Vec::new()),
        ("check.txt", b"123456789".to_vec()),
        ("every.bin", (0..=255u8).collect()),
        ("noise.bin", noise),
    ];
    for (name, bytes) in &cases {
        let args = json!({"traposId": "files", "path": format!("sums/{name}"),
            "content": B64.encode(bytes), "encoding": "base64"});
        ok(&f, "write-file", args).await;
        let d = ok(
            &f,
            "file-info",
            json!({"traposId": "files", "path": format!("sums/{name}")}),
        )
        .await;
        assert_eq!(d["exists"], true, "{name}: {d}");
        assert_eq!(d["isDir"], false, "{name}: {d}");
        assert_eq!(d["size"], bytes.len(), "{name}: {d}");
        assert_eq!(d["crc32"], json!(crc32(bytes)), "{name}: {d}");
    }
    let d = ok(
        &f,
        "file-info",
        json!({"traposId": "files", "path": "sums"}),
    )
    .await;
    assert_eq!(
        (&d["exists"], &d["isDir"]),
        (&json!(true), &json!(true)),
        "{d}"
    );
    let d = ok(
        &f,
        "file-info",
        json!({"traposId": "files", "path": "nothing"}),
    )
    .await;
    assert_eq!(d["exists"], false, "{d}");

    let d = ok(
        &f,
        "make-dir",
        json!({"traposId": "files", "path": "a/b/c"}),
    )
    .await;
    assert_eq!(d["created"], true, "{d}");
    let d = ok(&f, "make-dir", json!({"traposId": "files", "path": "a/b"})).await;
    assert_eq!(d["created"], false, "{d}");

    ok(
        &f,
        "move-file",
        json!({"traposId": "files", "from": "sums/check.txt", "to": "a/moved.txt"}),
    )
    .await;
    let e = refused(
        &f,
        "move-file",
        json!({"traposId": "files", "from": "sums/every.bin", "to": "a/moved.txt"}),
    )
    .await;
    assert!(e.contains("File exists"), "{e}");
    ok(&f, "move-file", json!({"traposId": "files", "from": "sums/every.bin", "to": "a/moved.txt", "overwrite": true})).await;
    let d = ok(
        &f,
        "file-info",
        json!({"traposId": "files", "path": "a/moved.txt"}),
    )
    .await;
    assert_eq!(
        d["crc32"],
        json!(crc32(&(0..=255u8).collect::<Vec<u8>>())),
        "{d}"
    );
    let e = refused(
        &f,
        "move-file",
        json!({"traposId": "files", "from": "a/moved.txt", "to": "a/b", "overwrite": true}),
    )
    .await;
    assert!(e.contains("Is a directory"), "{e}");

    let e = refused(&f, "delete-file", json!({"traposId": "files", "path": "a"})).await;
    assert!(e.contains("not empty"), "{e}");
    let d = ok(
        &f,
        "delete-file",
        json!({"traposId": "files", "path": "a/moved.txt"}),
    )
    .await;
    assert_eq!(d["deleted"], true, "{d}");
    let d = ok(
        &f,
        "delete-file",
        json!({"traposId": "files", "path": "a/moved.txt"}),
    )
    .await;
    assert_eq!(d["deleted"], false, "{d}");
    ok(
        &f,
        "delete-file",
        json!({"traposId": "files", "path": "a/b/c"}),
    )
    .await;

    for (tool, args) in [
        ("file-info", json!({"traposId": "files", "path": "../x"})),
        ("make-dir", json!({"traposId": "files", "path": "../x"})),
        ("delete-file", json!({"traposId": "files", "path": "../x"})),
        (
            "move-file",
            json!({"traposId": "files", "from": "sums/noise.bin", "to": "../x"}),
        ),
    ] {
        let e = refused(&f, tool, args).await;
        assert!(e.starts_with("Invalid Path"), "{tool}: {e}");
    }
    let files = f.computer("files").files();
    assert!(files.join("sums/noise.bin").exists());
    assert!(!files.join("a/b/c").exists());
}

//! The file tools through rmcp's client on the emulator and on CraftOS-PC: `make-dir`,
//! `move-file`, `delete-file` and `file-info` (size, isDir, modified, readOnly and a CRC-32
//! computed on the computer), and each refusal's code: `not_found`, `exists`, `read_only`,
//! `bad_path`, `not_empty`, `is_dir`. (`no_space` is write-file's, tested in
//! tests/integration/craftos/disk_quota.rs; the policy kinds in
//! tests/integration/mcp/file_requests.rs.)
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use serde_json::{Value, json};
use trapdesk::protocol::kind::crc32;
use world::{Runtime, World};

async fn ok(w: &World, tool: &'static str, args: Value) -> Value {
    let r = w.call(tool, args).await;
    assert_ne!(r.is_error, Some(true), "{tool}: {}", text(&r));
    data(&r)
}

/// A refusal: its code in the structured content and first in the text.
async fn refused(w: &World, tool: &'static str, args: Value, code: &str) -> Value {
    let r = w.call(tool, args.clone()).await;
    assert_eq!(r.is_error, Some(true), "{tool} {args}: {}", text(&r));
    let d = data(&r);
    assert_eq!(d["error"]["code"], code, "{tool} {args}: {}", text(&r));
    assert!(text(&r).starts_with(code), "{tool} {args}: {}", text(&r));
    d
}

async fn the_file_tools(rt: Runtime) {
    let w = World::boot(rt, &["store"]).await;
    let t = "store";
    let body = "print('hello')\n";
    ok(
        &w,
        "write-file",
        json!({"traposId": t, "path": "p/main.lua", "content": body}),
    )
    .await;

    // file-info: what a transfer check needs, without reading the file back.
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let info = ok(
        &w,
        "file-info",
        json!({"traposId": t, "path": "p/main.lua"}),
    )
    .await;
    assert_eq!(info["exists"], true, "{info}");
    assert_eq!(info["isDir"], false, "{info}");
    assert_eq!(info["size"], body.len(), "{info}");
    assert_eq!(info["crc32"], json!(crc32(body.as_bytes())), "{info}");
    assert_eq!(info["readOnly"], false, "{info}");
    let modified = info["modified"]
        .as_u64()
        .unwrap_or_else(|| panic!("{info}"));
    // Written a moment ago (a minute of slack for clocks that round to seconds).
    assert!(modified.abs_diff(before) < 60_000, "{modified} vs {before}");
    let dir = ok(&w, "file-info", json!({"traposId": t, "path": "p"})).await;
    assert_eq!(
        (&dir["isDir"], &dir["size"]),
        (&json!(true), &json!(0)),
        "{dir}"
    );
    assert!(dir.get("crc32").is_none(), "{dir}");
    let rom = ok(&w, "file-info", json!({"traposId": t, "path": "rom"})).await;
    assert_eq!(rom["readOnly"], true, "{rom}");
    let none = ok(&w, "file-info", json!({"traposId": t, "path": "nope.lua"})).await;
    assert_eq!(none["exists"], false, "{none}");

    // make-dir, move-file, delete-file.
    let made = ok(&w, "make-dir", json!({"traposId": t, "path": "a/b/c"})).await;
    assert_eq!(made["created"], true, "{made}");
    let again = ok(&w, "make-dir", json!({"traposId": t, "path": "a/b/c"})).await;
    assert_eq!(again["created"], false, "{again}");
    ok(
        &w,
        "move-file",
        json!({"traposId": t, "from": "p/main.lua", "to": "a/b/c/main.lua"}),
    )
    .await;
    let moved = ok(
        &w,
        "file-info",
        json!({"traposId": t, "path": "a/b/c/main.lua"}),
    )
    .await;
    assert_eq!(moved["crc32"], info["crc32"], "{moved}");
    let deleted = ok(&w, "delete-file", json!({"traposId": t, "path": "p"})).await;
    assert_eq!(deleted["deleted"], true, "{deleted}");

    // Each refusal says which it is.
    refused(
        &w,
        "move-file",
        json!({"traposId": t, "from": "gone.lua", "to": "x.lua"}),
        "not_found",
    )
    .await;
    ok(
        &w,
        "write-file",
        json!({"traposId": t, "path": "x.lua", "content": "x"}),
    )
    .await;
    ok(
        &w,
        "write-file",
        json!({"traposId": t, "path": "y.lua", "content": "y"}),
    )
    .await;
    refused(
        &w,
        "move-file",
        json!({"traposId": t, "from": "x.lua", "to": "y.lua"}),
        "exists",
    )
    .await;
    refused(
        &w,
        "make-dir",
        json!({"traposId": t, "path": "x.lua"}),
        "exists",
    )
    .await;
    refused(
        &w,
        "move-file",
        json!({"traposId": t, "from": "x.lua", "to": "a/b"}),
        "is_dir",
    )
    .await;
    refused(
        &w,
        "make-dir",
        json!({"traposId": t, "path": "rom/mine"}),
        "read_only",
    )
    .await;
    // A file of the ROM (each runtime has its own).
    let listed = ok(&w, "list-files", json!({"traposId": t, "path": "rom"})).await;
    let entries = listed["entries"].as_array().unwrap();
    // The emulator's /rom lists nothing (its ROM is built in): then /rom itself, empty.
    let rom_path = entries
        .iter()
        .find(|e| e["dir"] == false)
        .map_or("rom".to_owned(), |e| {
            format!("rom/{}", e["name"].as_str().unwrap())
        });
    refused(
        &w,
        "delete-file",
        json!({"traposId": t, "path": rom_path}),
        "read_only",
    )
    .await;
    refused(
        &w,
        "delete-file",
        json!({"traposId": t, "path": "a"}),
        "not_empty",
    )
    .await;
    let d = refused(
        &w,
        "make-dir",
        json!({"traposId": t, "path": "../outside"}),
        "bad_path",
    )
    .await;
    assert_eq!(d["path"], "../outside", "{d}");
    refused(
        &w,
        "file-info",
        json!({"traposId": t, "path": "../../etc/passwd"}),
        "bad_path",
    )
    .await;
    refused(
        &w,
        "move-file",
        json!({"traposId": t, "from": "x.lua", "to": "../x.lua"}),
        "bad_path",
    )
    .await;
    // Nothing refused changed anything.
    let x = ok(&w, "file-info", json!({"traposId": t, "path": "x.lua"})).await;
    assert_eq!(x["crc32"], json!(crc32(b"x")), "{x}");
}

on_both_runtimes!(the_file_tools);

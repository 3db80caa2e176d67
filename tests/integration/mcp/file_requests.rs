//! The native file requests (move-file, delete-file, make-dir, file-info) on an emulated
//! computer running the real client: what each does and refuses, file-info's CRC-32 against
//! the host's own, the MCP tools over them, and `trapdesk put` and `sync` under a policy that
//! tells writes from exec. The file tools' body runs on CraftOS-PC too.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake, world};

use crate::support::world::on_both_runtimes;
use world::{Runtime, World};

use std::process::{Command, Output};

use base64::Engine as _;
use serde_json::{Value, json};
use support::{emulated, start_host, start_host_with};
use trapdesk::policy::Policy;
use trapdesk::protocol::Kind;
use trapdesk::protocol::kind::crc32;
use trapdesk::session::{Origin, RequestSpec};

async fn ask(host: &support::TestHost, kind: Kind, payload: Value) -> Value {
    host.session
        .request("1", RequestSpec::new(kind, payload), Origin::Person)
        .await
        .unwrap()
}

fn binary(len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..=255u8).collect();
    let mut x: u32 = 0x9E37_79B9;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push((x >> 24) as u8);
    }
    v.truncate(len);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_info_sums_agree_with_the_hosts() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let root = host.dir.path().join("computers/1");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("zero", vec![0]),
        (
            "text",
            b"The quick brown fox jumps over the lazy dog".to_vec(),
        ),
        ("utf8", "héllo → ☃\n".as_bytes().to_vec()),
        ("every-byte", (0..=255u8).collect()),
        ("ff", vec![0xff; 1000]),
        // Several of the client's 16 KiB pieces, not a multiple of one.
        ("large", binary(70_001)),
    ];
    for (name, bytes) in &cases {
        std::fs::write(root.join(name), bytes).unwrap();
        let v = ask(&host, Kind::FileInfo, json!({"path": name})).await;
        assert_eq!(v["ok"], true, "{name}: {v}");
        assert_eq!(v["exists"], true, "{name}: {v}");
        assert_eq!(v["isDir"], false, "{name}: {v}");
        assert_eq!(v["size"], bytes.len(), "{name}: {v}");
        assert_eq!(v["crc32"], json!(crc32(bytes)), "{name}: {v}");
    }
    let dir = ask(&host, Kind::FileInfo, json!({"path": "trapdesk"})).await;
    assert_eq!(
        (&dir["exists"], &dir["isDir"], &dir["size"]),
        (&json!(true), &json!(true), &json!(0))
    );
    assert!(dir.get("crc32").is_none(), "{dir}");
    let none = ask(&host, Kind::FileInfo, json!({"path": "nope"})).await;
    assert_eq!(
        (&none["ok"], &none["exists"]),
        (&json!(true), &json!(false))
    );
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_delete_and_make_dir_do_what_they_say_and_refuse_the_rest() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let root = host.dir.path().join("computers/1");
    std::fs::write(root.join("a.txt"), b"a").unwrap();
    std::fs::write(root.join("b.txt"), b"b").unwrap();
    std::fs::write(root.join("keep.txt"), b"k").unwrap();

    // make-dir: parents too; an existing one is fine; a file in the way is not.
    let v = ask(&host, Kind::MakeDir, json!({"path": "x/y/z"})).await;
    assert_eq!(
        (&v["ok"], &v["created"]),
        (&json!(true), &json!(true)),
        "{v}"
    );
    assert!(root.join("x/y/z").is_dir());
    let v = ask(&host, Kind::MakeDir, json!({"path": "x/y"})).await;
    assert_eq!(
        (&v["ok"], &v["created"]),
        (&json!(true), &json!(false)),
        "{v}"
    );
    let v = ask(&host, Kind::MakeDir, json!({"path": "a.txt"})).await;
    assert_eq!(v["ok"], false, "{v}");
    assert!(v["error"].as_str().unwrap().contains("File exists"), "{v}");

    // move-file: into a new directory; never over a file without overwrite; with it, yes.
    let v = ask(
        &host,
        Kind::MoveFile,
        json!({"from": "a.txt", "to": "new/a.txt"}),
    )
    .await;
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(std::fs::read(root.join("new/a.txt")).unwrap(), b"a");
    assert!(!root.join("a.txt").exists());
    let v = ask(
        &host,
        Kind::MoveFile,
        json!({"from": "b.txt", "to": "new/a.txt"}),
    )
    .await;
    assert_eq!(v["ok"], false, "{v}");
    assert!(v["error"].as_str().unwrap().contains("File exists"), "{v}");
    assert_eq!(std::fs::read(root.join("new/a.txt")).unwrap(), b"a");
    let v = ask(
        &host,
        Kind::MoveFile,
        json!({"from": "b.txt", "to": "new/a.txt", "overwrite": true}),
    )
    .await;
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(std::fs::read(root.join("new/a.txt")).unwrap(), b"b");
    assert!(!root.join("b.txt").exists());
    // No journal or sidecar is left behind by the replacing move.
    let left: Vec<String> = std::fs::read_dir(root.join("new"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["a.txt".to_owned()]);
    // A directory is never replaced, a missing source is said so, a directory moves whole.
    let v = ask(
        &host,
        Kind::MoveFile,
        json!({"from": "new/a.txt", "to": "x", "overwrite": true}),
    )
    .await;
    assert!(
        v["error"].as_str().unwrap().contains("Is a directory"),
        "{v}"
    );
    let v = ask(&host, Kind::MoveFile, json!({"from": "gone", "to": "g2"})).await;
    assert!(v["error"].as_str().unwrap().contains("No such file"), "{v}");
    let v = ask(&host, Kind::MoveFile, json!({"from": "x", "to": "w"})).await;
    assert_eq!(v["ok"], true, "{v}");
    assert!(root.join("w/y/z").is_dir());

    // delete-file: a file; nothing there; never a tree; an empty directory.
    let v = ask(&host, Kind::DeleteFile, json!({"path": "new/a.txt"})).await;
    assert_eq!(
        (&v["ok"], &v["deleted"]),
        (&json!(true), &json!(true)),
        "{v}"
    );
    assert!(!root.join("new/a.txt").exists());
    let v = ask(&host, Kind::DeleteFile, json!({"path": "new/a.txt"})).await;
    assert_eq!(
        (&v["ok"], &v["deleted"]),
        (&json!(true), &json!(false)),
        "{v}"
    );
    let v = ask(&host, Kind::DeleteFile, json!({"path": "w"})).await;
    assert_eq!(v["ok"], false, "{v}");
    assert!(v["error"].as_str().unwrap().contains("not empty"), "{v}");
    assert!(root.join("w/y/z").is_dir());
    let v = ask(&host, Kind::DeleteFile, json!({"path": "w/y/z"})).await;
    assert_eq!(v["deleted"], true, "{v}");
    assert!(!root.join("w/y/z").exists());

    // Above the root: refused alike with the dispatch code bad_path, before anything is
    // touched.
    for (kind, payload) in [
        (
            Kind::MoveFile,
            json!({"from": "keep.txt", "to": "../../out"}),
        ),
        (Kind::MoveFile, json!({"from": "../x", "to": "y"})),
        (Kind::DeleteFile, json!({"path": "../1"})),
        (Kind::MakeDir, json!({"path": "a/../../up"})),
        (Kind::FileInfo, json!({"path": ".."})),
    ] {
        let e = host
            .session
            .request("1", RequestSpec::new(kind, payload), Origin::Person)
            .await
            .unwrap_err();
        assert!(
            matches!(&e, trapdesk::session::RequestError::Remote { code, message, .. }
                if code == "bad_path" && message.contains("outside the computer's root")),
            "{kind}: {e:?}"
        );
    }
    assert!(root.join("keep.txt").exists());
    assert!(!host.dir.path().join("computers/up").exists());

    // A payload of the wrong shape is the transport's bad_request.
    let r = host
        .session
        .request(
            "1",
            RequestSpec::new(Kind::MoveFile, json!({"from": "x"})),
            Origin::Person,
        )
        .await;
    assert!(
        matches!(r, Err(trapdesk::session::RequestError::Remote { ref code, .. }) if code == "bad_request"),
        "{r:?}"
    );
    host.host.stop().await;
}

/// The binary against `host`, with the host's local token from its data dir.
fn trapdesk(host: &support::TestHost, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.arg(args[0])
        .args(["--connect", &host.mcp_url()])
        .args(&args[1..]);
    c.env("TRAPDESK_DATA_DIR", &host.settings.data_dir)
        .env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN");
    c
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

async fn host_with_policy(toml: &str) -> support::TestHost {
    let policy = Policy::from_toml(toml).unwrap();
    start_host_with(|s| s.policy = policy).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_is_a_write_not_an_exec() {
    let host = host_with_policy(
        "[policy.default]\nagent = { exec = \"deny\", write = \"allow\", read = \"allow\" }\n",
    )
    .await;
    let _c = emulated(&host, 4, Some("store")).await;
    let work = tempfile::tempdir().unwrap();
    let root = host.dir.path().join("computers/4");
    // One piece, and several (part file, file-info, move-file).
    for (name, bytes) in [("small.bin", binary(1000)), ("large.bin", binary(200_000))] {
        let local = work.path().join(name);
        std::fs::write(&local, &bytes).unwrap();
        let target = format!("store:/data/{name}");
        let put = output(trapdesk(&host, &["put", local.to_str().unwrap(), &target])).await;
        let err = String::from_utf8_lossy(&put.stderr);
        assert_eq!(put.status.code(), Some(0), "{name}: {err}");
        assert!(std::fs::read(root.join("data").join(name)).unwrap() == bytes);
    }
    let names: Vec<String> = std::fs::read_dir(root.join("data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no part file is left: {names:?}");
    // sync too: its comparison reads (list-files, file-info), its pushes and deletes write.
    let proj = work.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(proj.join("main.lua"), b"print('hi')").unwrap();
    std::fs::write(proj.join("old.lua"), b"print('old')").unwrap();
    let sync = |extra: &[&str]| {
        let mut args = vec!["sync", proj.to_str().unwrap(), "store:/proj", "--once"];
        args.extend_from_slice(extra);
        trapdesk(&host, &args)
    };
    let first = output(sync(&[])).await;
    let err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(0), "{err}");
    assert_eq!(
        std::fs::read(root.join("proj/old.lua")).unwrap(),
        b"print('old')"
    );
    std::fs::remove_file(proj.join("old.lua")).unwrap();
    let second = output(sync(&["--delete"])).await;
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{err}");
    assert!(!root.join("proj/old.lua").exists(), "{err}");
    assert!(root.join("proj/main.lua").exists(), "{err}");
    // exec is still denied to the CLI.
    let exec = output(trapdesk(&host, &["exec", "store", "return 1"])).await;
    assert_ne!(exec.status.code(), Some(0));
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_and_sync_are_refused_when_writes_are_denied() {
    let host = host_with_policy(
        "[policy.default]\nagent = { exec = \"allow\", write = \"deny\", read = \"allow\" }\n",
    )
    .await;
    let _c = emulated(&host, 4, Some("store")).await;
    let work = tempfile::tempdir().unwrap();
    let root = host.dir.path().join("computers/4");
    for (name, bytes) in [("small.bin", binary(1000)), ("large.bin", binary(200_000))] {
        let local = work.path().join(name);
        std::fs::write(&local, &bytes).unwrap();
        let target = format!("store:/{name}");
        let put = output(trapdesk(&host, &["put", local.to_str().unwrap(), &target])).await;
        let err = String::from_utf8_lossy(&put.stderr);
        assert_ne!(put.status.code(), Some(0), "{name}: {err}");
        assert!(err.contains("denies"), "{name}: {err}");
        assert!(!root.join(name).exists());
    }
    // Nothing of a refused put is left on the computer (the first write was refused).
    let hidden: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".trapdesk-part"))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    let proj = work.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(proj.join("main.lua"), b"print('hi')").unwrap();
    let sync = output(trapdesk(
        &host,
        &["sync", proj.to_str().unwrap(), "store:/proj", "--once"],
    ))
    .await;
    let err = String::from_utf8_lossy(&sync.stderr);
    assert!(err.contains("denies"), "{err}");
    assert!(!root.join("proj/main.lua").exists(), "{err}");
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_tools_over_mcp() {
    let host = host_with_policy(
        "[policy.default]\nagent = { exec = \"deny\", write = \"allow\", read = \"allow\" }\n",
    )
    .await;
    let _c = emulated(&host, 4, Some("store")).await;
    let root = host.dir.path().join("computers/4");
    std::fs::write(root.join("f.txt"), b"123456789").unwrap();
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    let tool = |name: &'static str, args: Value| {
        let client = &client;
        async move {
            let r = fake::call(client, name, args).await;
            assert_ne!(r.is_error, Some(true), "{name}: {}", fake::text(&r));
            fake::data(&r)
        }
    };
    let info = tool("file-info", json!({"traposId": "store", "path": "f.txt"})).await;
    assert_eq!(info["crc32"], json!(0xCBF4_3926u32), "{info}");
    assert_eq!(info["path"], "f.txt");
    let made = tool("make-dir", json!({"traposId": "store", "path": "d"})).await;
    assert_eq!(made["created"], true, "{made}");
    let moved = tool(
        "move-file",
        json!({"traposId": "store", "from": "f.txt", "to": "d/f.txt"}),
    )
    .await;
    assert_eq!(moved["ok"], true, "{moved}");
    assert!(root.join("d/f.txt").exists());
    let deleted = tool(
        "delete-file",
        json!({"traposId": "store", "path": "d/f.txt"}),
    )
    .await;
    assert_eq!(deleted["deleted"], true, "{deleted}");
    assert!(!root.join("d/f.txt").exists());
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_changing_tools_are_writes_and_file_info_a_read() {
    let host = host_with_policy(
        "[policy.default]\nagent = { exec = \"allow\", write = \"deny\", read = \"allow\" }\n",
    )
    .await;
    let _c = emulated(&host, 4, Some("store")).await;
    let root = host.dir.path().join("computers/4");
    std::fs::write(root.join("f.txt"), b"x").unwrap();
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    for (tool, args) in [
        (
            "move-file",
            json!({"traposId": "store", "from": "f.txt", "to": "g.txt"}),
        ),
        ("delete-file", json!({"traposId": "store", "path": "f.txt"})),
        ("make-dir", json!({"traposId": "store", "path": "d"})),
    ] {
        let r = fake::call(&client, tool, args).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {}", fake::text(&r));
        assert_eq!(fake::data(&r)["error"]["code"], "denied", "{tool}");
        assert!(
            fake::text(&r).contains("write"),
            "{tool}: {}",
            fake::text(&r)
        );
    }
    assert!(root.join("f.txt").exists() && !root.join("d").exists());
    let r = fake::call(
        &client,
        "file-info",
        json!({"traposId": "store", "path": "f.txt"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", fake::text(&r));
    host.host.stop().await;
}

async fn tool_ok(w: &World, tool: &'static str, args: Value) -> Value {
    let r = w.call(tool, args).await;
    assert_eq!(r.is_error, Some(false), "{tool}: {}", fake::text(&r));
    fake::data(&r)
}

async fn tool_refused(w: &World, tool: &'static str, args: Value) -> String {
    let r = w.call(tool, args).await;
    assert_eq!(r.is_error, Some(true), "{tool}: {}", fake::text(&r));
    let d = fake::data(&r);
    d["error"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| d["error"].to_string())
}

/// The file tools on either runtime: file-info's CRC-32 computed by the client's Lua equals
/// the host's own, and each tool does what it says and refuses the rest with the runtime's
/// own error text.
async fn file_tools_on(rt: Runtime) {
    let f = World::boot(rt, &["files"]).await;
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
            "content": base64::engine::general_purpose::STANDARD.encode(bytes), "encoding": "base64"});
        tool_ok(&f, "write-file", args).await;
        let d = tool_ok(
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
    let d = tool_ok(
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
    let d = tool_ok(
        &f,
        "file-info",
        json!({"traposId": "files", "path": "nothing"}),
    )
    .await;
    assert_eq!(d["exists"], false, "{d}");

    let d = tool_ok(
        &f,
        "make-dir",
        json!({"traposId": "files", "path": "a/b/c"}),
    )
    .await;
    assert_eq!(d["created"], true, "{d}");
    let d = tool_ok(&f, "make-dir", json!({"traposId": "files", "path": "a/b"})).await;
    assert_eq!(d["created"], false, "{d}");

    tool_ok(
        &f,
        "move-file",
        json!({"traposId": "files", "from": "sums/check.txt", "to": "a/moved.txt"}),
    )
    .await;
    let e = tool_refused(
        &f,
        "move-file",
        json!({"traposId": "files", "from": "sums/every.bin", "to": "a/moved.txt"}),
    )
    .await;
    assert!(e.contains("File exists"), "{e}");
    tool_ok(&f, "move-file", json!({"traposId": "files", "from": "sums/every.bin", "to": "a/moved.txt", "overwrite": true})).await;
    let d = tool_ok(
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
    let e = tool_refused(
        &f,
        "move-file",
        json!({"traposId": "files", "from": "a/moved.txt", "to": "a/b", "overwrite": true}),
    )
    .await;
    assert!(e.contains("Is a directory"), "{e}");

    let e = tool_refused(&f, "delete-file", json!({"traposId": "files", "path": "a"})).await;
    assert!(e.contains("not empty"), "{e}");
    let d = tool_ok(
        &f,
        "delete-file",
        json!({"traposId": "files", "path": "a/moved.txt"}),
    )
    .await;
    assert_eq!(d["deleted"], true, "{d}");
    let d = tool_ok(
        &f,
        "delete-file",
        json!({"traposId": "files", "path": "a/moved.txt"}),
    )
    .await;
    assert_eq!(d["deleted"], false, "{d}");
    tool_ok(
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
        let e = tool_refused(&f, tool, args).await;
        assert!(e.contains("\"code\":\"bad_path\""), "{tool}: {e}");
    }
    let files = f.computer("files").files();
    assert!(files.join("sums/noise.bin").exists());
    assert!(!files.join("a/b/c").exists());
}

on_both_runtimes!(file_tools: file_tools_on);

//! A program runs as the shell would run it, returned strings keep every byte, and the CLI
//! prints a whole error: each body once, on the emulator and on CraftOS-PC
//! (tests/integration/support/world.rs).
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use std::process::{Command, Output};

use crate::support::world::on_both_runtimes;
use base64::Engine as _;
use fake::{data, text};
use serde_json::{Value, json};
use world::{Runtime, World};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The bytes a string descriptor stands for: its text, or its base64 when `encoding` says so.
fn bytes_of(d: &Value) -> Vec<u8> {
    assert_eq!(d["type"], "string", "{d}");
    let v = d["value"].as_str().unwrap();
    match d["encoding"].as_str() {
        Some("base64") => B64.decode(v).unwrap(),
        None => v.as_bytes().to_vec(),
        Some(other) => panic!("unknown encoding {other}: {d}"),
    }
}

async fn write(w: &World, path: &str, content: &str) {
    let r = w
        .call(
            "write-file",
            json!({"traposId": w.trapos("miner"), "path": path, "content": content}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "write {path}: {}", text(&r));
}

/// `return "\0\255\167"` and the same bytes inside a table, as a value and as a key, come back
/// byte for byte; valid UTF-8 stays plain text.
async fn returned_strings_keep_every_byte(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    let code = r#"return "\0\255\167", { "\255", deep = { "\1\200" } }, { ["\255k"] = "\0\254" }, "caf\195\169""#;
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos("miner"), "code": code}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&r);
    let returns = d["returns"].as_array().unwrap();
    assert_eq!(returns.len(), 4, "{d}");

    assert_eq!(returns[0]["encoding"], "base64", "{d}");
    assert_eq!(bytes_of(&returns[0]), b"\0\xff\xa7");

    let t = &returns[1]["value"];
    assert_eq!(bytes_of(&t["1"]), b"\xff", "{d}");
    assert_eq!(bytes_of(&t["deep"][0]), b"\x01\xc8", "{d}");

    let pairs = returns[2]["value"]["entries"].as_array().unwrap();
    assert_eq!(returns[2]["value"]["type"], "table", "{d}");
    assert_eq!(pairs.len(), 1, "{d}");
    assert_eq!(bytes_of(&pairs[0][0]), b"\xffk");
    assert_eq!(bytes_of(&pairs[0][1]), b"\0\xfe");

    assert_eq!(
        returns[3],
        json!({"type": "string", "value": "café"}),
        "{d}"
    );
    // The text block shows the bytes as Lua would write them.
    assert!(text(&r).contains(r#""\0\255\167""#), "{}", text(&r));
}

on_both_runtimes!(returned_strings_keep_every_byte);

/// `run-file prog/main.lua` gets what the shell gives a program: `require` finds `util`
/// beside it (and `lib/deep.lua` under it), `package.path` is searched from its folder,
/// `shell.getRunningProgram()` names it, `arg` holds its arguments.
async fn programs_run_as_the_shell_runs_them(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    write(
        &w,
        "prog/util.lua",
        "return { twice = function(x) return 2 * x end }",
    )
    .await;
    write(&w, "prog/lib/deep.lua", "return 'deep'").await;
    write(
        &w,
        "prog/main.lua",
        "local util = require('util')\n\
         local deep = require('lib.deep')\n\
         return util.twice(tonumber(arg[1])), deep, shell.getRunningProgram(), arg[0], \
         type(package.path), require('util') == util\n",
    )
    .await;
    let r = w
        .call(
            "run-file",
            json!({"traposId": w.trapos("miner"), "path": "prog/main.lua", "args": ["21"]}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let got: Vec<Value> = data(&r)["returns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["value"].clone())
        .collect();
    assert_eq!(
        got,
        vec![
            json!(42),
            json!("deep"),
            json!("prog/main.lua"),
            json!("prog/main.lua"),
            json!("string"),
            json!(true)
        ],
        "{}",
        text(&r)
    );

    // A module that is not there: the error lists where it looked, the program's folder first.
    write(&w, "prog/broken.lua", "return require('missing')").await;
    let r = w
        .call(
            "run-file",
            json!({"traposId": w.trapos("miner"), "path": "prog/broken.lua"}),
        )
        .await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    let err = data(&r)["error"].as_str().unwrap().to_owned();
    assert!(err.contains("module 'missing' not found"), "{err}");
    assert!(err.contains("prog/missing.lua"), "{err}");
    assert!(
        !err.contains("trapdesk/servers"),
        "searched the client's folder: {err}"
    );

    // The CLI prints that whole error, every line, not only its first.
    let out = cli(&w, &["run", "miner", "prog/broken.lua"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("module 'missing' not found"), "{stderr}");
    assert!(stderr.contains("no file 'prog/missing.lua'"), "{stderr}");
    assert!(stderr.lines().count() > 2, "the whole error: {stderr}");
}

/// The `trapdesk` binary against the world's host, finding its local token in the host's data
/// dir as on a person's machine.
async fn cli(w: &World, args: &[&str]) -> Output {
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

on_both_runtimes!(programs_run_as_the_shell_runs_them);

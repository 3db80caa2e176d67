//! The client's `peripheral.call` hook (the monitors' shadows, `lua/apis/peripherals.lua`) on a
//! real runtime: once the screen server runs, every program's `peripheral.call` is the hook, and
//! what a program gets through `call`, `wrap` and `find` is what CC gives it (values, and an
//! argument error that names the caller's line and `call`, as CC's own check does). Peripherals
//! are created with CraftOS-PC's `periphemu` (a modem and a drive; its headless mode cannot
//! create monitors); the monitor path itself is covered by `tests/lua/monitors_spec.lua`.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use fake::{data, text};
use serde_json::json;
use world::{Runtime, World};

const CHECK: &str = r#"
periphemu.create("left", "modem")
periphemu.create("right", "drive")
local source = debug.getinfo(peripheral.call, "S").source
local modem = peripheral.wrap("left")
local function bad()
  local r = peripheral.call(nil, "isWireless")
  return r
end
local _, err = pcall(bad)
local drives = { peripheral.find("drive") }
return source, modem.isWireless(), err, #drives, drives[1].isDiskPresent(),
  peripheral.call("right", "isDiskPresent"), peripheral.call("nowhere", "x")
"#;

async fn the_hook_changes_nothing_a_program_sees(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    // The screen server installs the hook when it starts, before it serves.
    w.wait_serves("miner", &["screen", "peripherals"]).await;
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos("miner"), "code": CHECK}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&r);
    let value = |i: usize| d["returns"][i]["value"].clone();
    let source = value(0);
    assert!(
        source
            .as_str()
            .unwrap_or_default()
            .contains("apis/peripherals.lua"),
        "peripheral.call is the client's hook: {d}"
    );
    assert!(value(1).is_boolean(), "wrap calls through it: {d}");
    let err = value(2);
    let err = err.as_str().unwrap_or_default();
    assert!(
        err.contains("bad argument #1 to 'call'"),
        "the argument error is CC's own, naming `call`: {err}"
    );
    // Line 7 of CHECK (it starts with a newline): `local r = peripheral.call(nil, ...)`.
    assert!(
        err.contains(":7: ") && !err.contains("peripherals.lua"),
        "and the caller's line, not the hook's: {err}"
    );
    assert_eq!(value(3), json!(1), "find: {d}");
    assert_eq!(value(4), json!(false), "no disk: {d}");
    assert_eq!(value(5), json!(false), "call: {d}");
    assert!(
        d["returns"].as_array().is_some_and(|a| a.len() == 7),
        "a missing peripheral's nil is still returned: {d}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn the_hook_changes_nothing_a_program_sees_on_craftos_pc() {
    the_hook_changes_nothing_a_program_sees(Runtime::CraftOs).await;
}

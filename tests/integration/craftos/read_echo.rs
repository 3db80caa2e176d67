//! Input a chunk reads with `read()` is captured as the player saw it: the final line, not each
//! redraw. CC's `read` clears and redraws its line on every key (`bios.lua`, `read`), and the
//! capture used to append every redraw (`What is your name? S St  Ste …`). One body on the
//! emulator and on CraftOS-PC, typed through `send-input` by rmcp's client.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{lua_mark, mcp_fake as fake, wait_mark, wait_some, world};

use std::time::Duration;

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use serde_json::json;
use world::{Runtime, World};

async fn running_exec(w: &World, trapos_id: &str) -> String {
    wait_some(
        Duration::from_secs(10),
        || {
            w.session()
                .pending()
                .into_iter()
                .find(|r| r.trapos_id == trapos_id && r.kind == trapdesk::protocol::Kind::ExecLua)
                .map(|r| r.request_id)
        },
        || String::from("no exec-lua ran"),
    )
    .await
}

async fn send(w: &World, rid: &str, input: serde_json::Value) {
    let mut args = json!({"traposId": "miner", "requestId": rid});
    for (k, v) in input.as_object().unwrap() {
        args[k] = v.clone();
    }
    let s = w.call("send-input", args).await;
    assert_ne!(s.is_error, Some(true), "{}", text(&s));
}

async fn typed_input_reads_as_the_player_saw_it(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    w.wait_serves("miner", &["screen", "input"]).await;
    let id = w.trapos("miner");
    let code = format!(
        "write('What is your name? ') {}local s = read() print('Hello, ' .. s) return s",
        lua_mark("in-read")
    );
    let handle = fake::start_call(
        &w.client,
        "exec-lua",
        json!({"traposId": "miner", "code": code, "timeoutMs": 30000}),
    )
    .await;
    let rid = running_exec(&w, &id).await;
    wait_mark(&w.files("miner"), "in-read").await;
    // Typed, corrected with backspace, and ended: every key redraws the line on CC.
    send(&w, &rid, json!({"text": "Stx"})).await;
    send(&w, &rid, json!({"keys": ["backspace"]})).await;
    send(&w, &rid, json!({"text": "eve\n"})).await;
    let r = match handle.await_response().await.unwrap() {
        rmcp::model::ServerResult::CallToolResult(r) => r,
        other => panic!("not a tool result: {other:?}"),
    };
    assert_eq!(data(&r)["returns"][0]["value"], "Steve", "{}", text(&r));
    assert_eq!(
        data(&r)["output"],
        json!("What is your name? Steve\nHello, Steve\n"),
        "{}: the captured output is the line as shown, once",
        rt.name()
    );
    assert_eq!(data(&r)["outputLines"], json!(2), "{}", text(&r));
}

on_both_runtimes!(typed_input_reads_as_the_player_saw_it);

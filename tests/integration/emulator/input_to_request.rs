//! `send-input` aimed at a running request (`requestId`): the text and keys reach that chunk
//! alone (one waiting in `read()` or `os.pullEvent("char")`), never the shell; the answer is
//! the request's newest output. Refusals: a request that is not running there, reboot or
//! shutdown keys (they act on the computer), and the policy (send-input is `exec`). One body
//! on the emulator and on CraftOS-PC, through rmcp's client.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{lua_mark, mcp_fake as fake, wait_mark, world};

use std::time::Duration;

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use serde_json::{Value, json};
use world::{Runtime, World};

fn tool_result(r: rmcp::model::ServerResult) -> rmcp::model::CallToolResult {
    match r {
        rmcp::model::ServerResult::CallToolResult(r) => r,
        other => panic!("not a tool result: {other:?}"),
    }
}

/// The requestId of the one exec-lua running on `trapos_id`, once it runs.
async fn running_exec(w: &World, trapos_id: &str) -> String {
    crate::support::wait_some(
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

fn rows(v: &Value) -> String {
    v["rows"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

async fn input_goes_to_the_chunk_not_the_shell(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    w.wait_serves("miner", &["screen", "input"]).await;
    let id = w.trapos("miner");

    // A chunk in read(): the text reaches it, and only it.
    let handle = fake::start_call(
        &w.client,
        "exec-lua",
        json!({"traposId": "miner", "code": format!("{}write('name? ') local s = read() print('hello ' .. s) return s", lua_mark("in-read")), "timeoutMs": 20000}),
    )
    .await;
    let rid = running_exec(&w, &id).await;
    // The chunk is in read() before the text arrives.
    wait_mark(&w.files("miner"), "in-read").await;
    let s = w
        .call(
            "send-input",
            json!({"traposId": "miner", "requestId": rid, "text": "zork\n", "waitMs": 500}),
        )
        .await;
    assert_ne!(s.is_error, Some(true), "{}", text(&s));
    let sd = data(&s);
    assert_eq!(sd["requestId"], json!(rid));
    assert!(sd["events"].as_u64().unwrap() >= 5, "{sd}");
    let r = tool_result(handle.await_response().await.unwrap());
    assert_eq!(data(&r)["returns"][0]["value"], "zork", "{}", text(&r));
    assert!(data(&r)["output"].as_str().unwrap().contains("hello zork"));
    // The shell never saw it: no "zork" typed at the prompt, no "No such program".
    let screen = w.call("read-screen", json!({"traposId": "miner"})).await;
    let shown = rows(&data(&screen));
    assert!(!shown.contains("zork"), "the shell got the input:\n{shown}");

    // A chunk waiting for one char event gets it.
    let handle = fake::start_call(
        &w.client,
        "exec-lua",
        json!({"traposId": "miner", "code": format!("{}local _, c = os.pullEvent('char') return c", lua_mark("in-pull")), "timeoutMs": 20000}),
    )
    .await;
    let rid = running_exec(&w, &id).await;
    wait_mark(&w.files("miner"), "in-pull").await;
    let s = w
        .call(
            "send-input",
            json!({"traposId": "miner", "requestId": rid, "text": "q"}),
        )
        .await;
    assert_ne!(s.is_error, Some(true), "{}", text(&s));
    let r = tool_result(handle.await_response().await.unwrap());
    assert_eq!(data(&r)["returns"][0]["value"], "q", "{}", text(&r));

    // A chunk that takes every event sees the input as typed, never its wrapper.
    let handle = fake::start_call(
        &w.client,
        "exec-lua",
        json!({"traposId": "miner", "code": lua_mark("in-pull") + "local seen = {} while #seen < 2 do local e = {os.pullEvent()} if e[1] == 'char' or e[1] == 'trapdesk_input' then seen[#seen + 1] = e[1] .. ':' .. tostring(e[2]) end end return seen[1], seen[2]", "timeoutMs": 20000}),
    )
    .await;
    let rid = running_exec(&w, &id).await;
    wait_mark(&w.files("miner"), "in-pull").await;
    let s = w
        .call(
            "send-input",
            json!({"traposId": "miner", "requestId": rid, "text": "ab"}),
        )
        .await;
    assert_ne!(s.is_error, Some(true), "{}", text(&s));
    let r = tool_result(handle.await_response().await.unwrap());
    let got: Vec<Value> = data(&r)["returns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["value"].clone())
        .collect();
    assert_eq!(got, vec![json!("char:a"), json!("char:b")], "{}", text(&r));

    // Refusals: a request not running there; reboot aimed at one request.
    let s = w
        .call(
            "send-input",
            json!({"traposId": "miner", "requestId": "h-999999", "text": "x"}),
        )
        .await;
    assert_eq!(s.is_error, Some(true));
    assert_eq!(data(&s)["error"]["code"], "unknown_request", "{}", text(&s));
    let handle = fake::start_call(
        &w.client,
        "exec-lua",
        json!({"traposId": "miner", "code": "return read()", "timeoutMs": 20000}),
    )
    .await;
    let rid = running_exec(&w, &id).await;
    let s = w
        .call(
            "send-input",
            json!({"traposId": "miner", "requestId": rid, "keys": ["reboot"]}),
        )
        .await;
    assert_eq!(s.is_error, Some(true), "{}", text(&s));
    assert!(text(&s).contains("acts on the computer"), "{}", text(&s));

    // send-input is exec under the policy, aimed at a request or not.
    w.session().set_policy(
        trapdesk::policy::Policy::from_toml("[policy.default]\nagent = { exec = \"deny\" }\n")
            .unwrap(),
    );
    let s = w
        .call(
            "send-input",
            json!({"traposId": "miner", "requestId": rid, "text": "x\n"}),
        )
        .await;
    assert_eq!(s.is_error, Some(true), "{}", text(&s));
    assert_eq!(data(&s)["error"]["code"], "denied", "{}", text(&s));
    w.session().set_policy(trapdesk::policy::Policy::default());
    let s = w
        .call(
            "send-input",
            json!({"traposId": "miner", "requestId": rid, "text": "done\n"}),
        )
        .await;
    assert_ne!(s.is_error, Some(true), "{}", text(&s));
    let r = tool_result(handle.await_response().await.unwrap());
    assert_eq!(data(&r)["returns"][0]["value"], "done", "{}", text(&r));
}

on_both_runtimes!(input_goes_to_the_chunk_not_the_shell);

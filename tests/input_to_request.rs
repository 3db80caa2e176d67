//! experiment
#![allow(clippy::unwrap_used, clippy::panic)]

mod support;
#[path = "support/mcp_fake.rs"]
mod fake;
#[path = "support/craftos.rs"]
mod craftos;
#[path = "support/world.rs"]
mod world;

use std::time::Duration;

use fake::{data, text};
use serde_json::json;
use world::{Runtime, World};

fn tool_result(r: rmcp::model::ServerResult) -> rmcp::model::CallToolResult {
    match r {
        rmcp::model::ServerResult::CallToolResult(r) => r,
        other => panic!("not a tool result: {other:?}"),
    }
}

async fn read_in_chunk(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    w.wait_serves("miner", &["screen", "input"]).await;
    let handle = fake::start_call(&w.client, "exec-lua",
        json!({"traposId": "miner", "code": "write('name? ') local s = read() return s", "timeoutMs": 8000})).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let s = w.call("send-input", json!({"traposId": "miner", "text": "bob\n"})).await;
    eprintln!("SEND {}", text(&s));
    let r = tool_result(handle.await_response().await.unwrap());
    eprintln!("EXEC {}", text(&r));
    eprintln!("SCREEN {}", w.computer("miner").screen());
    assert_eq!(data(&r)["returns"][0]["value"], "bob");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_in_chunk_on_the_emulator() {
    read_in_chunk(Runtime::Emulator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(craftos_pc), ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary")]
async fn read_in_chunk_on_craftos_pc() {
    read_in_chunk(Runtime::CraftOs).await;
}

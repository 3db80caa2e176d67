//! Under the startup wrapper a short request costs the computer one event, its
//! `websocket_message`. The daemon hands the request to its server, and the server its answer
//! back, as calls (docs/lua-client.md, "Events between libsandbox and the daemon"), so a chunk
//! running meanwhile, which is passed every event the server gets, sees no `trapdesk_request`
//! or `trapdesk_respond` for the short requests beside it. With the events (the path before
//! it) it sees two per request.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use serde_json::json;
use world::{Runtime, World};

const WATCHER: &str = "local seen, t = 0, os.startTimer(3) \
    while true do local ev, a = os.pullEvent() \
      if ev == 'trapdesk_request' or ev == 'trapdesk_respond' then seen = seen + 1 end \
      if ev == 'timer' and a == t then break end end \
    return seen";

/// What a chunk running beside five `return 1` requests saw of the client's hand-over events.
async fn seen_beside_five(w: &World) -> serde_json::Value {
    let code = crate::support::lua_mark("watching") + WATCHER;
    let watcher = w.call("exec-lua", json!({"traposId": "store", "code": code}));
    let shorts = async {
        // The watcher is pulling events before the requests it watches for are sent.
        crate::support::wait_mark(&w.files("store"), "watching").await;
        for _ in 0..5 {
            let r = w
                .call("exec-lua", json!({"traposId": "store", "code": "return 1"}))
                .await;
            assert_ne!(r.is_error, Some(true), "{}", text(&r));
            assert_eq!(data(&r)["returns"][0]["value"], 1, "{}", text(&r));
        }
    };
    let (r, ()) = tokio::join!(watcher, shorts);
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    data(&r)["returns"][0]["value"].clone()
}

async fn short_requests_pass_no_client_events(runtime: Runtime) {
    let w = World::boot(runtime, &["store"]).await;
    let seen = seen_beside_five(&w).await;
    assert_eq!(seen, 0, "a running chunk saw the client's hand-over events");
    // The same with the hand-over switched off (the shared table emptied): both sides fall
    // back to the events, and the watcher sees them, so the figure above means something.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "store", "code": "_G.trapdeskClient.servers = {} _G.trapdeskClient.daemon = nil return true"}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let seen = seen_beside_five(&w).await;
    assert_eq!(
        seen, 10,
        "with the events, a request and an answer each for five requests"
    );
}

on_both_runtimes!(short_requests_pass_no_client_events);

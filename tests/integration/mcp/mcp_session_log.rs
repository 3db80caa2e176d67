//! `session-log` through rmcp's own client: one entry per call with the resolved traposId, a
//! request not made by a call as one entry, the filters (`since` as a cursor or a time,
//! `computer`, `who`, `kind`), and an error result that keeps the page's shape.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::mcp_fake as fake;

use fake::{call, connect, data, host, start_call, text};
use serde_json::{Value, json};
use trapdesk::session::{Origin, RequestSpec};

async fn log(client: &fake::Client, args: Value) -> (Vec<Value>, Value) {
    let r = call(client, "session-log", args).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&r);
    (d["events"].as_array().unwrap().clone(), d)
}

#[tokio::test]
async fn one_entry_per_call_with_the_resolved_trapos_id() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "MINER", "code": "return 3"}),
    )
    .await;
    let rid = data(&r)["requestId"].as_str().unwrap().to_owned();
    let (events, _) = log(&client, json!({})).await;
    for raw in ["tool_call", "tool_result", "finished"] {
        assert!(
            events.iter().all(|e| e["event"] != raw),
            "{raw} left in {events:#?}"
        );
    }
    let calls: Vec<&Value> = events.iter().filter(|e| e["what"] == "exec-lua").collect();
    assert_eq!(calls.len(), 1, "{events:#?}");
    let c = calls[0];
    assert_eq!(c["event"], "call");
    assert_eq!(c["who"], "test-agent");
    assert_eq!(c["traposId"], "7:miner", "resolved, not as typed: {c}");
    assert_eq!(c["requestId"], rid.as_str());
    assert_eq!(c["status"], "ok");
    assert!(c["durationMs"].is_u64(), "{c}");

    // A call on a name that finds nothing keeps the name it was aimed at.
    call(
        &client,
        "exec-lua",
        json!({"traposId": "nowhere", "code": "return 1"}),
    )
    .await;
    // The person's request, made without a tool call, is one entry too.
    h.session
        .request(
            "8:farm",
            RequestSpec::new(
                trapdesk::protocol::Kind::ExecLua,
                json!({"code": "return 1"}),
            ),
            Origin::Person,
        )
        .await
        .unwrap();
    let (events, _) = log(&client, json!({"limit": 3})).await;
    assert_eq!(events.len(), 3, "{events:#?}");
    let person: Vec<&Value> = events.iter().filter(|e| e["who"] == "person").collect();
    assert_eq!(person.len(), 1, "{events:#?}");
    assert_eq!(person[0]["event"], "request");
    assert_eq!(person[0]["traposId"], "8:farm");
    assert_eq!(person[0]["status"], "ok");
    assert!(
        events
            .iter()
            .any(|e| e["traposId"] == "nowhere" && e["status"] == "failed"),
        "{events:#?}"
    );
}

#[tokio::test]
async fn filters_by_computer_who_and_kind() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    for target in ["miner", "8", "9:farm"] {
        let r = call(
            &client,
            "exec-lua",
            json!({"traposId": target, "code": "return 3"}),
        )
        .await;
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
    }
    call(&client, "list-files", json!({"traposId": "7:miner"})).await;

    let (events, _) = log(&client, json!({"computer": "7"})).await;
    assert!(!events.is_empty());
    assert!(
        events.iter().all(|e| e["traposId"] == "7:miner"),
        "{events:#?}"
    );
    let whats: Vec<&str> = events.iter().filter_map(|e| e["what"].as_str()).collect();
    assert_eq!(whats, ["exec-lua", "list-files"], "{events:#?}");

    let (events, _) = log(&client, json!({"computer": "*:FARM", "kind": "exec-lua"})).await;
    let ids: Vec<&str> = events
        .iter()
        .map(|e| e["traposId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["8:farm", "9:farm"]);

    // A label that names two computers selects both, as a glob would.
    let (events, _) = log(&client, json!({"computer": "farm", "kind": "exec-lua"})).await;
    assert_eq!(events.len(), 2, "{events:#?}");

    let (events, _) = log(&client, json!({"kind": "linked"})).await;
    assert_eq!(events.len(), 3, "{events:#?}");
    let (events, _) = log(&client, json!({"who": "test-*", "kind": "list-*"})).await;
    assert_eq!(events.len(), 1, "{events:#?}");
    let (events, _) = log(&client, json!({"who": "person"})).await;
    assert!(events.is_empty(), "{events:#?}");
}

#[tokio::test]
async fn since_a_cursor_gives_what_began_or_changed_after_it() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let running = start_call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": "hang"}),
    )
    .await;
    crate::support::wait_until(|| !h.session.pending().is_empty()).await;
    let rid = h.session.pending()[0].request_id.clone();
    let (events, d) = log(&client, json!({"kind": "exec-lua"})).await;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0]["status"], "running");
    assert_eq!(events[0]["traposId"], "7:miner");
    let latest = d["latest"].as_u64().unwrap();
    assert!(latest >= events[0]["seq"].as_u64().unwrap());

    // Nothing new yet but this reader's own call.
    let (events, _) = log(&client, json!({"since": latest, "kind": "exec-lua"})).await;
    assert!(events.is_empty(), "{events:#?}");

    // The running call ends: it comes again, changed, though it began before the cursor.
    let r = call(&client, "cancel-request", json!({"requestId": rid})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    running.await_response().await.unwrap();
    let (events, d) = log(&client, json!({"since": latest})).await;
    let whats: Vec<&str> = events.iter().filter_map(|e| e["what"].as_str()).collect();
    assert_eq!(
        whats,
        ["exec-lua", "session-log", "session-log", "cancel-request"],
        "{events:#?}"
    );
    assert_eq!(events[0]["status"], "cancelled");
    assert!(events[0]["seq"].as_u64().unwrap() <= latest);
    assert!(d["latest"].as_u64().unwrap() > latest);

    // A time: an age or an RFC 3339 time.
    let (events, _) = log(&client, json!({"since": "5m", "kind": "exec-lua"})).await;
    assert_eq!(events.len(), 1);
    let (events, _) = log(&client, json!({"since": "2999-01-01T00:00:00Z"})).await;
    assert!(events.is_empty());
}

#[tokio::test]
async fn a_bad_since_is_an_error_result_of_the_pages_shape() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools.iter().find(|t| t.name == "session-log").unwrap();
    let schema = tool.output_schema.as_ref().unwrap();
    let props = tool.input_schema.get("properties").unwrap();
    for field in ["limit", "before", "since", "computer", "who", "kind"] {
        assert!(props.get(field).is_some(), "session-log lacks {field}");
    }
    let r = call(&client, "session-log", json!({"since": "yesterday-ish"})).await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    let d = data(&r);
    assert_eq!(d["error"]["code"], "invalid_arguments");
    assert_eq!(d["field"], "since");
    assert!(text(&r).contains("RFC 3339"), "{}", text(&r));
    // Every property the schema requires is there.
    for req in schema["required"].as_array().unwrap() {
        assert!(d.get(req.as_str().unwrap()).is_some(), "{req} missing: {d}");
    }
    assert_eq!(d["events"], json!([]));
}

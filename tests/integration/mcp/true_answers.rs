//! What an agent reads is what happened: small answers that once said something untrue (a
//! cancel "after 0 ms", a negative `neededInPlace`, two disagreeing failure counts, a range
//! taken silently, a bad path as an internal error, a file refusal without a code), each
//! through rmcp's client against a session with scripted computers or the real Lua client.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::{Duration, Instant};

use base64::Engine as _;
use rmcp::model::{CancelledNotificationParam, ErrorCode, ReadResourceRequestParams};
use serde_json::{Value, json};

use crate::support::mcp_fake::{call, connect, data, host, start_hanging, text};
use crate::support::world::{Runtime, World};

/// A call its client cancels after it ran a while is logged as cancelled by that client,
/// after the time it really ran (it once said "cancelled after 0 ms", naming no one).
#[tokio::test]
async fn a_cancelled_call_says_who_cancelled_it_and_after_how_long() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let (reader, _) = connect(&h.url, &h.token).await;
    let started = Instant::now();
    let (handle, rid) = start_hanging(&h, &client, Duration::from_secs(5)).await;
    // The duration is what is checked: the call runs this long before it is cancelled.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    client
        .notify_cancelled(CancelledNotificationParam::new(
            Some(handle.id.clone()),
            Some("enough".into()),
        ))
        .await
        .unwrap();
    let entry = crate::support::wait_ok(Duration::from_secs(5), async || {
        let r = call(&reader, "session-log", json!({"kind": "exec-lua"})).await;
        let events = data(&r)["events"].as_array().unwrap().clone();
        events
            .into_iter()
            .find(|e| {
                e["event"] == "call" && e["requestId"] == rid.as_str() && e["status"] == "cancelled"
            })
            .ok_or_else(|| format!("{}", data(&r)))
    })
    .await;
    let ran = started.elapsed().as_millis() as u64;
    let detail = entry["detail"].as_str().unwrap();
    assert!(
        detail.contains("cancelled by test-agent after 1."),
        "{entry}"
    );
    let logged = entry["durationMs"].as_u64().unwrap();
    assert!((1200..=ran).contains(&logged), "{logged} of {ran}: {entry}");
    drop(handle);
}

/// A replace by a smaller file that fits only in place needs nothing more in place (it once
/// said `neededInPlace: -100000`, the bytes it would free).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_smaller_replace_never_needs_less_than_nothing() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    let miner = w.trapos("miner");
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": miner, "code": "return fs.getFreeSpace('/')"}),
        )
        .await;
    let free = data(&r)["returns"][0]["value"].as_u64().unwrap() as usize;
    let write = async |size: usize| {
        let bytes = vec![b'x'; size];
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        let r = w
            .call(
                "write-file",
                json!({"traposId": miner, "path": "big.bin", "content": b64, "encoding": "base64"}),
            )
            .await;
        (r.is_error == Some(true), data(&r), text(&r))
    };
    let (failed, d, _) = write(free * 6 / 10).await;
    assert!(!failed, "{d}");
    let (failed, d, t) = write(free * 45 / 100).await;
    assert!(failed, "{d}");
    assert_eq!(d["error"]["code"], "no_space_to_replace", "{d}");
    assert_eq!(d["neededInPlace"], 0, "{d}");
    assert!(!t.contains("needs -"), "{t}");
}

/// `exec-lua-many` counts each status once: no top-level `failed` beside `failedCount` (the
/// status of a computer the call could not reach), which once read `failed: 2, failedCount: 1`.
#[tokio::test]
async fn a_broadcast_counts_each_status_once() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let r = call(
        &client,
        "exec-lua-many",
        json!({"computers": ["miner", "nobody"], "code": "error"}),
    )
    .await;
    let d = data(&r);
    assert_eq!(r.is_error, Some(true), "{d}");
    assert!(d.get("failed").is_none(), "{d}");
    assert_eq!(
        (&d["errorCount"], &d["failedCount"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(d["ok"], false);
}

/// Every numeric bound is declared in the input schema and refused the same way, naming the
/// field and the range: `limit: 0` and `limit: 501` were once taken as 1 and 500.
#[tokio::test]
async fn every_range_is_refused_alike() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let cases: [(&'static str, &str, Value, &str); 10] = [
        (
            "probe-computers",
            "limit",
            json!(0),
            "expected 1 to 500, got 0",
        ),
        (
            "probe-computers",
            "limit",
            json!(501),
            "expected 1 to 500, got 501",
        ),
        ("session-log", "limit", json!(0), "expected 1 to 1000"),
        ("session-log", "limit", json!(1001), "expected 1 to 1000"),
        (
            "computer-output",
            "lines",
            json!(2001),
            "expected 1 to 2000",
        ),
        (
            "exec-lua-many",
            "concurrency",
            json!(0),
            "expected 1 to 256",
        ),
        (
            "exec-lua-many",
            "timeoutMs",
            json!(0),
            "expected 1 to 600000 milliseconds",
        ),
        (
            "send-input",
            "waitMs",
            json!(10_001),
            "expected 0 to 10000 milliseconds",
        ),
        (
            "read-file",
            "length",
            json!(0),
            "expected at least 1, got 0",
        ),
        (
            "wait-request",
            "timeoutMs",
            json!(600_001),
            "expected 1 to 600000 milliseconds",
        ),
    ];
    let tools = client.list_all_tools().await.unwrap();
    for (tool, field, value, says) in cases {
        let mut args = json!({"traposId": "miner", "code": "return 1", "path": "a",
            "requestId": "h-x-1", "computers": ["miner"]});
        let keep: &[&str] = match tool {
            "probe-computers" | "session-log" => &[],
            "computer-output" | "send-input" => &["traposId"],
            "exec-lua-many" => &["code", "computers"],
            "read-file" => &["traposId", "path"],
            _ => &["requestId"],
        };
        args.as_object_mut()
            .unwrap()
            .retain(|k, _| keep.contains(&k.as_str()));
        args[field] = value.clone();
        let Value::Object(map) = args else { panic!() };
        let r = client
            .call_tool(rmcp::model::CallToolRequestParams::new(tool).with_arguments(map))
            .await
            .unwrap();
        let d = data(&r);
        assert_eq!(r.is_error, Some(true), "{tool} {field}={value}: {d}");
        assert_eq!(d["error"]["code"], "invalid_arguments", "{tool}: {d}");
        assert_eq!(d["field"], field, "{tool}: {d}");
        let message = d["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("{tool}: invalid argument {field}: {says}")),
            "{tool}: {message}"
        );
        // The range an agent is refused by is the one its schema shows.
        let schema = &tools.iter().find(|t| t.name == tool).unwrap().input_schema;
        let prop = &schema["properties"][field];
        assert!(
            prop.get("minimum").is_some() || prop.get("maximum").is_some(),
            "{tool} {field}: {prop}"
        );
    }
}

/// A file tool's refusal is `error: {code, message}` whatever the tool: a missing file read
/// once was a bare message with no code, as was any refusal a client sent without one.
#[tokio::test]
async fn every_file_refusal_has_a_code() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let r = call(
        &client,
        "read-file",
        json!({"traposId": "miner", "path": "nope.txt"}),
    )
    .await;
    let d = data(&r);
    assert_eq!(r.is_error, Some(true), "{d}");
    assert_eq!(d["error"]["code"], "not_found", "{d}");
    assert!(d["error"]["message"].is_string(), "{d}");
    assert!(text(&r).starts_with("not_found: "), "{}", text(&r));
    // A refusal in words CC has no code for.
    let r = call(
        &client,
        "write-file",
        json!({"traposId": "miner", "path": "/rom/x", "content": "y"}),
    )
    .await;
    let d = data(&r);
    assert_eq!(r.is_error, Some(true), "{d}");
    assert_eq!(d["error"]["code"], "read_only", "{d}");
}

/// A resource read of a path above the computer's root is `-32602` with `bad_path`, as
/// docs/mcp.md says (the client's `bad_path` was passed on as `-32603`, an internal error); a
/// missing file stays `-32002`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_read_above_the_root_is_invalid_params() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    let read = async |uri: &str| match w
        .client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
    {
        Ok(r) => panic!("{uri}: read {r:?}"),
        Err(rmcp::ServiceError::McpError(e)) => e,
        Err(other) => panic!("{uri}: {other}"),
    };
    for uri in [
        "trapdesk://computer/miner/files/../x",
        "trapdesk://computer/miner/files/a/../../startup.lua",
    ] {
        let e = read(uri).await;
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{uri}: {e:?}");
        assert_eq!(e.data.as_ref().unwrap()["code"], "bad_path", "{e:?}");
    }
    let e = read("trapdesk://computer/miner/files/nope.txt").await;
    assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND, "{e:?}");
}

//! The MCP tools, driven by rmcp's own client over Streamable HTTP against a session with
//! scripted fake computers: names, schemas and annotations, each tool's success and error
//! results, traposId forms, progress, cancellation, result sizing, and both MCP eras.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::mcp_fake as fake;

use std::time::Duration;

use fake::{call, connect, connect_stateless, data, host, start_call, start_hanging, text};
use rmcp::model::{CallToolRequestParams, CancelledNotificationParam, ServerResult};
use serde_json::{Value, json};

const TOOLS: [&str; 20] = [
    "probe-computers",
    "exec-lua-many",
    "exec-lua",
    "run-file",
    "write-file",
    "read-file",
    "list-files",
    "move-file",
    "delete-file",
    "make-dir",
    "file-info",
    "computer-output",
    "session-log",
    "cancel-request",
    "wait-request",
    "read-screen",
    "send-input",
    "reboot-computer",
    "list-peripherals",
    "turtle-info",
];

#[tokio::test]
async fn tools_are_listed_with_schemas_annotations_and_titles() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let info = client.peer_info().unwrap();
    let server = info.server_info.clone().unwrap();
    assert_eq!(server.name, "trapdesk");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    let instructions = info.instructions.as_deref().unwrap();
    assert_eq!(instructions.lines().count(), 9);
    assert!(
        instructions.contains("never as instructions"),
        "{instructions}"
    );
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    let mut want = TOOLS.to_vec();
    want.sort();
    assert_eq!(names, want);
    for t in &tools {
        assert!(t.title.is_some(), "{} has no title", t.name);
        assert!(t.output_schema.is_some(), "{} has no outputSchema", t.name);
        let a = t.annotations.as_ref().unwrap();
        assert!(a.read_only_hint.is_some() && a.destructive_hint.is_some());
        assert!(a.idempotent_hint.is_some() && a.open_world_hint.is_some());
        // That computer text is player-written is said once, in the instructions.
        let d = t.description.as_deref().unwrap_or("");
        assert!(!d.contains("never instructions"), "{}: {d}", t.name);
    }
    // The contract's annotations for the file tools and reboot-computer.
    for name in ["make-dir", "move-file", "delete-file", "reboot-computer"] {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        let a = t.annotations.as_ref().unwrap();
        assert_eq!(a.destructive_hint, Some(true), "{name}");
        assert_eq!(a.read_only_hint, Some(false), "{name}");
    }
    let info = tools.iter().find(|t| t.name == "file-info").unwrap();
    assert_eq!(
        info.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    let reboot = tools.iter().find(|t| t.name == "reboot-computer").unwrap();
    assert_eq!(
        reboot.annotations.as_ref().unwrap().open_world_hint,
        Some(true)
    );
    let exec = tools.iter().find(|t| t.name == "exec-lua").unwrap();
    let props = exec.input_schema.get("properties").unwrap();
    assert!(props.get("traposId").is_some() && props.get("timeoutMs").is_some());
    let req = exec
        .input_schema
        .get("required")
        .unwrap()
        .as_array()
        .unwrap();
    assert!(req.contains(&json!("code")) && req.contains(&json!("traposId")));
    let ro = tools.iter().find(|t| t.name == "read-file").unwrap();
    assert_eq!(ro.annotations.as_ref().unwrap().read_only_hint, Some(true));
    let screen = tools.iter().find(|t| t.name == "read-screen").unwrap();
    let a = screen.annotations.as_ref().unwrap();
    assert_eq!(
        (a.read_only_hint, a.destructive_hint),
        (Some(true), Some(false))
    );
    let input = tools.iter().find(|t| t.name == "send-input").unwrap();
    let a = input.annotations.as_ref().unwrap();
    assert_eq!(
        (a.read_only_hint, a.destructive_hint, a.open_world_hint),
        (Some(false), Some(true), Some(true))
    );
    let props = input.input_schema.get("properties").unwrap();
    for field in [
        "traposId", "text", "keys", "paste", "waitMs", "monitor", "touch",
    ] {
        assert!(props.get(field).is_some(), "send-input lacks {field}");
    }
    let screen_props = screen.input_schema.get("properties").unwrap();
    assert!(
        screen_props.get("monitor").is_some(),
        "read-screen lacks monitor"
    );
    // The new read-only tools: one argument, a traposId; their output schemas name their
    // fields.
    for (name, fields) in [
        ("list-peripherals", &["peripherals", "count"][..]),
        (
            "turtle-info",
            &["fuel", "fuelLimit", "selected", "slots"][..],
        ),
    ] {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        let a = t.annotations.as_ref().unwrap();
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint),
            (Some(true), Some(false), Some(true)),
            "{name}"
        );
        let props = t
            .input_schema
            .get("properties")
            .unwrap()
            .as_object()
            .unwrap();
        assert_eq!(props.keys().collect::<Vec<_>>(), vec!["traposId"], "{name}");
        let out = t.output_schema.as_ref().unwrap();
        for f in fields {
            assert!(out["properties"].get(*f).is_some(), "{name} lacks {f}");
        }
    }
    let probe = tools.iter().find(|t| t.name == "probe-computers").unwrap();
    let entry =
        &probe.output_schema.as_ref().unwrap()["properties"]["computers"]["items"]["properties"];
    for f in ["peripherals", "monitors", "fuel", "fuelLimit", "selected"] {
        assert!(entry.get(f).is_some(), "probe-computers entries lack {f}");
    }
}

#[tokio::test]
async fn exec_lua_resolves_every_trapos_id_form() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    // Case is ignored as the globs ignore it; a bare id may come as a JSON number.
    for id in [
        json!("7:miner"),
        json!("7"),
        json!("miner"),
        json!("7:MINER"),
        json!("Miner"),
        json!(7),
    ] {
        let r = call(
            &client,
            "exec-lua",
            json!({"traposId": id, "code": "return 3"}),
        )
        .await;
        assert_eq!(r.is_error, Some(false), "{id}: {}", text(&r));
        let d = data(&r);
        assert_eq!(d["traposId"], "7:miner");
        assert_eq!(d["returns"][0]["value"], 3);
        assert_eq!(d["output"], "hi\n");
        assert!(d["requestId"].as_str().unwrap().starts_with("h-"));
        assert!(text(&r).starts_with("returned 3"), "{}", text(&r));
    }
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "nope", "code": "x"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).starts_with("unknown_computer"), "{}", text(&r));
    assert!(text(&r).contains("7:miner"));
    assert_eq!(data(&r)["error"]["code"], "unknown_computer");
    // Two labels that differ in case only from the query are still two computers.
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "FARM", "code": "x"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("8:farm") && text(&r).contains("9:farm"),
        "{}",
        text(&r)
    );
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "farm", "code": "x"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "ambiguous_computer");
    assert!(text(&r).contains("8:farm") && text(&r).contains("9:farm"));
}

#[tokio::test]
async fn failures_are_tool_errors_with_output() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "7", "code": "error"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).starts_with("Lua failed: exec:1: boom"),
        "{}",
        text(&r)
    );
    let d = data(&r);
    assert_eq!(
        (d["ok"].clone(), d["output"].clone()),
        (json!(false), json!("before\n"))
    );
    assert!(d["requestId"].is_string());

    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "7", "code": "hang", "timeoutMs": 200}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "timeout", "{}", text(&r));
    let rid = data(&r)["requestId"].as_str().unwrap().to_owned();
    crate::support::holds_within(Duration::from_secs(2), || {
        h.seen.lock().unwrap().cancels.contains(&rid)
    })
    .await;
    assert!(h.seen.lock().unwrap().cancels.contains(&rid));

    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "8:farm", "code": "drop"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "disconnected");
}

#[tokio::test]
async fn arguments_that_fail_the_schema_are_error_results_naming_the_field() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    // MCP 2025-11-25: a tool result with isError, naming the field, so the model can correct
    // its call; not a JSON-RPC -32602.
    let bad = CallToolRequestParams::new("exec-lua")
        .with_arguments(json!({"traposId": 7}).as_object().unwrap().clone());
    let r = client.call_tool(bad).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    let d = data(&r);
    assert_eq!(d["error"]["code"], "invalid_arguments");
    assert_eq!(d["field"], "code", "{d}");
    assert!(
        text(&r).starts_with("invalid_arguments: exec-lua: invalid argument code"),
        "{}",
        text(&r)
    );
    let bad = CallToolRequestParams::new("exec-lua").with_arguments(
        json!({"traposId": true, "code": "return 1"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let r = client.call_tool(bad).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["field"], "traposId");
    assert!(text(&r).contains("a computer id (7)"), "{}", text(&r));
    let bad = CallToolRequestParams::new("read-file").with_arguments(
        json!({"traposId": "miner", "path": "/a", "offset": "x"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let r = client.call_tool(bad).await.unwrap();
    assert_eq!(
        (r.is_error, data(&r)["field"].clone()),
        (Some(true), json!("offset"))
    );
    // An unknown argument (a misspelt timeoutMs) is refused by name, not ignored.
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": "return 1", "timeOut": 5000}),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(data(&r)["field"], "timeOut");
    assert!(text(&r).contains("unknown field `timeOut`"), "{}", text(&r));
    assert!(text(&r).contains("timeoutMs"), "{}", text(&r));
    // Out of the documented range.
    for ms in [0, 99_999_999] {
        let r = call(
            &client,
            "exec-lua",
            json!({"traposId": "miner", "code": "return 1", "timeoutMs": ms}),
        )
        .await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(data(&r)["field"], "timeoutMs");
        assert!(
            text(&r).contains("expected 1 to 600000 milliseconds"),
            "{}",
            text(&r)
        );
    }
    // An unknown tool stays a protocol error.
    assert!(
        client
            .call_tool(CallToolRequestParams::new("no-such-tool"))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn file_tools_round_trip_text_and_bytes() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let r = call(
        &client,
        "write-file",
        json!({"traposId": "miner", "path": "/a.txt", "content": "héllo\n"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["bytes"], 7);
    let r = call(
        &client,
        "write-file",
        json!({"traposId": "miner", "path": "/a.txt", "content": "more", "append": true}),
    )
    .await;
    assert_eq!(r.is_error, Some(false));
    let r = call(
        &client,
        "read-file",
        json!({"traposId": "miner", "path": "/a.txt"}),
    )
    .await;
    let d = data(&r);
    assert_eq!(
        (d["content"].clone(), d["encoding"].clone()),
        (json!("héllo\nmore"), json!("utf8"))
    );
    assert_eq!(
        (d["total"].clone(), d["nextOffset"].clone()),
        (json!(11), Value::Null)
    );
    let r = call(
        &client,
        "read-file",
        json!({"traposId": "miner", "path": "/a.txt", "offset": 7, "length": 2}),
    )
    .await;
    assert_eq!(data(&r)["content"], "mo");
    assert_eq!(data(&r)["nextOffset"], 9);

    let r = call(
        &client,
        "write-file",
        json!({"traposId": "miner", "path": "/b.bin", "content": "AP+A", "encoding": "base64"}),
    )
    .await;
    assert_eq!(data(&r)["bytes"], 3);
    let r = call(
        &client,
        "read-file",
        json!({"traposId": "miner", "path": "/b.bin"}),
    )
    .await;
    assert_eq!(
        (data(&r)["content"].clone(), data(&r)["encoding"].clone()),
        (json!("AP+A"), json!("base64"))
    );

    let r = call(
        &client,
        "write-file",
        json!({"traposId": "miner", "path": "/rom/x", "content": "x"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("Access denied"), "{}", text(&r));
    let r = call(
        &client,
        "read-file",
        json!({"traposId": "miner", "path": "/none"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let r = call(&client, "list-files", json!({"traposId": "miner"})).await;
    assert_eq!(data(&r)["entries"].as_array().unwrap().len(), 2);
    assert_eq!(data(&r)["path"], "/");

    let r = call(
        &client,
        "run-file",
        json!({"traposId": "miner", "path": "/a.lua", "args": ["1", "two"]}),
    )
    .await;
    assert_eq!(data(&r)["returns"][0]["value"], json!(["1", "two"]));
}

#[tokio::test]
async fn large_reads_come_in_pieces() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let big = "x".repeat(100_000);
    call(
        &client,
        "write-file",
        json!({"traposId": "miner", "path": "/big", "content": big}),
    )
    .await;
    let mut offset = 0;
    let mut got = String::new();
    for _ in 0..40 {
        let r = call(
            &client,
            "read-file",
            json!({"traposId": "miner", "path": "/big", "offset": offset}),
        )
        .await;
        let size = fake::largest_block(&r);
        assert!(size < 24 * 1024, "{size}");
        got.push_str(data(&r)["content"].as_str().unwrap());
        match data(&r)["nextOffset"].as_u64() {
            Some(n) => offset = n,
            None => break,
        }
    }
    assert_eq!(got.len(), 100_000);
}

#[tokio::test]
async fn big_output_keeps_head_and_tail_and_stays_readable() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": "big:120000"}),
    )
    .await;
    let size = fake::largest_block(&r);
    assert!(size < 24 * 1024, "result is {size} bytes");
    let out = data(&r)["output"].as_str().unwrap().to_owned();
    assert!(out.len() > 4000, "{out}");
    assert!(out.starts_with("line 000000\n"), "{}", &out[..200]);
    assert!(
        out.trim_end().ends_with("line 009999"),
        "{}",
        &out[out.len() - 40..]
    );
    assert!(out.contains("bytes of output cut here") && out.contains("computer-output"));
    let rid = data(&r)["requestId"].as_str().unwrap().to_owned();

    let r = call(
        &client,
        "computer-output",
        json!({"traposId": "miner", "requestId": rid, "lines": 50}),
    )
    .await;
    let d = data(&r);
    let lines = fake::page_lines(&d);
    assert_eq!(lines.len(), 50);
    assert_eq!(lines[49]["text"], "line 009999");
    let before = d["before"].as_u64().unwrap();
    let r = call(
        &client,
        "computer-output",
        json!({"traposId": "miner", "requestId": rid, "lines": 50, "before": before}),
    )
    .await;
    assert_eq!(fake::page_lines(&data(&r))[49]["text"], "line 009949");
    let r = call(
        &client,
        "computer-output",
        json!({"traposId": "miner", "lines": 2000}),
    )
    .await;
    assert!(fake::largest_block(&r) < 24 * 1024);
    assert!(data(&r)["before"].is_u64());
}

#[tokio::test]
async fn live_output_arrives_as_increasing_progress() {
    let h = host().await;
    let (client, mut progress) = connect(&h.url, &h.token).await;
    let handle = start_call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": "slow"}),
    )
    .await;
    let first = tokio::time::timeout(Duration::from_secs(5), progress.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.message.as_deref(), Some("chunk 0\n"));
    let ServerResult::CallToolResult(r) = handle.await_response().await.unwrap() else {
        panic!("not a tool result")
    };
    assert_eq!(r.is_error, Some(false));
    let mut all = vec![first];
    while let Ok(p) = progress.try_recv() {
        all.push(p);
    }
    assert_eq!(all.len(), 3);
    assert!(all.windows(2).all(|w| w[1].progress > w[0].progress));
}

#[tokio::test]
async fn client_cancellation_cancels_on_the_computer() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let (handle, rid) = start_hanging(&h, &client, Duration::from_secs(2)).await;
    client
        .notify_cancelled(CancelledNotificationParam::new(
            Some(handle.id.clone()),
            Some("stop".into()),
        ))
        .await
        .unwrap();
    crate::support::wait_for(
        Duration::from_secs(2),
        || h.seen.lock().unwrap().cancels.contains(&rid),
        || String::from("the computer never got the cancel"),
    )
    .await;
    assert!(h.seen.lock().unwrap().cancels.contains(&rid));
    drop(handle);
}

#[tokio::test]
async fn probe_log_and_cancel_request_share_the_session() {
    let h = host().await;
    let (client, _) = connect(&h.url, &h.token).await;
    let busy = tokio::spawn({
        let (url, token) = (h.url.clone(), h.token.clone());
        async move {
            let (other, _) = connect(&url, &token).await;
            call(
                &other,
                "exec-lua",
                json!({"traposId": "miner", "code": "hang"}),
            )
            .await
        }
    });
    let rid = crate::support::wait_ok(Duration::from_secs(5), async || {
        let r = call(&client, "probe-computers", json!({})).await;
        let d = data(&r);
        assert_eq!(d["computers"].as_array().unwrap().len(), 3);
        let miner = d["computers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["traposId"] == "7:miner")
            .unwrap()
            .clone();
        assert_eq!(miner["ping"]["ok"], true);
        assert!(miner["lastRttMs"].is_u64());
        if miner["pending"] == 1 {
            return Ok(miner["pendingRequests"][0]["requestId"]
                .as_str()
                .map(str::to_owned)
                .unwrap());
        }
        Err(format!("never pending: {miner}"))
    })
    .await;
    let r = call(&client, "cancel-request", json!({"requestId": rid})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let other = busy.await.unwrap();
    assert_eq!(other.is_error, Some(true));
    assert_eq!(data(&other)["error"]["code"], "cancelled");
    assert_eq!(data(&other)["output"], "partial\n");
    let r = call(&client, "cancel-request", json!({"requestId": rid})).await;
    assert_eq!(r.is_error, Some(true));

    let r = call(&client, "session-log", json!({"limit": 200})).await;
    let events = data(&r)["events"].as_array().unwrap().clone();
    assert!(
        events
            .iter()
            .any(|e| e["who"] == "test-agent" && e["what"] == "cancel-request")
    );
    assert!(events.iter().any(|e| e["event"] == "linked"));
    let calls = h.session.tool_calls();
    assert!(
        calls
            .iter()
            .any(|c| c.tool == "exec-lua" && c.request_id.as_deref() == Some(rid.as_str()))
    );
}

#[tokio::test]
async fn stateless_era_client_works_and_is_named_from_meta() {
    let h = host().await;
    let (client, _) = connect_stateless(&h.url, &h.token).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), TOOLS.len());
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": "return 3"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let calls = h.session.tool_calls();
    assert!(
        calls.iter().any(|c| c.client == "stateless-agent"),
        "{calls:?}"
    );
}

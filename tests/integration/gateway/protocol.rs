//! The gateway keeps every MUST of `docs/protocol.md` against a computer it did not write: a
//! raw WebSocket client that speaks the protocol frame by frame.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{FakeComputer, SECRET, hello, start_host, start_host_with, wait_until};
use trapdesk::session::{Origin, RequestError, RequestSpec};

fn exec(code: &str) -> RequestSpec {
    RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
}

#[tokio::test]
async fn welcome_carries_the_trapos_id_and_limits() {
    let host = start_host().await;
    let (_c, welcome) = FakeComputer::link_with(&host, hello(7, Some("miner"))).await;
    assert_eq!(welcome["protocol"], 1);
    assert_eq!(welcome["trapos_id"], "7:miner");
    assert_eq!(welcome["heartbeat_ms"], 15000);
    assert_eq!(welcome["max_message"], 1048576);
    let (_u, welcome) = FakeComputer::link_with(&host, hello(3, None)).await;
    assert_eq!(welcome["trapos_id"], "3:");
}

#[tokio::test]
async fn wrong_secret_is_auth_failed_4001() {
    let host = start_host().await;
    let mut c = FakeComputer::connect_raw(&host).await;
    let mut h = hello(7, Some("miner"));
    h["secret"] = json!("nope");
    c.send(&h).await;
    let (code, seen) = c.recv_close().await;
    assert_eq!(code, Some(4001));
    assert_eq!(seen[0]["type"], "error");
    assert_eq!(seen[0]["code"], "auth_failed");
    assert!(host.session.computers().is_empty());
}

#[tokio::test]
async fn bad_hello_is_4000() {
    let host = start_host().await;
    for bad in [
        json!({"type": "hello", "protocol": 1, "computer_id": 7}),
        json!({"type": "hello", "protocol": 1, "computer_id": "x", "secret": SECRET}),
        json!({"type": "ping", "t": 1}),
    ] {
        let mut c = FakeComputer::connect_raw(&host).await;
        c.send(&bad).await;
        let (code, seen) = c.recv_close().await;
        assert_eq!(code, Some(4000), "{bad}");
        assert_eq!(seen[0]["code"], "bad_hello", "{bad}");
    }
    let mut c = FakeComputer::connect_raw(&host).await;
    c.send_text("not json").await;
    assert_eq!(c.recv_close().await.0, Some(4000));
}

#[tokio::test]
async fn other_protocol_is_4003() {
    let host = start_host().await;
    let mut c = FakeComputer::connect_raw(&host).await;
    let mut h = hello(7, None);
    h["protocol"] = json!(2);
    c.send(&h).await;
    let (code, seen) = c.recv_close().await;
    assert_eq!(code, Some(4003));
    assert_eq!(seen[0]["code"], "unsupported_protocol");
}

#[tokio::test]
async fn silence_after_upgrade_is_4008() {
    let host = start_host_with(|s| s.hello_timeout = Duration::from_millis(200)).await;
    let mut c = FakeComputer::connect_raw(&host).await;
    assert_eq!(c.recv_close().await.0, Some(4008));
}

#[tokio::test]
async fn bad_frames_get_bad_message_and_keep_the_link() {
    let host = start_host().await;
    let mut c = FakeComputer::link(&host, 1, Some("a")).await;
    for bad in [
        "not json",
        "[1,2]",
        "{\"no_type\":1}",
        "{\"type\":\"output\"}",
    ] {
        c.send_text(bad).await;
        let v = c.recv().await;
        assert_eq!(v["type"], "error", "{bad}");
        assert_eq!(v["code"], "bad_message", "{bad}");
    }
    use futures_util::SinkExt;
    c.ws.send(tokio_tungstenite::tungstenite::Message::Binary(
        vec![1, 2].into(),
    ))
    .await
    .unwrap();
    assert_eq!(c.recv().await["code"], "bad_message");
    // Still linked: a request goes through.
    let session = host.session.clone();
    let t =
        tokio::spawn(async move { session.request("1", exec("return 1"), Origin::Person).await });
    let req = c.recv_request().await;
    c.respond(
        req["id"].as_str().unwrap(),
        json!({"ok": true, "returns": [], "n": 0}),
    )
    .await;
    assert!(t.await.unwrap().is_ok());
}

#[tokio::test]
async fn requests_route_and_answers_return() {
    let host = start_host().await;
    let mut c = FakeComputer::link(&host, 7, Some("miner")).await;
    let session = host.session.clone();
    let t = tokio::spawn(async move {
        session
            .request(
                "miner",
                exec("return 1 + 2"),
                Origin::Agent("claude".into()),
            )
            .await
    });
    let req = c.recv_request().await;
    assert_eq!(req["request"], "exec-lua");
    assert_eq!(req["payload"]["code"], "return 1 + 2");
    assert!(req["timeout_ms"].as_u64().unwrap() <= 30_000);
    let id = req["id"].as_str().unwrap().to_owned();
    c.send(&json!({"type": "output", "id": id, "stream": "out", "text": "hi\n"}))
        .await;
    c.respond(
        &id,
        json!({"ok": true, "returns": [{"type": "number", "value": 3}], "n": 1, "output": "hi\n"}),
    )
    .await;
    let v = t.await.unwrap().unwrap();
    assert_eq!(v["returns"][0]["value"], 3);
    let log = host.session.recent(10);
    assert!(
        log.iter()
            .any(|e| e.event.as_str() == "finished" && e.who.as_deref() == Some("claude"))
    );
}

#[tokio::test]
async fn unknown_computer_lists_the_linked_ones() {
    let host = start_host().await;
    let _c = FakeComputer::link(&host, 7, Some("miner")).await;
    let err = host
        .session
        .request("99", exec("x"), Origin::Person)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        RequestError::UnknownComputer {
            query: "99".into(),
            linked: vec!["7:miner".into()]
        }
    );
}

#[tokio::test]
async fn timeout_fails_the_caller_and_cancels_on_the_computer() {
    let host = start_host().await;
    let mut c = FakeComputer::link(&host, 7, None).await;
    let session = host.session.clone();
    let t = tokio::spawn(async move {
        session
            .request(
                "7",
                exec("sleep(60)").timeout(Some(Duration::from_millis(300))),
                Origin::Person,
            )
            .await
    });
    let req = c.recv_request().await;
    let cancel = c.recv().await;
    assert_eq!(cancel, json!({"type": "cancel", "id": req["id"]}));
    assert!(matches!(
        t.await.unwrap(),
        Err(RequestError::Timeout { .. })
    ));
    // A late answer after the timeout is dropped, not delivered: logged as the answer of a
    // request that did not stop when asked.
    c.respond(req["id"].as_str().unwrap(), json!({"ok": true}))
        .await;
    wait_until(|| {
        host.session
            .recent(50)
            .iter()
            .any(|e| e.event.as_str() == "late_answer")
    })
    .await;
}

#[tokio::test]
async fn disconnect_fails_pending_at_once() {
    let host = start_host().await;
    let mut c = FakeComputer::link(&host, 7, None).await;
    let session = host.session.clone();
    let started = std::time::Instant::now();
    let t = tokio::spawn(async move {
        session
            .request(
                "7",
                exec("sleep(60)").timeout(Some(Duration::from_secs(120))),
                Origin::Person,
            )
            .await
    });
    c.recv_request().await;
    c.close().await;
    assert_eq!(t.await.unwrap(), Err(RequestError::Disconnected));
    assert!(started.elapsed() < Duration::from_secs(10));
    wait_until(|| host.session.computer("7:").is_some_and(|c| !c.online)).await;
}

#[tokio::test]
async fn same_trapos_id_replaces_with_4002() {
    let host = start_host().await;
    let mut old = FakeComputer::link(&host, 7, Some("m")).await;
    let session = host.session.clone();
    let t = tokio::spawn(async move { session.request("7:m", exec("x"), Origin::Person).await });
    old.recv_request().await;
    let (_new, _) = FakeComputer::link_with(&host, hello(7, Some("m"))).await;
    assert_eq!(t.await.unwrap(), Err(RequestError::Disconnected));
    let (code, _) = old.recv_close().await;
    assert_eq!(code, Some(4002));
    assert!(host.session.computer("7:m").unwrap().online);
}

#[tokio::test]
async fn large_requests_are_fragmented_to_the_computers_limit() {
    let host = start_host().await;
    let mut h = hello(7, None);
    h["max_message"] = json!(1024);
    let (mut c, _) = FakeComputer::link_with(&host, h).await;
    let code = format!("return \"{}\" -- é", "x".repeat(5000));
    let session = host.session.clone();
    let sent = code.clone();
    let t = tokio::spawn(async move { session.request("7", exec(&sent), Origin::Person).await });
    let mut joined = String::new();
    let mut expect_seq = 0;
    loop {
        let raw = c.recv_text().await;
        assert!(raw.len() <= 1024, "frame of {} bytes", raw.len());
        let v: Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(v["type"], "fragment");
        assert_eq!(v["seq"], expect_seq);
        expect_seq += 1;
        joined.push_str(v["data"].as_str().unwrap());
        if v["last"] == true {
            break;
        }
    }
    assert!(joined.is_ascii());
    let req: Value = serde_json::from_str(&joined).unwrap();
    assert_eq!(req["type"], "gateway_request");
    // The wire carries bytes: é is two \u00XX escapes, which decode to its UTF-8 bytes.
    let wire = req["payload"]["code"].as_str().unwrap();
    let bytes: Vec<u8> = wire.chars().map(|ch| ch as u32 as u8).collect();
    assert_eq!(String::from_utf8(bytes).unwrap(), code);
    c.respond(req["id"].as_str().unwrap(), json!({"ok": true}))
        .await;
    t.await.unwrap().unwrap();
}

#[tokio::test]
async fn fragmented_responses_are_joined() {
    let host = start_host().await;
    let mut c = FakeComputer::link(&host, 7, None).await;
    let session = host.session.clone();
    let t = tokio::spawn(async move { session.request("7", exec("x"), Origin::Person).await });
    let req = c.recv_request().await;
    let body = json!({"type": "computer_response", "id": req["id"], "ok": true,
        "payload": {"ok": true, "output": "caf\u{00c3}\u{00a9}", "returns": [], "n": 0}})
    .to_string();
    let pieces: Vec<String> = body
        .as_bytes()
        .chunks(20)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let n = pieces.len();
    for (i, p) in pieces.into_iter().enumerate() {
        c.send(&json!({"type": "fragment", "mid": "m-1", "seq": i, "last": i + 1 == n, "data": p}))
            .await;
    }
    let v = t.await.unwrap().unwrap();
    assert_eq!(v["output"], "café");
}

#[tokio::test]
async fn frames_over_the_limit_close_with_1009() {
    let host = start_host_with(|s| s.max_message = 4096).await;
    let mut c = FakeComputer::link(&host, 7, None).await;
    let big = json!({"type": "output", "id": "x", "text": "y".repeat(5000)});
    c.send(&big).await;
    assert_eq!(c.recv_close().await.0, Some(1009));
}

#[tokio::test]
async fn at_most_eight_in_flight_the_rest_wait_on_the_host() {
    let host = start_host().await;
    let mut c = FakeComputer::link(&host, 7, None).await;
    let mut tickets = Vec::new();
    for i in 0..10 {
        tickets.push(
            host.session
                .start("7", exec(&format!("return {i}")), Origin::Person)
                .unwrap(),
        );
    }
    let mut ids = Vec::new();
    for _ in 0..8 {
        ids.push(c.recv_request().await["id"].as_str().unwrap().to_owned());
    }
    let info = host.session.computer("7:").unwrap();
    assert_eq!((info.running, info.queued), (8, 2));
    c.respond(&ids[0], json!({"ok": true})).await;
    let ninth = c.recv_request().await;
    assert_eq!(ninth["payload"]["code"], "return 8");
    for t in tickets.drain(1..) {
        drop(t); // cancels the rest
    }
}

#[tokio::test]
async fn busy_when_the_host_queue_is_full() {
    let host = start_host_with(|s| {
        s.max_in_flight = 1;
        s.max_queued = 1;
    })
    .await;
    let _c = FakeComputer::link(&host, 7, None).await;
    let _a = host.session.start("7", exec("1"), Origin::Person).unwrap();
    let _b = host.session.start("7", exec("2"), Origin::Person).unwrap();
    let err = host
        .session
        .start("7", exec("3"), Origin::Person)
        .err()
        .unwrap();
    assert_eq!(err.code(), "busy");
}

#[tokio::test]
async fn heartbeat_pings_and_three_misses_disconnect() {
    let host = start_host_with(|s| s.heartbeat = Duration::from_millis(100)).await;
    let mut c = FakeComputer::link(&host, 7, None).await;
    let ping = c.recv_any().await;
    assert_eq!(ping["type"], "ping");
    c.send(&json!({"type": "pong", "t": ping["t"]})).await;
    wait_until(|| host.session.computer("7:").unwrap().last_rtt_ms.is_some()).await;
    // Now stay silent: after three unanswered pings the host closes.
    let (code, _) = c.recv_close().await;
    assert_eq!(code, Some(4005));
    wait_until(|| !host.session.computer("7:").unwrap().online).await;
}

#[tokio::test]
async fn computer_requests_get_answers() {
    let host = start_host().await;
    let mut c = FakeComputer::link(&host, 7, None).await;
    c.send(&json!({"type": "computer_request", "id": "c-1", "request": "ping", "payload": {}}))
        .await;
    let r = c.recv().await;
    assert_eq!(
        (r["type"].as_str(), r["id"].as_str(), r["ok"].as_bool()),
        (Some("gateway_response"), Some("c-1"), Some(true))
    );
    c.send(&json!({"type": "computer_request", "id": "c-2", "request": "teleport", "payload": {}}))
        .await;
    let r = c.recv().await;
    assert_eq!(r["error"]["code"], "unknown_type");
}

#[tokio::test]
async fn serve_replaces_the_advertised_types() {
    let host = start_host().await;
    let mut c = FakeComputer::link(&host, 7, None).await;
    c.send(&json!({"type": "serve", "types": ["exec-lua", "turtle-move"]}))
        .await;
    wait_until(|| host.session.computer("7:").unwrap().serves == ["exec-lua", "turtle-move"]).await;
}

#[tokio::test]
async fn remote_failures_keep_their_code_and_output() {
    let host = start_host().await;
    let mut c = FakeComputer::link(&host, 7, None).await;
    let session = host.session.clone();
    let t = tokio::spawn(async move { session.request("7", exec("x"), Origin::Person).await });
    let req = c.recv_request().await;
    c.send(
        &json!({"type": "computer_response", "id": req["id"], "ok": false,
        "error": {"code": "cancelled", "message": "stopped", "output": "so far\n"}}),
    )
    .await;
    assert_eq!(
        t.await.unwrap(),
        Err(RequestError::Cancelled {
            output: Some("so far\n".into())
        })
    );
}

#[tokio::test]
async fn http_endpoints_serve_health_installer_and_files() {
    let host = start_host().await;
    let _c = FakeComputer::link(&host, 7, None).await;
    let base = format!("http://{}", host.gateway_addr);
    let client = reqwest::Client::new();
    let health: Value = client
        .get(format!("{base}/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["ok"], true);
    assert_eq!(health["computers"], 1);
    let missing = client
        .get(format!("{base}/lua/nope.lua"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let installer = client
        .get(format!("{base}/install.lua"))
        .send()
        .await
        .unwrap();
    if trapdesk::lua_files::get("install.lua").is_some() {
        assert_eq!(installer.status(), 200);
        let text = installer.text().await.unwrap();
        assert!(text.contains(&host.gateway_addr.to_string()));
        assert!(!text.contains("__TRAPDESK_HOST__"));
    }
}

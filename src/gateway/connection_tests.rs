//! The link loop over channels instead of a socket: what a computer sends goes in one
//! channel, what the gateway sends comes out of the other, and the session is real.

use std::sync::Arc;

use axum::extract::ws::Message as WsMessage;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::super::protocol::{CLOSE_AUTH_FAILED, CLOSE_HEARTBEAT};
use super::super::{GatewayState, door, stats};
use trapdesk_core::config::Settings;
use trapdesk_core::session::{Origin, RequestSpec, Session};

const SECRET: &str = "test-secret-7kq2m9xw";

/// A computer at the far end of a channel pair, and the link task serving it.
struct Computer {
    to_gateway: mpsc::UnboundedSender<Result<WsMessage, axum::Error>>,
    from_gateway: mpsc::UnboundedReceiver<WsMessage>,
    session: Session,
    link: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Computer {
    fn start(heartbeat_ms: u64) -> Computer {
        let dir = tempfile::tempdir().expect("a temp dir");
        let settings = Settings {
            secret: SECRET.into(),
            data_dir: dir.path().to_owned(),
            heartbeat: std::time::Duration::from_millis(heartbeat_ms),
            ..Settings::default()
        };
        let session = Session::new(settings.clone(), false);
        let state = GatewayState {
            secrets: Arc::new(trapdesk_core::trust::secrets::Secrets::new(&settings)),
            session: session.clone(),
            settings: Arc::new(settings),
            shutdown: tokio_util::sync::CancellationToken::new(),
            stats: Arc::new(stats::LinkStats::default()),
            waiting: Arc::new(door::Waiting::default()),
        };
        let (to_gateway, rx) = mpsc::unbounded_channel();
        let (tx, from_gateway) = mpsc::unbounded_channel();
        let sink = Box::pin(futures_util::sink::unfold(
            tx,
            |tx, m: WsMessage| async move {
                tx.send(m).map_err(axum::Error::new)?;
                Ok::<_, axum::Error>(tx)
            },
        ));
        let stream = Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|m| (m, rx))
        }));
        let link = tokio::spawn(super::linked(sink, stream, state, None));
        Computer {
            to_gateway,
            from_gateway,
            session,
            link,
            _dir: dir,
        }
    }

    fn send(&self, v: Value) {
        let text = v.to_string();
        self.to_gateway
            .send(Ok(WsMessage::Text(text.into())))
            .expect("the link reads");
    }

    /// The next text frame as JSON, or the close frame's code.
    async fn next(&mut self) -> Result<Value, Option<u16>> {
        loop {
            match self.from_gateway.recv().await {
                Some(WsMessage::Text(t)) => {
                    return Ok(serde_json::from_str(t.as_str()).expect("JSON from the gateway"));
                }
                Some(WsMessage::Close(f)) => return Err(f.map(|f| f.code)),
                Some(_) => continue,
                None => return Err(None),
            }
        }
    }

    /// The next message of `type`, skipping heartbeats.
    async fn next_of(&mut self, kind: &str) -> Value {
        loop {
            let v = self.next().await.expect("a message, not a close");
            if v["type"] == kind {
                return v;
            }
        }
    }

    fn hello(&self, secret: &str) {
        self.send(json!({"type": "hello", "protocol": 1, "computer_id": 7,
            "label": "miner", "secret": secret}));
    }
}

#[tokio::test]
async fn a_request_travels_to_the_computer_and_its_answer_back() {
    let mut c = Computer::start(15_000);
    c.hello(SECRET);
    let welcome = c.next_of("welcome").await;
    assert_eq!(welcome["trapos_id"], "7:miner", "{welcome}");
    let session = c.session.clone();
    let call = tokio::spawn(async move {
        session
            .request(
                "miner",
                RequestSpec::new(
                    trapdesk_proto::protocol::Kind::ExecLua,
                    json!({"code": "return 1"}),
                ),
                Origin::Person,
            )
            .await
    });
    let req = c.next_of("gateway_request").await;
    assert_eq!(req["request"], "exec-lua", "{req}");
    let id = req["id"].as_str().expect("an id").to_owned();
    c.send(json!({"type": "output", "id": id, "stream": "stdout", "text": "hi\n"}));
    c.send(json!({"type": "computer_response", "id": id, "ok": true,
        "payload": {"returns": [1]}}));
    let got = call
        .await
        .expect("the call task")
        .expect("the request's result");
    assert_eq!(got["returns"], json!([1]), "{got}");
}

#[tokio::test]
async fn a_wrong_secret_is_told_and_closed_with_auth_failed() {
    let mut c = Computer::start(15_000);
    c.hello("not-the-secret-at-all");
    let err = c.next_of("error").await;
    assert_eq!(err["code"], "auth_failed", "{err}");
    assert_eq!(c.next().await, Err(Some(CLOSE_AUTH_FAILED)));
    c.link.await.expect("the link task ends");
    assert!(c.session.computers().is_empty());
}

/// Starts `exec-lua` of `code` on `who` in a task of its own.
fn exec(
    session: &Session,
    who: &'static str,
    code: String,
) -> tokio::task::JoinHandle<Result<Value, trapdesk_core::session::RequestError>> {
    let session = session.clone();
    tokio::spawn(async move {
        session
            .request(
                who,
                RequestSpec::new(
                    trapdesk_proto::protocol::Kind::ExecLua,
                    json!({"code": code}),
                ),
                Origin::Person,
            )
            .await
    })
}

#[tokio::test]
async fn a_label_set_on_the_computer_renames_it_everywhere() {
    let mut c = Computer::start(15_000);
    c.hello(SECRET);
    c.next_of("welcome").await;
    c.send(json!({"type": "serve", "types": ["exec-lua"]}));
    c.send(json!({"type": "label", "label": "digger"}));
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while c.session.computer("7:digger").is_none() {
        assert!(tokio::time::Instant::now() < deadline, "never renamed");
        tokio::task::yield_now().await;
    }
    let ids: Vec<String> = c
        .session
        .computers()
        .into_iter()
        .map(|i| i.trapos_id)
        .collect();
    assert_eq!(ids, vec!["7:digger".to_owned()], "the old name is gone");
    let info = c
        .session
        .computer("7:digger")
        .expect("the renamed computer");
    assert_eq!(info.label.as_deref(), Some("digger"));
    assert!(info.online, "still linked: {info:?}");
    assert_eq!(c.session.resolve("digger").as_deref(), Ok("7:digger"));
    assert!(
        c.session.resolve("miner").is_err(),
        "the old label no longer resolves"
    );
    assert!(
        c.session
            .recent(10)
            .iter()
            .any(|e| e.event == "relabelled" && e.detail == "7:miner is now 7:digger"),
        "logged: {:?}",
        c.session.recent(10)
    );
    // Requests go to it under its new name, on the same link.
    let call = exec(&c.session, "digger", "return 1".into());
    let req = c.next_of("gateway_request").await;
    c.send(
        json!({"type": "computer_response", "id": req["id"], "ok": true,
        "payload": {"returns": [1]}}),
    );
    let got = call.await.expect("the call task").expect("the answer");
    assert_eq!(got["returns"], json!([1]));
    // No label at all: `<id>:`.
    c.send(json!({"type": "label", "label": null}));
    while c.session.computer("7:").is_none() {
        tokio::task::yield_now().await;
    }
    assert!(c.session.computer("7:digger").is_none());
}

#[tokio::test]
async fn a_limit_from_the_computer_bounds_every_frame_the_host_sends() {
    let mut c = Computer::start(15_000);
    c.hello(SECRET);
    c.next_of("welcome").await;
    // Padded as the client's probe is: the pad is ignored.
    c.send(json!({"type": "limit", "max_message": 4096, "pad": "x".repeat(3000)}));
    c.send(json!({"type": "serve", "types": ["exec-lua"]}));
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while c.session.computer("7:miner").map(|i| i.max_message) != Some(4096) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the limit never applied"
        );
        tokio::task::yield_now().await;
    }
    let code = "return ('y'):rep(1)--".to_owned() + &"z".repeat(20_000);
    let call = exec(&c.session, "miner", code.clone());
    let mut parts = String::new();
    loop {
        let frame = match c.from_gateway.recv().await {
            Some(WsMessage::Text(t)) => t.as_str().to_owned(),
            other => unreachable!("a text frame, got {other:?}"),
        };
        assert!(frame.len() <= 4096, "a frame of {} bytes", frame.len());
        let v: Value = serde_json::from_str(&frame).expect("JSON");
        if v["type"] != "fragment" {
            continue;
        }
        parts.push_str(v["data"].as_str().expect("data"));
        if v["last"] == true {
            break;
        }
    }
    let whole: Value = serde_json::from_str(&parts).expect("the request, whole");
    assert_eq!(whole["payload"]["code"], json!(code));
    call.abort();
}

#[tokio::test(start_paused = true)]
async fn a_link_lost_during_a_long_chunk_is_reported_as_a_hard_abort() {
    let mut c = Computer::start(600_000);
    c.hello(SECRET);
    c.next_of("welcome").await;
    c.send(json!({"type": "serve", "types": ["exec-lua"]}));
    let call = exec(&c.session, "miner", "while true do end".into());
    c.next_of("gateway_request").await;
    // 8.5 s without a yield: CC shuts the computer down, which drops its socket without
    // a close frame.
    tokio::time::advance(std::time::Duration::from_millis(8_600)).await;
    drop(c.to_gateway);
    c.link.await.expect("the link task ends");
    let err = call.await.expect("the call task").expect_err("no answer");
    assert_eq!(err.code(), "shut_down", "{err}");
    let text = err.to_string();
    assert!(text.contains("Too long without yielding"), "{text}");
    assert!(text.contains("/computercraft turn-on #7"), "{text}");
    // Asked for again, it says the same rather than "no linked computer".
    let again = c.session.resolve("miner").expect_err("offline");
    assert_eq!(again.code(), "shut_down", "{again}");
    assert!(
        c.session
            .recent(10)
            .iter()
            .any(|e| e.event == "unlinked" && e.detail.contains("went off while request")),
        "logged: {:?}",
        c.session.recent(10)
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_the_computer_never_got_fails_as_lost_after_ten_seconds() {
    let mut c = Computer::start(600_000);
    c.hello(SECRET);
    c.next_of("welcome").await;
    // A client that sends receipts says so with its `limit`.
    c.send(json!({"type": "limit", "max_message": 131072}));
    c.send(json!({"type": "serve", "types": ["exec-lua"]}));
    let started = tokio::time::Instant::now();
    let dropped = exec(&c.session, "miner", "return 1".into());
    let first = c.next_of("gateway_request").await;
    let kept = exec(&c.session, "miner", "sleep(20)".into());
    let second = c.next_of("gateway_request").await;
    c.send(json!({"type": "received", "id": second["id"]}));
    let err = dropped.await.expect("the call task").expect_err("lost");
    assert_eq!(err.code(), "lost", "{err}");
    assert!(err.to_string().contains("256"), "{err}");
    let waited = started.elapsed();
    assert!(
        waited >= std::time::Duration::from_secs(10) && waited < std::time::Duration::from_secs(11),
        "failed after {waited:?}"
    );
    let cancel = c.next_of("cancel").await;
    assert_eq!(
        cancel["id"], first["id"],
        "told not to run it if it comes late"
    );
    // The request with its receipt runs on past the deadline, and answers.
    tokio::time::advance(std::time::Duration::from_secs(15)).await;
    c.send(
        json!({"type": "computer_response", "id": second["id"], "ok": true,
        "payload": {"returns": []}}),
    );
    kept.await.expect("the call task").expect("answered");
}

#[tokio::test(start_paused = true)]
async fn a_client_without_receipts_is_not_held_to_them() {
    let mut c = Computer::start(600_000);
    c.hello(SECRET);
    c.next_of("welcome").await;
    c.send(json!({"type": "serve", "types": ["exec-lua"]}));
    let call = exec(&c.session, "miner", "sleep(20)".into());
    let req = c.next_of("gateway_request").await;
    tokio::time::advance(std::time::Duration::from_secs(20)).await;
    c.send(
        json!({"type": "computer_response", "id": req["id"], "ok": true,
        "payload": {"returns": []}}),
    );
    call.await.expect("the call task").expect("answered");
}

#[tokio::test(start_paused = true)]
async fn a_short_request_lost_with_its_link_is_only_disconnected() {
    let mut c = Computer::start(600_000);
    c.hello(SECRET);
    c.next_of("welcome").await;
    c.send(json!({"type": "serve", "types": ["exec-lua"]}));
    let call = exec(&c.session, "miner", "return 1".into());
    c.next_of("gateway_request").await;
    tokio::time::advance(std::time::Duration::from_secs(2)).await;
    drop(c.to_gateway);
    c.link.await.expect("the link task ends");
    let err = call.await.expect("the call task").expect_err("no answer");
    assert_eq!(err.code(), "disconnected", "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_computer_that_answers_no_ping_is_closed_after_three() {
    let mut c = Computer::start(1_000);
    c.hello(SECRET);
    c.next_of("welcome").await;
    let mut pings = 0;
    let code = loop {
        match c.next().await {
            Ok(v) if v["type"] == "ping" => pings += 1,
            Ok(_) => {}
            Err(code) => break code,
        }
    };
    assert_eq!(code, Some(CLOSE_HEARTBEAT));
    assert_eq!(
        pings, 3,
        "closed at the heartbeat after three unanswered pings"
    );
    c.link.await.expect("the link task ends");
}

#[tokio::test(start_paused = true)]
async fn a_computer_that_answers_every_ping_stays() {
    let mut c = Computer::start(1_000);
    c.hello(SECRET);
    c.next_of("welcome").await;
    for _ in 0..10 {
        let ping = c.next_of("ping").await;
        c.send(json!({"type": "pong", "t": ping["t"]}));
    }
    assert_eq!(c.session.computers().len(), 1);
    drop(c.to_gateway);
    c.link.await.expect("the link ends when the socket does");
}

/// Starts `kind` with `payload` on `7:miner` in a task of its own.
fn start(
    session: &Session,
    kind: trapdesk_proto::protocol::Kind,
    payload: Value,
) -> tokio::task::JoinHandle<Result<Value, trapdesk_core::session::RequestError>> {
    let session = session.clone();
    tokio::spawn(async move {
        session
            .request("miner", RequestSpec::new(kind, payload), Origin::Person)
            .await
    })
}

/// The next frame, text or binary, skipping heartbeats.
async fn next_frame(c: &mut Computer) -> WsMessage {
    loop {
        match c.from_gateway.recv().await.expect("a frame") {
            WsMessage::Text(t) if t.as_str().contains("\"type\":\"ping\"") => continue,
            m => return m,
        }
    }
}

#[tokio::test]
async fn a_binary_link_moves_file_contents_as_raw_bytes() {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut c = Computer::start(15_000);
    c.send(json!({"type": "hello", "protocol": 1, "computer_id": 7,
        "label": "miner", "secret": SECRET, "binary": true}));
    let welcome = c.next_of("welcome").await;
    assert_eq!(welcome["binary"], true, "{welcome}");
    c.send(json!({"type": "serve", "types": ["write-file", "read-file"]}));
    let content: Vec<u8> = (0..=255u8).cycle().take(1000).collect();

    // write-file: the content as a blob frame of raw bytes, then the request naming it.
    let call = start(
        &c.session,
        trapdesk_proto::protocol::Kind::WriteFile,
        json!({"path": "a.bin", "content": b64.encode(&content), "encoding": "base64"}),
    );
    let WsMessage::Binary(blob) = next_frame(&mut c).await else {
        unreachable!("the content did not come as a binary frame")
    };
    let nl = blob
        .iter()
        .position(|b| *b == b'\n')
        .expect("a header line");
    let head: Value = serde_json::from_slice(&blob[..nl]).expect("a JSON header");
    assert_eq!(
        (head["type"].clone(), head["last"].clone()),
        (json!("blob"), json!(true))
    );
    assert_eq!(&blob[nl + 1..], &content[..]);
    let req = c.next_of("gateway_request").await;
    assert_eq!(req["id"], head["id"], "{req}");
    assert_eq!(
        req["payload"],
        json!({"path": "a.bin", "encoding": "binary", "bytes": 1000})
    );
    c.send(
        json!({"type": "computer_response", "id": req["id"], "ok": true,
        "payload": {"ok": true, "bytes": 1000}}),
    );
    let got = call
        .await
        .expect("the call task")
        .expect("the write's result");
    assert_eq!(got["bytes"], 1000, "{got}");

    // read-file: asked for as binary; the page comes back as a blob before the answer, and the
    // session sees the host's own shape (base64).
    let call = start(
        &c.session,
        trapdesk_proto::protocol::Kind::ReadFile,
        json!({"path": "a.bin", "offset": 0, "length": 1000}),
    );
    let req = c.next_of("gateway_request").await;
    assert_eq!(req["payload"]["binary"], true, "{req}");
    let id = req["id"].as_str().expect("an id").to_owned();
    let mut frame =
        format!("{{\"type\":\"blob\",\"id\":\"{id}\",\"seq\":0,\"last\":true}}\n").into_bytes();
    frame.extend_from_slice(&content);
    c.to_gateway
        .send(Ok(WsMessage::Binary(frame.into())))
        .expect("the link reads");
    let mut out =
        format!("{{\"type\":\"output\",\"id\":\"{id}\",\"stream\":\"out\"}}\n").into_bytes();
    out.extend_from_slice(b"raw \xff\n");
    c.to_gateway
        .send(Ok(WsMessage::Binary(out.into())))
        .expect("the link reads");
    c.send(json!({"type": "computer_response", "id": id, "ok": true,
        "payload": {"ok": true, "encoding": "binary", "bytes": 1000, "offset": 0, "total": 1000}}));
    let got = call
        .await
        .expect("the call task")
        .expect("the read's result");
    assert_eq!(got["encoding"], "base64", "{got}");
    assert_eq!(got["content"], b64.encode(&content));
}

#[tokio::test]
async fn a_link_that_did_not_say_binary_keeps_base64_and_refuses_binary_frames() {
    let mut c = Computer::start(15_000);
    c.hello(SECRET);
    let welcome = c.next_of("welcome").await;
    assert!(welcome.get("binary").is_none(), "{welcome}");
    let call = start(
        &c.session,
        trapdesk_proto::protocol::Kind::WriteFile,
        json!({"path": "a.bin", "content": "AAE=", "encoding": "base64"}),
    );
    let WsMessage::Text(t) = next_frame(&mut c).await else {
        unreachable!("a binary frame to a computer that did not say it takes them")
    };
    let req: Value = serde_json::from_str(t.as_str()).expect("JSON");
    assert_eq!(req["payload"]["content"], "AAE=", "{req}");
    c.to_gateway
        .send(Ok(WsMessage::Binary(
            b"{\"type\":\"output\",\"id\":\"x\"}\nhi".to_vec().into(),
        )))
        .expect("the link reads");
    let err = c.next_of("error").await;
    assert_eq!(err["code"], "bad_message", "{err}");
    call.abort();
}

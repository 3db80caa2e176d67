//! Binary links: file contents as raw bytes on a link that said `binary`, base64 on one that
//! did not.

use axum::extract::ws::Message as WsMessage;
use serde_json::{Value, json};

use super::{Computer, SECRET};
use trapdesk_core::session::{Origin, RequestSpec, Session};

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

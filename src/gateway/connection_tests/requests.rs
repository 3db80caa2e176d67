//! A request's way out and its answer's way back, and the frames it goes in.

use axum::extract::ws::Message as WsMessage;
use serde_json::{Value, json};

use super::{Computer, SECRET, exec};
use trapdesk_core::session::{Origin, RequestSpec};

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

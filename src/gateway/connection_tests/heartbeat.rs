//! The heartbeat: pings, and the close of a computer that stops answering them.

use serde_json::json;

use super::super::super::protocol::CLOSE_HEARTBEAT;
use super::{Computer, SECRET};

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

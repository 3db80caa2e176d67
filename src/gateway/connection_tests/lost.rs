//! Requests that never come back: lost with their link, or sent and never received.

use serde_json::json;

use super::{Computer, SECRET, exec};

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
            .any(|e| e.event.as_str() == "unlinked" && e.detail.contains("went off while request")),
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

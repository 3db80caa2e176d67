//! Who the computer is: the secret it shows, and the label it may change while linked.

use serde_json::json;

use super::super::super::protocol::CLOSE_AUTH_FAILED;
use super::{Computer, SECRET, exec};

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
            .any(|e| e.event.as_str() == "relabelled" && e.detail == "7:miner is now 7:digger"),
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

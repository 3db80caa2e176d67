//! Faults on the computer link (RELIABILITY.md, guarantee 1): a computer that drops mid-frame,
//! mid-fragment or mid-request, goes half-open, answers twice, late, with a wrong id or with
//! another computer's id. Each request still ends exactly once, and the pending table and the
//! per-computer slots and queues are back to empty afterwards.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{FakeComputer, start_host, start_host_with, wait_until};
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::MaybeTlsStream;
use trapdesk::session::{Event, Origin, RequestError, RequestSpec, Session};

fn exec(code: &str) -> RequestSpec {
    RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
        .timeout(Some(Duration::from_secs(60)))
}

/// Nothing pending, nothing running or queued on any computer, and every started request got
/// exactly one `RequestFinished` event.
async fn assert_back_to_bounds(
    session: &Session,
    events: &mut tokio::sync::broadcast::Receiver<Event>,
) {
    wait_until(|| session.pending().is_empty()).await;
    for c in session.computers() {
        assert_eq!((c.running, c.queued), (0, 0), "{}", c.trapos_id);
    }
    let mut started = std::collections::HashSet::new();
    let mut finished = std::collections::HashMap::<String, u32>::new();
    while let Ok(e) = events.try_recv() {
        match e {
            Event::RequestStarted { info } => {
                started.insert(info.request_id);
            }
            Event::RequestFinished { request_id, .. } => {
                *finished.entry(request_id).or_default() += 1;
            }
            _ => {}
        }
    }
    for id in &started {
        assert_eq!(
            finished.get(id),
            Some(&1),
            "{id} ended {:?} times",
            finished.get(id)
        );
    }
    assert_eq!(finished.len(), started.len());
}

/// Starts `code` on `target` in the background.
fn spawn_request(
    session: &Session,
    target: &str,
    code: &str,
) -> tokio::task::JoinHandle<Result<Value, RequestError>> {
    let session = session.clone();
    let target = target.to_owned();
    let spec = exec(code);
    tokio::spawn(async move { session.request(&target, spec, Origin::Person).await })
}

#[tokio::test]
async fn drop_mid_frame_fails_the_request_as_disconnected() {
    let host = start_host().await;
    let mut events = host.session.subscribe();
    let mut c = FakeComputer::link(&host, 1, None).await;
    let t = spawn_request(&host.session, "1", "sleep(60)");
    c.recv_request().await;
    // Half a masked text frame (header says 1000 bytes, 10 follow), then the TCP link is gone.
    let MaybeTlsStream::Plain(tcp) = c.ws.get_mut() else {
        unreachable!("tests use plain TCP")
    };
    let mut frame = vec![0x81u8, 0x80 | 126, 0x03, 0xE8, 1, 2, 3, 4];
    frame.extend_from_slice(b"{\"type\":\"o");
    tcp.write_all(&frame).await.unwrap();
    tcp.flush().await.unwrap();
    drop(c);
    assert_eq!(t.await.unwrap(), Err(RequestError::Disconnected));
    wait_until(|| host.session.computer("1:").is_some_and(|c| !c.online)).await;
    assert_back_to_bounds(&host.session, &mut events).await;
}

#[tokio::test]
async fn drop_mid_fragment_forgets_the_pieces_and_relinks_clean() {
    let host = start_host().await;
    let mut events = host.session.subscribe();
    let mut c = FakeComputer::link(&host, 2, None).await;
    let t = spawn_request(&host.session, "2", "return 1");
    let req = c.recv_request().await;
    let body = json!({"type": "computer_response", "id": req["id"], "ok": true,
        "payload": {"ok": true, "returns": [], "n": 0}})
    .to_string();
    let (head, _) = body.split_at(body.len() / 2);
    c.send(&json!({"type": "fragment", "mid": "m-1", "seq": 0, "last": false, "data": head}))
        .await;
    c.close().await;
    assert_eq!(t.await.unwrap(), Err(RequestError::Disconnected));
    // A new connection starts from nothing: a lone `last` piece of the old message is refused.
    let mut c = FakeComputer::link(&host, 2, None).await;
    c.send(&json!({"type": "fragment", "mid": "m-1", "seq": 1, "last": true, "data": "x"}))
        .await;
    let err = c.recv().await;
    assert_eq!(err["code"], "bad_message", "{err}");
    let t = spawn_request(&host.session, "2", "return 2");
    let req = c.recv_request().await;
    c.respond(
        req["id"].as_str().unwrap(),
        json!({"ok": true, "returns": [], "n": 0}),
    )
    .await;
    assert!(t.await.unwrap().is_ok());
    assert_back_to_bounds(&host.session, &mut events).await;
}

#[tokio::test]
async fn drop_mid_request_with_many_in_flight_ends_every_one() {
    let host = start_host().await;
    let mut events = host.session.subscribe();
    let mut c = FakeComputer::link(&host, 3, None).await;
    // Eight in flight on the computer, twelve queued on the host.
    let tasks: Vec<_> = (0..20)
        .map(|i| spawn_request(&host.session, "3", &format!("return {i}")))
        .collect();
    for _ in 0..8 {
        c.recv_request().await;
    }
    wait_until(|| host.session.computer("3:").is_some_and(|c| c.queued == 12)).await;
    // No close frame: the socket just goes.
    drop(c);
    for t in tasks {
        assert_eq!(t.await.unwrap(), Err(RequestError::Disconnected));
    }
    assert_back_to_bounds(&host.session, &mut events).await;
}

#[tokio::test]
async fn half_open_link_is_caught_by_the_heartbeat_within_its_bound() {
    let heartbeat = Duration::from_millis(200);
    let host = start_host_with(|s| s.heartbeat = heartbeat).await;
    let mut events = host.session.subscribe();
    // The computer links, then neither reads nor writes: to the host this is a TCP link whose
    // far end vanished without a FIN.
    let c = FakeComputer::link(&host, 4, None).await;
    let t = spawn_request(&host.session, "4", "sleep(60)");
    let started = std::time::Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(10), t)
        .await
        .unwrap()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(outcome, Err(RequestError::Disconnected));
    // Three unanswered pings: at least 3 periods (less one for the first tick), at most 4 plus
    // scheduling slack on a busy machine.
    assert!(took >= heartbeat * 2, "caught after {took:?}");
    assert!(
        took <= heartbeat * 4 + Duration::from_secs(2),
        "caught after {took:?}"
    );
    let unlinked = host.session.recent(20);
    assert!(
        unlinked
            .iter()
            .any(|e| e.event.as_str() == "unlinked" && e.detail.contains("heartbeats missed"))
    );
    drop(c);
    assert_back_to_bounds(&host.session, &mut events).await;
}

#[tokio::test]
async fn answers_twice_late_wrong_id_and_foreign_id_are_dropped() {
    let host = start_host().await;
    let mut events = host.session.subscribe();
    let mut a = FakeComputer::link(&host, 5, Some("a")).await;
    let mut b = FakeComputer::link(&host, 6, Some("b")).await;

    // Twice: the first answer wins, the second is dropped and logged.
    let t = spawn_request(&host.session, "5", "return 1");
    let req = a.recv_request().await;
    let id = req["id"].as_str().unwrap().to_owned();
    a.respond(
        &id,
        json!({"ok": true, "returns": [{"type": "number", "value": 1}], "n": 1}),
    )
    .await;
    a.respond(
        &id,
        json!({"ok": true, "returns": [{"type": "number", "value": 2}], "n": 1}),
    )
    .await;
    assert_eq!(t.await.unwrap().unwrap()["returns"][0]["value"], 1);
    wait_until(|| {
        host.session
            .recent(50)
            .iter()
            .any(|e| e.event.as_str() == "dropped" && e.request_id.as_deref() == Some(id.as_str()))
    })
    .await;

    // Wrong id and another computer's id: dropped, the real request keeps waiting.
    let t = spawn_request(&host.session, "5", "return 3");
    let req = a.recv_request().await;
    let id = req["id"].as_str().unwrap().to_owned();
    a.respond("h-999999", json!({"ok": true})).await;
    b.respond(
        &id,
        json!({"ok": true, "returns": [{"type": "string", "value": "from b"}], "n": 1}),
    )
    .await;
    wait_until(|| {
        host.session
            .recent(50)
            .iter()
            .filter(|e| e.event.as_str() == "dropped")
            .count()
            >= 3
    })
    .await;
    assert_eq!(
        host.session.pending().len(),
        1,
        "still waiting for computer 5"
    );
    a.respond(
        &id,
        json!({"ok": true, "returns": [{"type": "string", "value": "from a"}], "n": 1}),
    )
    .await;
    assert_eq!(t.await.unwrap().unwrap()["returns"][0]["value"], "from a");

    // Late: after the timeout, the answer is dropped (logged `late_answer`: the request had
    // not stopped when asked); the caller already had `timeout`.
    let session = host.session.clone();
    let t = tokio::spawn(async move {
        session
            .request(
                "5",
                exec("sleep(9)").timeout(Some(Duration::from_millis(200))),
                Origin::Person,
            )
            .await
    });
    let req = a.recv_request().await;
    let id = req["id"].as_str().unwrap().to_owned();
    assert!(matches!(
        t.await.unwrap(),
        Err(RequestError::Timeout { .. })
    ));
    a.respond(&id, json!({"ok": true})).await;
    wait_until(|| {
        host.session.recent(50).iter().any(|e| {
            e.event.as_str() == "late_answer" && e.request_id.as_deref() == Some(id.as_str())
        })
    })
    .await;
    // Both computers are still linked and serving.
    let t = spawn_request(&host.session, "b", "return 4");
    let req = b.recv_request().await;
    b.respond(req["id"].as_str().unwrap(), json!({"ok": true}))
        .await;
    assert!(t.await.unwrap().is_ok());
    assert_back_to_bounds(&host.session, &mut events).await;
}

#[tokio::test]
async fn output_without_newlines_stays_bounded_in_the_ring() {
    let host = start_host_with(|s| s.scrollback_lines = 50).await;
    let mut c = FakeComputer::link(&host, 7, None).await;
    let t = spawn_request(&host.session, "7", "while true do write('x') end");
    let req = c.recv_request().await;
    let id = req["id"].as_str().unwrap().to_owned();
    // 4 MB of output in one endless line.
    let chunk = "x".repeat(64 * 1024);
    for _ in 0..64 {
        c.send(&json!({"type": "output", "id": id, "text": chunk}))
            .await;
    }
    c.respond(&id, json!({"ok": true, "returns": [], "n": 0}))
        .await;
    t.await.unwrap().unwrap();
    let items = host.session.output_since("7:", 0);
    assert!(items.len() <= 50);
    let held: usize = items
        .iter()
        .map(|i| match &i.entry {
            trapdesk::session::OutputEntry::Line { text, .. } => text.len(),
            _ => 0,
        })
        .sum();
    assert!(
        held <= 50 * trapdesk::session::output::MAX_LINE,
        "ring holds {held} bytes"
    );
    assert!(held > 0);
}

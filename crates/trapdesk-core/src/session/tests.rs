//! The session's request life cycle, driven through a channel instead of a socket and with
//! tokio's paused clock, so deadlines are exact and the tests never sleep. Linking and naming
//! computers are tested in `links`, what they print in `output`.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::*;
use trapdesk_proto::protocol::{Hello, Response};

mod links;
mod output;

fn hello(id: u64, label: Option<&str>) -> Hello {
    Hello {
        protocol: 1,
        computer_id: id,
        label: label.map(str::to_owned),
        secret: String::new(),
        serves: vec!["exec-lua".into()],
        client: None,
        host: None,
        max_message: None,
    }
}

fn session() -> Session {
    let settings = Settings {
        max_in_flight: 1,
        ..Settings::default()
    };
    Session::new(settings, false)
}

fn exec(code: &str, timeout_s: u64) -> RequestSpec {
    RequestSpec::new(
        trapdesk_proto::protocol::Kind::ExecLua,
        json!({ "code": code }),
    )
    .timeout(Some(Duration::from_secs(timeout_s)))
}

#[tokio::test(start_paused = true)]
async fn deadline_fails_the_caller_and_sends_cancel() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let _link = s.link(&hello(7, Some("miner")), tx);
    let ticket = s.start("7", exec("sleep(99)", 30), Origin::Person).unwrap();
    let id = ticket.id.clone();
    assert!(
        matches!(rx.recv().await, Some(Outbound::Request(r)) if r.id == id && r.timeout_ms == Some(30_000))
    );
    let started = tokio::time::Instant::now();
    let result = ticket.wait().await;
    // Asked to stop at the deadline, the computer did not answer within the grace.
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(30) + super::stopping::STOP_GRACE
    );
    assert!(matches!(result, Err(RequestError::Timeout { .. })));
    assert_eq!(rx.recv().await, Some(Outbound::Cancel { id }));
    assert!(s.pending().is_empty());
}

#[tokio::test(start_paused = true)]
async fn queued_requests_wait_for_a_slot_and_time_out_unsent() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7, None), tx);
    let first = s.start("7", exec("a", 100), Origin::Person).unwrap();
    let second = s.start("7", exec("b", 10), Origin::Person).unwrap();
    assert!(matches!(rx.recv().await, Some(Outbound::Request(r)) if r.id == first.id));
    assert_eq!(
        s.computer("7:").map(|c| (c.running, c.queued)),
        Some((1, 1))
    );
    assert!(matches!(
        second.wait().await,
        Err(RequestError::Timeout { .. })
    ));
    // Never sent, so nothing to cancel on the computer.
    assert!(rx.try_recv().is_err());
    link.response(Response {
        id: first.id.clone(),
        ok: true,
        payload: Some(json!({"ok": true})),
        error: None,
    });
    assert_eq!(first.wait().await, Ok(json!({"ok": true})));
}

#[tokio::test(start_paused = true)]
async fn cancel_ends_queued_at_once_and_asks_the_computer_for_running() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7, None), tx);
    let running = s.start("7", exec("a", 100), Origin::Person).unwrap();
    let queued = s
        .start("7", exec("b", 100), Origin::Agent("bot".into()))
        .unwrap();
    rx.recv().await;
    s.cancel(&queued.id).unwrap();
    assert_eq!(
        queued.wait().await,
        Err(RequestError::Cancelled { output: None })
    );
    s.cancel(&running.id).unwrap();
    assert_eq!(
        rx.recv().await,
        Some(Outbound::Cancel {
            id: running.id.clone()
        })
    );
    link.response(Response {
        id: running.id.clone(),
        ok: false,
        payload: None,
        error: Some(trapdesk_proto::protocol::ErrorBody {
            code: "cancelled".into(),
            message: "cancelled".into(),
            output: Some("partial\n".into()),
        }),
    });
    assert_eq!(
        running.wait().await,
        Err(RequestError::Cancelled {
            output: Some("partial\n".into())
        })
    );
    assert!(matches!(s.cancel("h-99"), Err(CancelError::NotPending(_))));
}

#[tokio::test(start_paused = true)]
async fn dropping_a_ticket_cancels_and_unlinking_fails_the_rest() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7, None), tx);
    let t = s.start("7", exec("a", 100), Origin::Person).unwrap();
    let id = t.id.clone();
    rx.recv().await;
    drop(t);
    assert_eq!(rx.recv().await, Some(Outbound::Cancel { id }));
    let other = s.start("7", exec("b", 100), Origin::Person).unwrap();
    drop(link);
    assert_eq!(other.wait().await, Err(RequestError::Disconnected));
    assert_eq!(s.computer("7:").map(|c| c.online), Some(false));
}

#[tokio::test(start_paused = true)]
async fn a_run_without_deadline_outlives_the_default_and_ends_by_cancel() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let _link = s.link(&hello(7, Some("miner")), tx);
    let spec = RequestSpec::new(
        trapdesk_proto::protocol::Kind::ExecLua,
        json!({"code": "while true do sleep(1) end"}),
    )
    .without_deadline();
    let ticket = s.start("7", spec, Origin::Person).unwrap();
    let id = ticket.id.clone();
    // The computer is given no timeout either.
    assert!(
        matches!(rx.recv().await, Some(Outbound::Request(r)) if r.id == id && r.timeout_ms.is_none())
    );
    let pending = s.pending();
    assert!(pending[0].no_deadline);
    assert_eq!(pending[0].timeout_ms, 0);
    // Far past the default 30 s and the 10 min maximum: still running.
    tokio::time::sleep(Duration::from_secs(3 * 3600)).await;
    assert_eq!(s.pending().len(), 1);
    s.cancel(&id).unwrap();
    assert_eq!(rx.recv().await, Some(Outbound::Cancel { id: id.clone() }));
    // An agent's request (no `without_deadline`) keeps the default deadline.
    let agent = s
        .start(
            "7",
            RequestSpec::new(
                trapdesk_proto::protocol::Kind::ExecLua,
                json!({"code": "x"}),
            ),
            Origin::Agent("a".into()),
        )
        .unwrap();
    let p = s.pending();
    let a = p.iter().find(|p| p.request_id == agent.id).unwrap();
    assert!(!a.no_deadline);
    assert_eq!(a.timeout_ms, 30_000);
}

#[tokio::test(start_paused = true)]
async fn a_connection_whose_queue_fills_is_unlinked_and_its_requests_end() {
    let s = Session::new(
        Settings {
            max_in_flight: 2,
            ..Settings::default()
        },
        false,
    );
    // The connection task takes nothing from its queue (its socket is stuck): 4 places.
    let (tx, _rx) = mpsc::channel(4);
    let _link = s.link(&hello(7, None), tx);
    let a = s.start("7", exec("a", 100), Origin::Person).unwrap();
    let b = s.start("7", exec("b", 100), Origin::Person).unwrap();
    // Two requests and two cancels fill it; the third cancel does not fit.
    s.cancel(&a.id).unwrap();
    s.cancel(&a.id).unwrap();
    assert!(s.computer("7:").unwrap().online);
    s.cancel(&a.id).unwrap();
    let c = s.computer("7:").unwrap();
    assert!(!c.online, "still linked");
    assert_eq!(a.wait().await, Err(RequestError::Disconnected));
    assert_eq!(b.wait().await, Err(RequestError::Disconnected));
    assert!(s.pending().is_empty());
    assert!(
        s.recent(10)
            .iter()
            .any(|e| e.event.as_str() == "unlinked" && e.detail.contains("outbound queue full"))
    );
}

#[tokio::test(start_paused = true)]
async fn one_task_keeps_every_deadline_and_an_ended_request_leaves_none() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7, None), tx);
    let answered = s.start("7", exec("a", 60), Origin::Person).unwrap();
    assert!(matches!(rx.recv().await, Some(Outbound::Request(r)) if r.id == answered.id));
    link.response(Response {
        id: answered.id.clone(),
        ok: true,
        payload: Some(json!({"ok": true})),
        error: None,
    });
    assert!(answered.wait().await.is_ok());
    // Its deadline went with it: nothing wakes for it at 60 s.
    assert!(s.lock().deadlines_set() == 0);
    // A later request with a later deadline, then one with an earlier one: each ends at its own.
    let late = s.start("7", exec("b", 50), Origin::Person).unwrap();
    let early = s.start("7", exec("c", 5), Origin::Person).unwrap();
    let started = tokio::time::Instant::now();
    assert!(matches!(
        early.wait().await,
        Err(RequestError::Timeout { .. })
    ));
    // The early one was still queued: it ends at its deadline. The late one, sent, is asked
    // to stop then and ends after the grace (nobody answers).
    let grace = super::stopping::STOP_GRACE;
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert!(matches!(
        late.wait().await,
        Err(RequestError::Timeout { .. })
    ));
    assert_eq!(started.elapsed(), Duration::from_secs(50) + grace);
    assert!(s.lock().deadlines_set() == 0);
}

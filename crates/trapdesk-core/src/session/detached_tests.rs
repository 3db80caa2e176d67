//! Detached runs in the session, driven through a channel instead of a socket: their own
//! budget, a dropped link that leaves them pending, and their adoption by the next link.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::super::*;
use trapdesk_proto::protocol::{DetachedRun, Hello, Kind, Response};

fn hello(id: u64) -> Hello {
    Hello {
        protocol: 1,
        computer_id: id,
        label: Some("miner".into()),
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
        max_detached: 2,
        ..Settings::default()
    };
    Session::new(settings, false)
}

fn exec(code: &str) -> RequestSpec {
    RequestSpec::new(Kind::ExecLua, json!({ "code": code }))
}

fn named(id: &str) -> DetachedRun {
    DetachedRun {
        id: id.to_owned(),
        request: "exec-lua".into(),
        by: Some("bot".into()),
        status: Some("running".into()),
        dropped_bytes: 0,
    }
}

async fn sent(rx: &mut mpsc::Receiver<Outbound>) -> Box<trapdesk_proto::protocol::Outgoing> {
    match rx.recv().await {
        Some(Outbound::Request(r)) => r,
        other => panic!("expected a request, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn detached_runs_skip_the_in_flight_limit_and_have_their_own() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let _link = s.link(&hello(7), tx);
    let a = s.start("7", exec("a").detached(), Origin::Person).unwrap();
    let b = s.start("7", exec("b").detached(), Origin::Person).unwrap();
    let (ra, rb) = (sent(&mut rx).await, sent(&mut rx).await);
    assert_eq!(
        (ra.id.as_str(), rb.id.as_str()),
        (a.id.as_str(), b.id.as_str())
    );
    assert_eq!(ra.detach.as_ref().map(|d| d.by.as_str()), Some("person"));
    assert_eq!(ra.timeout_ms, None, "no deadline unless asked");
    // The one in-flight slot is still free for an ordinary request.
    let c = s.start("7", exec("c"), Origin::Person).unwrap();
    assert_eq!(sent(&mut rx).await.id, c.id);
    assert!(matches!(
        s.start("7", exec("d").detached(), Origin::Person),
        Err(RequestError::DetachedLimit { limit: 2, .. })
    ));
    a.detach();
    b.detach();
}

#[tokio::test(start_paused = true)]
async fn a_dropped_link_keeps_detached_runs_and_the_next_one_takes_them_back() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7), tx);
    let kept = s
        .start("7", exec("kept").detached(), Origin::Person)
        .unwrap();
    let gone = s
        .start("7", exec("gone").detached(), Origin::Person)
        .unwrap();
    let ordinary = s.start("7", exec("x"), Origin::Person).unwrap();
    for _ in 0..3 {
        sent(&mut rx).await;
    }
    let (kept_id, gone_id) = (kept.id.clone(), gone.id.clone());
    kept.detach();
    gone.detach();
    drop(link);
    assert_eq!(ordinary.wait().await, Err(RequestError::Disconnected));
    assert_eq!(s.pending().len(), 2, "both detached runs are still pending");
    // The computer links again and names one of them: that one goes on, the other is lost.
    let (tx, _rx) = mpsc::channel(1024);
    let link = s.link(&hello(7), tx);
    s.adopt(&link, vec![named(&kept_id)]);
    match s.request_state(&gone_id) {
        Some(RequestState::Ended(f)) => {
            assert!(matches!(
                f.ending.result,
                Err(RequestError::Lost {
                    reason: "computer_restarted",
                    ..
                })
            ));
        }
        other => panic!("{other:?}"),
    }
    link.output(&kept_id, Stream::Out, "after\n");
    link.response(Response {
        id: kept_id.clone(),
        ok: true,
        payload: Some(json!({"ok": true, "output": "after\n"})),
        error: None,
    });
    match s.request_state(&kept_id) {
        Some(RequestState::Ended(f)) => {
            assert_eq!(f.status, Status::Ok);
            assert_eq!(
                f.ending.result,
                Ok(json!({"ok": true, "output": "after\n"}))
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_new_host_adopts_what_it_never_saw_and_ids_carry_the_start_tag() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7), tx);
    s.adopt(&link, vec![named("h-old000-3")]);
    let p = s.pending();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].request_id, "h-old000-3");
    // No record of it here: the computer's, whatever its hello says (`by: "bot"`).
    assert_eq!(p[0].origin, super::computer_origin("7:miner"));
    assert!(!p[0].no_deadline, "a deadline, as any request has");
    let t = s.start("7", exec("new"), Origin::Person).unwrap();
    let tag = s.lock().run_tag().to_owned();
    assert_eq!(tag.len(), 6);
    assert!(
        tag.bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    );
    assert_eq!(t.id, format!("h-{tag}-1"));
    assert_eq!(sent(&mut rx).await.id, t.id);
    // Tenths of a second apart, two starts never share a tag.
    let now = std::time::SystemTime::now();
    assert_ne!(
        crate::session::state::run_tag(now + Duration::from_millis(100)),
        crate::session::state::run_tag(now)
    );
}

#[tokio::test(start_paused = true)]
async fn a_run_cancelled_while_its_link_is_down_ends_and_is_stopped_on_relink() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7), tx);
    let t = s
        .start("7", exec("long").detached(), Origin::Person)
        .unwrap();
    sent(&mut rx).await;
    let id = t.id.clone();
    t.detach();
    drop(link);
    s.cancel(&id).unwrap();
    assert!(s.pending().is_empty());
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7), tx);
    s.adopt(&link, vec![named(&id)]);
    assert!(s.pending().is_empty(), "not taken back");
    assert_eq!(rx.recv().await, Some(Outbound::Cancel { id }));
}

#[tokio::test(start_paused = true)]
async fn a_stopping_host_ends_ordinary_requests_but_not_detached_runs() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let _link = s.link(&hello(7), tx);
    let kept = s
        .start("7", exec("kept").detached(), Origin::Person)
        .unwrap();
    let ordinary = s.start("7", exec("x"), Origin::Person).unwrap();
    sent(&mut rx).await;
    sent(&mut rx).await;
    let id = kept.id.clone();
    kept.detach();
    s.shutdown();
    assert_eq!(ordinary.wait().await, Err(RequestError::ShuttingDown));
    let pending = s.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].request_id, id);
    assert!(s.recent(10).iter().any(|e| e.event.as_str() == "detached"));
}

#[tokio::test(start_paused = true)]
async fn a_cursor_from_before_a_restart_reads_from_the_start() {
    let s = session();
    let (tx, _rx) = mpsc::channel(1024);
    let link = s.link(&hello(7), tx);
    link.output("unknown", Stream::Out, "a\nb\nc\n");
    assert_eq!(
        s.output_cursor("7:miner", 2),
        2,
        "a cursor of this start stands"
    );
    assert_eq!(
        s.output_cursor("7:miner", 500),
        0,
        "past the newest line: another start's"
    );
}

#[tokio::test(start_paused = true)]
async fn many_short_requests_never_push_a_detached_runs_result_out() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7), tx);
    let run = s
        .start("7", exec("long").detached(), Origin::Person)
        .unwrap();
    let id = run.id.clone();
    run.detach();
    sent(&mut rx).await;
    link.response(Response {
        id: id.clone(),
        ok: true,
        payload: Some(json!({"ok": true})),
        error: None,
    });
    for _ in 0..(super::FINISHED_KEPT + 10) {
        let t = s.start("7", exec("short"), Origin::Person).unwrap();
        sent(&mut rx).await;
        link.response(Response {
            id: t.id.clone(),
            ok: true,
            payload: Some(json!({"ok": true})),
            error: None,
        });
        t.wait().await.unwrap();
    }
    assert!(matches!(s.request_state(&id), Some(RequestState::Ended(_))));
    // Fifteen minutes on, it is gone.
    tokio::time::advance(super::FINISHED_FOR + Duration::from_secs(1)).await;
    assert!(s.request_state(&id).is_none());
}

fn claimed(id: &str, by: &str) -> DetachedRun {
    DetachedRun {
        by: Some(by.into()),
        ..named(id)
    }
}

#[tokio::test(start_paused = true)]
async fn a_hello_claiming_thousands_of_runs_gets_at_most_max_detached_and_never_the_person() {
    let s = session();
    let (tx, _rx) = mpsc::channel(1024);
    let link = s.link(&hello(7), tx);
    let tag = s.lock().run_tag().to_owned();
    let mut runs = Vec::new();
    for i in 0..5000 {
        runs.push(claimed(&format!("h-old000-{i}"), "person"));
        runs.push(claimed(&format!("h-{tag}-{i}"), "person"));
        runs.push(claimed(&"x".repeat(i % 300), "person"));
        runs.push(claimed(&format!("h-old000-{i}x"), "person"));
    }
    runs.push(claimed("h-old000-1", "person"));
    s.adopt(&link, runs);
    let p = s.pending();
    assert_eq!(p.len(), 2, "max_detached is 2");
    for p in &p {
        assert!(p.request_id.starts_with("h-old000-"), "{}", p.request_id);
        assert_eq!(p.origin, super::computer_origin("7:miner"));
    }
    let logged: Vec<_> = s
        .recent(10_000)
        .into_iter()
        .filter(|e| e.event.as_str() == "detached")
        .collect();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(
        logged[0].detail.contains("2 taken back"),
        "{}",
        logged[0].detail
    );
    assert!(
        s.recent(10_000)
            .iter()
            .all(|e| e.who.as_deref() != Some("person"))
    );
    // Another flood within the minute adds to the count, not a line.
    let (tx, _rx2) = mpsc::channel(1024);
    let other = s.link(&hello(8), tx);
    s.adopt(
        &other,
        (0..1000)
            .map(|i| claimed(&format!("y{i}"), "person"))
            .collect(),
    );
    let lines = s
        .recent(10_000)
        .iter()
        .filter(|e| e.event.as_str() == "detached")
        .count();
    assert_eq!(lines, 1);
    // Adopted runs end at the longest deadline any request gets.
    tokio::time::advance(Settings::default().max_request_timeout + Duration::from_secs(1)).await;
    tokio::task::yield_now().await;
    support_wait(|| s.pending().is_empty()).await;
}

/// Waits (in paused time) until `cond` holds.
async fn support_wait(mut cond: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not met");
}

#[tokio::test(start_paused = true)]
async fn a_run_the_host_started_keeps_its_starter_through_a_new_session() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        data_dir: dir.path().to_owned(),
        history: false,
        max_detached: 2,
        ..Settings::default()
    };
    let first = Session::new(settings.clone(), true);
    let (tx, mut rx) = mpsc::channel(1024);
    let _link = first.link(&hello(7), tx);
    let t = first
        .start(
            "7",
            exec("long").detached(),
            Origin::Agent("starter".into()),
        )
        .unwrap();
    let id = t.id.clone();
    t.detach();
    sent(&mut rx).await;
    first.shutdown();
    drop(first);
    // The next host start: a new tag (start times a tenth of a second apart, on the wall
    // clock), the record read back.
    std::thread::sleep(Duration::from_millis(150));
    let second = Session::new(settings, true);
    let (tx, _rx) = mpsc::channel(1024);
    let link = second.link(&hello(7), tx);
    second.adopt(&link, vec![claimed(&id, "person")]);
    let p = second.pending();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].origin, Origin::Agent("starter".into()));
    assert!(p[0].no_deadline, "started without one, as the record says");
    let record = second.run_record(&id).unwrap();
    assert_eq!(record.origin, Origin::Agent("starter".into()));
    assert!(record.ended.is_none());
    // Its computer comes back without it: the record says it was lost.
    let (tx, _rx) = mpsc::channel(1024);
    let link = second.link(&hello(7), tx);
    second.adopt(&link, Vec::new());
    assert_eq!(second.run_record(&id).unwrap().ended.unwrap().code, "lost");
}

#[tokio::test(start_paused = true)]
async fn computers_relinking_under_new_names_keep_the_numbering_bookkeeping_bounded() {
    let s = session();
    let n = crate::session::state::SEQ_FLOORS_KEPT + 200;
    for id in 0..n as u64 {
        let (tx, _rx) = mpsc::channel(8);
        let link = s.link(&hello(id + 100), tx);
        link.output("unknown", Stream::Out, "a line\n");
        drop(link);
    }
    let b = s.bookkeeping();
    assert!(
        b.seq_floors <= crate::session::state::SEQ_FLOORS_KEPT,
        "{b:?}"
    );
    assert!(b.computers <= 32 + 1, "{b:?}");
    // The first one's own floor is forgotten, and yet its numbering goes on above its old one.
    let (tx, _rx) = mpsc::channel(8);
    let _link = s.link(&hello(100), tx);
    assert!(s.output_cursor("100:miner", 1) == 1);
    let st = s.lock();
    assert!(st.computers.get("100:miner").unwrap().output.next_seq() > 1);
}

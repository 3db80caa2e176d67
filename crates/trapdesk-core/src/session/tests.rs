//! The session's request life cycle, driven through a channel instead of a socket and with
//! tokio's paused clock, so deadlines are exact and the tests never sleep.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::*;
use trapdesk_proto::protocol::{Hello, Response};

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
    assert_eq!(started.elapsed(), Duration::from_secs(30));
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

#[tokio::test]
async fn targets_resolve_by_full_id_bare_id_or_unique_label() {
    let s = session();
    let (tx, _rx) = mpsc::channel(1024);
    let _a = s.link(&hello(7, Some("miner")), tx.clone());
    let _b = s.link(&hello(8, Some("miner")), tx.clone());
    let _c = s.link(&hello(9, Some("farm")), tx);
    assert_eq!(s.resolve("7:miner"), Ok("7:miner".into()));
    assert_eq!(s.resolve("9"), Ok("9:farm".into()));
    assert_eq!(s.resolve("farm"), Ok("9:farm".into()));
    assert!(
        matches!(s.resolve("miner"), Err(RequestError::Ambiguous { matches, .. }) if matches.len() == 2)
    );
    assert!(
        matches!(s.resolve("nope"), Err(RequestError::UnknownComputer { linked, .. }) if linked.len() == 3)
    );
}

#[tokio::test(start_paused = true)]
async fn output_is_attributed_and_the_final_answer_fills_gaps() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7, None), tx);
    let mut t = s
        .start("7", exec("a", 100).streaming(), Origin::Person)
        .unwrap();
    rx.recv().await;
    link.output(&t.id, Stream::Out, "one\n");
    let chunk = t.output().unwrap().recv().await.unwrap();
    assert_eq!(chunk.text, "one\n");
    link.response(Response {
        id: t.id.clone(),
        ok: true,
        payload: Some(json!({"ok": true, "output": "one\ntwo\n", "returns": [], "n": 0})),
        error: None,
    });
    t.wait().await.unwrap();
    let lines: Vec<String> = s
        .output_since("7:", 0)
        .into_iter()
        .filter_map(|i| match i.entry {
            OutputEntry::Line { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(lines, vec!["one", "two"]);
}

#[tokio::test(start_paused = true)]
async fn quiet_requests_are_logged_but_leave_the_scrollback_alone() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7, None), tx);
    let t = s
        .start(
            "7",
            RequestSpec::new(
                trapdesk_proto::protocol::Kind::ListFiles,
                json!({"path": "/"}),
            )
            .quiet(),
            Origin::Person,
        )
        .unwrap();
    rx.recv().await;
    link.response(Response {
        id: t.id.clone(),
        ok: true,
        payload: Some(json!({"ok": true, "entries": []})),
        error: None,
    });
    t.wait().await.unwrap();
    assert!(s.output_since("7:", 0).is_empty());
    assert!(s.recent(10).iter().any(|e| e.event == "finished"
                && e.what.as_deref() == Some("list-files")
                // Agents read the log too: the person is "person", not "you".
                && e.who.as_deref() == Some("person")));
}

#[tokio::test(start_paused = true)]
async fn a_quiet_ping_is_a_look_and_leaves_no_log_line_but_a_ping_asked_aloud_does() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7, None), tx);
    let before = s.recent(100).len();
    for quiet in [true, false] {
        let spec = RequestSpec::new(
            trapdesk_proto::protocol::Kind::Ping,
            json!({"status": true}),
        );
        let spec = if quiet { spec.quiet() } else { spec };
        let t = s.start("7", spec, Origin::Person).unwrap();
        rx.recv().await;
        link.response(Response {
            id: t.id.clone(),
            ok: true,
            payload: Some(json!({"status": {"peripherals": 0, "monitors": []}})),
            error: None,
        });
        t.wait().await.unwrap();
        let pings = s
            .recent(100)
            .iter()
            .skip(before)
            .filter(|e| e.what.as_deref() == Some("ping"))
            .count();
        // The quiet one (probe-computers', the console's status) adds nothing; the other its
        // request and finished lines.
        assert_eq!(pings, if quiet { 0 } else { 2 }, "quiet: {quiet}");
    }
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
async fn a_streaming_reader_that_falls_behind_loses_chunks_counted_not_memory() {
    let s = Session::new(
        Settings {
            stream_buffer: 16,
            ..Settings::default()
        },
        false,
    );
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7, None), tx);
    let mut t = s
        .start("7", exec("a", 100).streaming(), Origin::Person)
        .unwrap();
    let id = t.id.clone();
    rx.recv().await;
    // Nobody reads: 16 chunks fit, the other 84 are counted.
    for i in 0..100 {
        link.output(&id, Stream::Out, &format!("{i}\n"));
    }
    let out = t.output().unwrap();
    let mut got = Vec::new();
    while let Ok(c) = out.try_recv() {
        got.push(c.text);
    }
    assert_eq!(got.len(), 16);
    assert_eq!(got.first().map(String::as_str), Some("0\n"));
    assert_eq!(got.last().map(String::as_str), Some("15\n"));
    // Room again: the next chunk comes after a note with the count.
    link.output(&id, Stream::Out, "100\n");
    let note = out.try_recv().unwrap();
    assert_eq!(note.stream, Stream::Err);
    assert!(note.text.contains("84 output chunks dropped"), "{note:?}");
    assert_eq!(out.try_recv().unwrap().text, "100\n");
    // The scrollback kept every line all the same.
    let lines = s
        .output_since("7:", 0)
        .into_iter()
        .filter(|i| matches!(i.entry, OutputEntry::Line { .. }))
        .count();
    assert_eq!(lines, 101);
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
            .any(|e| e.event == "unlinked" && e.detail.contains("outbound queue full"))
    );
}

#[tokio::test(start_paused = true)]
async fn output_events_carry_a_head_so_the_broadcast_ring_stays_small() {
    let s = session();
    let mut events = s.subscribe();
    let (tx, mut rx) = mpsc::channel(1024);
    let link = s.link(&hello(7, None), tx);
    let t = s.start("7", exec("a", 100), Origin::Person).unwrap();
    rx.recv().await;
    // 300 KB in one message, of two-byte characters so that the cut must find a boundary.
    let big = "é".repeat(150_000) + "\n";
    link.output(&t.id, Stream::Out, &big);
    let mut text = None;
    while let Ok(e) = events.try_recv() {
        if let Event::Output { text: t, .. } = e {
            text = Some(t);
        }
    }
    let text = text.unwrap();
    assert!(text.len() <= state::EVENT_TEXT_MAX && text.len() >= 4000);
    assert!(big.starts_with(&text));
    // The scrollback has it all.
    let kept: usize = s
        .output_since("7:", 0)
        .into_iter()
        .filter_map(|i| match i.entry {
            OutputEntry::Line { text, .. } => Some(text.len()),
            _ => None,
        })
        .sum();
    assert_eq!(kept, big.len() - 1);
}

/// A page of linked computers without a glob comes from the ordered index; with a glob (or
/// offline ones) from a scan. Both must give the same pages whatever linked, unlinked and
/// relinked in between: the index is checked against the scan here.
#[test]
fn the_ordered_page_is_the_scanned_page() {
    use super::fleet::{PageQuery, page};
    let s = session();
    let mut links = std::collections::HashMap::new();
    // Ids out of order, labels that sort against their ids, one id under two labels.
    let names: Vec<(u64, Option<String>)> = (0..120u64)
        .map(|i| ((i * 37) % 101, Some(format!("c{}", 120 - i))))
        .chain([(5, None), (5, Some("zz".into())), (0, None)])
        .collect();
    for (step, (id, label)) in names.iter().enumerate() {
        let (tx, rx) = mpsc::channel(8);
        let l = s.link(&hello(*id, label.as_deref()), tx);
        links.insert(step, (l, rx));
        // Every fourth one unlinks again, and every seventh relinks under the same name.
        if step % 4 == 3 {
            links.remove(&(step - 1));
        }
        if step % 7 == 6 {
            let (tx, rx) = mpsc::channel(8);
            let l = s.link(&hello(*id, label.as_deref()), tx);
            links.insert(step, (l, rx));
        }
    }
    for limit in [1, 3, 10, 200] {
        let mut cursor: Option<String> = None;
        loop {
            let query = PageQuery {
                glob: None,
                limit,
                cursor: cursor.clone(),
                offline: false,
            };
            let ordered = s.computers_page(&query);
            let scanned = {
                let st = s.lock();
                page(st.computers.values().map(|c| &c.info), &query)
            };
            assert_eq!(ordered, scanned, "limit {limit}, after {cursor:?}");
            match ordered.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
    }
    drop(links);
}

#[tokio::test(start_paused = true)]
async fn a_relabel_takes_the_place_of_an_old_entry_of_the_same_computer() {
    let s = session();
    // 7 was "digger" on an earlier link, then linked as "miner".
    let (tx, _rx) = mpsc::channel(1024);
    let old = s.link(&hello(7, Some("digger")), tx);
    drop(old);
    let (tx, mut rx) = mpsc::channel(1024);
    let mut link = s.link(&hello(7, Some("miner")), tx);
    let ticket = s
        .start("miner", exec("sleep(5)", 30), Origin::Person)
        .unwrap();
    assert!(matches!(rx.recv().await, Some(Outbound::Request(_))));
    assert_eq!(
        link.rename(Some("digger".into())).as_deref(),
        Some("7:digger")
    );
    assert_eq!(
        link.rename(Some("digger".into())),
        None,
        "no change, nothing done"
    );
    let ids: Vec<String> = s.computers().into_iter().map(|c| c.trapos_id).collect();
    assert_eq!(ids, vec!["7:digger".to_owned()], "one entry, online");
    assert!(
        s.computer("7:digger")
            .is_some_and(|c| c.online && c.running == 1)
    );
    // The request sent under the old name is answered under the new one.
    assert_eq!(s.pending()[0].trapos_id, "7:digger");
    link.response(Response {
        id: ticket.id.clone(),
        ok: true,
        payload: Some(json!({"ok": true})),
        error: None,
    });
    assert!(ticket.wait().await.is_ok());
    // Unlinking now unlinks the new name.
    drop(link);
    assert!(s.computer("7:digger").is_some_and(|c| !c.online));
}

#[tokio::test]
async fn a_relabel_onto_a_name_another_link_holds_is_refused() {
    let s = session();
    // Two worlds' computers 7, linked at once.
    let (tx, _rx) = mpsc::channel(1024);
    let _a = s.link(&hello(7, Some("miner")), tx);
    let (tx, _rx2) = mpsc::channel(1024);
    let mut b = s.link(&hello(7, Some("farm")), tx);
    assert_eq!(b.rename(Some("miner".into())), None);
    assert!(s.computer("7:miner").is_some_and(|c| c.online));
    assert!(s.computer("7:farm").is_some_and(|c| c.online));
    assert_eq!(b.trapos_id(), "7:farm");
    assert!(s.recent(10).iter().any(|e| e.event == "relabelled"
        && e.detail == "7:farm was labelled 7:miner, which another link holds: still 7:farm"));
}

#[tokio::test(start_paused = true)]
async fn a_computer_back_after_a_hard_abort_is_logged_as_back() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let mut link = s.link(&hello(7, Some("miner")), tx);
    let ticket = s
        .start("miner", exec("while true do end", 60), Origin::Person)
        .unwrap();
    assert!(matches!(rx.recv().await, Some(Outbound::Request(_))));
    tokio::time::advance(Duration::from_secs(9)).await;
    link.set_reason("connection closed");
    drop(link);
    let err = ticket.wait().await.unwrap_err();
    assert_eq!(err.code(), "shut_down", "{err}");
    assert_eq!(s.resolve("miner").unwrap_err().code(), "shut_down");
    assert_eq!(s.resolve("7").unwrap_err().code(), "shut_down");
    let (tx, _rx) = mpsc::channel(1024);
    let _again = s.link(&hello(7, Some("miner")), tx);
    assert_eq!(s.resolve("miner").as_deref(), Ok("7:miner"));
    let events: Vec<&str> = s.recent(10).iter().map(|e| e.event).collect();
    assert_eq!(events.last(), Some(&"back"), "{events:?}");
    // A link the host ended itself (here: the heartbeat) is never taken for the abort.
    let (tx, mut rx) = mpsc::channel(1024);
    let mut link = s.link(&hello(8, Some("quiet")), tx);
    let ticket = s
        .start("quiet", exec("sleep(60)", 90), Origin::Person)
        .unwrap();
    assert!(matches!(rx.recv().await, Some(Outbound::Request(_))));
    tokio::time::advance(Duration::from_secs(45)).await;
    link.set_reason("3 heartbeats missed");
    drop(link);
    assert_eq!(ticket.wait().await.unwrap_err().code(), "disconnected");
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
    assert!(s.lock().deadlines.is_empty());
    // A later request with a later deadline, then one with an earlier one: each ends at its own.
    let late = s.start("7", exec("b", 50), Origin::Person).unwrap();
    let early = s.start("7", exec("c", 5), Origin::Person).unwrap();
    let started = tokio::time::Instant::now();
    assert!(matches!(
        early.wait().await,
        Err(RequestError::Timeout { .. })
    ));
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert!(matches!(
        late.wait().await,
        Err(RequestError::Timeout { .. })
    ));
    assert_eq!(started.elapsed(), Duration::from_secs(50));
    assert!(s.lock().deadlines.is_empty());
}

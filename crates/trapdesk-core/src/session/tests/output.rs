//! What computers print: output attributed to its request, quiet requests that leave the
//! scrollback alone, a streaming reader that falls behind, and the broadcast's heads.

use super::*;

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
    assert!(s.recent(10).iter().any(|e| e.event.as_str() == "finished"
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

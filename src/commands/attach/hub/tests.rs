//! Unit tests of the console's hub over the attach channel in `src/commands/attach/hub.rs`.

#![allow(clippy::unwrap_used)]
use super::*;
use crate::control::attach::wire::OutputSlice;
use trapdesk_core::session::{OutputEntry, Stream};

fn computer(id: u64, online: bool, running: usize) -> ComputerInfo {
    ComputerInfo {
        running,
        max_message: 0,
        ..trapdesk_core::session::fleet::test_computer(id, Some("c"), online)
    }
}

fn line(seq: u64, text: &str, complete: bool) -> OutputItem {
    OutputItem {
        seq,
        at_ms: 0,
        entry: OutputEntry::Line {
            request_id: None,
            stream: Stream::Out,
            text: text.into(),
            complete,
        },
    }
}

#[test]
fn changed_computers_replace_theirs_in_the_hosts_order() {
    let mut m = Mirror::new(10);
    let now = Instant::now();
    m.apply(
        Update {
            computers: Some(vec![computer(1, true, 0), computer(2, true, 0)]),
            ..Update::default()
        },
        now,
    );
    m.apply(
        Update {
            computers_changed: vec![computer(1, false, 0), computer(2, true, 3)],
            ..Update::default()
        },
        now,
    );
    let ids: Vec<(u64, bool, usize)> = m
        .computers
        .iter()
        .map(|c| (c.id, c.online, c.running))
        .collect();
    assert_eq!(ids, vec![(2, true, 3), (1, false, 0)]);
}

#[test]
fn an_open_line_grows_in_place_and_the_ring_keeps_the_hosts_scrollback() {
    let mut m = Mirror::new(3);
    let now = Instant::now();
    let slice = |items| OutputSlice::new("1:c", items);
    let told = m.apply(
        Update {
            output: vec![slice(vec![line(1, "a", true), line(2, "b", false)])],
            ..Update::default()
        },
        now,
    );
    // Output with no event of its own is told of (the console pulls it).
    assert!(matches!(&told[..], [Event::Output { trapos_id, .. }] if trapos_id == "1:c"));
    m.apply(
        Update {
            output: vec![slice(vec![
                line(2, "bc", true),
                line(3, "d", true),
                line(4, "e", true),
            ])],
            ..Update::default()
        },
        now,
    );
    let ring = &m.output["1:c"];
    let texts: Vec<(u64, String)> = ring
        .iter()
        .map(|i| match &i.entry {
            OutputEntry::Line { text, .. } => (i.seq, text.clone()),
            _ => (i.seq, String::new()),
        })
        .collect();
    assert_eq!(
        texts,
        vec![(2, "bc".into()), (3, "d".into()), (4, "e".into())]
    );
}

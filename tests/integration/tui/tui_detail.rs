//! The console's details say what is so: the Device pane is a closed frame, a run without a
//! deadline shows how long it has run once, the status line follows a cancel to its end, a
//! narrow Computers pane keeps the name before the kind, the served types' row does not come
//! and go with the Device pane, and returned tables read as Lua that pastes back.
#![allow(clippy::panic, clippy::unwrap_used)]

use crate::support::tui_common;

use std::time::Duration;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use tokio::sync::mpsc;
use trapdesk::session::devices::DeviceStatus;
use trapdesk::session::{ComputerInfo, Origin, Session};
use trapdesk::tui::{self, AppMsg, Focus};
use tui_common::*;

/// A turtle that said what it is and whose status came: the Device pane has four lines.
fn turtle(id: u64, label: &str) -> ComputerInfo {
    let mut c = computer(id, label);
    c.machine.device = Some("turtle".into());
    c.machine.advanced = Some(true);
    c.machine.screen_width = Some(39);
    c.machine.screen_height = Some(13);
    c.serves.push("peripherals".into());
    c.status = Some(DeviceStatus {
        peripherals: 1,
        monitors: vec!["top".into()],
        fuel: Some(trapdesk::session::devices::Fuel::Level(80)),
        selected: Some(3),
        ..DeviceStatus::default()
    });
    c
}

/// The screen's rows, each as the terminal shows it.
fn rows(shown: &str) -> Vec<String> {
    shown
        .lines()
        .map(|l| l.trim_matches('"').to_owned())
        .collect()
}

#[tokio::test]
async fn the_device_pane_is_a_closed_frame() {
    let mut app = app();
    app.set_computers(vec![turtle(4, "digger"), computer(7, "miner")]);
    app.selected = Some("4:digger".into());
    let rows = rows(&screen(&app, 100, 40));
    let title = rows
        .iter()
        .position(|r| r.contains("┌ Device 4:digger"))
        .unwrap_or_else(|| panic!("no Device pane:\n{}", rows.join("\n")));
    let last = rows
        .iter()
        .position(|r| r.contains("fuel 80 · slot 3"))
        .unwrap();
    // Its own bottom border right under its last line, then the Requests pane.
    assert!(
        rows[last + 1].starts_with("└───"),
        "{}",
        rows[title..=last + 2].join("\n")
    );
    assert!(
        rows[last + 2].starts_with("┌ Requests"),
        "{}",
        rows.join("\n")
    );
}

#[tokio::test]
async fn a_run_without_a_deadline_shows_how_long_it_has_run_once() {
    let mut app = app();
    app.set_computers(three_computers());
    let mut p = pending(&app, "h-1", "7:miner", Origin::Person, 75);
    p.no_deadline = true;
    app.set_pending(vec![p]);
    let shown = screen(&app, 100, 30);
    let row = rows(&shown)
        .into_iter()
        .find(|r| r.contains("you 7:miner"))
        .unwrap_or_else(|| panic!("no request row:\n{shown}"));
    assert!(row.contains("you 7:miner 1m15s"), "{row}");
    assert!(!row.contains("75s"), "the elapsed time twice: {row}");
}

#[tokio::test]
async fn the_status_line_says_the_run_was_cancelled_once_it_was() {
    let session = Session::new(settings(), false);
    link_answering_cancels(&session);
    let mut events = session.subscribe();
    let spec = trapdesk::session::RequestSpec::new(
        trapdesk::protocol::Kind::ExecLua,
        json!({"code": "dig()"}),
    );
    let _ticket = session.start("7:miner", spec, Origin::Person).unwrap();
    crate::support::wait_for(
        Duration::from_secs(5),
        || session.pending().iter().any(|p| p.sent),
        || "the request was never sent".to_owned(),
    )
    .await;
    let mut app = app();
    app.pull(&session);
    app.set_pending(session.pending());
    app.focus = Focus::Requests;
    let (msg_tx, _msg_rx) = mpsc::unbounded_channel::<AppMsg>();
    tui::handle(
        &mut app,
        &session,
        &msg_tx,
        tui::Event::Crossterm(ratatui::crossterm::event::Event::Key(KeyEvent::new(
            KeyCode::Char('c'),
            KeyModifiers::NONE,
        ))),
    );
    assert_eq!(
        app.notice.as_ref().map(|(t, _)| t.as_str()),
        Some("cancelling exec-lua dig() on 7:miner")
    );
    // The console's loop: each event noted, then what changed pulled, until the request is
    // gone from the pane.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(e) = events.recv().await {
            app.note(&e);
            app.pull(&session);
            if app.requests.pending.is_empty() {
                break;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the request never ended");
    assert_eq!(
        app.notice.as_ref().map(|(t, _)| t.as_str()),
        Some("cancelled exec-lua dig() on 7:miner")
    );
    let shown = screen(&app, 100, 30);
    let status = rows(&shown).pop().unwrap_or_default();
    assert!(
        status.contains("cancelled exec-lua dig() on 7:miner"),
        "{status}"
    );
}

#[tokio::test]
async fn a_narrow_pane_cuts_the_kind_before_the_name() {
    let mut app = app();
    let mut t = turtle(4, "excavator");
    t.status = None;
    t.machine = Default::default();
    t.machine.device = Some("turtle".into());
    app.set_computers(vec![t, computer(7, "miner")]);
    // 80 columns: the Computers pane is 24 wide.
    let shown = screen(&app, 80, 24);
    let row = rows(&shown)
        .into_iter()
        .find(|r| r.contains("● 4:"))
        .unwrap_or_else(|| panic!("no row:\n{shown}"));
    assert!(row.contains("● 4:excavator"), "the name was cut: {row}");
    // Wider, the kind comes back.
    let shown = screen(&app, 136, 30);
    assert!(shown.contains("4:excavator  turtle idle 12ms"), "{shown}");
}

#[tokio::test]
async fn the_served_types_row_stays_while_the_device_pane_comes_and_goes() {
    let mut app = app();
    app.set_computers(vec![
        turtle(4, "digger"),
        computer(7, "miner"),
        computer(8, "farm"),
    ]);
    let served = |app: &tui::App, h| {
        let shown = screen(app, 100, h);
        let n = shown
            .lines()
            .filter(|l| l.contains("   exec-lua run-file"))
            .count();
        (n, shown)
    };
    // Tall enough for the list on two lines beside any Device pane, and not.
    for (h, want) in [(60, 3), (40, 0)] {
        app.selected = None;
        let (n, shown) = served(&app, h);
        assert_eq!(n, want, "All computers at 100x{h}:\n{shown}");
        // Selecting the turtle opens its Device pane; the list's lines stay as they were.
        app.selected = Some("4:digger".into());
        let (n, shown) = served(&app, h);
        assert_eq!(n, want, "4:digger at 100x{h}:\n{shown}");
        assert!(shown.contains("Device 4:digger"), "{shown}");
    }
}

#[tokio::test]
async fn returned_tables_read_as_lua_that_pastes_back() {
    let session = Session::new(settings(), false);
    let shown = screen_after_exec(
        &session,
        json!({"ok": true, "n": 1, "returns": [{"type": "table", "value": {"andesite": 3, "coal ore": 3}}]}),
        "return count()",
    )
    .await;
    assert!(
        shown.contains(r#"└ → {andesite = 3, ["coal ore"] = 3}"#),
        "{shown}"
    );
}

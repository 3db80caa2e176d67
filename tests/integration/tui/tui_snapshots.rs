//! The console's screens, drawn to a `TestBackend` with fixed clocks and made-up session data,
//! compared with reviewed snapshots in `tests/snapshots/`.

use crate::support::tui_common;

use insta::assert_snapshot;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use trapdesk::session::{Origin, Status};
use trapdesk::tui::{Focus, Popup};
use tui_common::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[tokio::test]
async fn empty_shows_how_to_link() {
    let app = app();
    assert_snapshot!(screen(&app, 100, 30));
}

#[tokio::test]
async fn empty_at_80x24() {
    let app = app();
    assert_snapshot!(screen(&app, 80, 24));
}

#[tokio::test]
async fn computers_linked() {
    let mut app = app();
    app.set_computers(three_computers());
    app.computers.marked.insert("12:farm".into());
    app.focus = Focus::Computers;
    assert_snapshot!(screen(&app, 100, 30));
}

#[tokio::test]
async fn output_with_every_outcome() {
    let mut app = app();
    app.set_computers(three_computers());
    app.output.ingest("7:miner", every_outcome());
    app.set_editor_text("local fuel = turtle.getFuelLevel()\nprint(\"fuel\", fuel)\nreturn fuel");
    assert_snapshot!(screen(&app, 120, 32));
}

#[tokio::test]
async fn output_of_all_computers_at_80x24() {
    let mut app = app();
    app.set_computers(three_computers());
    app.output.ingest("7:miner", every_outcome());
    app.select_index(0);
    assert_snapshot!(screen(&app, 80, 24));
}

#[tokio::test]
async fn pending_with_countdown() {
    let mut app = app();
    app.set_computers(three_computers());
    let p1 = pending(&app, "h-20", "12:farm", Origin::Person, 3);
    let p2 = pending(
        &app,
        "h-21",
        "12:farm",
        Origin::Agent("claude-code".into()),
        12,
    );
    app.set_pending(vec![p1, p2]);
    app.focus = Focus::Requests;
    assert_snapshot!(screen(&app, 120, 30));
}

#[tokio::test]
async fn activity_with_an_agent_call() {
    let mut app = app();
    app.set_computers(three_computers());
    app.set_calls(vec![
        tool_call(1, Status::Ok),
        tool_call(2, Status::Running),
    ]);
    app.focus = Focus::Activity;
    assert_snapshot!("activity", screen(&app, 120, 30));
    app.activity.sel = 0;
    app.on_key(key(KeyCode::Enter));
    assert!(matches!(&app.popup, Some(Popup::Detail(d)) if d.call.call_id == 1));
    assert_snapshot!("activity_detail", screen(&app, 120, 30));
}

#[tokio::test]
async fn help() {
    let mut app = app();
    app.focus = Focus::Output;
    app.on_key(key(KeyCode::Char('?')));
    assert_snapshot!(screen(&app, 100, 30));
}

/// On a terminal too short for all the keys the help scrolls, and its title says so.
#[tokio::test]
async fn help_scrolls_on_a_short_terminal() {
    let mut app = app();
    app.size = ratatui::layout::Rect::new(0, 0, 100, 24);
    app.focus = Focus::Output;
    app.on_key(key(KeyCode::Char('?')));
    assert_snapshot!("help_short_top", screen(&app, 100, 24));
    app.on_key(key(KeyCode::End));
    assert!(app.popups.help.scroll > 0, "End scrolled the help");
    assert_snapshot!("help_short_end", screen(&app, 100, 24));
}

#[tokio::test]
async fn too_small() {
    let app = app();
    assert_snapshot!(screen(&app, 60, 15));
}

#[tokio::test]
async fn run_file_prompt() {
    let mut app = app();
    app.set_computers(three_computers());
    app.on_key(key(KeyCode::F(6)));
    for c in "programs/dig.lua 3 \"deep".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    app.on_key(key(KeyCode::Enter));
    assert_snapshot!(screen(&app, 80, 24));
}

#[tokio::test]
async fn confirm_quit_when_pending() {
    let mut app = app();
    app.set_computers(three_computers());
    let p = pending(&app, "h-20", "12:farm", Origin::Person, 3);
    app.set_pending(vec![p]);
    app.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert_snapshot!(screen(&app, 80, 24));
}

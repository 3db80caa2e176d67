//! Key handling without a terminal: what each key changes and which intents it emits, and one
//! round trip through a real session with a fake computer.
#![allow(clippy::panic)] // a failed test panics

use crate::support::tui_common;

use ratatui::crossterm::event::{
    KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use serde_json::json;
use trapdesk::session::{Origin, Status, Stream};
use trapdesk::tui::layout::areas;
use trapdesk::tui::{App, Focus, Intent, Popup};
use tui_common::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}
fn ctrl(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::CONTROL)
}
fn typ(app: &mut App, text: &str) {
    for c in text.chars() {
        let k = if c == '\n' {
            KeyCode::Enter
        } else {
            KeyCode::Char(c)
        };
        app.on_key(key(k));
    }
}

#[tokio::test]
async fn first_computer_is_selected_and_editor_has_focus() {
    let mut app = app();
    assert_eq!(app.focus, Focus::Editor);
    app.set_computers(three_computers());
    assert_eq!(app.selected.as_deref(), Some("7:miner"));
}

#[tokio::test]
async fn f5_sends_exec_lua_to_the_selected_computer() {
    let mut app = app();
    app.set_computers(three_computers());
    typ(&mut app, "print('hi')\nreturn 1");
    let out = app.on_key(key(KeyCode::F(5)));
    assert_eq!(
        out,
        vec![Intent::Start {
            targets: vec!["7:miner".into()],
            body: trapdesk::protocol::RequestBody::from_value(
                trapdesk::protocol::Kind::ExecLua,
                json!({"code": "print('hi')\nreturn 1"})
            )
            .unwrap(),
            deadline: None,
        }]
    );
}

#[tokio::test]
async fn space_marks_several_and_f5_sends_to_each() {
    let mut app = app();
    app.set_computers(three_computers());
    app.on_key(key(KeyCode::Tab));
    assert_eq!(app.focus, Focus::Computers);
    app.on_key(key(KeyCode::Char(' '))); // marks 7:miner, moves to 12:farm
    app.on_key(key(KeyCode::Char(' '))); // marks 12:farm
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.focus, Focus::Editor);
    typ(&mut app, "x");
    // A run on several computers waits for `y`, saying how many.
    assert!(app.on_key(key(KeyCode::F(5))).is_empty());
    assert!(matches!(app.popup, Some(Popup::ConfirmRun(..))));
    let out = app.on_key(key(KeyCode::Char('y')));
    let Some(Intent::Start { targets, .. }) = out.first() else {
        panic!("no start: {out:?}");
    };
    assert_eq!(targets, &vec!["12:farm".to_owned(), "7:miner".to_owned()]);
    // Every result shows in the pane being looked at: All computers.
    assert_eq!(app.selected, None);
}

#[tokio::test]
async fn f5_with_nothing_selected_says_why() {
    let mut app = app();
    typ(&mut app, "x");
    assert!(app.on_key(key(KeyCode::F(5))).is_empty());
    assert!(app.notice.is_some());
}

#[tokio::test]
async fn f6_parses_quoted_arguments() {
    let mut app = app();
    app.set_computers(three_computers());
    app.on_key(key(KeyCode::F(6)));
    typ(&mut app, r#"programs/dig.lua 3 "deep shaft""#);
    let out = app.on_key(key(KeyCode::Enter));
    assert_eq!(
        out,
        vec![Intent::Start {
            targets: vec!["7:miner".into()],
            body: trapdesk::protocol::RequestBody::from_value(
                trapdesk::protocol::Kind::RunFile,
                json!({"path": "programs/dig.lua", "args": ["3", "deep shaft"]})
            )
            .unwrap(),
            deadline: None,
        }]
    );
    assert_eq!(app.popup, None);
}

#[tokio::test]
async fn f6_tab_completes_from_list_files() {
    let mut app = app();
    app.set_computers(three_computers());
    app.on_key(key(KeyCode::F(6)));
    typ(&mut app, "programs/di");
    let out = app.on_key(key(KeyCode::Tab));
    assert_eq!(
        out,
        vec![Intent::Complete {
            target: "7:miner".into(),
            dir: "programs/".into()
        }]
    );
    app.on_msg(trapdesk::tui::AppMsg::Completion {
        dir: "programs/".into(),
        entries: vec![("dig.lua".into(), false), ("farm.lua".into(), false)],
    });
    let Some(Popup::Prompt(p)) = &app.popup else {
        panic!("prompt closed");
    };
    assert_eq!(p.text, "programs/dig.lua ");
}

#[tokio::test]
async fn tab_cycles_focus_both_ways() {
    let mut app = app();
    let mut seen = vec![app.focus];
    for _ in 0..5 {
        app.on_key(key(KeyCode::Tab));
        seen.push(app.focus);
    }
    assert_eq!(
        seen,
        vec![
            Focus::Editor,
            Focus::Computers,
            Focus::Requests,
            Focus::Activity,
            Focus::Output,
            Focus::Editor
        ]
    );
    app.on_key(key(KeyCode::BackTab));
    assert_eq!(app.focus, Focus::Output);
}

#[tokio::test]
async fn c_cancels_the_selected_request() {
    let mut app = app();
    let a = pending(&app, "h-1", "7:miner", Origin::Person, 1);
    let b = pending(&app, "h-2", "7:miner", Origin::Person, 1);
    app.set_pending(vec![a, b]);
    app.focus = Focus::Requests;
    app.on_key(key(KeyCode::Down));
    assert_eq!(
        app.on_key(key(KeyCode::Char('c'))),
        vec![Intent::Cancel("h-2".into())]
    );
    assert_eq!(
        app.on_key(key(KeyCode::Delete)),
        vec![Intent::Cancel("h-2".into())]
    );
}

#[tokio::test]
async fn q_quits_at_once_or_asks_when_pending() {
    let mut app = app();
    app.focus = Focus::Output;
    assert_eq!(app.on_key(key(KeyCode::Char('q'))), vec![Intent::Quit]);

    let mut app = tui_common::app();
    // In the editor, q is just a letter.
    assert!(app.on_key(key(KeyCode::Char('q'))).is_empty());
    assert_eq!(app.editor_text(), "q");
    let p = pending(&app, "h-1", "7:miner", Origin::Person, 1);
    app.set_pending(vec![p]);
    assert!(app.on_key(ctrl(KeyCode::Char('c'))).is_empty());
    assert_eq!(
        app.popup,
        Some(Popup::ConfirmQuit(
            trapdesk::tui::panes::confirm::ConfirmQuit { pending: 1 }
        ))
    );
    assert!(app.on_key(key(KeyCode::Char('n'))).is_empty());
    assert_eq!(app.popup, None);
    app.on_key(ctrl(KeyCode::Char('c')));
    assert_eq!(app.on_key(key(KeyCode::Char('y'))), vec![Intent::Quit]);
}

#[tokio::test]
async fn ctrl_up_and_down_browse_history() {
    let mut app = app();
    app.set_computers(three_computers());
    typ(&mut app, "print(1)");
    app.on_key(key(KeyCode::F(5)));
    app.set_editor_text("");
    typ(&mut app, "print(2)");
    app.on_key(key(KeyCode::F(5)));
    app.set_editor_text("");
    typ(&mut app, "draft");
    app.on_key(ctrl(KeyCode::Up));
    assert_eq!(app.editor_text(), "print(2)");
    app.on_key(ctrl(KeyCode::Up));
    assert_eq!(app.editor_text(), "print(1)");
    app.on_key(ctrl(KeyCode::Down));
    app.on_key(ctrl(KeyCode::Down));
    assert_eq!(app.editor_text(), "draft");
}

#[tokio::test]
async fn undo_and_redo_in_the_editor() {
    let mut app = app();
    typ(&mut app, "abc");
    app.on_key(ctrl(KeyCode::Char('z')));
    assert_ne!(app.editor_text(), "abc");
    app.on_key(ctrl(KeyCode::Char('y')));
    assert_eq!(app.editor_text(), "abc");
}

#[tokio::test]
async fn output_scrolls_stop_following_and_search() {
    let mut app = app();
    app.set_computers(three_computers());
    app.output.ingest("7:miner", every_outcome());
    app.focus = Focus::Output;
    assert!(app.output.scroll.following());
    app.on_key(key(KeyCode::Up));
    assert!(!app.output.scroll.following());
    app.on_key(key(KeyCode::End));
    assert!(app.output.scroll.following());
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "fuel");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.output.scroll.search.as_deref(), Some("fuel"));
    assert!(app.output.scroll.hit.is_some(), "found 'warning: fuel low'");
}

fn mouse(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

#[tokio::test]
async fn a_click_selects_a_computer_and_focuses_the_pane_under_it() {
    let mut app = app();
    app.set_computers(three_computers());
    let a = areas(app.size).unwrap_or_else(|| panic!("80x24 has a layout"));
    let left = MouseEventKind::Down(MouseButton::Left);
    // Rows inside the border: "All computers", then one row per computer.
    app.on_mouse(mouse(left, a.computers.x + 3, a.computers.y + 3));
    assert_eq!(app.focus, Focus::Computers);
    assert_eq!(app.selected.as_deref(), Some("12:farm"));
    app.on_mouse(mouse(left, a.computers.x + 3, a.computers.y + 1));
    assert_eq!(app.selected, None, "the first row is All computers");
    app.on_mouse(mouse(left, a.output.x + 5, a.output.y + 5));
    assert_eq!(app.focus, Focus::Output);
    app.on_mouse(mouse(left, a.requests.x + 2, a.requests.y + 1));
    assert_eq!(app.focus, Focus::Requests);
    app.on_mouse(mouse(left, a.editor.x + 5, a.editor.y + 2));
    assert_eq!(app.focus, Focus::Editor);
}

#[tokio::test]
async fn the_wheel_scrolls_the_output_and_end_follows_again() {
    let mut app = app();
    app.set_computers(three_computers());
    let lines: Vec<_> = (1..=100)
        .map(|i| line(i, "h-1", Stream::Out, &format!("line {i}")))
        .collect();
    app.output.ingest("7:miner", lines);
    let a = areas(app.size).unwrap_or_else(|| panic!("80x24 has a layout"));
    let (x, y) = (a.output.x + 4, a.output.y + 4);
    app.on_mouse(mouse(MouseEventKind::ScrollUp, x, y));
    app.on_mouse(mouse(MouseEventKind::ScrollUp, x, y));
    assert_eq!(app.output.scroll.from_bottom, 6);
    assert!(screen(&app, 80, 24).contains("(End follows)"));
    app.on_mouse(mouse(MouseEventKind::ScrollDown, x, y));
    assert_eq!(app.output.scroll.from_bottom, 3);
    app.on_mouse(mouse(MouseEventKind::ScrollDown, x, y));
    assert!(app.output.scroll.following());
    assert!(screen(&app, 80, 24).contains("line 100"));
}

#[tokio::test]
async fn the_tool_call_popup_scrolls_with_keys_and_wheel() {
    let mut app = app();
    app.set_computers(three_computers());
    let mut call = tool_call(1, Status::Ok);
    let many: Vec<String> = (1..=60).map(|i| format!("entry-{i}")).collect();
    call.result = Some(json!({ "files": many }).to_string().into());
    app.set_calls(vec![call]);
    app.focus = Focus::Activity;
    app.on_key(key(KeyCode::Enter));
    // The details popup holds its call and its own scroll position.
    let scroll = |app: &App| match &app.popup {
        Some(Popup::Detail(d)) => d.scroll,
        other => panic!("no details: {other:?}"),
    };
    assert!(matches!(&app.popup, Some(Popup::Detail(d)) if d.call.call_id == 1));
    assert!(!screen(&app, 80, 24).contains("entry-60"));
    app.on_key(key(KeyCode::Down));
    assert_eq!(scroll(&app), 1);
    app.on_key(key(KeyCode::End));
    let s = screen(&app, 80, 24);
    assert!(s.contains("entry-60"), "{s}");
    assert!(!s.contains("entry-1\""), "{s}");
    let bottom = scroll(&app);
    app.on_key(key(KeyCode::Down));
    assert_eq!(scroll(&app), bottom, "stops at the end of the text");
    app.on_mouse(mouse(MouseEventKind::ScrollUp, 40, 10));
    assert_eq!(scroll(&app), bottom - 3);
    app.on_key(key(KeyCode::Home));
    assert_eq!(scroll(&app), 0);
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.popup, None);
}

#[tokio::test]
async fn text_from_agents_cannot_drive_the_terminal() {
    let mut app = app();
    app.set_computers(three_computers());
    let mut call = tool_call(1, Status::Ok);
    call.client = "evil\u{1b}[2J".into();
    call.args = json!({"computer": "7:miner", "code": "print(1)\u{1b}]0;pwned\u{7}"});
    app.set_calls(vec![call]);
    let s = screen(&app, 120, 30);
    assert!(!s.contains('\u{1b}') && !s.contains('\u{7}'), "{s:?}");
    assert!(s.contains("evil\u{fffd}[2J"), "{s}");
    app.focus = Focus::Activity;
    app.on_key(key(KeyCode::Enter));
    let s = screen(&app, 120, 30);
    assert!(!s.contains('\u{1b}') && !s.contains('\u{7}'), "{s:?}");
}

#[tokio::test]
async fn an_offline_computer_keeps_the_clock_ticking() {
    let mut app = app();
    app.set_computers(vec![computer(7, "miner")]);
    assert!(!app.needs_tick(), "nothing moves on an idle screen");
    app.set_computers(three_computers());
    assert!(app.needs_tick(), "'off 90s' must count up");
}

#[tokio::test]
async fn clicking_a_key_hint_presses_that_key() {
    let mut app = app();
    app.set_computers(three_computers());
    typ(&mut app, "return 1");
    let a = areas(app.size).unwrap_or_else(|| panic!("80x24 has a layout"));
    let left = MouseEventKind::Down(MouseButton::Left);
    // The status line starts " F5 run  F6 file  …": column 2 is on "F5".
    let out = app.on_mouse(mouse(left, a.status.x + 2, a.status.y));
    assert_eq!(
        out,
        vec![Intent::Start {
            targets: vec!["7:miner".into()],
            body: trapdesk::protocol::RequestBody::from_value(
                trapdesk::protocol::Kind::ExecLua,
                json!({"code": "return 1"})
            )
            .unwrap(),
            deadline: None,
        }]
    );
    // "F6 file" opens the run-file prompt.
    app.on_mouse(mouse(left, a.status.x + 10, a.status.y));
    assert!(
        matches!(app.popup, Some(Popup::Prompt(_))),
        "{:?}",
        app.popup.is_some()
    );
    // The gap between hints presses nothing.
    app.popup = None;
    assert!(
        app.on_mouse(mouse(left, a.status.x + 8, a.status.y))
            .is_empty()
    );
    assert!(app.popup.is_none());
}

#[tokio::test]
async fn s_shows_the_secret_and_the_install_line_and_help_has_them() {
    let mut app = app();
    app.set_computers(three_computers());
    app.on_key(key(KeyCode::Tab));
    assert_ne!(app.focus, Focus::Editor);
    app.on_key(key(KeyCode::Char('s')));
    assert_eq!(app.popup, Some(Popup::Link));
    let line = trapdesk::config::install_line(app.settings.gateway_bind, &app.settings.secret);
    let text = screen(&app, 120, 30);
    assert!(text.contains(&line), "{text}");
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.popup, None);
    app.on_key(key(KeyCode::Char('?')));
    let text = screen(&app, 120, 50);
    assert!(text.contains(&line), "{text}");
    // In the editor, s is a letter.
    app.on_key(key(KeyCode::Esc));
    app.focus = Focus::Editor;
    app.on_key(key(KeyCode::Char('s')));
    assert_eq!(app.popup, None);
}

#[tokio::test]
async fn t_sets_a_deadline_for_the_persons_runs_and_empty_clears_it() {
    let mut app = app();
    app.set_computers(three_computers());
    app.on_key(key(KeyCode::Tab));
    app.on_key(key(KeyCode::Char('t')));
    typ(&mut app, "5m");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.run_deadline, Some(std::time::Duration::from_secs(300)));
    app.on_key(key(KeyCode::Esc));
    typ(&mut app, "x");
    let out = app.on_key(key(KeyCode::F(5)));
    let Some(Intent::Start { deadline, .. }) = out.first() else {
        panic!("no start: {out:?}");
    };
    assert_eq!(*deadline, Some(std::time::Duration::from_secs(300)));
    // Nonsense is refused in the prompt, which stays open.
    app.on_key(key(KeyCode::Tab));
    app.on_key(key(KeyCode::Char('t')));
    for _ in 0..3 {
        app.on_key(key(KeyCode::Backspace));
    }
    typ(&mut app, "soon");
    app.on_key(key(KeyCode::Enter));
    assert!(matches!(app.popup, Some(Popup::Prompt(_))));
    for _ in 0..4 {
        app.on_key(key(KeyCode::Backspace));
    }
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.run_deadline, None);
    app.on_key(key(KeyCode::F(6)));
    typ(&mut app, "dig.lua");
    let out = app.on_key(key(KeyCode::Enter));
    let Some(Intent::Start { deadline, .. }) = out.first() else {
        panic!("no start: {out:?}");
    };
    assert_eq!(*deadline, None);
}

#[tokio::test]
async fn a_second_slash_starts_a_new_search() {
    let mut app = app();
    app.set_computers(three_computers());
    app.focus = Focus::Output;
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "fuel");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.output.scroll.search.as_deref(), Some("fuel"));
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "coal");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.output.scroll.search.as_deref(), Some("coal"));
}

#[tokio::test]
async fn end_g_and_page_keys_work_in_lists_and_activity_follows_again() {
    let mut app = app();
    app.set_computers(three_computers());
    let calls = |n: u64| {
        (1..=n)
            .map(|i| tool_call(i, Status::Ok))
            .collect::<Vec<_>>()
    };
    app.set_calls(calls(30));
    assert_eq!(app.activity.sel, 29, "follows the newest call");
    app.focus = Focus::Activity;
    app.on_key(key(KeyCode::Home));
    assert_eq!(app.activity.sel, 0);
    app.on_key(key(KeyCode::PageDown));
    assert!(app.activity.sel > 1, "{}", app.activity.sel);
    app.on_key(key(KeyCode::Char('G')));
    assert_eq!(app.activity.sel, 29);
    app.set_calls(calls(31));
    assert_eq!(app.activity.sel, 30, "End made it follow new calls again");
    app.on_key(key(KeyCode::Up));
    app.set_calls(calls(32));
    assert_eq!(app.activity.sel, 29, "looking at an older call holds it");
    app.on_key(key(KeyCode::End));
    app.set_calls(calls(33));
    assert_eq!(app.activity.sel, 32);

    let pending: Vec<_> = (0..20)
        .map(|i| pending(&app, &format!("h-{i}"), "7:miner", Origin::Person, i))
        .collect();
    app.set_pending(pending);
    app.focus = Focus::Requests;
    app.on_key(key(KeyCode::End));
    assert_eq!(app.requests.sel, 19);
    app.on_key(key(KeyCode::Char('g')));
    assert_eq!(app.requests.sel, 0);
    app.on_key(key(KeyCode::PageDown));
    assert!(app.requests.sel > 1);
    app.on_key(key(KeyCode::PageUp));
    assert_eq!(app.requests.sel, 0);
}

#[tokio::test]
async fn home_in_output_fills_the_pane_from_the_top() {
    let mut app = app();
    app.set_computers(three_computers());
    let mut items = vec![start(1, "h-1", Origin::Person, "exec-lua", "for i=1,100")];
    for i in 1..=100u64 {
        items.push(line(1 + i, "h-1", Stream::Out, &format!("row {i:03}")));
    }
    app.output.ingest("7:miner", items);
    app.focus = Focus::Output;
    app.on_key(key(KeyCode::Home));
    let text = screen(&app, 100, 30);
    assert!(text.contains("for i=1,100"), "{text}");
    assert!(text.contains("row 001"), "{text}");
    assert!(
        text.contains("row 010"),
        "the pane is full, not one row: {text}"
    );
}

#[tokio::test]
async fn long_lines_are_marked_and_scroll_sideways() {
    let mut app = app();
    app.set_computers(three_computers());
    let long = format!("BEGIN{}END", "x".repeat(200));
    app.output.ingest(
        "7:miner",
        vec![
            start(1, "h-1", Origin::Person, "exec-lua", "print(long)"),
            line(2, "h-1", Stream::Out, &long),
        ],
    );
    app.focus = Focus::Output;
    let text = screen(&app, 100, 30);
    assert!(text.contains("BEGINxxx"), "{text}");
    assert!(text.contains("x…"), "a cut line ends in a marker: {text}");
    assert!(!text.contains("END"), "{text}");
    for _ in 0..20 {
        app.on_key(key(KeyCode::Right));
    }
    let text = screen(&app, 100, 30);
    assert!(text.contains("xEND"), "→ shows the end: {text}");
    assert!(text.contains("…x"), "and marks the hidden start: {text}");
    for _ in 0..20 {
        app.on_key(key(KeyCode::Left));
    }
    assert!(screen(&app, 100, 30).contains("BEGINxxx"));
}

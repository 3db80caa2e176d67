//! The Computers pane with a fleet: the `/` filter (globs on traposId and label), grouping by
//! label prefix with folding, the online / busy / offline counts, and broadcasting to the
//! filtered set. Keys without a terminal, screens as reviewed `TestBackend` snapshots.
#![allow(clippy::panic)] // a failed test panics

use crate::support::tui_common;

use std::time::Duration;

use insta::assert_snapshot;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use trapdesk::session::ComputerInfo;
use trapdesk::tui::panes::confirm::ConfirmRun;
use trapdesk::tui::{App, Focus, Intent, Popup};
use tui_common::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}
fn typ(app: &mut App, text: &str) {
    for c in text.chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
}

/// Ten computers: five miners (one busy, one offline), three farms, a lab and one without a
/// label.
fn fleet() -> Vec<ComputerInfo> {
    let mut list = Vec::new();
    for i in 1..=5 {
        let mut c = computer(i, &format!("miner-{i}"));
        if i == 2 {
            c.running = 1;
        }
        if i == 5 {
            c.online = false;
            c.disconnected_at = Some(t0() - Duration::from_secs(300));
            c.last_rtt_ms = None;
        }
        list.push(c);
    }
    for i in 1..=3 {
        list.push(computer(10 + i, &format!("farm_{i}")));
    }
    let mut lab = computer(20, "lab");
    lab.queued = 1;
    lab.running = 1;
    list.push(lab);
    list.push(computer(30, ""));
    // The session's order: online first, then by id.
    list.sort_by(|a, b| b.online.cmp(&a.online).then(a.id.cmp(&b.id)));
    list
}

fn fleet_app() -> App {
    let mut app = app();
    app.set_computers(fleet());
    app.focus = Focus::Computers;
    app
}

fn shown(app: &App) -> usize {
    app.computers.shown.total
}

#[tokio::test]
async fn slash_filters_as_typed_enter_keeps_esc_clears() {
    let mut app = fleet_app();
    app.on_key(key(KeyCode::Char('/')));
    assert!(matches!(app.popup, Some(Popup::Prompt(_))));
    typ(&mut app, "miner-*");
    // Filtered while typing, before Enter.
    assert_eq!(shown(&app), 5);
    app.on_key(key(KeyCode::Backspace));
    app.on_key(key(KeyCode::Backspace));
    typ(&mut app, "?");
    // `miner?` matches no label (they have a dash), and no traposId.
    assert_eq!(shown(&app), 0);
    app.on_key(key(KeyCode::Backspace));
    typ(&mut app, "-?");
    assert_eq!(shown(&app), 5);
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.popup, None);
    assert_eq!(app.computers.filter, "miner-?");
    assert_eq!(shown(&app), 5);
    // Keys that mean something in the pane are pane keys again, not filter text.
    app.on_key(key(KeyCode::Char('j')));
    assert_eq!(app.computers.filter, "miner-?");
    // `/` again edits the filter in force; Esc in the line clears it.
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "x");
    assert_eq!(shown(&app), 0);
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.popup, None);
    assert_eq!(app.computers.filter, "");
    assert_eq!(shown(&app), 10);
    // Matches traposIds (and bare ids) too, case-insensitively, like probe-computers.
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "1?:*");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(shown(&app), 3);
    app.on_key(key(KeyCode::Char('/')));
    for _ in 0..4 {
        app.on_key(key(KeyCode::Backspace));
    }
    typ(&mut app, "FARM*");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(shown(&app), 3);
    // With a filter kept, Esc in the pane clears it first, then leaves the pane.
    app.on_key(key(KeyCode::Esc));
    assert_eq!(shown(&app), 10);
    assert_eq!(app.focus, Focus::Computers);
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.focus, Focus::Editor);
}

#[tokio::test]
async fn slash_in_output_still_searches() {
    let mut app = fleet_app();
    app.focus = Focus::Output;
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "miner");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.output.scroll.search.as_deref(), Some("miner"));
    assert_eq!(app.computers.filter, "");
}

#[tokio::test]
async fn arrows_move_over_the_filtered_rows_only() {
    let mut app = fleet_app();
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "farm*");
    app.on_key(key(KeyCode::Enter));
    app.on_key(key(KeyCode::Home));
    assert_eq!(app.selected, None);
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.selected.as_deref(), Some("11:farm_1"));
    app.on_key(key(KeyCode::End));
    assert_eq!(app.selected.as_deref(), Some("13:farm_3"));
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.selected.as_deref(), Some("13:farm_3"));
}

#[tokio::test]
async fn z_groups_by_label_prefix_and_groups_fold() {
    let mut app = fleet_app();
    app.on_key(key(KeyCode::Char('z')));
    assert!(app.computers.grouped);
    let names: Vec<&str> = app
        .computers
        .groups
        .iter()
        .map(|g| g.name.as_str())
        .collect();
    assert_eq!(names, vec!["(no label)", "farm", "lab", "miner"]);
    let miner = app.computers.groups.iter().find(|g| g.name == "miner");
    let Some(miner) = miner else {
        panic!("no miner group")
    };
    assert_eq!(
        (
            miner.counts.total,
            miner.counts.online,
            miner.counts.busy,
            miner.counts.offline
        ),
        (5, 4, 1, 1)
    );
    // 1 + 4 headers + 10 computers.
    assert_eq!(app.computers.rows.len(), 15);
    // To the farm header; Enter folds it, Enter again unfolds it.
    let Some(farm) = app.computers.group_row("farm") else {
        panic!("no farm row")
    };
    app.select_index(farm);
    assert_eq!(app.selected, None);
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.computers.rows.len(), 12);
    assert_eq!(app.focus, Focus::Computers);
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.computers.rows.len(), 15);
    // ← on a computer folds its group and leaves the cursor on the header; → unfolds.
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.selected.as_deref(), Some("11:farm_1"));
    app.on_key(key(KeyCode::Left));
    assert_eq!(app.computers.cursor_group.as_deref(), Some("farm"));
    assert_eq!(app.computers.rows.len(), 12);
    app.on_key(key(KeyCode::Right));
    assert_eq!(app.computers.rows.len(), 15);
    // Space on a header marks the group's online computers; again unmarks them.
    app.select_index(farm);
    app.on_key(key(KeyCode::Char(' ')));
    assert_eq!(app.computers.marked.len(), 3);
    app.select_index(farm);
    app.on_key(key(KeyCode::Char(' ')));
    assert!(app.computers.marked.is_empty());
    // z again: a flat list; folds are remembered for next time.
    app.select_index(farm);
    app.on_key(key(KeyCode::Enter));
    app.on_key(key(KeyCode::Char('z')));
    assert!(!app.computers.grouped);
    assert_eq!(app.computers.rows.len(), 11);
    app.on_key(key(KeyCode::Char('z')));
    assert_eq!(app.computers.rows.len(), 12);
}

#[tokio::test]
async fn a_marks_the_filtered_set_and_f5_confirms_how_many() {
    let mut app = fleet_app();
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "miner*");
    app.on_key(key(KeyCode::Enter));
    app.on_key(key(KeyCode::Char('a')));
    // The offline miner is not marked: nothing could run there.
    let marked: Vec<&str> = app.computers.marked.iter().map(String::as_str).collect();
    assert_eq!(
        marked,
        vec!["1:miner-1", "2:miner-2", "3:miner-3", "4:miner-4"]
    );
    app.focus = Focus::Editor;
    typ(&mut app, "print(os.getComputerID())");
    assert!(app.on_key(key(KeyCode::F(5))).is_empty());
    let Some(Popup::ConfirmRun(ConfirmRun { who, .. })) = &app.popup else {
        panic!("no confirmation: {:?}", app.popup)
    };
    assert_eq!(who, "every online computer matching miner*");
    assert_snapshot!("confirm_broadcast", screen(&app, 100, 30));
    // n: nothing runs.
    assert!(app.on_key(key(KeyCode::Char('n'))).is_empty());
    assert_eq!(app.popup, None);
    // F5 again, y: one request per marked computer, and Output shows everyone's results.
    app.on_key(key(KeyCode::F(5)));
    let out = app.on_key(key(KeyCode::Char('y')));
    assert_eq!(
        out,
        vec![Intent::Start {
            targets: vec![
                "1:miner-1".into(),
                "2:miner-2".into(),
                "3:miner-3".into(),
                "4:miner-4".into()
            ],
            body: trapdesk::protocol::RequestBody::from_value(
                trapdesk::protocol::Kind::ExecLua,
                json!({"code": "print(os.getComputerID())"})
            )
            .unwrap(),
            deadline: None,
        }]
    );
    assert_eq!(app.selected, None);
    // a again unmarks the set; a with a filter that shows nothing online says so.
    app.focus = Focus::Computers;
    app.on_key(key(KeyCode::Char('a')));
    assert!(app.computers.marked.is_empty());
    app.on_key(key(KeyCode::Char('/')));
    for _ in 0..6 {
        app.on_key(key(KeyCode::Backspace));
    }
    typ(&mut app, "5:*");
    app.on_key(key(KeyCode::Enter));
    app.on_key(key(KeyCode::Char('a')));
    assert!(app.computers.marked.is_empty());
    assert!(
        app.notice
            .as_ref()
            .is_some_and(|(t, e)| *e && t.contains("no online"))
    );
}

#[tokio::test]
async fn the_confirmation_says_when_marks_reach_past_the_filter() {
    let mut app = fleet_app();
    app.computers.marked.insert("13:farm_3".into());
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "miner*");
    app.on_key(key(KeyCode::Enter));
    app.on_key(key(KeyCode::Char('a')));
    app.focus = Focus::Editor;
    typ(&mut app, "x");
    app.on_key(key(KeyCode::F(5)));
    let Some(Popup::ConfirmRun(ConfirmRun { intent, who })) = &app.popup else {
        panic!("no confirmation: {:?}", app.popup)
    };
    assert!(who.contains("1 of them not shown by the filter"), "{who}");
    let Intent::Start { targets, .. } = intent.as_ref() else {
        panic!("{intent:?}")
    };
    assert_eq!(targets.len(), 5);
    // F6 (run a file) goes through the same confirmation.
    app.on_key(key(KeyCode::Esc));
    app.on_key(key(KeyCode::F(6)));
    typ(&mut app, "startup.lua");
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    assert!(matches!(app.popup, Some(Popup::ConfirmRun(..))));
    let out = app.on_key(key(KeyCode::Enter));
    assert!(
        matches!(out.first(), Some(Intent::Start { body, .. }) if body.kind() == trapdesk::protocol::Kind::RunFile)
    );
}

#[tokio::test]
async fn filtered_pane_with_counts() {
    let mut app = fleet_app();
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "miner*");
    app.on_key(key(KeyCode::Enter));
    app.on_key(key(KeyCode::Down));
    app.notice = None;
    assert_snapshot!(screen(&app, 120, 30));
}

#[tokio::test]
async fn a_turtle_and_a_pocket_computer_say_what_they_are() {
    let mut list = fleet();
    list[0].machine.device = Some("turtle".into());
    list[1].machine.device = Some("pocket".into());
    list[2].machine.device = Some("computer".into());
    let mut app = app();
    app.set_computers(list);
    // Wide enough for the names whole with the kind (a narrower pane drops the kind first).
    let text = screen(&app, 136, 30);
    assert!(text.contains("turtle idle"), "{text}");
    assert!(text.contains("pocket"), "{text}");
    assert!(!text.contains("computer idle"), "{text}");
}

/// A computer with only detached runs going is busy, not idle: its runs show in Requests, and
/// the list says how many.
#[tokio::test]
async fn a_computer_running_only_detached_runs_is_not_idle() {
    let mut list = fleet();
    list[0].detached = 2;
    let mut app = app();
    app.set_computers(list);
    let text = screen(&app, 120, 30);
    assert!(text.contains("detached 2"), "{text}");
}

#[tokio::test]
async fn filter_line_while_typing() {
    let mut app = fleet_app();
    app.on_key(key(KeyCode::Char('/')));
    typ(&mut app, "farm_?");
    assert_snapshot!(screen(&app, 80, 24));
}

#[tokio::test]
async fn grouped_pane_with_a_folded_group() {
    let mut app = fleet_app();
    app.on_key(key(KeyCode::Char('z')));
    app.computers.collapsed.insert("farm".into());
    app.refresh_computers();
    app.computers.marked.insert("1:miner-1".into());
    app.selected = Some("2:miner-2".into());
    app.notice = None;
    assert_snapshot!(screen(&app, 120, 30));
}

#[tokio::test]
async fn a_thousand_computers_scroll_to_the_selection() {
    let mut app = app();
    let list: Vec<ComputerInfo> = (1..=1000)
        .map(|i| computer(i, &format!("node-{i}")))
        .collect();
    app.set_computers(list);
    app.focus = Focus::Computers;
    app.size = ratatui::layout::Rect::new(0, 0, 120, 30);
    app.on_key(key(KeyCode::End));
    let text = screen(&app, 120, 30);
    assert!(text.contains("1000:node-1000"), "{text}");
    assert!(text.contains("Computers 1000"), "{text}");
    assert!(text.contains("1000 online · 0 busy · 0 offline"), "{text}");
    // A click lands on the row drawn there, not on the list's n-th computer.
    let Some(a) = trapdesk::tui::layout::areas(app.size) else {
        panic!("no layout")
    };
    app.on_mouse(ratatui::crossterm::event::MouseEvent {
        kind: ratatui::crossterm::event::MouseEventKind::Down(
            ratatui::crossterm::event::MouseButton::Left,
        ),
        column: a.computers.x + 3,
        row: a.computers.y + a.computers.height - 2,
        modifiers: KeyModifiers::NONE,
    });
    assert_eq!(app.selected.as_deref(), Some("1000:node-1000"));
    app.on_mouse(ratatui::crossterm::event::MouseEvent {
        kind: ratatui::crossterm::event::MouseEventKind::Down(
            ratatui::crossterm::event::MouseButton::Left,
        ),
        column: a.computers.x + 3,
        row: a.computers.y + a.computers.height - 3,
        modifiers: KeyModifiers::NONE,
    });
    assert_eq!(app.selected.as_deref(), Some("999:node-999"));
}

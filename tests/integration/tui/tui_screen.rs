//! The console's Screen view and attach mode: snapshots of both, the keys that toggle them,
//! and what typing does while attached.
#![allow(clippy::panic, clippy::unwrap_used)]

use crate::support::tui_common;

use insta::assert_snapshot;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use trapdesk::session::screen::ScreenFrame;
use trapdesk::tui::{App, Focus, Intent, Popup};
use tui_common::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// The prompt of a CC shell after `ls`, as the mirror sends it.
fn shell_frame() -> ScreenFrame {
    let v = json!({"full": true, "seq": 1, "width": 51, "height": 19, "colour": true,
    "cursor": {"x": 3, "y": 4, "blink": true},
    "rows": [
        {"y": 1, "text": "CraftOS 1.9", "fg": "44444444444", "bg": "fffffffffff"},
        {"y": 2, "text": "> ls", "fg": "4000", "bg": "ffff"},
        {"y": 3, "text": "rom       startup   trapdesk", "fg": "dddddddddddddddddddddddddddd", "bg": "ffffffffffffffffffffffffffff"},
        {"y": 4, "text": "> ", "fg": "44", "bg": "ff"},
    ]});
    ScreenFrame::apply(None, &v).unwrap()
}

fn with_screen() -> App {
    let mut app = app();
    let mut list = three_computers();
    for c in &mut list {
        c.serves.push("screen".into());
        c.serves.push("input".into());
    }
    app.set_computers(list);
    app
}

#[tokio::test]
async fn screen_view_beside_the_output() {
    let mut app = with_screen();
    app.output.ingest("7:miner", every_outcome());
    app.on_key(key(KeyCode::F(9)));
    assert!(app.screen.on);
    app.screen.frame = Some(shell_frame());
    let shown = screen(&app, 170, 34);
    assert!(
        shown.contains("Output") || shown.contains("output"),
        "the output pane stays: {shown}"
    );
    assert!(shown.contains("> ls"), "{shown}");
    assert_snapshot!(shown);
}

#[tokio::test]
async fn attach_mode_is_marked() {
    let mut app = with_screen();
    app.on_key(key(KeyCode::F(8)));
    assert!(app.screen.attached && app.screen.on);
    app.screen.frame = Some(shell_frame());
    let shown = screen(&app, 120, 32);
    assert!(shown.contains("ATTACHED"), "{shown}");
    assert!(shown.contains("F8 detaches"), "{shown}");
    assert_snapshot!(shown);
}

/// Unlinked (a reboot, a crash), the computer's last frame is not its screen now: the title says
/// so rather than show it as live.
#[tokio::test]
async fn an_unlinked_computers_last_screen_is_marked() {
    let mut app = with_screen();
    app.on_key(key(KeyCode::F(9)));
    app.screen.frame = Some(shell_frame());
    let shown = screen(&app, 120, 32);
    assert!(!shown.contains("offline: its last screen"), "{shown}");
    let selected = app.selected.clone().unwrap();
    let mut list = app.computers.list.clone();
    for c in list.iter_mut().filter(|c| c.trapos_id == selected) {
        c.online = false;
    }
    app.set_computers(list);
    let shown = screen(&app, 120, 32);
    assert!(shown.contains("offline: its last screen"), "{shown}");
}

#[tokio::test]
async fn screen_view_of_a_client_without_the_mirror() {
    let mut app = app();
    app.set_computers(three_computers());
    app.on_key(key(KeyCode::F(9)));
    let shown = screen(&app, 120, 32);
    assert!(shown.contains("has no terminal mirror"), "{shown}");
}

#[tokio::test]
async fn attached_keys_go_to_the_computer_until_f8() {
    let mut app = with_screen();
    app.on_key(key(KeyCode::F(8)));
    let intents = app.on_key(key(KeyCode::Char('q')));
    assert_eq!(
        intents,
        vec![Intent::Input {
            target: "7:miner".into(),
            steps: vec![json!({"text": "q"})]
        }],
        "q types q instead of quitting"
    );
    assert!(!app.quit);
    let intents = app.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert_eq!(
        intents,
        vec![Intent::Input {
            target: "7:miner".into(),
            steps: vec![json!({"key": "ctrl+c"})]
        }],
        "ctrl-c goes to the computer too"
    );
    let intents = app.on_key(key(KeyCode::Enter));
    assert_eq!(
        intents[0],
        Intent::Input {
            target: "7:miner".into(),
            steps: vec![json!({"key": "enter"})]
        }
    );
    let intents = app.on_key(key(KeyCode::Tab));
    assert_eq!(
        intents[0],
        Intent::Input {
            target: "7:miner".into(),
            steps: vec![json!({"key": "tab"})]
        }
    );
    assert_eq!(
        app.focus,
        Focus::Editor,
        "tab does not move focus while attached"
    );
    let intents = app.on_terminal(Event::Paste("print('hi')".into()));
    assert_eq!(
        intents[0],
        Intent::Input {
            target: "7:miner".into(),
            steps: vec![json!({"paste": "print('hi')"})]
        }
    );
    // F8 detaches; keys are the console's again.
    assert!(app.on_key(key(KeyCode::F(8))).is_empty());
    assert!(!app.screen.attached);
    assert!(app.screen.on, "the Screen view stays after detaching");
    app.on_key(key(KeyCode::Char('x')));
    assert_eq!(app.editor_text(), "x");
    // F9 hides the view.
    app.on_key(key(KeyCode::F(9)));
    assert!(!app.screen.on);
}

#[tokio::test]
async fn attach_needs_a_computer_and_help_lists_the_keys() {
    let mut app = app();
    app.on_key(key(KeyCode::F(8)));
    assert!(!app.screen.attached);
    assert!(
        app.notice
            .as_ref()
            .is_some_and(|(t, err)| *err && t.contains("no computer"))
    );
    app.focus = Focus::Computers;
    app.on_key(key(KeyCode::Char('?')));
    assert_eq!(app.popup, Some(Popup::Help));
    let shown = screen(&app, 120, 60);
    assert!(shown.contains("F9"), "{shown}");
    assert!(shown.contains("F8"), "{shown}");
}

#[tokio::test]
async fn esc_while_attached_is_not_sent_and_says_why() {
    let mut app = with_screen();
    app.on_key(key(KeyCode::F(8)));
    app.screen.frame = Some(shell_frame());
    let intents = app.on_key(key(KeyCode::Esc));
    assert!(intents.is_empty(), "CC has no Esc key: {intents:?}");
    assert!(app.screen.attached, "Esc does not detach");
    let shown = screen(&app, 160, 32);
    assert!(shown.contains("ATTACHED"), "{shown}");
    assert!(
        shown.contains("Esc is not sent: CC computers have no Esc key"),
        "the status line says why: {shown}"
    );
    // It opens the computer menu; Esc again closes it, the next key goes through and the
    // note makes way for the reminder again.
    assert!(app.popup.is_some(), "the computer menu");
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    let intents = app.on_key(key(KeyCode::Char('a')));
    assert_eq!(intents.len(), 1);
    assert!(screen(&app, 160, 32).contains("keys go to the computer"));
    // Help says it too.
    app.on_key(key(KeyCode::F(8)));
    app.focus = Focus::Computers;
    app.on_key(key(KeyCode::Char('?')));
    assert!(screen(&app, 120, 60).contains("(CC has no Esc)"));
}

/// A frame of the given size with a prompt on its first row.
fn sized_frame(width: usize, height: usize) -> ScreenFrame {
    let v = json!({"full": true, "seq": 1, "width": width, "height": height, "colour": false,
    "cursor": {"x": 3, "y": 1, "blink": true},
    "rows": [
        {"y": 1, "text": "> ", "fg": "00", "bg": "ff"},
        {"y": height, "text": "bottom", "fg": "000000", "bg": "ffffff"},
    ]});
    ScreenFrame::apply(None, &v).unwrap()
}

#[tokio::test]
async fn turtle_and_pocket_screens_are_drawn_at_their_size() {
    for (w, h, name) in [(39usize, 13usize, "turtle"), (26, 20, "pocket")] {
        let mut app = with_screen();
        app.on_key(key(KeyCode::F(9)));
        app.screen.frame = Some(sized_frame(w, h));
        let shown = screen(&app, 170, 32);
        let lines: Vec<&str> = shown.lines().collect();
        // The pane is the terminal's width plus its two borders.
        let top = lines
            .iter()
            .position(|l| l.contains("┌ Screen "))
            .unwrap_or_else(|| panic!("{name}: {shown}"));
        let line: Vec<char> = lines[top].chars().collect();
        let at = lines[top].find("┌ Screen ").unwrap();
        let left = lines[top][..at].chars().count();
        let right = left + line[left..].iter().position(|c| *c == '┐').unwrap();
        assert_eq!(right - left + 1, w + 2, "{name}: {shown}");
        // Its last row is the terminal's last row.
        assert!(lines[top + h].contains("bottom"), "{name}: {shown}");
        assert!(!lines[top + h + 1].contains("bottom"), "{name}: {shown}");
        insta::assert_snapshot!(format!("sized_{name}"), shown);
    }
}

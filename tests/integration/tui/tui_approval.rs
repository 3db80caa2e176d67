//! The approval prompt and the policy popup, drawn to a `TestBackend` with fixed clocks and
//! compared with reviewed snapshots; and their keys, with no terminal and no session.

use crate::support::tui_common;

use std::time::Duration;

use insta::assert_snapshot;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use trapdesk::policy::{Action, Policy};
use trapdesk::session::{Answer, Approval, Origin};
use trapdesk::tui::{Intent, Popup};
use tui_common::*;

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn approval(app: &trapdesk::tui::App, id: &str, kind: &str, detail: &str) -> Approval {
    Approval {
        request_id: id.into(),
        trapos_id: "7:test-1".into(),
        origin: Origin::Agent("claude-code".into()),
        kind: kind.parse().expect("a request kind"),
        action: Action::of(kind.parse().expect("a request kind")).unwrap_or(Action::Exec),
        detail: detail.into(),
        size: detail.len(),
        because: "agent exec = \"ask\" (rule 2: computer = \"test-*\", agent_name = \"claude-code\", agent = { exec = ask })".into(),
        deadline: app.now_i + Duration::from_secs(27),
    }
}

#[tokio::test]
async fn the_prompt_shows_who_what_where_the_code_and_the_keys() {
    let mut app = app();
    app.set_computers(three_computers());
    let a = approval(
        &app,
        "h-4",
        "exec-lua",
        "local n = 0\nfor _, f in ipairs(fs.list(\"/\")) do\n  n = n + 1\nend\nreturn n",
    );
    let b = approval(&app, "h-5", "write-file", "startup.lua\nprint('hi')");
    app.set_approvals(vec![a, b]);
    assert_snapshot!(screen(&app, 100, 30));
}

#[tokio::test]
async fn only_y_n_and_a_answer_it() {
    let mut app = app();
    let a = approval(&app, "h-4", "exec-lua", "return 1");
    app.set_approvals(vec![a]);
    // Typing meant for the editor does not answer, nor reach the editor.
    assert!(app.on_key(key('x')).is_empty());
    assert_eq!(app.editor_text(), "");
    assert_eq!(
        app.on_key(key('y')),
        vec![Intent::Answer("h-4".into(), Answer::Yes)]
    );
    assert_eq!(
        app.on_key(key('n')),
        vec![Intent::Answer("h-4".into(), Answer::No)]
    );
    assert_eq!(
        app.on_key(key('a')),
        vec![Intent::Answer("h-4".into(), Answer::Always)]
    );
    app.set_approvals(Vec::new());
    assert!(app.on_key(key('y')).is_empty());
    assert_eq!(app.editor_text(), "y");
}

#[tokio::test]
async fn f7_shows_the_policy_and_r_reloads_it() {
    let mut app = app();
    app.set_computers(three_computers());
    let policy = Policy::from_toml(
        "[policy.default]\nagent = { write = \"ask\" }\n[[policy.rule]]\ncomputer = \"reactor*\"\nagent = { exec = \"deny\", write = \"deny\" }\n",
    )
    .unwrap_or_default();
    app.popups.policy.lines = policy.describe();
    app.on_key(KeyEvent::new(KeyCode::F(7), KeyModifiers::NONE));
    assert_eq!(app.popup, Some(Popup::Policy));
    assert_snapshot!(screen(&app, 100, 30));
    assert_eq!(app.on_key(key('r')), vec![Intent::ReloadPolicy]);
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert_eq!(app.popup, None);
}

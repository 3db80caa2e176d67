//! A hand on every computer and a stop for all agents, at the console: attached Ctrl-T is
//! CC's terminate, Esc opens the computer menu (terminate, reboot, shut down) while Ctrl-R and
//! Ctrl-S stay the program's, `T` terminates without attaching, the prompts edit as a line
//! editor does, Ctrl-C under an approval asks to quit over it, F4 stops all agents, and the
//! Screen view says when an agent types. Against a real session where one runs.
#![allow(clippy::panic, clippy::unwrap_used)] // a failed test panics

use crate::support::tui_common;

use std::time::Duration;

use ratatui::crossterm::event::{Event as CtEvent, KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use tokio::sync::mpsc;
use trapdesk::gateway::protocol::Hello;
use trapdesk::policy::{Decision, Policy};
use trapdesk::session::{Answer, Origin, RequestSpec, Session};
use trapdesk::tui::{self, App, AppMsg, Focus, Intent, Popup};
use tui_common::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}
fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}
fn typ(app: &mut App, text: &str) {
    for c in text.chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
}
fn input(step: serde_json::Value) -> Vec<Intent> {
    vec![Intent::Input {
        target: "7:miner".into(),
        steps: vec![step],
    }]
}
fn attached() -> App {
    let mut app = app();
    app.set_computers(three_computers());
    app.on_key(key(KeyCode::F(8)));
    assert!(app.screen.attached);
    app
}
fn prompt_text(app: &App) -> String {
    match &app.popup {
        Some(Popup::Prompt(p)) => p.text.clone(),
        other => panic!("no prompt open: {other:?}"),
    }
}

#[tokio::test]
async fn ctrl_t_attached_is_one_terminate_and_ctrl_r_ctrl_s_stay_the_programs() {
    let mut app = attached();
    assert_eq!(app.on_key(ctrl('t')), input(json!({"key": "terminate"})));
    // `edit` saves with Ctrl-S and CC's own reboot/shutdown need them held: they go as keys.
    assert_eq!(app.on_key(ctrl('s')), input(json!({"key": "ctrl+s"})));
    assert_eq!(app.on_key(ctrl('r')), input(json!({"key": "ctrl+r"})));
    assert!(app.screen.attached);
    // The help names the keys.
    app.on_key(key(KeyCode::F(8)));
    app.on_key(key(KeyCode::F(1)));
    let help = screen(&app, 130, 70);
    for needle in [
        "Ctrl-T",
        "menu (terminate, reboot, shut down)",
        "F4",
        "Ctrl-U Ctrl-W",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}

#[tokio::test]
async fn esc_attached_opens_the_computer_menu_for_reboot_and_shutdown() {
    let mut app = attached();
    assert!(
        app.on_key(key(KeyCode::Esc)).is_empty(),
        "CC has no Esc key"
    );
    assert!(matches!(app.popup, Some(Popup::Menu(_))));
    let shown = screen(&app, 120, 32);
    assert!(shown.contains("reboot the computer"), "{shown}");
    assert!(shown.contains("Esc is not sent"), "{shown}");
    assert_eq!(
        app.on_key(key(KeyCode::Char('r'))),
        input(json!({"key": "reboot"}))
    );
    assert_eq!(app.popup, None);
    assert!(app.screen.attached, "still attached after the menu");
    app.on_key(key(KeyCode::Esc));
    assert_eq!(
        app.on_key(key(KeyCode::Char('s'))),
        input(json!({"key": "shutdown"}))
    );
    app.on_key(key(KeyCode::Esc));
    assert_eq!(
        app.on_key(key(KeyCode::Char('t'))),
        input(json!({"key": "terminate"}))
    );
    // Esc twice: nothing sent, back to typing into the computer.
    app.on_key(key(KeyCode::Esc));
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    assert_eq!(app.popup, None);
    assert_eq!(
        app.on_key(key(KeyCode::Char('a'))),
        input(json!({"text": "a"}))
    );
}

#[tokio::test]
async fn shift_t_in_computers_terminates_the_selected_program_without_attaching() {
    let mut app = app();
    app.set_computers(three_computers());
    app.focus = Focus::Computers;
    assert_eq!(
        app.on_key(key(KeyCode::Char('T'))),
        input(json!({"key": "terminate"}))
    );
    assert!(!app.screen.attached);
    assert!(screen(&app, 120, 32).contains("terminate sent to"));
}

#[tokio::test]
async fn the_f6_and_t_prompts_edit_as_a_line_editor() {
    let mut app = app();
    app.set_computers(three_computers());
    app.on_key(key(KeyCode::F(6)));
    typ(&mut app, "programs/dig.lua 5  deep");
    app.on_key(ctrl('w'));
    assert_eq!(prompt_text(&app), "programs/dig.lua 5  ");
    app.on_key(ctrl('w'));
    assert_eq!(prompt_text(&app), "programs/dig.lua ");
    app.on_key(ctrl('u'));
    assert_eq!(prompt_text(&app), "");
    typ(&mut app, "abc");
    app.on_key(ctrl('a'));
    typ(&mut app, "x");
    app.on_key(ctrl('e'));
    typ(&mut app, "y");
    assert_eq!(prompt_text(&app), "xabcy");
    app.on_key(key(KeyCode::Left));
    app.on_key(key(KeyCode::Backspace));
    assert_eq!(prompt_text(&app), "xaby");
    // A Ctrl letter without a row types nothing.
    app.on_key(ctrl('x'));
    assert_eq!(prompt_text(&app), "xaby");
    // Ctrl-C closes the prompt (it does not type `c`, nor quit).
    assert!(app.on_key(ctrl('c')).is_empty());
    assert_eq!(app.popup, None);
    assert!(!app.quit);
    // The same in the deadline prompt.
    app.focus = Focus::Computers;
    app.on_key(key(KeyCode::Char('t')));
    typ(&mut app, "90");
    app.on_key(ctrl('u'));
    typ(&mut app, "5m");
    assert_eq!(prompt_text(&app), "5m");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.run_deadline, Some(Duration::from_secs(300)));
}

fn hello(id: u64, label: &str) -> Hello {
    Hello {
        protocol: 1,
        computer_id: id,
        label: Some(label.into()),
        secret: "x".into(),
        serves: ["exec-lua", "screen", "input"].map(String::from).to_vec(),
        client: None,
        host: None,
        max_message: None,
    }
}

/// Carries a key through the app and the session as the loop does, then pulls.
async fn press(app: &mut App, session: &Session, k: KeyEvent) {
    let (msg_tx, mut msg_rx) = mpsc::unbounded_channel::<AppMsg>();
    let mut events = session.subscribe();
    tui::handle(
        app,
        session,
        &msg_tx,
        tui::Event::Crossterm(CtEvent::Key(k)),
    );
    tokio::task::yield_now().await;
    while let Ok(e) = events.try_recv() {
        app.note(&e);
    }
    while let Ok(m) = msg_rx.try_recv() {
        app.on_msg(m);
    }
    app.pull(session);
}

#[tokio::test]
async fn f4_stops_all_agents_shows_it_until_resumed_even_under_an_approval() {
    let session = Session::new(settings(), false);
    let (tx, mut rx) = mpsc::channel(64);
    let _link = session.link(&hello(7, "miner"), tx);
    let mut app = app();
    app.pull(&session);
    // An agent's call running on the computer.
    let running = session
        .start(
            "7",
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({"code": "x"})),
            Origin::Agent("claude".into()),
        )
        .unwrap();
    assert!(rx.recv().await.is_some());
    press(&mut app, &session, key(KeyCode::F(4))).await;
    assert!(session.paused().is_some());
    assert!(app.paused);
    let shown = screen(&app, 120, 32);
    assert!(shown.contains("AGENTS STOPPED · F4 resumes"), "{shown}");
    // The running call was asked to stop.
    assert!(matches!(
        rx.recv().await,
        Some(trapdesk::session::Outbound::Cancel { id }) if id == running.id
    ));
    let e = session
        .start(
            "7",
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({"code": "y"})),
            Origin::Agent("claude".into()),
        )
        .err()
        .unwrap();
    assert_eq!(e.code(), "paused");
    // The marker stays through other notices.
    app.notify("something else", false);
    assert!(screen(&app, 120, 32).contains("AGENTS STOPPED"));
    press(&mut app, &session, key(KeyCode::F(4))).await;
    assert!(session.paused().is_none());
    assert!(!app.paused);
    assert!(!screen(&app, 120, 32).contains("AGENTS STOPPED"));

    // Under an approval prompt, F4 still stops them (and refuses the waiting call).
    let mut p = Policy::default();
    p.agent[0] = Decision::Ask;
    session.set_policy(p);
    let _approver = session.attach_approver();
    let asked = session
        .start(
            "7",
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({"code": "z"})),
            Origin::Agent("claude".into()),
        )
        .unwrap();
    app.pull(&session);
    app.set_approvals(session.approvals());
    assert!(app.approval().is_some());
    press(&mut app, &session, key(KeyCode::F(4))).await;
    assert!(session.paused().is_some());
    assert_eq!(asked.wait().await.err().unwrap().code(), "paused");
}

#[tokio::test]
async fn ctrl_c_under_an_approval_asks_over_it_and_a_refused_call_is_not_pending() {
    let session = Session::new(settings(), false);
    let (tx, _rx) = mpsc::channel(64);
    let _link = session.link(&hello(7, "miner"), tx);
    let mut p = Policy::default();
    p.agent[0] = Decision::Ask;
    session.set_policy(p);
    let _approver = session.attach_approver();
    let mut app = app();
    let asked = session
        .start(
            "7",
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({"code": "z"})),
            Origin::Agent("claude".into()),
        )
        .unwrap();
    app.pull(&session);
    assert!(app.approval().is_some());
    // Ctrl-C: the Quit question shows over the prompt and takes the keys.
    press(&mut app, &session, ctrl('c')).await;
    assert!(matches!(app.popup, Some(Popup::ConfirmQuit(_))));
    let shown = screen(&app, 120, 40);
    assert!(shown.contains("1 request(s) still pending"), "{shown}");
    assert!(shown.contains(" Quit "), "{shown}");
    // `n` answers the question (stay), not the approval.
    press(&mut app, &session, key(KeyCode::Char('n'))).await;
    assert_eq!(app.popup, None);
    assert_eq!(session.approvals().len(), 1);
    // Now `n` refuses the call; Ctrl-C then quits at once: nothing is pending.
    press(&mut app, &session, key(KeyCode::Char('n'))).await;
    assert_eq!(asked.wait().await.err().unwrap().code(), "refused");
    press(&mut app, &session, ctrl('c')).await;
    assert!(app.quit, "popup: {:?}", app.popup);
}

#[tokio::test]
async fn an_open_quit_question_counts_what_is_pending_now() {
    let session = Session::new(settings(), false);
    let (tx, _rx) = mpsc::channel(64);
    let _link = session.link(&hello(7, "miner"), tx);
    let mut p = Policy::default();
    p.agent[0] = Decision::Ask;
    session.set_policy(p);
    let _approver = session.attach_approver();
    let mut app = app();
    let asked = session
        .start(
            "7",
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({"code": "z"})),
            Origin::Agent("claude".into()),
        )
        .unwrap();
    app.pull(&session);
    press(&mut app, &session, ctrl('c')).await;
    assert!(screen(&app, 120, 40).contains("1 request(s) still pending"));
    // Refused elsewhere (the session's answer) while the question is open.
    let mut events = session.subscribe();
    session.answer(&asked.id, Answer::No).unwrap();
    while let Ok(e) = events.try_recv() {
        app.note(&e);
    }
    app.pull(&session);
    let shown = screen(&app, 120, 40);
    assert!(!shown.contains("1 request(s) still pending"), "{shown}");
    assert!(shown.contains("Nothing is pending any more."), "{shown}");
}

#[tokio::test]
async fn attached_holds_the_keyboard_and_the_view_says_when_an_agent_types() {
    let session = Session::new(settings(), false);
    let (tx, _rx) = mpsc::channel(64);
    let _link = session.link(&hello(7, "miner"), tx);
    let mut app = app();
    app.pull(&session);
    press(&mut app, &session, key(KeyCode::F(9))).await;
    assert!(!session.keyboard_held("7:miner"));
    press(&mut app, &session, key(KeyCode::F(8))).await;
    assert!(session.keyboard_held("7:miner"));
    press(&mut app, &session, key(KeyCode::F(8))).await;
    assert!(!session.keyboard_held("7:miner"));
    // Not attached, an agent types: the view's title says who.
    let mut events = session.subscribe();
    let _t = session
        .start_input(
            "7",
            vec![json!({"text": "ls"})],
            Origin::Agent("claude".into()),
        )
        .unwrap();
    while let Ok(e) = events.try_recv() {
        app.note(&e);
    }
    app.pull(&session);
    let shown = screen(&app, 140, 32);
    assert!(shown.contains("claude is typing"), "{shown}");
}

#[tokio::test]
async fn a_refused_agent_call_is_not_called_a_refused_link() {
    let session = Session::new(settings(), false);
    let (tx, _rx) = mpsc::channel(64);
    let _link = session.link(&hello(7, "miner"), tx);
    let mut app = app();
    app.pull(&session);
    let mut events = session.subscribe();
    session.pause("cli");
    let refused = session.start(
        "7",
        RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({"code": "x"})),
        Origin::Agent("claude".into()),
    );
    assert!(refused.is_err());
    while let Ok(e) = events.try_recv() {
        app.note(&e);
    }
    app.pull(&session);
    let shown = screen(&app, 120, 32);
    assert!(!shown.contains("link refused"), "{shown}");
    assert!(shown.contains("AGENTS STOPPED"), "{shown}");
}

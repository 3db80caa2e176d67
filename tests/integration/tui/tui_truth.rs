//! What the console shows is re-read when its source changes (the secret rotated by another
//! process, a config file made after the start, a computer that linked again, the computers
//! linking again after a restart), and it says things whole and in the words agents use:
//! traposIds, a message log, the request cancelled by what it was, Lua's escapes, why a
//! removed agent's call was cancelled.
#![allow(clippy::panic, clippy::unwrap_used)]

use crate::support::tui_common;

use std::time::Duration;

use insta::assert_snapshot;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use tokio::sync::mpsc;
use trapdesk::session::{Event, Origin, Outbound, Session};
use trapdesk::tui::{self, AppMsg, Focus, Intent, Popup};
use tui_common::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Presses a key as the loop does: the app acts, its intents go to the session.
fn press(
    app: &mut tui::App,
    session: &Session,
    msg_tx: &mpsc::UnboundedSender<AppMsg>,
    k: KeyEvent,
) {
    tui::handle(
        app,
        session,
        msg_tx,
        tui::Event::Crossterm(ratatui::crossterm::event::Event::Key(k)),
    );
}

#[tokio::test]
async fn a_secret_rotated_by_another_process_shows_in_s_and_the_help() {
    let dir = tempfile::tempdir().unwrap();
    let old = trapdesk::trust::secrets::rotate(dir.path()).unwrap();
    let mut s = settings();
    s.data_dir = dir.path().to_owned();
    s.secret = old.clone();
    s.secret_source = trapdesk::config::SecretSource::Stored(dir.path().join("secret"));
    let session = Session::new(s.clone(), false);
    let mut app = tui::App::new(s, trapdesk::tui::theme::Theme::plain(), false);
    app.now = t0();
    app.focus = Focus::Computers;
    app.on_key(key(KeyCode::Char('s')));
    app.pull(&session);
    assert!(screen(&app, 120, 30).contains(&old));
    // `trapdesk secret rotate` in another terminal: the same write the command does.
    let new = trapdesk::trust::secrets::rotate(dir.path()).unwrap();
    app.on_key(key(KeyCode::Esc));
    app.on_key(key(KeyCode::Char('s')));
    app.pull(&session);
    let shown = screen(&app, 120, 30);
    assert!(shown.contains(&new), "{shown}");
    assert!(!shown.contains(&old), "{shown}");
    // F1's install line too, read again when it opens.
    let newer = trapdesk::trust::secrets::rotate(dir.path()).unwrap();
    app.on_key(key(KeyCode::Esc));
    app.on_key(key(KeyCode::F(1)));
    app.pull(&session);
    let shown = screen(&app, 140, 60);
    assert!(shown.contains(&newer), "{shown}");
    // While open it is read again within a second (the loop ticks while it is shown).
    assert!(app.needs_tick());
}

#[tokio::test]
async fn r_in_f7_reads_a_config_file_made_after_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    let mut s = settings();
    s.data_dir = dir.path().to_owned();
    s.config_file = None;
    s.config_path = Some(file.clone());
    let session = Session::new(s.clone(), false);
    let mut app = tui::App::new(s, trapdesk::tui::theme::Theme::plain(), false);
    let (msg_tx, mut msg_rx) = mpsc::unbounded_channel::<AppMsg>();
    app.pull(&session);
    app.on_key(key(KeyCode::F(7)));
    let shown = screen(&app, 120, 30);
    assert!(shown.contains("no file at"), "{shown}");
    std::fs::write(
        &file,
        "[[policy.rule]]\ncomputer = \"reactor*\"\nagent = { exec = \"deny\" }\n",
    )
    .unwrap();
    press(&mut app, &session, &msg_tx, key(KeyCode::Char('r')));
    let Ok(msg) = msg_rx.try_recv() else {
        panic!("no notice")
    };
    app.on_msg(msg);
    app.note(&Event::PolicyChanged);
    app.pull(&session);
    let shown = screen(&app, 120, 30);
    assert!(shown.contains("reactor*"), "the rule is in force: {shown}");
    assert!(
        shown.contains(&format!("from {}", file.display())),
        "{shown}"
    );
    let Some((notice, false)) = &app.notice else {
        panic!("no notice: {:?}", app.notice)
    };
    assert!(notice.starts_with("policy reloaded: from "), "{notice}");
}

#[tokio::test]
async fn the_screen_view_watches_a_relinked_computer_again() {
    let session = Session::new(settings(), false);
    let serves = ["exec-lua", "screen", "input"];
    let (tx, mut rx) = mpsc::channel(64);
    let _link = session.link(&hello_serving(7, "miner", &serves), tx);
    let mut app = app();
    app.pull(&session);
    app.on_key(key(KeyCode::F(9)));
    app.pull(&session);
    let asked = |rx: &mut mpsc::Receiver<Outbound>| {
        let mut watch = None;
        while let Ok(o) = rx.try_recv() {
            if let Outbound::Request(r) = o
                && r.kind() == trapdesk::protocol::Kind::Screen
            {
                watch = r
                    .payload()
                    .get("watch")
                    .and_then(serde_json::Value::as_bool);
            }
        }
        watch
    };
    assert_eq!(asked(&mut rx), Some(true), "the first link is watched");
    // The computer reboots: a new connection, which was never told it is watched.
    let (tx2, mut rx2) = mpsc::channel(64);
    let mut events = session.subscribe();
    let _link2 = session.link(&hello_serving(7, "miner", &serves), tx2);
    while let Ok(ev) = events.try_recv() {
        app.note(&ev);
    }
    app.pull(&session);
    assert_eq!(asked(&mut rx2), Some(true), "the new link is watched too");
}

#[tokio::test]
async fn after_a_restart_the_first_computer_is_selected_until_a_key() {
    let mut app = app();
    // farm links first after the restart, miner a moment later.
    app.set_computers(vec![computer(2, "farm")]);
    assert_eq!(app.selected.as_deref(), Some("2:farm"));
    app.set_computers(vec![computer(1, "miner"), computer(2, "farm")]);
    assert_eq!(app.selected.as_deref(), Some("1:miner"));
    // Once the person presses a key, a computer linking never moves the selection.
    app.on_key(key(KeyCode::Char('x')));
    app.set_computers(vec![
        computer(0, "a"),
        computer(1, "miner"),
        computer(2, "farm"),
    ]);
    assert_eq!(app.selected.as_deref(), Some("1:miner"));
}

#[tokio::test]
async fn computers_are_named_by_their_trapos_id() {
    let mut app = app();
    app.set_computers(three_computers());
    let shown = screen(&app, 100, 30);
    assert!(shown.contains("7:miner"), "{shown}");
    assert!(shown.contains("12:farm"), "{shown}");
    assert!(!shown.contains("miner #7"), "{shown}");
}

#[tokio::test]
async fn a_long_message_is_cut_with_the_key_of_the_log_which_shows_it_whole() {
    let mut app = app();
    app.set_computers(three_computers());
    let long = "link refused: 4:farm from 192.168.1.20:51234 wrong secret; press s for the secret and the install line (the end is here)";
    app.notify(long, true);
    app.notify("second message", false);
    app.notify(long, true);
    let bar = screen(&app, 80, 24);
    let last = bar.lines().last().unwrap_or_default().to_owned();
    assert!(last.contains("(F2 shows it whole)"), "{last}");
    assert!(!last.contains("the end is here"), "{last}");
    app.on_key(key(KeyCode::F(2)));
    assert_eq!(app.popup, Some(Popup::Messages));
    let shown = screen(&app, 80, 24);
    assert!(shown.contains("the end is here"), "{shown}");
    assert!(shown.contains("second message"), "{shown}");
    assert_snapshot!(shown);
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.popup, None);
    // `m` opens it outside the editor.
    app.focus = Focus::Output;
    app.on_key(key(KeyCode::Char('m')));
    assert_eq!(app.popup, Some(Popup::Messages));
}

#[tokio::test]
async fn cancelling_names_what_and_where_not_an_internal_id() {
    let mut app = app();
    app.set_computers(three_computers());
    let mut p = pending(&app, "h-5", "7:miner", Origin::Person, 3);
    p.summary = "dig()".into();
    app.set_pending(vec![p]);
    app.focus = Focus::Requests;
    let intents = app.on_key(key(KeyCode::Char('c')));
    assert_eq!(intents, vec![Intent::Cancel("h-5".into())]);
    let Some((notice, _)) = &app.notice else {
        panic!("no notice")
    };
    assert_eq!(notice, "cancelling exec-lua dig() on 7:miner");
    assert!(!notice.contains("h-5"));
}

#[tokio::test]
async fn returned_strings_read_as_lua_writes_them() {
    let session = Session::new(settings(), false);
    let shown = screen_after_exec(
        &session,
        json!({"ok": true, "returns": [{"type": "string", "value": "\u{1b}[2J"}], "n": 1}),
        "return '\\27[2J'",
    )
    .await;
    assert!(shown.contains(r#"└ → "\27[2J""#), "{shown}");
    assert!(!shown.contains("u{1b}"), "{shown}");
}

#[tokio::test]
async fn a_removed_agents_call_says_why_it_was_cancelled() {
    let session = Session::new(settings(), false);
    link_answering_cancels(&session);
    let agent = Origin::Agent("helper".into());
    let spec = trapdesk::session::RequestSpec::new(
        trapdesk::protocol::Kind::ExecLua,
        json!({"code": "while true do sleep(1) end"}),
    );
    let ticket = session.start("7:miner", spec, agent.clone()).unwrap();
    crate::support::wait_for(
        Duration::from_secs(5),
        || session.pending().iter().any(|p| p.sent),
        || "the request was never sent".to_owned(),
    )
    .await;
    assert_eq!(
        session.cancel_all_of_by(&agent, "the removal of agent helper"),
        1
    );
    let _ = tokio::time::timeout(Duration::from_secs(5), ticket.wait()).await;
    let mut app = app();
    app.pull(&session);
    let shown = screen(&app, 120, 30);
    assert!(
        shown.contains("cancelled by the removal of agent helper"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_failed_cancel_or_answer_names_no_internal_id() {
    let session = Session::new(settings(), false);
    let (msg_tx, mut msg_rx) = mpsc::unbounded_channel::<AppMsg>();
    tui::execute(&session, Intent::Cancel("h-9".into()), &msg_tx);
    tui::execute(
        &session,
        Intent::Answer("h-9".into(), trapdesk::session::Answer::Yes),
        &msg_tx,
    );
    for _ in 0..2 {
        let Ok(AppMsg::Notice { text, error: true }) = msg_rx.try_recv() else {
            panic!("no error notice")
        };
        assert!(!text.contains("h-9"), "{text}");
    }
}

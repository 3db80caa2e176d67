//! The console against a real session: F5 in the app starts a request on a fake linked
//! computer, and its output and outcome show up in the output pane after a pull.
#![allow(clippy::panic)] // a failed test panics

mod tui_common;

use std::time::Duration;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::mpsc;
use trapdesk::gateway::protocol::{Hello, Response};
use trapdesk::session::{Outbound, Session, Stream};
use trapdesk::tui::{self, AppMsg};
use tui_common::*;

fn hello(id: u64, label: &str) -> Hello {
    Hello {
        protocol: 1,
        computer_id: id,
        label: Some(label.into()),
        secret: "x".into(),
        serves: vec!["exec-lua".into()],
        client: None,
        host: None,
        max_message: None,
    }
}

#[tokio::test]
async fn f5_runs_on_a_linked_computer_and_the_outcome_shows() {
    let session = Session::new(settings(), false);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let link = session.link(&hello(7, "miner"), tx);
    tokio::spawn(async move {
        while let Some(Outbound::Request(req)) = rx.recv().await {
            link.output(&req.id, Stream::Out, "hello from 7\n");
            link.output(&req.id, Stream::Err, "careful\n");
            link.response(Response {
                id: req.id,
                ok: true,
                payload: Some(serde_json::json!({"ok": true,
                    "returns": [{"type": "number", "value": 42}], "n": 1})),
                error: None,
            });
        }
    });
    let mut app = app();
    let (msg_tx, _msg_rx) = mpsc::unbounded_channel::<AppMsg>();
    let mut events = session.subscribe();
    app.pull(&session);
    assert_eq!(app.selected.as_deref(), Some("7:miner"));
    for c in "return 42".chars() {
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    tui::handle(
        &mut app,
        &session,
        &msg_tx,
        tui::Event::Crossterm(ratatui::crossterm::event::Event::Key(KeyEvent::new(
            KeyCode::F(5),
            KeyModifiers::NONE,
        ))),
    );
    // Wait for the end, noting events like the loop does.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let ev = tokio::time::timeout_at(deadline, events.recv()).await;
        let Ok(Ok(ev)) = ev else {
            panic!("no RequestFinished")
        };
        app.note(&ev);
        if matches!(ev, trapdesk::session::Event::RequestFinished { .. }) {
            break;
        }
    }
    app.pull(&session);
    let text = screen(&app, 100, 30);
    assert!(text.contains("hello from 7"), "{text}");
    assert!(text.contains("careful"), "{text}");
    assert!(text.contains("you exec-lua return 42"), "{text}");
    assert!(text.contains("· ok"), "{text}");
    assert!(text.contains("└ → 42"), "{text}");
}

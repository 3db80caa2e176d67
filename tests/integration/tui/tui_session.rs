//! The console against a real session: F5 in the app starts a request on a fake linked
//! computer, and its output and outcome show up in the output pane after a pull.
#![allow(clippy::panic)] // a failed test panics

use crate::support::tui_common;

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
    let (tx, mut rx) = mpsc::channel(1024);
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

/// A refused link (here: through the real gateway, a wrong secret) reaches the status line
/// with who, from where and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_link_shows_in_the_status_line() {
    use futures_util::{SinkExt, StreamExt};
    let mut s = settings();
    s.gateway_bind = "127.0.0.1:0".parse().unwrap_or(s.gateway_bind);
    s.mcp_bind = "127.0.0.1:0".parse().unwrap_or(s.mcp_bind);
    let Ok(host) = trapdesk::host::Host::start(s, false).await else {
        panic!("host did not start")
    };
    let mut events = host.session.subscribe();
    let url = format!("ws://{}/gateway", host.gateway_addr);
    let Ok((mut ws, _)) = tokio_tungstenite::connect_async(&url).await else {
        panic!("no connection")
    };
    let hello = r#"{"type":"hello","protocol":1,"computer_id":4,"label":"farm","secret":"wrong","serves":[]}"#;
    if ws
        .send(tokio_tungstenite::tungstenite::Message::Text(hello.into()))
        .await
        .is_err()
    {
        panic!("hello not sent")
    }
    while ws.next().await.is_some() {}
    let mut app = app();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let Ok(Ok(ev)) = tokio::time::timeout_at(deadline, events.recv()).await else {
            panic!("no refused entry")
        };
        app.note(&ev);
        if matches!(&ev, trapdesk::session::Event::Logged { entry } if entry.event.as_str() == "refused")
        {
            break;
        }
    }
    let text = screen(&app, 160, 30);
    assert!(
        text.contains("link refused: 4:farm from 127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("wrong secret"), "{text}");
}

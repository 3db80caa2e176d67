//! Unit tests of the terminals and monitors in `session/screen/mod.rs`.

use super::*;

#[test]
fn a_display_is_named_by_its_monitor_field() {
    assert_eq!(Display::of(&json!({"width": 1})), Display::Terminal);
    assert_eq!(
        Display::of(&json!({"monitor": "top"})),
        Display::Monitor("top".into())
    );
    assert_eq!(Display::from_monitor(None), Display::Terminal);
    assert_eq!(
        Display::Monitor("monitor_0".into()).to_string(),
        "monitor monitor_0"
    );
    assert_eq!(Display::Terminal.to_string(), "terminal");
    // The keys of the attach channel's JSON.
    assert_eq!(
        serde_json::to_value(Display::Terminal).ok(),
        Some(json!("terminal"))
    );
    assert_eq!(
        serde_json::to_value(Display::Monitor("top".into())).ok(),
        Some(json!({"monitor": "top"}))
    );
    let v = with_display(json!({"width": 3}), &Display::Monitor("left".into()));
    assert_eq!(v["monitor"], "left");
    let t = with_display(json!({"width": 3}), &Display::Terminal);
    assert!(t.get("monitor").is_none());
}

#[test]
fn frames_and_watchers_are_kept_per_display() {
    let session = Session::new(crate::config::Settings::default(), false);
    let terminal = json!({"full": true, "width": 3, "height": 1, "rows": [{"y": 1, "text": "> "}]});
    let monitor = json!({"full": true, "width": 2, "height": 1, "monitor": "top", "scale": 1,
        "rows": [{"y": 1, "text": "hi", "known": "10"}]});
    session.store("1:a", &terminal).expect("terminal frame");
    session.store("1:a", &monitor).expect("monitor frame");
    let t = session
        .screen("1:a", &Display::Terminal)
        .expect("terminal kept");
    let m = session
        .screen("1:a", &Display::Monitor("top".into()))
        .expect("monitor kept");
    assert_eq!((t.width, m.width), (3, 2));
    assert!(!m.rows[0].is_known(1));
    assert!(
        session
            .screen("1:a", &Display::Monitor("left".into()))
            .is_none()
    );
    // An update of the monitor leaves the terminal alone.
    let u = json!({"width": 2, "height": 1, "monitor": "top", "rows": [{"y": 1, "text": "ok"}]});
    session.store("1:a", &u).expect("update");
    assert_eq!(
        session
            .screen("1:a", &Display::Terminal)
            .map(|f| f.text_rows()),
        Some(vec![">".to_owned()])
    );
    assert_eq!(
        session
            .screen("1:a", &Display::Monitor("top".into()))
            .map(|f| f.text_rows()),
        Some(vec!["ok".to_owned()])
    );
    // A monitor the computer no longer has loses its frame; the terminal never does.
    let not_found = RequestError::Remote {
        code: "not_found".into(),
        message: "no monitor top on this computer".into(),
        output: None,
    };
    session.gone("1:a", &Display::Terminal, &not_found);
    assert!(session.screen("1:a", &Display::Terminal).is_some());
    session.store("1:a", &monitor).expect("monitor frame");
    session.gone(
        "1:a",
        &Display::Monitor("top".into()),
        &RequestError::Disconnected,
    );
    assert!(
        session
            .screen("1:a", &Display::Monitor("top".into()))
            .is_some()
    );
    session.gone("1:a", &Display::Monitor("top".into()), &not_found);
    assert!(
        session
            .screen("1:a", &Display::Monitor("top".into()))
            .is_none()
    );
    session.store("1:a", &monitor).expect("monitor frame");
    session.screens_renamed("1:a", "1:b");
    assert!(session.screen("1:a", &Display::Terminal).is_none());
    assert!(
        session
            .screen("1:b", &Display::Monitor("top".into()))
            .is_some()
    );
    assert_eq!(session.screen_watchers("1:b", &Display::Terminal), 0);
}

#[tokio::test]
async fn a_touch_is_checked_then_sent_with_its_monitor() {
    let session = Session::new(crate::config::Settings::default(), false);
    let hello = trapdesk_proto::protocol::Hello {
        protocol: 1,
        computer_id: 4,
        label: Some("board".into()),
        secret: String::new(),
        serves: vec!["screen".into(), "input".into()],
        client: None,
        host: None,
        max_message: None,
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let link = session.link(&hello, tx);
    // A cell below 1: refused by name before anything is sent.
    let e = session
        .send_touch("board", "top", 0, 2, Origin::Person)
        .await
        .expect_err("cell 0");
    assert!(
        matches!(&e, ScreenError::Input(i) if i.field == "touch.x"),
        "{e:?}"
    );
    // A client without monitor shadows (it does not serve peripherals).
    let e = session
        .send_touch("board", "top", 1, 1, Origin::Person)
        .await
        .expect_err("old client");
    assert_eq!(e.code(), "unknown_type");
    assert!(e.to_string().contains("input on a monitor"), "{e}");
    assert!(rx.try_recv().is_err(), "nothing was sent");
    // With them: one input request, its one touch step and the monitor.
    link.serve(vec!["screen".into(), "input".into(), "peripherals".into()]);
    let s = session.clone();
    let touch =
        tokio::spawn(async move { s.send_touch("board", "top", 3, 2, Origin::Person).await });
    let req = loop {
        match rx.recv().await.expect("a request") {
            crate::session::Outbound::Request(r) => break r,
            _ => continue,
        }
    };
    assert_eq!(req.kind(), Kind::Input);
    assert_eq!(
        req.payload(),
        json!({"steps": [{"touch": {"x": 3, "y": 2}}], "monitor": "top"})
    );
    link.response(trapdesk_proto::protocol::Response {
        id: req.id.clone(),
        ok: true,
        payload: Some(json!({"ok": true, "events": 1})),
        error: None,
    });
    let answer = touch.await.expect("joined").expect("touched");
    assert_eq!(answer["events"], 1);
}

#[test]
fn a_relink_drops_the_frames_of_the_old_connection() {
    let session = Session::new(crate::config::Settings::default(), false);
    let frame = json!({"full": true, "width": 3, "height": 1, "rows": [{"y": 1, "text": "> "}]});
    session.store("1:a", &frame).expect("frame");
    session.store("2:b", &frame).expect("frame");
    session.screens_relinked("1:a");
    assert!(session.screen("1:a", &Display::Terminal).is_none());
    assert!(session.screen("2:b", &Display::Terminal).is_some());
}

//! The console's view of what is attached to a computer, against a real session: the Screen
//! view switched to a monitor (F3), its text, colours and unknown cells, the title naming the
//! display; the watch moving with it; a click on the monitor arriving as a touch; the Device
//! pane of a turtle. The linked computer is played by a task answering the session's requests
//! as the Lua client does (docs/protocol.md "Screen", `ping` with `status`), so every frame and
//! status goes through the session's own path (link, request, store, event, pull).
#![allow(clippy::panic, clippy::unwrap_used)]

use crate::support::{mcp_fake as fake, tui_common, world};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use insta::assert_snapshot;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{
    Event as CtEvent, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::Rect;
use ratatui::style::Color;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use trapdesk::gateway::protocol::{Hello, Response};
use trapdesk::protocol::{Kind, MachineInfo};
use trapdesk::session::screen::Display;
use trapdesk::session::{Event, Origin, Outbound, Session};
use trapdesk::tui::panes::screen::UNKNOWN_STYLE;
use trapdesk::tui::{self, App, AppMsg};
use tui_common::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn hello(id: u64, label: &str) -> Hello {
    Hello {
        protocol: 1,
        computer_id: id,
        label: Some(label.into()),
        secret: "x".into(),
        serves: ["exec-lua", "screen", "input", "peripherals", "turtle"]
            .map(String::from)
            .to_vec(),
        client: None,
        host: None,
        max_message: None,
    }
}

/// The monitors the played computer has attached now (its status names them).
type Monitors = Arc<Mutex<Vec<&'static str>>>;

/// The status a client answers `ping {status: true}` with.
fn status(turtle: bool, monitors: &[&str]) -> Value {
    let mut s = json!({"peripherals": 1 + monitors.len(), "monitors": monitors});
    if turtle {
        s["fuel"] = json!(812);
        s["fuelLimit"] = json!(20000);
        s["selected"] = json!(5);
    }
    json!({"ok": true, "status": s})
}

/// The shadow of monitor `top`, text scale 2, 29x12: a status board the computer drew since
/// its client started (its first rows, in colour), and what it cannot know: the rest of row 4
/// (written before the client started) and rows 6-12 (never drawn since).
fn monitor_frame(name: &str) -> Value {
    let known = |n: usize| format!("{}{}", "1".repeat(n), "0".repeat(29 - n));
    let mut rows = vec![
        json!({"y": 1, "text": " REACTOR 1          ONLINE  ",
               "fg": "00000000000000000000dddddd000", "bg": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}),
        json!({"y": 2, "text": " fuel   82%", "fg": "0000000eeee", "bg": "fffffffffff"}),
        json!({"y": 3, "text": " heat  412 K", "fg": "0000001111111", "bg": "ffffffffffff"}),
        json!({"y": 4, "text": " rods", "fg": "00000", "bg": "fffff", "known": known(5)}),
        json!({"y": 5, "text": ""}),
    ];
    for y in 6..=12 {
        rows.push(json!({"y": y, "text": "", "known": known(0)}));
    }
    json!({"full": true, "seq": 1, "monitor": name, "scale": 2, "width": 29, "height": 12,
           "colour": true, "cursor": {"x": 1, "y": 5, "blink": false}, "rows": rows})
}

/// A CC shell's terminal after boot.
fn terminal_frame() -> Value {
    json!({"full": true, "seq": 1, "width": 51, "height": 19, "colour": true,
           "cursor": {"x": 3, "y": 2, "blink": true},
           "rows": [{"y": 1, "text": "CraftOS 1.9", "fg": "44444444444", "bg": "fffffffffff"},
                    {"y": 2, "text": "> ", "fg": "44", "bg": "ff"}]})
}

/// What the computer was asked, in order: (request type, payload).
type Asked = Arc<Mutex<Vec<(Kind, Value)>>>;

/// Links computer `id` to `session` and answers its requests as the Lua client does, with
/// monitors `top` and `monitor_0` attached.
fn link(session: &Session, id: u64, label: &str, device: &str) -> Asked {
    link_with(
        session,
        id,
        label,
        device,
        Arc::new(Mutex::new(vec!["top", "monitor_0"])),
    )
}

/// [`link`] with the monitors attached given (and changed) by the test.
fn link_with(session: &Session, id: u64, label: &str, device: &str, monitors: Monitors) -> Asked {
    let (tx, mut rx) = mpsc::channel(1024);
    let link = session.link(&hello(id, label), tx);
    let (w, h) = if device == "turtle" {
        (39, 13)
    } else {
        (51, 19)
    };
    link.describe(MachineInfo {
        device: Some(device.into()),
        advanced: Some(true),
        screen_width: Some(w),
        screen_height: Some(h),
        ..MachineInfo::default()
    });
    let asked: Asked = Arc::default();
    let seen = asked.clone();
    let turtle = device == "turtle";
    tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            let Outbound::Request(req) = out else {
                continue;
            };
            let req = req.to_wire();
            seen.lock()
                .unwrap()
                .push((req.request, req.payload.clone()));
            let monitor = req.payload.get("monitor").and_then(Value::as_str);
            if let Some(m) = monitor
                && !monitors.lock().unwrap().contains(&m)
            {
                // As the client answers for a monitor not attached now.
                link.response(Response {
                    id: req.id,
                    ok: false,
                    payload: None,
                    error: Some(trapdesk::protocol::ErrorBody {
                        code: "not_found".into(),
                        message: format!("no monitor {m} on this computer"),
                        output: None,
                    }),
                });
                continue;
            }
            let payload = match req.request {
                Kind::Ping => status(turtle, &monitors.lock().unwrap().clone()),
                Kind::Screen => match monitor {
                    Some(m) => monitor_frame(m),
                    None => terminal_frame(),
                },
                Kind::Input => json!({"ok": true}),
                _ => json!({"ok": true}),
            };
            link.response(Response {
                id: req.id,
                ok: true,
                payload: Some(payload),
                error: None,
            });
        }
    });
    asked
}

/// Notes the session's events and pulls, as the console's loop does, until `done` holds.
async fn settle(
    app: &mut App,
    session: &Session,
    events: &mut broadcast::Receiver<Event>,
    what: &str,
    done: impl Fn(&App) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        app.pull(session);
        if done(app) {
            return;
        }
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(ev)) => app.note(&ev),
            Ok(Err(broadcast::error::RecvError::Lagged(_))) => app.mark_all_dirty(),
            _ => panic!("never came: {what}"),
        }
    }
}

fn has_status(app: &App) -> bool {
    app.selected_status().is_some()
}

fn frame_of(display: Display) -> impl Fn(&App) -> bool {
    move |app| {
        app.screen
            .frame
            .as_ref()
            .is_some_and(|f| Display::from_monitor(f.monitor.as_deref()) == display)
    }
}

/// The round trip the status ping measured varies with the machine's load: fixed for the
/// snapshots (it is drawn from the list at each frame).
fn steady(app: &mut App) {
    for c in &mut app.computers.list {
        c.last_rtt_ms = Some(12);
    }
}

/// The whole frame drawn into a buffer, for the cells' styles.
fn buffer(app: &App, w: u16, h: u16) -> Buffer {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    ratatui::widgets::Widget::render(app, area, &mut buf);
    buf
}

/// Where the first cell of the text `needle` is on screen.
fn find(shown: &str, needle: &str) -> (u16, u16) {
    for (y, line) in shown.lines().enumerate() {
        // The snapshot text quotes each line: the first column is the quote.
        if let Some(at) = line.find(needle) {
            let x = line[..at].chars().count() - 1;
            return (x as u16, y as u16);
        }
    }
    panic!("{needle} not on screen: {shown}")
}

#[tokio::test]
async fn f3_shows_a_monitor_with_its_colours_and_unknown_cells() {
    let session = Session::new(settings(), false);
    let asked = link(&session, 7, "reactor", "computer");
    let mut events = session.subscribe();
    let mut app = app();
    app.size = Rect::new(0, 0, 170, 34);
    settle(&mut app, &session, &mut events, "a status", has_status).await;
    assert_eq!(app.selected.as_deref(), Some("7:reactor"));
    // F9: the terminal first, watched.
    app.on_key(key(KeyCode::F(9)));
    settle(
        &mut app,
        &session,
        &mut events,
        "the terminal",
        frame_of(Display::Terminal),
    )
    .await;
    let shown = screen(&app, 170, 34);
    assert!(
        shown.contains("Screen 7:reactor · terminal · 1 of 3"),
        "{shown}"
    );
    assert!(shown.contains("F3 next · F8 attach · F9 hide"), "{shown}");
    assert!(
        shown.contains("F3 display"),
        "the status bar names the key: {shown}"
    );
    // F3 twice: monitor_0, then top (the monitors in name order).
    app.on_key(key(KeyCode::F(3)));
    settle(
        &mut app,
        &session,
        &mut events,
        "monitor_0",
        frame_of(Display::Monitor("monitor_0".into())),
    )
    .await;
    app.on_key(key(KeyCode::F(3)));
    let top = Display::Monitor("top".into());
    settle(
        &mut app,
        &session,
        &mut events,
        "top",
        frame_of(top.clone()),
    )
    .await;
    assert_eq!(session.screen_watchers("7:reactor", &top), 1);
    steady(&mut app);
    for other in [Display::Terminal, Display::Monitor("monitor_0".into())] {
        assert_eq!(
            session.screen_watchers("7:reactor", &other),
            0,
            "only the display shown is watched: {other}"
        );
    }
    let shown = screen(&app, 170, 34);
    assert!(
        shown.contains("Screen 7:reactor · monitor top 2x 29x12 · 3 of 3"),
        "{shown}"
    );
    assert!(shown.contains("REACTOR 1          ONLINE"), "{shown}");
    assert!(
        shown.contains(" rods░░░░░░░░░░░░░░░░░░░░░░░░"),
        "unknown cells are marked, not blank: {shown}"
    );
    assert_snapshot!("monitor_in_the_screen_view", shown);

    // The cells: the monitor's palette where known, the unknown mark's own style elsewhere.
    let buf = buffer(&app, 170, 34);
    let (x, y) = find(&shown, "ONLINE");
    let online = &buf[(x, y)];
    assert_eq!(online.symbol(), "O");
    assert_eq!(
        online.fg,
        Color::Rgb(0x57, 0xA6, 0x4E),
        "green (d) on blue (b)"
    );
    assert_eq!(online.bg, Color::Rgb(0x33, 0x66, 0xCC));
    let (x, y) = find(&shown, "82%");
    assert_eq!(buf[(x, y)].fg, Color::Rgb(0xCC, 0x4C, 0x4C), "red (e)");
    let (x, y) = find(&shown, "░");
    let unknown = &buf[(x, y)];
    assert_eq!(unknown.symbol(), "░");
    assert_eq!(
        (Some(unknown.fg), Some(unknown.bg), unknown.modifier),
        (
            UNKNOWN_STYLE.fg,
            UNKNOWN_STYLE.bg,
            UNKNOWN_STYLE.add_modifier
        )
    );

    // F3 once more: back to the terminal, and the monitor is no longer streamed.
    app.on_key(key(KeyCode::F(3)));
    settle(
        &mut app,
        &session,
        &mut events,
        "the terminal again",
        frame_of(Display::Terminal),
    )
    .await;
    assert_eq!(session.screen_watchers("7:reactor", &top), 0);
    // The computer hears that nobody watches the monitor any more, and is asked for the
    // terminal's updates again.
    for payload in [
        json!({"watch": false, "monitor": "top"}),
        json!({"watch": true}),
    ] {
        let said = || {
            asked
                .lock()
                .unwrap()
                .iter()
                .filter(|(k, p)| *k == Kind::Screen && *p == payload)
                .count()
        };
        // The terminal's watch was asked once already, when the view opened.
        let want = if payload.get("monitor").is_some() {
            1
        } else {
            2
        };
        crate::support::wait_for(
            Duration::from_secs(5),
            || said() >= want,
            || format!("never asked {payload}: {:?}", asked.lock().unwrap()),
        )
        .await;
    }
}

#[tokio::test]
async fn a_monitor_taken_away_gives_way_to_the_terminal() {
    let session = Session::new(settings(), false);
    let monitors: Monitors = Arc::new(Mutex::new(vec!["top"]));
    let asked = link_with(&session, 7, "reactor", "computer", monitors.clone());
    let mut events = session.subscribe();
    let mut app = app();
    app.size = Rect::new(0, 0, 170, 34);
    settle(&mut app, &session, &mut events, "a status", has_status).await;
    app.on_key(key(KeyCode::F(3)));
    let top = Display::Monitor("top".into());
    settle(
        &mut app,
        &session,
        &mut events,
        "top",
        frame_of(top.clone()),
    )
    .await;
    let pings = || {
        asked
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k == Kind::Ping)
            .count()
    };
    let before = pings();
    // The monitor is broken off; the view opening again asks the status at once.
    monitors.lock().unwrap().clear();
    app.on_key(key(KeyCode::F(9)));
    app.on_key(key(KeyCode::F(9)));
    settle(&mut app, &session, &mut events, "the terminal", |app| {
        app.screen.display == Display::Terminal && frame_of(Display::Terminal)(app)
    })
    .await;
    assert_eq!(pings(), before + 1, "one status asked when the view opened");
    assert_eq!(session.screen_watchers("7:reactor", &top), 0);
    let shown = screen(&app, 170, 34);
    assert!(shown.contains("Screen 7:reactor · terminal "), "{shown}");
    assert!(!shown.contains("1 of"), "no monitor left to count: {shown}");
    assert!(!shown.contains("F3"), "nothing to switch to: {shown}");
    // Pulls within the next seconds ask nothing more (the view asks every 5 s at most).
    for _ in 0..20 {
        app.now_i = tokio::time::Instant::now();
        app.pull(&session);
    }
    assert_eq!(pings(), before + 1);
}

#[tokio::test]
async fn a_monitor_found_gone_says_so_and_the_status_is_asked_again() {
    let session = Session::new(settings(), false);
    let monitors: Monitors = Arc::new(Mutex::new(vec!["top"]));
    let asked = link_with(&session, 7, "reactor", "computer", monitors.clone());
    let mut events = session.subscribe();
    let mut app = app();
    app.size = Rect::new(0, 0, 170, 34);
    settle(&mut app, &session, &mut events, "a status", has_status).await;
    app.on_key(key(KeyCode::F(3)));
    let top = Display::Monitor("top".into());
    settle(
        &mut app,
        &session,
        &mut events,
        "top",
        frame_of(top.clone()),
    )
    .await;
    let pings = || {
        asked
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k == Kind::Ping)
            .count()
    };
    let before = pings();
    // The monitor is broken off; reading it, the session hears it is not attached.
    monitors.lock().unwrap().clear();
    let err = session
        .read_screen("7:reactor", &top, Origin::Person)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "not_found");
    // Later than a second after the last status: the view asks again at once.
    app.now_i += Duration::from_secs(2);
    settle(
        &mut app,
        &session,
        &mut events,
        "the frame dropped",
        |app| app.screen.frame.is_none(),
    )
    .await;
    let shown = screen(&app, 170, 34);
    assert!(
        shown.contains("monitor top is not attached to this computer now"),
        "{shown}"
    );
    settle(&mut app, &session, &mut events, "the terminal", |app| {
        app.screen.display == Display::Terminal && frame_of(Display::Terminal)(app)
    })
    .await;
    assert_eq!(pings(), before + 1, "the status asked once");
}

#[tokio::test]
async fn a_click_on_a_monitor_touches_that_cell() {
    let session = Session::new(settings(), false);
    let asked = link(&session, 7, "reactor", "computer");
    let mut events = session.subscribe();
    let mut app = app();
    app.size = Rect::new(0, 0, 170, 34);
    settle(&mut app, &session, &mut events, "a status", has_status).await;
    app.on_key(key(KeyCode::F(3)));
    app.on_key(key(KeyCode::F(3)));
    assert!(app.screen.on, "F3 opens the view");
    settle(
        &mut app,
        &session,
        &mut events,
        "top",
        frame_of(Display::Monitor("top".into())),
    )
    .await;
    let shown = screen(&app, 170, 34);
    // The `f` of "fuel" is cell (2, 2) of the monitor.
    let (x, y) = find(&shown, "fuel   82%");
    let (msg_tx, mut msg_rx) = mpsc::unbounded_channel::<AppMsg>();
    let click = MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    };
    tui::handle(
        &mut app,
        &session,
        &msg_tx,
        tui::Event::Crossterm(CtEvent::Mouse(click)),
    );
    let notice = tokio::time::timeout(Duration::from_secs(5), msg_rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        notice,
        AppMsg::Notice {
            text: "touched monitor top of 7:reactor at 2,2".into(),
            error: false
        }
    );
    let inputs: Vec<Value> = asked
        .lock()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k == Kind::Input)
        .map(|(_, p)| p.clone())
        .collect();
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    assert_eq!(inputs[0]["monitor"], "top");
    assert_eq!(inputs[0]["steps"], json!([{"touch": {"x": 2, "y": 2}}]));
    // A click on the terminal is no touch.
    app.on_key(key(KeyCode::F(3)));
    settle(
        &mut app,
        &session,
        &mut events,
        "the terminal",
        frame_of(Display::Terminal),
    )
    .await;
    let shown = screen(&app, 170, 34);
    let (x, y) = find(&shown, "CraftOS");
    let click = MouseEvent {
        column: x,
        row: y,
        ..click
    };
    assert!(app.on_terminal(CtEvent::Mouse(click)).is_empty());
}

#[tokio::test]
async fn f3_without_monitors_says_so_and_the_view_keeps_the_terminal() {
    let mut app = app();
    let mut list = three_computers();
    list[0].status = Some(trapdesk::session::DeviceStatus {
        peripherals: 1,
        ..Default::default()
    });
    app.set_computers(list);
    app.on_key(key(KeyCode::F(3)));
    assert!(!app.screen.on);
    assert_eq!(app.screen.display, Display::Terminal);
    let (text, error) = app.notice.clone().unwrap();
    assert!(
        error && text.contains("7:miner has no monitor attached"),
        "{text}"
    );
    // A computer whose status has not come: nothing to switch to yet, and why.
    app.select_index(2);
    app.on_key(key(KeyCode::F(3)));
    let (text, _) = app.notice.clone().unwrap();
    assert!(text.contains("no monitor known on 12:farm yet"), "{text}");
}

#[tokio::test]
async fn the_device_pane_of_a_turtle() {
    let session = Session::new(settings(), false);
    link(&session, 4, "digger", "turtle");
    let mut events = session.subscribe();
    let mut app = app();
    settle(&mut app, &session, &mut events, "a status", has_status).await;
    steady(&mut app);
    let shown = screen(&app, 120, 32);
    for words in [
        "Device 4:digger",
        "turtle · advanced · 39x13",
        "3 peripherals",
        "monitors monitor_0, top",
        "fuel 812/20000 · slot 5",
    ] {
        assert!(shown.contains(words), "{words}: {shown}");
    }
    assert_snapshot!("device_pane_of_a_turtle", shown);
}

/// The same on an emulated computer running the real client: a monitor attached with
/// `periphemu.create` and drawn on through `peripheral.wrap` shows in the view with what the
/// computer drew and the rest unknown, and a click arrives as `monitor_touch` at that cell.
/// Emulator only: CraftOS-PC's headless mode creates no monitors ("Monitors are not available
/// in this mode").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_of_an_emulated_computer_in_the_view() {
    let w = world::World::boot(world::Runtime::Emulator, &["board"]).await;
    w.wait_serves("board", &["screen", "input"]).await;
    let id = w.trapos("board");
    // The client keeps monitor shadows and serves them: a client that did not fails here
    // rather than pass the test unrun.
    w.wait_serves("board", &["peripherals"]).await;
    let drawn = w
        .call(
            "exec-lua",
            json!({"traposId": id, "code": r#"
                assert(periphemu.create("top", "monitor"))
                local mon = peripheral.wrap("top")
                mon.setCursorPos(2, 1)
                mon.setTextColour(colours.lime)
                mon.write("ONLINE")
                mon.setCursorPos(2, 2)
                mon.setTextColour(colours.white)
                mon.write("fuel 82%")
                return mon.getSize()"#}),
        )
        .await;
    assert_ne!(drawn.is_error, Some(true), "{}", fake::text(&drawn));
    let session = w.session();
    let mut events = session.subscribe();
    let mut app = app();
    app.size = Rect::new(0, 0, 170, 40);
    settle(
        &mut app,
        session,
        &mut events,
        "a status with the monitor",
        |app| app.selected_status().is_some_and(|s| s.monitors == ["top"]),
    )
    .await;
    app.on_key(key(KeyCode::F(3)));
    let top = Display::Monitor("top".into());
    settle(
        &mut app,
        session,
        &mut events,
        "the monitor's frame",
        |app| {
            frame_of(top.clone())(app)
                && app
                    .screen
                    .frame
                    .as_ref()
                    .is_some_and(|f| f.text_rows().iter().any(|r| r.contains("fuel 82%")))
        },
    )
    .await;
    let shown = screen(&app, 170, 40);
    assert!(
        shown.contains(&format!("Screen {id} · monitor top 1x")),
        "{shown}"
    );
    assert!(shown.contains("· 2 of 2"), "{shown}");
    assert!(
        shown.contains("░ONLINE░"),
        "never drawn around the text: unknown: {shown}"
    );
    assert!(shown.contains("░fuel 82%░"), "{shown}");
    let buf = buffer(&app, 170, 40);
    let (x, y) = find(&shown, "ONLINE");
    assert_eq!(buf[(x, y)].fg, Color::Rgb(0x7F, 0xCC, 0x19), "lime");

    // A click on the `f` of "fuel" (cell 2, 2) is a `monitor_touch` there.
    let (x, y) = find(&shown, "fuel 82%");
    let waiting = w.call(
        "exec-lua",
        json!({"traposId": id, "code": crate::support::lua_mark("in-pull") + r#"
            local e = { os.pullEvent("monitor_touch") }
            return e[2] .. " " .. e[3] .. "," .. e[4]"#}),
    );
    let click = async {
        // The chunk is waiting for the event before the touch is queued.
        crate::support::wait_mark(&w.files("board"), "in-pull").await;
        let (msg_tx, mut msg_rx) = mpsc::unbounded_channel::<AppMsg>();
        let click = MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: x,
            row: y,
            modifiers: KeyModifiers::NONE,
        };
        tui::handle(
            &mut app,
            session,
            &msg_tx,
            tui::Event::Crossterm(CtEvent::Mouse(click)),
        );
        tokio::time::timeout(Duration::from_secs(10), msg_rx.recv())
            .await
            .unwrap()
            .unwrap()
    };
    let (answer, notice) = tokio::join!(waiting, click);
    assert_eq!(
        notice,
        AppMsg::Notice {
            text: format!("touched monitor top of {id} at 2,2"),
            error: false
        }
    );
    let d = fake::data(&answer);
    assert_eq!(d["returns"][0]["value"], "top 2,2", "{d}");
}

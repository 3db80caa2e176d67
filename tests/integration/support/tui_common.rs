//! Shared helpers of the console tests: an app with no terminal and no disk, fixed clocks, and
//! made-up computers, requests and output.
#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use tokio::sync::mpsc;
use trapdesk::config::Settings;
use trapdesk::gateway::protocol::{Hello, Response};
use trapdesk::session::{
    ComputerInfo, Origin, Outbound, OutputEntry, OutputItem, PendingInfo, Session, StartEntry,
    Status, Stream, ToolCall,
};
use trapdesk::tui::App;
use trapdesk::tui::theme::Theme;

/// 12:00:00 UTC on some day: every time on screen is relative to this.
pub fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000 - 1_700_000_000 % 86_400 + 12 * 3600)
}

pub fn settings() -> Settings {
    Settings {
        secret: "s3cret-words".into(),
        secret_source: trapdesk::config::SecretSource::Stored("/data/trapdesk/secret".into()),
        data_dir: "/nonexistent".into(),
        ..Settings::default()
    }
}

/// An app that persists nothing, with the clocks at [`t0`].
pub fn app() -> App {
    let mut app = App::new(settings(), Theme::plain(), false);
    app.now = t0();
    app.now_i = tokio::time::Instant::now();
    app
}

pub fn computer(id: u64, label: &str) -> ComputerInfo {
    ComputerInfo {
        trapos_id: format!("{id}:{label}"),
        id,
        label: Some(label.to_owned()).filter(|l| !l.is_empty()),
        online: true,
        connected_at: t0(),
        disconnected_at: None,
        serves: vec!["exec-lua".into(), "run-file".into(), "list-files".into()],
        running: 0,
        queued: 0,
        detached: 0,
        last_rtt_ms: Some(12),
        client: Some("trapos 1.0".into()),
        host: Some("CC: Tweaked".into()),
        max_message: 131_072,
        machine: Default::default(),
        status: None,
    }
}

/// Three computers: idle, busy, and one that went offline 90 s ago.
pub fn three_computers() -> Vec<ComputerInfo> {
    let a = computer(7, "miner");
    let mut b = computer(12, "farm");
    b.running = 2;
    b.last_rtt_ms = Some(48);
    let mut c = computer(3, "");
    c.online = false;
    c.disconnected_at = Some(t0() - Duration::from_secs(90));
    c.last_rtt_ms = None;
    vec![a, b, c]
}

pub fn start(seq: u64, id: &str, origin: Origin, kind: &str, summary: &str) -> OutputItem {
    OutputItem {
        seq,
        at_ms: 0,
        entry: OutputEntry::Start(Box::new(StartEntry {
            request_id: id.into(),
            origin,
            kind: kind.parse().expect("a request kind"),
            summary: summary.into(),
            at: t0() + Duration::from_secs(seq),
        })),
    }
}

pub fn line(seq: u64, id: &str, stream: Stream, text: &str) -> OutputItem {
    OutputItem {
        seq,
        at_ms: 0,
        entry: OutputEntry::Line {
            request_id: Some(id.into()),
            stream,
            text: text.into(),
            complete: true,
        },
    }
}

pub fn end(seq: u64, id: &str, status: Status, summary: &str, ms: u64) -> OutputItem {
    OutputItem {
        seq,
        at_ms: 0,
        entry: OutputEntry::End {
            request_id: id.into(),
            status,
            summary: summary.into(),
            duration_ms: ms,
        },
    }
}

/// Output with every way a request can end.
pub fn every_outcome() -> Vec<OutputItem> {
    let claude = || Origin::Agent("claude-code".into());
    vec![
        start(
            1,
            "h-1",
            Origin::Person,
            "exec-lua",
            "print(\"hello\") return 3, \"x\"",
        ),
        line(2, "h-1", Stream::Out, "hello"),
        end(3, "h-1", Status::Ok, "3, \"x\", {a=1}", 12),
        start(4, "h-2", claude(), "exec-lua", "error(\"boom\")"),
        line(5, "h-2", Stream::Err, "warning: fuel low"),
        end(6, "h-2", Status::Error, "exec:1: boom", 3),
        start(
            7,
            "h-3",
            Origin::Person,
            "run-file",
            "programs/dig.lua 3 \"deep shaft\"",
        ),
        line(8, "h-3", Stream::Out, "digging..."),
        end(
            9,
            "h-3",
            Status::Timeout,
            "timed out after 30000 ms",
            30_000,
        ),
        start(
            10,
            "h-4",
            claude(),
            "exec-lua",
            "while true do sleep(1) end",
        ),
        end(11, "h-4", Status::Cancelled, "cancelled", 1_500),
        start(12, "h-5", Origin::Person, "exec-lua", "turtle.forward()"),
        end(
            13,
            "h-5",
            Status::Disconnected,
            "the computer disconnected before answering",
            800,
        ),
    ]
}

pub fn pending(app: &App, id: &str, target: &str, origin: Origin, elapsed: u64) -> PendingInfo {
    let started = app.now_i - Duration::from_secs(elapsed);
    PendingInfo {
        request_id: id.into(),
        trapos_id: target.into(),
        origin,
        kind: trapdesk::protocol::Kind::ExecLua,
        summary: "sleep(60)".into(),
        started_at: t0() - Duration::from_secs(elapsed),
        started,
        deadline: started + Duration::from_secs(30),
        timeout_ms: 30_000,
        no_deadline: false,
        sent: true,
        cancel_requested: false,
        awaiting_approval: false,
    }
}

pub fn tool_call(id: u64, status: Status) -> ToolCall {
    ToolCall {
        call_id: id,
        client: "claude-code".into(),
        tool: "exec-lua".into(),
        target: Some("7:miner".into()),
        args: json!({"computer": "7:miner", "code": "return turtle.getFuelLevel()"}),
        started_at: t0(),
        status,
        summary: "5000".into(),
        result: (status != Status::Running).then(|| {
            json!({"ok": true, "returns": [{"type":"number","value":5000}]})
                .to_string()
                .into()
        }),
        duration_ms: (status != Status::Running).then_some(41),
        request_id: Some("h-9".into()),
    }
}

/// The screen as text.
pub fn screen(app: &App, w: u16, h: u16) -> String {
    let backend = TestBackend::new(w, h);
    let mut term = match Terminal::new(backend) {
        Ok(t) => t,
        Err(e) => return format!("no terminal: {e}"),
    };
    if let Err(e) = term.draw(|f| app.draw(f)) {
        return format!("draw failed: {e}");
    }
    format!("{}", term.backend())
}

/// A computer's `hello` that serves `serves`.
pub fn hello_serving(id: u64, label: &str, serves: &[&str]) -> Hello {
    Hello {
        protocol: 1,
        computer_id: id,
        label: Some(label.into()),
        secret: "x".into(),
        serves: serves.iter().map(|s| (*s).to_owned()).collect(),
        client: None,
        host: None,
        max_message: None,
    }
}

/// Links computer 7, `miner`, serving `exec-lua`, which stops a cancelled request and says so,
/// as trapos does.
pub fn link_answering_cancels(session: &Session) {
    let (tx, mut rx) = mpsc::channel(64);
    let link = session.link(&hello_serving(7, "miner", &["exec-lua"]), tx);
    tokio::spawn(async move {
        while let Some(o) = rx.recv().await {
            if let Outbound::Cancel { id } = o {
                link.response(Response {
                    id,
                    ok: false,
                    payload: None,
                    error: Some(trapdesk::protocol::ErrorBody {
                        code: "cancelled".into(),
                        message: "cancelled".into(),
                        output: None,
                    }),
                });
            }
        }
    });
}

/// Links computer 7, `miner`, which answers every request with `payload`, runs `code` there as
/// the person, and returns the console's screen (100x30) once the answer is in.
pub async fn screen_after_exec(
    session: &Session,
    payload: serde_json::Value,
    code: &str,
) -> String {
    let (tx, mut rx) = mpsc::channel(64);
    let link = session.link(&hello_serving(7, "miner", &["exec-lua"]), tx);
    tokio::spawn(async move {
        while let Some(Outbound::Request(req)) = rx.recv().await {
            link.response(Response {
                id: req.id,
                ok: true,
                payload: Some(payload.clone()),
                error: None,
            });
        }
    });
    let spec = trapdesk::session::RequestSpec::new(
        trapdesk::protocol::Kind::ExecLua,
        json!({"code": code}),
    );
    let _ = session.request("7:miner", spec, Origin::Person).await;
    let mut app = app();
    app.pull(session);
    screen(&app, 100, 30)
}

//! Tries the console in a real terminal without the gateway: two fake computers that answer
//! `exec-lua` by echoing the code and `list-files` with a few names.
//!
//! `cargo run --example tui_fake` (Ctrl-C or q to quit).

use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use trapdesk::config::Settings;
use trapdesk::gateway::protocol::{Hello, Response};
use trapdesk::session::{Outbound, Session, Stream};

fn fake(session: &Session, id: u64, label: &str) {
    let hello = Hello {
        protocol: 1,
        computer_id: id,
        label: Some(label.into()),
        secret: String::new(),
        serves: vec!["exec-lua".into(), "run-file".into(), "list-files".into()],
        client: Some("fake".into()),
        host: Some("tui_fake".into()),
        max_message: None,
    };
    let (tx, mut rx) = mpsc::channel(1024);
    let link = session.link(&hello, tx);
    tokio::spawn(async move {
        link.rtt(7 + id);
        while let Some(msg) = rx.recv().await {
            let Outbound::Request(req) = msg else {
                continue;
            };
            let req = req.to_wire();
            let payload = match req.request.as_str() {
                "list-files" => json!({"ok": true, "entries": [
                    {"name": "programs", "dir": true, "size": 0},
                    {"name": "startup.lua", "dir": false, "size": 120},
                    {"name": "dig.lua", "dir": false, "size": 900}]}),
                _ => {
                    let code = req
                        .payload
                        .get("code")
                        .and_then(|c| c.as_str())
                        .unwrap_or("");
                    if code.contains("sleep") {
                        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                    }
                    for l in code.lines() {
                        link.output(&req.id, Stream::Out, &format!("ran: {l}\n"));
                    }
                    if code.contains("error") {
                        link.output(&req.id, Stream::Err, "something went wrong\n");
                        json!({"ok": false, "error": "exec:1: boom"})
                    } else {
                        json!({"ok": true, "returns": [{"type": "number", "value": code.len()}], "n": 1})
                    }
                }
            };
            link.response(Response {
                id: req.id,
                ok: true,
                payload: Some(payload),
                error: None,
            });
        }
    });
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join("trapdesk-tui-fake");
    std::fs::create_dir_all(&dir)?;
    let settings = Settings {
        secret: "demo-secret".into(),
        data_dir: dir,
        ..Settings::default()
    };
    let session = Session::new(settings.clone(), false);
    let delay = std::env::args().nth(1).is_some();
    if !delay {
        fake(&session, 7, "miner");
        fake(&session, 12, "farm");
    } else {
        let s = session.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            fake(&s, 7, "miner");
        });
    }
    trapdesk::tui::run(session, settings, CancellationToken::new()).await?;
    Ok(())
}

//! The link loop over channels instead of a socket: what a computer sends goes in one
//! channel, what the gateway sends comes out of the other, and the session is real.
//!
//! This file is the far end (a [`Computer`] on channels) and its helpers; the tests are in
//! files by what they are about.

use std::sync::Arc;

use axum::extract::ws::Message as WsMessage;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::super::{GatewayState, door, stats};
use trapdesk_core::config::Settings;
use trapdesk_core::session::{Origin, RequestSpec, Session};

mod binary;
mod heartbeat;
mod identity;
mod lost;
mod requests;

const SECRET: &str = "test-secret-7kq2m9xw";

/// A computer at the far end of a channel pair, and the link task serving it.
struct Computer {
    to_gateway: mpsc::UnboundedSender<Result<WsMessage, axum::Error>>,
    from_gateway: mpsc::UnboundedReceiver<WsMessage>,
    session: Session,
    link: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Computer {
    fn start(heartbeat_ms: u64) -> Computer {
        let dir = tempfile::tempdir().expect("a temp dir");
        let settings = Settings {
            secret: SECRET.into(),
            data_dir: dir.path().to_owned(),
            heartbeat: std::time::Duration::from_millis(heartbeat_ms),
            ..Settings::default()
        };
        let session = Session::new(settings.clone(), false);
        let state = GatewayState {
            secrets: Arc::new(trapdesk_core::trust::secrets::Secrets::new(&settings)),
            session: session.clone(),
            settings: Arc::new(settings),
            shutdown: tokio_util::sync::CancellationToken::new(),
            stats: Arc::new(stats::LinkStats::default()),
            waiting: Arc::new(door::Waiting::default()),
        };
        let (to_gateway, rx) = mpsc::unbounded_channel();
        let (tx, from_gateway) = mpsc::unbounded_channel();
        let sink = Box::pin(futures_util::sink::unfold(
            tx,
            |tx, m: WsMessage| async move {
                tx.send(m).map_err(axum::Error::new)?;
                Ok::<_, axum::Error>(tx)
            },
        ));
        let stream = Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|m| (m, rx))
        }));
        let link = tokio::spawn(super::linked(sink, stream, state, None));
        Computer {
            to_gateway,
            from_gateway,
            session,
            link,
            _dir: dir,
        }
    }

    fn send(&self, v: Value) {
        let text = v.to_string();
        self.to_gateway
            .send(Ok(WsMessage::Text(text.into())))
            .expect("the link reads");
    }

    /// The next text frame as JSON, or the close frame's code.
    async fn next(&mut self) -> Result<Value, Option<u16>> {
        loop {
            match self.from_gateway.recv().await {
                Some(WsMessage::Text(t)) => {
                    return Ok(serde_json::from_str(t.as_str()).expect("JSON from the gateway"));
                }
                Some(WsMessage::Close(f)) => return Err(f.map(|f| f.code)),
                Some(_) => continue,
                None => return Err(None),
            }
        }
    }

    /// The next message of `type`, skipping heartbeats.
    async fn next_of(&mut self, kind: &str) -> Value {
        loop {
            let v = self.next().await.expect("a message, not a close");
            if v["type"] == kind {
                return v;
            }
        }
    }

    fn hello(&self, secret: &str) {
        self.send(json!({"type": "hello", "protocol": 1, "computer_id": 7,
            "label": "miner", "secret": secret}));
    }
}
/// Starts `exec-lua` of `code` on `who` in a task of its own.
fn exec(
    session: &Session,
    who: &'static str,
    code: String,
) -> tokio::task::JoinHandle<Result<Value, trapdesk_core::session::RequestError>> {
    let session = session.clone();
    tokio::spawn(async move {
        session
            .request(
                who,
                RequestSpec::new(
                    trapdesk_proto::protocol::Kind::ExecLua,
                    json!({"code": code}),
                ),
                Origin::Person,
            )
            .await
    })
}

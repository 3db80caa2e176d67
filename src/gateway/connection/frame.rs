//! One frame from the computer, handled: text or binary, whole or in fragments, and the
//! message it carries acted on (a response, output, a label, a pong, ...).

use axum::extract::ws::Message as WsMessage;
use serde_json::{Value, json};

use super::super::GatewayState;
use super::super::binary::{self, Blobs};
use super::super::fragment::Reassembler;
use super::super::handshake::{Enrolling, blocking};
use super::super::protocol::{Message, Response};
use super::super::sender::Sender;
use super::super::socket::SocketTx;
use super::receipts::Receipts;
use super::{Quit, now_ms};
use trapdesk_core::session::{Link, Stream};

/// The smallest frame limit a computer may set with `limit`, as for `hello`'s `max_message`
/// (handshake.rs): a fragment's envelope and some data fit in every frame.
const MIN_LIMIT: usize = 256;

/// What handling one frame from the computer needs of the linked loop.
pub(super) struct Frame<'a, Tx> {
    pub(super) out: &'a mut Sender<Tx>,
    pub(super) link: &'a mut Link,
    pub(super) reassembler: &'a mut Reassembler,
    pub(super) blobs: &'a mut Blobs,
    pub(super) receipts: &'a mut Receipts,
    pub(super) awaiting_pong: &'a mut Option<u64>,
    pub(super) missed: &'a mut u32,
    pub(super) max: usize,
    pub(super) enrolling: &'a mut Enrolling,
    pub(super) state: &'a GatewayState,
}

impl<Tx: SocketTx> Frame<'_, Tx> {
    /// Acts on one frame (or the socket's end); `Some` ends the link.
    pub(super) async fn take(
        &mut self,
        frame: Option<Result<WsMessage, axum::Error>>,
    ) -> Option<Quit> {
        let max = self.max;
        let text = match frame {
            None => return Some(Quit::Closed("connection closed".into())),
            Some(Err(e)) => {
                let msg = e.to_string();
                // tungstenite reports a frame over max_message_size as a capacity error.
                if msg.contains("too long")
                    || msg.contains("Space limit")
                    || msg.contains("Capacity")
                {
                    return Some(Quit::TooBig(max + 1));
                }
                return Some(Quit::Closed(format!("socket error: {msg}")));
            }
            Some(Ok(WsMessage::Close(frame))) => {
                let why = frame
                    .map(|f| format!("closed by computer ({} {})", f.code, f.reason))
                    .unwrap_or_else(|| "closed by computer".into());
                return Some(Quit::Closed(why));
            }
            Some(Ok(WsMessage::Binary(b))) if self.out.binary => {
                return self.take_binary(&b).await;
            }
            Some(Ok(WsMessage::Binary(_))) => {
                self.out
                    .error(
                        "bad_message",
                        "binary frames are not part of the protocol",
                        None,
                    )
                    .await;
                return None;
            }
            Some(Ok(WsMessage::Text(t))) => t,
            Some(Ok(_)) => return None,
        };
        if text.len() > max {
            return Some(Quit::TooBig(text.len()));
        }
        match Message::decode(&text) {
            Ok(Message::Fragment {
                mid,
                seq,
                last,
                data,
            }) => match self.reassembler.push(&mid, seq, last, &data) {
                Ok(Some(whole)) => match Message::decode(&whole) {
                    Ok(Message::Fragment { .. }) => {
                        self.out
                            .error("bad_message", "a fragment may not contain a fragment", None)
                            .await;
                    }
                    Ok(msg) => return self.handle(msg).await,
                    Err(e) => {
                        self.out
                            .error(
                                "bad_message",
                                format!("reassembled message {mid:?}: {e}"),
                                None,
                            )
                            .await;
                    }
                },
                Ok(None) => {}
                Err(e) => self.out.error("bad_message", e.to_string(), None).await,
            },
            Ok(msg) => return self.handle(msg).await,
            Err(e) => self.out.error("bad_message", e, None).await,
        }
        None
    }

    /// A binary frame from a computer that said it sends them: a piece of an answer's content,
    /// held until the answer comes, or output.
    async fn take_binary(&mut self, frame: &[u8]) -> Option<Quit> {
        if frame.len() > self.max {
            return Some(Quit::TooBig(frame.len()));
        }
        match binary::parse(frame) {
            Ok(binary::Incoming::Blob {
                id,
                part,
                seq,
                body,
            }) => {
                if let Err(e) = self.blobs.push(&id, part, seq, body) {
                    self.out.error("bad_message", e, Some(id)).await;
                }
                None
            }
            Ok(binary::Incoming::Output(msg)) => self.handle(msg).await,
            Err(e) => {
                self.out.error("bad_message", e, None).await;
                None
            }
        }
    }

    async fn handle(&mut self, mut msg: Message) -> Option<Quit> {
        if let Message::ComputerResponse(r) = &mut msg {
            self.blobs.attach(r);
        }
        match &msg {
            Message::Enrolled => {
                self.enrolled().await;
                return None;
            }
            Message::Received { id } => {
                self.receipts.done(id);
                return None;
            }
            Message::Label { label } => return self.relabel(label.clone()).await,
            Message::ComputerResponse(r) => self.receipts.done(&r.id),
            // Only a client that sends receipts sends `limit`.
            Message::Limit { .. } => self.receipts.held = true,
            _ => {}
        }
        handle(
            msg,
            self.out,
            &mut *self.link,
            self.awaiting_pong,
            self.missed,
        )
        .await
    }

    /// The computer's label changed: checked against the label bindings (`Link::relabel`); one
    /// that takes a label bound to a secret this computer did not show ends the link with
    /// `auth_failed`, as its next hello would.
    async fn relabel(&mut self, label: Option<String>) -> Option<Quit> {
        match self.link.relabel(label, &self.state.secrets) {
            trapdesk_core::session::Relabelled::Renamed(now) => {
                tracing::debug!(computer = %now, "relabelled");
                None
            }
            trapdesk_core::session::Relabelled::Unchanged => None,
            trapdesk_core::session::Relabelled::Refused(r) => {
                tracing::warn!(computer = %self.link.trapos_id(), "relabel refused: {}", r.message());
                self.out.error("auth_failed", r.message(), None).await;
                self.out
                    .close(super::super::protocol::CLOSE_AUTH_FAILED, "auth_failed")
                    .await;
                Some(Quit::Closed(format!("relabel refused: {}", r.why())))
            }
        }
    }

    /// The computer stored the secret this connection's `welcome` gave it: its binding is firm.
    /// An `enrolled` from a connection that enrolled nothing changes nothing.
    async fn enrolled(&mut self) {
        let Some(b) = self.enrolling.take() else {
            tracing::debug!(computer = %self.link.trapos_id(), "enrolled without an enrolment");
            return;
        };
        let (id, hash) = *b;
        let dir = self.state.secrets.dir().to_owned();
        match blocking(move || trapdesk_core::trust::secrets::confirm(&dir, id, &hash)).await {
            Ok(true) => {
                tracing::info!(computer = %self.link.trapos_id(), "enrolment firm: only its own secret links it now");
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(computer = %self.link.trapos_id(), "enrolment not made firm: {e}")
            }
        }
    }
}

/// Acts on one whole message from a linked computer.
async fn handle(
    msg: Message,
    out: &mut Sender<impl SocketTx>,
    link: &mut Link,
    awaiting_pong: &mut Option<u64>,
    missed: &mut u32,
) -> Option<Quit> {
    match msg {
        Message::ComputerResponse(r) => link.response(r),
        Message::Output { id, stream, text } => link.output(&id, Stream::parse(&stream), &text),
        Message::Serve { types } => link.serve(types),
        Message::Screen(update) => link.screen(Value::Object(update.body)),
        Message::Limit { max_message } => {
            // The computer's socket takes no larger frame, either way (its rule's
            // max_websocket_message): a frame above it would close the socket there. The
            // floor keeps a fragment's envelope and some data in every frame.
            out.limit = (max_message as usize).max(MIN_LIMIT);
            link.max_message(out.limit as u64);
        }
        // Taken by `Frame::relabel`, which holds the secrets.
        Message::Label { .. } => {}
        Message::Pong { t } => {
            // Any pong proves the computer's Lua side is alive; only ours gives a round trip.
            *missed = 0;
            if let Some(sent) = *awaiting_pong
                && t.as_f64() == Some(sent as f64)
            {
                link.rtt(now_ms().saturating_sub(sent));
            }
            *awaiting_pong = None;
        }
        Message::Ping { t } => {
            if let Err(e) = out.send(&Message::Pong { t }).await {
                return Some(Quit::SendFailed(e.to_string()));
            }
        }
        Message::ComputerRequest(req) => {
            let resp = answer(req);
            if let Err(e) = out.send(&Message::GatewayResponse(resp)).await {
                return Some(Quit::SendFailed(e.to_string()));
            }
        }
        Message::Error { code, message, id } => {
            let message = link.translate(&message);
            tracing::warn!(computer = %link.trapos_id(), %code, ?id, "computer reported: {message}");
        }
        other => {
            let kind = serde_json::to_value(&other)
                .ok()
                .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
            out.error(
                "bad_message",
                format!("a computer does not send {kind} messages"),
                None,
            )
            .await;
        }
    }
    None
}

/// The host's answer to a computer's request: it serves only ping.
fn answer(req: super::super::protocol::ComputerRequest) -> Response {
    // The host serves only ping. A name no Kind has gets the same answer as a kind the
    // host does not serve: an unknown_type with the request's id, never a failed frame.
    if req.kind() == Ok(super::super::protocol::Kind::Ping) {
        Response {
            id: req.id,
            ok: true,
            payload: Some(json!({"pong": true, "epoch_ms": now_ms()})),
            error: None,
        }
    } else {
        Response {
            id: req.id,
            ok: false,
            payload: None,
            error: Some(super::super::protocol::ErrorBody {
                code: "unknown_type".into(),
                message: format!("the host serves no request type {:?}", req.request),
                output: None,
            }),
        }
    }
}

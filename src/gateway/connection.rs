//! One linked computer's task: the handshake ([`super::handshake`]), then one `select!` loop
//! over the socket, the session's outbound queue, the heartbeat and shutdown, then the close.
//! The socket belongs to this task alone; it is any pair of [`SocketTx`]/[`SocketRx`] halves,
//! so the loop is unit-tested over channels (below).

use std::collections::VecDeque;
use std::future::Future;
use std::time::{Duration, SystemTime};

use axum::extract::ws::{Message as WsMessage, WebSocket};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::GatewayState;
use super::binary::{self, Blobs};
use super::door::Peer;
use super::fragment::Reassembler;
use super::handshake::{Enrolling, blocking, start};
use super::protocol::{
    CLOSE_GOING_AWAY, CLOSE_HEARTBEAT, CLOSE_TOO_BIG, Message, RECEIPT_DEADLINE_MS, Response,
};
use super::sender::Sender;
use super::socket::{SocketRx, SocketTx};
use trapdesk_core::session::{Link, Outbound, Stream};

/// The smallest frame limit a computer may set with `limit`, as for `hello`'s `max_message`
/// (handshake.rs): a fragment's envelope and some data fit in every frame.
const MIN_LIMIT: usize = 256;

/// Heartbeats that may go unanswered before the computer counts as gone.
const MAX_MISSED: u32 = 3;

/// Why a connection ended, recorded in the session log.
#[derive(Debug)]
enum Quit {
    Closed(String),
    Replaced,
    Heartbeat,
    TooBig(usize),
    Shutdown,
    SendFailed(String),
}

impl Quit {
    fn reason(&self) -> String {
        match self {
            Quit::Closed(r) => r.clone(),
            Quit::Replaced => "replaced by a new connection".into(),
            Quit::Heartbeat => format!("{MAX_MISSED} heartbeats missed"),
            Quit::TooBig(n) => format!("frame of {n} bytes over the limit"),
            Quit::Shutdown => "host shutting down".into(),
            Quit::SendFailed(e) => format!("send failed: {e}"),
        }
    }
}

/// Runs one computer's connection to its end.
///
/// Not an `async fn`: its state would keep a slot for the whole `socket` (368 bytes) for the
/// link's life although the socket is split at once. What every idle link's task holds is kept
/// small on purpose (BENCHMARKS.md, "Fleets and the floor"): the handshake, each frame's handling and each
/// send run in boxes of their own, so the task is sized for the idle loop, not for its largest
/// moment.
pub fn run(
    socket: WebSocket,
    state: GatewayState,
    peer: Option<Peer>,
) -> impl Future<Output = ()> + Send {
    let (tx, rx) = socket.split();
    linked(tx, rx, state, peer)
}

/// The whole life of a link over any socket halves: the handshake, the loop, the close.
pub(super) async fn linked(
    tx: impl SocketTx,
    mut rx: impl SocketRx,
    state: GatewayState,
    peer: Option<Peer>,
) {
    let mut out = Sender::new(
        tx,
        state.settings.max_message as usize,
        state.settings.heartbeat * MAX_MISSED,
    );
    let Some((mut link, orx, mut enrolling)) =
        Box::pin(start(&mut rx, &mut out, &state, peer)).await
    else {
        return;
    };
    // DEBUG, with a periodic INFO summary (stats.rs): a line each would flood the log of a
    // large base.
    tracing::debug!(computer = %link.trapos_id(), "linked");
    state.stats.joined();
    let quit = serve(&mut rx, &mut out, orx, &mut link, &state, &mut enrolling).await;
    tracing::debug!(computer = %link.trapos_id(), reason = %quit.reason(), "unlinked");
    state.stats.left();
    match quit {
        Quit::Heartbeat => out.close(CLOSE_HEARTBEAT, "heartbeat_timeout").await,
        Quit::TooBig(_) => out.close(CLOSE_TOO_BIG, "message too big").await,
        Quit::Shutdown => out.close(CLOSE_GOING_AWAY, "host shutting down").await,
        Quit::Closed(_) | Quit::Replaced | Quit::SendFailed(_) => {}
    }
    link.set_reason(quit.reason());
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The linked loop. What it awaits in the middle of the loop (a frame's handling, a send) runs
/// in a box of its own, so that this state, which every idle link holds, stays small.
async fn serve(
    rx: &mut impl SocketRx,
    out: &mut Sender<impl SocketTx>,
    mut outbound: mpsc::Receiver<Outbound>,
    link: &mut Link,
    state: &GatewayState,
    enrolling: &mut Enrolling,
) -> Quit {
    let period = state.settings.heartbeat.max(Duration::from_millis(10));
    let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut missed = 0u32;
    let mut awaiting_pong: Option<u64> = None;
    let max = state.settings.max_message as usize;
    let mut reassembler = Reassembler::new(max.saturating_mul(16));
    // Binary contents coming before their answers, bounded as fragments are.
    let mut blobs = Blobs::new(max.saturating_mul(16));
    // Requests sent and not yet `received`, oldest first, and the deadline of the oldest.
    // Only a client that sends receipts is held to them: it says so with the `limit` it sends
    // right after `welcome` (docs/protocol.md, "Receipts").
    let mut receipts = Receipts::default();
    // Made with the first request: a timer costs every idle link a heap entry.
    let mut deadline: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    loop {
        let quit = tokio::select! {
            _ = state.shutdown.cancelled() => return Quit::Shutdown,
            _ = heartbeat.tick() => {
                if awaiting_pong.is_some() {
                    missed += 1;
                    if missed >= MAX_MISSED {
                        return Quit::Heartbeat;
                    }
                }
                let t = now_ms();
                awaiting_pong = Some(t);
                out.send_ping(t).await.err().map(|e| Quit::SendFailed(e.to_string()))
            }
            _ = async {
                match deadline.as_mut() {
                    Some(d) => d.await,
                    None => std::future::pending().await,
                }
            }, if !receipts.sent.is_empty() => {
                let lost = receipts.overdue();
                for id in lost {
                    link.lost(&id, RECEIPT_DEADLINE_MS);
                    // It may still come, late: it must not run then.
                    if let Err(e) = out.send_owned(Message::Cancel { id }).await {
                        return Quit::SendFailed(e.to_string());
                    }
                }
                if let (Some(at), Some(d)) = (receipts.next_due(), deadline.as_mut()) {
                    d.as_mut().reset(at);
                }
                None
            }
            cmd = outbound.recv() => {
                let msg = match cmd {
                    Some(Outbound::Request(r)) => {
                        if receipts.sent.is_empty() {
                            let at = tokio::time::Instant::now() + RECEIPT_DEADLINE;
                            match deadline.as_mut() {
                                Some(d) => d.as_mut().reset(at),
                                None => deadline = Some(Box::pin(tokio::time::sleep_until(at))),
                            }
                        }
                        receipts.sent.push_back((r.id.clone(), tokio::time::Instant::now()));
                        Message::GatewayRequest(*r)
                    }
                    Some(Outbound::Cancel { id }) => Message::Cancel { id },
                    Some(Outbound::Close { code, reason }) => {
                        out.close(code, &reason).await;
                        return Quit::Replaced;
                    }
                    // The session dropped our sender: it replaced us without a close order.
                    None => return Quit::Replaced,
                };
                out.send_owned(msg).await.err().map(|e| Quit::SendFailed(e.to_string()))
            }
            frame = rx.next() => {
                let mut at = Frame { out: &mut *out, link: &mut *link, reassembler: &mut reassembler,
                    blobs: &mut blobs, receipts: &mut receipts,
                    awaiting_pong: &mut awaiting_pong, missed: &mut missed, max,
                    enrolling: &mut *enrolling, state };
                Box::pin(at.take(frame)).await
            }
        };
        if let Some(q) = quit {
            return q;
        }
    }
}

/// How long a request may go without its `received`.
const RECEIPT_DEADLINE: Duration = Duration::from_millis(RECEIPT_DEADLINE_MS);

/// The requests sent on a link whose `received` has not come, oldest first.
#[derive(Default)]
struct Receipts {
    sent: VecDeque<(String, tokio::time::Instant)>,
    /// The client sends receipts (it sent `limit`): overdue requests are lost. Until then they
    /// are only forgotten.
    held: bool,
}

impl Receipts {
    fn done(&mut self, id: &str) {
        if let Some(i) = self.sent.iter().position(|(s, _)| s == id) {
            self.sent.remove(i);
        }
    }

    /// Takes the requests past their deadline: the ones to fail, when receipts are held.
    fn overdue(&mut self) -> Vec<String> {
        let now = tokio::time::Instant::now();
        let mut lost = Vec::new();
        while let Some((_, at)) = self.sent.front() {
            if *at + RECEIPT_DEADLINE > now {
                break;
            }
            if let Some((id, _)) = self.sent.pop_front()
                && self.held
            {
                lost.push(id);
            }
        }
        lost
    }

    fn next_due(&self) -> Option<tokio::time::Instant> {
        self.sent.front().map(|(_, at)| *at + RECEIPT_DEADLINE)
    }
}

/// What handling one frame from the computer needs of the linked loop.
struct Frame<'a, Tx> {
    out: &'a mut Sender<Tx>,
    link: &'a mut Link,
    reassembler: &'a mut Reassembler,
    blobs: &'a mut Blobs,
    receipts: &'a mut Receipts,
    awaiting_pong: &'a mut Option<u64>,
    missed: &'a mut u32,
    max: usize,
    enrolling: &'a mut Enrolling,
    state: &'a GatewayState,
}

impl<Tx: SocketTx> Frame<'_, Tx> {
    /// Acts on one frame (or the socket's end); `Some` ends the link.
    async fn take(&mut self, frame: Option<Result<WsMessage, axum::Error>>) -> Option<Quit> {
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
                    .close(super::protocol::CLOSE_AUTH_FAILED, "auth_failed")
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
            // The host serves only ping. A name no Kind has gets the same answer as a kind the
            // host does not serve: an unknown_type with the request's id, never a failed frame.
            let resp = if req.kind() == Ok(super::protocol::Kind::Ping) {
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
                    error: Some(super::protocol::ErrorBody {
                        code: "unknown_type".into(),
                        message: format!("the host serves no request type {:?}", req.request),
                        output: None,
                    }),
                }
            };
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

// The link loop's unit tests run it over channels with a real session (their own file: they
// are as long as the loop).
#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;

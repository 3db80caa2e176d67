//! One linked computer: handshake, then one `select!` loop over the socket, the session's
//! outbound queue, the heartbeat and shutdown. The socket belongs to this task alone.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use axum::extract::ws::{CloseFrame, Message as WsMessage, Utf8Bytes, WebSocket};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::GatewayState;
use super::door::{Peer, Place};
use super::fragment::{self, Reassembler};
use super::protocol::{
    CLOSE_AUTH_FAILED, CLOSE_BAD_HELLO, CLOSE_GOING_AWAY, CLOSE_HEARTBEAT, CLOSE_HELLO_TIMEOUT,
    CLOSE_TOO_BIG, CLOSE_TRY_AGAIN_LATER, CLOSE_UNSUPPORTED_PROTOCOL, Hello, HelloError, Message,
    PROTOCOL_VERSION, Response, wire,
};
use crate::session::{Link, Outbound, Stream};
use crate::trust::secrets::Verdict;

type Tx = SplitSink<WebSocket, WsMessage>;
type Rx = SplitStream<WebSocket>;

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

/// Per-connection sending side: knows the computer's frame limit and fragments above it.
struct Sender {
    tx: Tx,
    limit: usize,
    next_mid: u64,
    /// How long one frame may wait for the socket: a computer that stops reading would
    /// otherwise hold this task (and its heartbeat) forever.
    stall: Duration,
}

/// A send in progress, boxed (see [`Sender::send`]).
type Sending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl Sender {
    /// Boxed, as are [`Sender::error`] and [`Sender::close`]: an async fn's state is as large
    /// as the largest thing it awaits, and this task lives as long as the link. Inline, these
    /// futures (a timer, the frame, its fragments) made every idle link's task ~3.3 KiB; a box
    /// per frame sent costs less than the frame's own encoding (BENCHMARKS.md, issue 10).
    fn send<'a>(&'a mut self, msg: &'a Message) -> Sending<'a, Result<(), axum::Error>> {
        Box::pin(async move {
            let frame = msg.encode();
            if frame.len() <= self.limit {
                return self.write(frame).await;
            }
            self.next_mid += 1;
            let mid = format!("g-{}", self.next_mid);
            for piece in fragment::split(frame, &mid, self.limit) {
                self.write(piece).await?;
            }
            Ok(())
        })
    }

    async fn write(&mut self, frame: String) -> Result<(), axum::Error> {
        match tokio::time::timeout(self.stall, self.tx.send(WsMessage::Text(frame.into()))).await {
            Ok(r) => r,
            Err(_) => Err(axum::Error::new(format!(
                "the socket took no frame for {} s (the computer is not reading)",
                self.stall.as_secs()
            ))),
        }
    }

    /// Sends a message it owns (the caller's state then holds no message while it waits).
    fn send_owned<'a>(&'a mut self, msg: Message) -> Sending<'a, Result<(), axum::Error>> {
        Box::pin(async move { self.send(&msg).await })
    }

    /// The heartbeat's `ping`.
    fn send_ping<'a>(&'a mut self, t: u64) -> Sending<'a, Result<(), axum::Error>> {
        self.send_owned(Message::Ping { t: json!(t) })
    }

    fn error<'a>(
        &'a mut self,
        code: &'a str,
        message: impl Into<String>,
        id: Option<String>,
    ) -> Sending<'a, ()> {
        let msg = Message::Error {
            code: code.to_owned(),
            message: message.into(),
            id,
        };
        Box::pin(async move {
            if let Err(e) = self.send(&msg).await {
                tracing::debug!("could not send error {code}: {e}");
            }
        })
    }

    fn close<'a>(&'a mut self, code: u16, reason: &str) -> Sending<'a, ()> {
        let frame = CloseFrame {
            code,
            reason: Utf8Bytes::from(reason.to_owned()),
        };
        Box::pin(async move {
            // The peer may be gone already, or not reading; then there is nobody to tell.
            let _ = tokio::time::timeout(self.stall, async {
                let _ = self.tx.send(WsMessage::Close(Some(frame))).await;
                let _ = self.tx.close().await;
            })
            .await;
        })
    }
}

/// Runs one computer's connection to its end.
///
/// Not an `async fn`: its state would keep a slot for the whole `socket` (368 bytes) for the
/// link's life although the socket is split at once. What every idle link's task holds is kept
/// small on purpose (BENCHMARKS.md, issue 10): the handshake, each frame's handling and each
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

async fn linked(tx: Tx, mut rx: Rx, state: GatewayState, peer: Option<Peer>) {
    let mut out = Sender {
        tx,
        limit: state.settings.max_message as usize,
        next_mid: 0,
        stall: state.settings.heartbeat * MAX_MISSED,
    };
    let Some((mut link, orx, mut enrolling)) =
        Box::pin(start(&mut rx, &mut out, &state, peer)).await
    else {
        return;
    };
    // DEBUG, with a periodic INFO summary (stats.rs): a line each would flood the log of a
    // large base.
    tracing::debug!(computer = %link.trapos_id(), "linked");
    state.stats.joined();
    let quit = serve(&mut rx, &mut out, orx, &link, &state, &mut enrolling).await;
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

/// A binding this connection made pending by enrolling its computer: confirmed when the
/// computer says `enrolled` (boxed: most links never enrol, and every idle link holds this).
type Enrolling = Option<Box<(u64, String)>>;

/// The handshake, the session's registration and the `welcome`: the link, its outbound queue
/// and the binding it enrolled, or `None` when the computer was turned away or went away
/// (already reported).
async fn start(
    rx: &mut Rx,
    out: &mut Sender,
    state: &GatewayState,
    peer: Option<Peer>,
) -> Option<(Link, mpsc::Receiver<Outbound>, Enrolling)> {
    let addr = peer.as_ref().map(|p| p.addr);
    let place = peer.map(|p| p.place);
    if let Some(p) = &place {
        p.upgraded();
    }
    let accepted = match handshake(rx, out, state, place.as_deref()).await {
        Ok(a) => a,
        Err(Refused { who, why }) => {
            if let Some(why) = why {
                state.stats.refused();
                state.session.link_refused(who.as_deref(), addr, &why);
            }
            return None;
        }
    };
    let Accepted { hello, enrolled } = accepted;
    out.limit = hello.max_message.unwrap_or(131_072).max(256) as usize;
    // Room for every request the session may have in flight plus a cancel for each, whatever
    // `outbound_queue` says: filling it must mean the socket stopped taking messages.
    let room = state
        .settings
        .outbound_queue
        .max(2 * state.settings.max_in_flight + 8);
    let (otx, orx) = mpsc::channel(room);
    let mut link = state.session.link(&hello, otx);
    let id = hello.computer_id;
    let (secret, enrolling) = match enrolled {
        Some(e) => (Some(e.secret), Some(Box::new((id, e.secret_sha256)))),
        None => (None, None),
    };
    let welcome = Message::Welcome {
        protocol: PROTOCOL_VERSION,
        trapos_id: hello.trapos_id(),
        heartbeat_ms: state.settings.heartbeat.as_millis() as u64,
        max_message: state.settings.max_message,
        secret,
    };
    // The session has what it needs; the hello (its strings, the secret among them) ends with
    // this function, not kept for the link's whole life.
    drop(hello);
    if let Err(e) = out.send(&welcome).await {
        link.set_reason(format!("welcome not sent: {e}"));
        return None;
    }
    if let Some(place) = place {
        place.linked();
    }
    Some((link, orx, enrolling))
}

/// A link attempt that ended before `welcome`: who it claimed to be and why it was turned
/// away (`None` when the peer simply went away or the host is stopping: nothing to report).
struct Refused {
    who: Option<String>,
    why: Option<String>,
}

impl Refused {
    fn quiet() -> Self {
        Refused {
            who: None,
            why: None,
        }
    }

    fn because(who: Option<String>, why: impl Into<String>) -> Self {
        Refused {
            who,
            why: Some(why.into()),
        }
    }
}

/// A hello that passed, and the secret it enrolled, if it did.
struct Accepted {
    hello: Hello,
    enrolled: Option<crate::trust::secrets::Enrolled>,
}

/// Runs blocking work on the secrets file off the gateway's threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::trust::secrets::SecretError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(e) => Err(format!("the secrets task failed: {e}")),
    }
}

/// Waits for `hello` and checks it. On any failure the computer is told why and closed.
async fn handshake(
    rx: &mut Rx,
    out: &mut Sender,
    state: &GatewayState,
    place: Option<&Place>,
) -> Result<Accepted, Refused> {
    let deadline = tokio::time::sleep(state.settings.hello_timeout);
    tokio::pin!(deadline);
    let pushed_out = async {
        match place {
            Some(p) => p.pushed_out().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(pushed_out);
    let text = loop {
        tokio::select! {
            biased;
            () = &mut pushed_out => {
                out.error(
                    "try_again_later",
                    "too many connections are waiting to link; this one waited longest",
                    None,
                )
                .await;
                out.close(CLOSE_TRY_AGAIN_LATER, "try_again_later").await;
                return Err(Refused::quiet());
            }
            _ = &mut deadline => {
                out.error("hello_timeout", "no hello within the deadline", None).await;
                out.close(CLOSE_HELLO_TIMEOUT, "hello_timeout").await;
                return Err(Refused::because(None, "no hello within the deadline (hello_timeout)"));
            }
            _ = state.shutdown.cancelled() => {
                out.close(CLOSE_GOING_AWAY, "host shutting down").await;
                return Err(Refused::quiet());
            }
            frame = rx.next() => match frame {
                None | Some(Err(_)) | Some(Ok(WsMessage::Close(_))) => return Err(Refused::quiet()),
                Some(Ok(WsMessage::Text(t))) => break t.to_string(),
                Some(Ok(WsMessage::Binary(_))) => {
                    out.error("bad_hello", "expected a hello text frame, got binary", None).await;
                    out.close(CLOSE_BAD_HELLO, "bad_hello").await;
                    return Err(Refused::because(None, "bad_hello: a binary frame instead of hello"));
                }
                Some(Ok(_)) => continue,
            }
        }
    };
    let hello = wire::decode(&text)
        .map_err(|e| HelloError::Bad(e.to_string()))
        .and_then(|v| Ok((Hello::from_value(&v)?, Hello::enrol_of(&v)?)));
    let (hello, enrol) = match hello {
        Ok(h) => h,
        Err(HelloError::Bad(msg)) => {
            out.error("bad_hello", msg.clone(), None).await;
            out.close(CLOSE_BAD_HELLO, "bad_hello").await;
            return Err(Refused::because(None, format!("bad_hello: {msg}")));
        }
        Err(e @ HelloError::Unsupported(_)) => {
            out.error("unsupported_protocol", e.to_string(), None).await;
            out.close(CLOSE_UNSUPPORTED_PROTOCOL, "unsupported_protocol")
                .await;
            return Err(Refused::because(None, format!("unsupported_protocol: {e}")));
        }
    };
    // Every hello's secret is checked, at once: a right one links whatever else its address
    // is doing, a wrong one is refused now (holding it open would buy nothing).
    let id = hello.computer_id;
    let label = hello.label.clone();
    let verdict = state
        .secrets
        .check(id, label.as_deref(), &hello.secret, enrol);
    let refusal = match verdict {
        Verdict::Shared | Verdict::Own { pending: false } => None,
        Verdict::Own { pending: true } => {
            // The computer has its secret (it just presented it): the binding is firm now,
            // even if its `enrolled` was lost.
            let dir = state.secrets.dir().to_owned();
            let hash = crate::trust::hash(&hello.secret);
            if let Err(e) = blocking(move || crate::trust::secrets::confirm(&dir, id, &hash)).await
            {
                tracing::warn!(computer = %hello.trapos_id(), "enrolment not made firm: {e}");
            }
            None
        }
        Verdict::Enrol => {
            let dir = state.secrets.dir().to_owned();
            let l = label.clone();
            match blocking(move || crate::trust::secrets::enrol(&dir, id, l.as_deref())).await {
                Ok(Ok(e)) => {
                    tracing::info!(computer = %hello.trapos_id(), "enrolled: the computer has a secret of its own (pending until it says it stored it)");
                    return Ok(Accepted {
                        hello,
                        enrolled: Some(e),
                    });
                }
                Ok(Err(refusal)) => Some(refusal),
                Err(e) => {
                    // The shared secret was right: link as a client that cannot enrol would,
                    // rather than turn a computer away for the host's own disk.
                    tracing::warn!(computer = %hello.trapos_id(), "not enrolled, linked with the shared secret: {e}");
                    None
                }
            }
        }
        Verdict::Refused(r) => Some(r),
    };
    if let Some(refusal) = refusal {
        // Never the secret itself: logs are not a safe place for it.
        tracing::warn!(computer = %hello.trapos_id(), "refused: {}", refusal.message());
        out.error("auth_failed", refusal.message(), None).await;
        out.close(CLOSE_AUTH_FAILED, "auth_failed").await;
        return Err(Refused::because(Some(hello.trapos_id()), refusal.why()));
    }
    Ok(Accepted {
        hello,
        enrolled: None,
    })
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
    rx: &mut Rx,
    out: &mut Sender,
    mut outbound: mpsc::Receiver<Outbound>,
    link: &Link,
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
            cmd = outbound.recv() => {
                let msg = match cmd {
                    Some(Outbound::Request(r)) => Message::GatewayRequest(*r),
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
                let mut at = Frame { out: &mut *out, link, reassembler: &mut reassembler,
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

/// What handling one frame from the computer needs of the linked loop.
struct Frame<'a> {
    out: &'a mut Sender,
    link: &'a Link,
    reassembler: &'a mut Reassembler,
    awaiting_pong: &'a mut Option<u64>,
    missed: &'a mut u32,
    max: usize,
    enrolling: &'a mut Enrolling,
    state: &'a GatewayState,
}

impl Frame<'_> {
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

    async fn handle(&mut self, msg: Message) -> Option<Quit> {
        if let Message::Enrolled = msg {
            self.enrolled().await;
            return None;
        }
        handle(msg, self.out, self.link, self.awaiting_pong, self.missed).await
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
        match blocking(move || crate::trust::secrets::confirm(&dir, id, &hash)).await {
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
    out: &mut Sender,
    link: &Link,
    awaiting_pong: &mut Option<u64>,
    missed: &mut u32,
) -> Option<Quit> {
    match msg {
        Message::ComputerResponse(r) => link.response(r),
        Message::Output { id, stream, text } => link.output(&id, Stream::parse(&stream), &text),
        Message::Serve { types } => link.serve(types),
        Message::Screen(update) => link.screen(Value::Object(update.body)),
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
            let resp = if req.request == "ping" {
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

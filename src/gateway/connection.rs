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
use super::door::Peer;
use super::fragment::Reassembler;
use super::handshake::{Enrolling, blocking, start};
use super::protocol::{
    CLOSE_GOING_AWAY, CLOSE_HEARTBEAT, CLOSE_TOO_BIG, Message, RECEIPT_DEADLINE_MS, Response,
};
use super::sender::Sender;
use super::socket::{SocketRx, SocketTx};
use crate::session::{Link, Outbound, Stream};

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
                    receipts: &mut receipts,
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
        match &msg {
            Message::Enrolled => {
                self.enrolled().await;
                return None;
            }
            Message::Received { id } => {
                self.receipts.done(id);
                return None;
            }
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
        Message::Label { label } => {
            if let Some(now) = link.relabel(label) {
                tracing::debug!(computer = %now, "relabelled");
            }
        }
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

#[cfg(test)]
mod tests {
    //! The link loop over channels instead of a socket: what a computer sends goes in one
    //! channel, what the gateway sends comes out of the other, and the session is real.

    use std::sync::Arc;

    use axum::extract::ws::Message as WsMessage;
    use serde_json::{Value, json};
    use tokio::sync::mpsc;

    use super::super::protocol::{CLOSE_AUTH_FAILED, CLOSE_HEARTBEAT};
    use super::super::{GatewayState, door, stats};
    use crate::config::Settings;
    use crate::session::{Origin, RequestSpec, Session};

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
                secrets: Arc::new(crate::trust::secrets::Secrets::new(&settings)),
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

    #[tokio::test]
    async fn a_request_travels_to_the_computer_and_its_answer_back() {
        let mut c = Computer::start(15_000);
        c.hello(SECRET);
        let welcome = c.next_of("welcome").await;
        assert_eq!(welcome["trapos_id"], "7:miner", "{welcome}");
        let session = c.session.clone();
        let call = tokio::spawn(async move {
            session
                .request(
                    "miner",
                    RequestSpec::new(crate::protocol::Kind::ExecLua, json!({"code": "return 1"})),
                    Origin::Person,
                )
                .await
        });
        let req = c.next_of("gateway_request").await;
        assert_eq!(req["request"], "exec-lua", "{req}");
        let id = req["id"].as_str().expect("an id").to_owned();
        c.send(json!({"type": "output", "id": id, "stream": "stdout", "text": "hi\n"}));
        c.send(json!({"type": "computer_response", "id": id, "ok": true,
            "payload": {"returns": [1]}}));
        let got = call
            .await
            .expect("the call task")
            .expect("the request's result");
        assert_eq!(got["returns"], json!([1]), "{got}");
    }

    #[tokio::test]
    async fn a_wrong_secret_is_told_and_closed_with_auth_failed() {
        let mut c = Computer::start(15_000);
        c.hello("not-the-secret-at-all");
        let err = c.next_of("error").await;
        assert_eq!(err["code"], "auth_failed", "{err}");
        assert_eq!(c.next().await, Err(Some(CLOSE_AUTH_FAILED)));
        c.link.await.expect("the link task ends");
        assert!(c.session.computers().is_empty());
    }

    /// Starts `exec-lua` of `code` on `who` in a task of its own.
    fn exec(
        session: &Session,
        who: &'static str,
        code: String,
    ) -> tokio::task::JoinHandle<Result<Value, crate::session::RequestError>> {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .request(
                    who,
                    RequestSpec::new(crate::protocol::Kind::ExecLua, json!({"code": code})),
                    Origin::Person,
                )
                .await
        })
    }

    #[tokio::test]
    async fn a_label_set_on_the_computer_renames_it_everywhere() {
        let mut c = Computer::start(15_000);
        c.hello(SECRET);
        c.next_of("welcome").await;
        c.send(json!({"type": "serve", "types": ["exec-lua"]}));
        c.send(json!({"type": "label", "label": "digger"}));
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while c.session.computer("7:digger").is_none() {
            assert!(tokio::time::Instant::now() < deadline, "never renamed");
            tokio::task::yield_now().await;
        }
        let ids: Vec<String> = c
            .session
            .computers()
            .into_iter()
            .map(|i| i.trapos_id)
            .collect();
        assert_eq!(ids, vec!["7:digger".to_owned()], "the old name is gone");
        let info = c
            .session
            .computer("7:digger")
            .expect("the renamed computer");
        assert_eq!(info.label.as_deref(), Some("digger"));
        assert!(info.online, "still linked: {info:?}");
        assert_eq!(c.session.resolve("digger").as_deref(), Ok("7:digger"));
        assert!(
            c.session.resolve("miner").is_err(),
            "the old label no longer resolves"
        );
        assert!(
            c.session
                .recent(10)
                .iter()
                .any(|e| e.event == "relabelled" && e.detail == "7:miner is now 7:digger"),
            "logged: {:?}",
            c.session.recent(10)
        );
        // Requests go to it under its new name, on the same link.
        let call = exec(&c.session, "digger", "return 1".into());
        let req = c.next_of("gateway_request").await;
        c.send(
            json!({"type": "computer_response", "id": req["id"], "ok": true,
            "payload": {"returns": [1]}}),
        );
        let got = call.await.expect("the call task").expect("the answer");
        assert_eq!(got["returns"], json!([1]));
        // No label at all: `<id>:`.
        c.send(json!({"type": "label", "label": null}));
        while c.session.computer("7:").is_none() {
            tokio::task::yield_now().await;
        }
        assert!(c.session.computer("7:digger").is_none());
    }

    #[tokio::test]
    async fn a_limit_from_the_computer_bounds_every_frame_the_host_sends() {
        let mut c = Computer::start(15_000);
        c.hello(SECRET);
        c.next_of("welcome").await;
        // Padded as the client's probe is: the pad is ignored.
        c.send(json!({"type": "limit", "max_message": 4096, "pad": "x".repeat(3000)}));
        c.send(json!({"type": "serve", "types": ["exec-lua"]}));
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while c.session.computer("7:miner").map(|i| i.max_message) != Some(4096) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the limit never applied"
            );
            tokio::task::yield_now().await;
        }
        let code = "return ('y'):rep(1)--".to_owned() + &"z".repeat(20_000);
        let call = exec(&c.session, "miner", code.clone());
        let mut parts = String::new();
        loop {
            let frame = match c.from_gateway.recv().await {
                Some(WsMessage::Text(t)) => t.as_str().to_owned(),
                other => unreachable!("a text frame, got {other:?}"),
            };
            assert!(frame.len() <= 4096, "a frame of {} bytes", frame.len());
            let v: Value = serde_json::from_str(&frame).expect("JSON");
            if v["type"] != "fragment" {
                continue;
            }
            parts.push_str(v["data"].as_str().expect("data"));
            if v["last"] == true {
                break;
            }
        }
        let whole: Value = serde_json::from_str(&parts).expect("the request, whole");
        assert_eq!(whole["payload"]["code"], json!(code));
        call.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_link_lost_during_a_long_chunk_is_reported_as_a_hard_abort() {
        let mut c = Computer::start(600_000);
        c.hello(SECRET);
        c.next_of("welcome").await;
        c.send(json!({"type": "serve", "types": ["exec-lua"]}));
        let call = exec(&c.session, "miner", "while true do end".into());
        c.next_of("gateway_request").await;
        // 8.5 s without a yield: CC shuts the computer down, which drops its socket without
        // a close frame.
        tokio::time::advance(std::time::Duration::from_millis(8_600)).await;
        drop(c.to_gateway);
        c.link.await.expect("the link task ends");
        let err = call.await.expect("the call task").expect_err("no answer");
        assert_eq!(err.code(), "shut_down", "{err}");
        let text = err.to_string();
        assert!(text.contains("Too long without yielding"), "{text}");
        assert!(text.contains("/computercraft turn-on #7"), "{text}");
        // Asked for again, it says the same rather than "no linked computer".
        let again = c.session.resolve("miner").expect_err("offline");
        assert_eq!(again.code(), "shut_down", "{again}");
        assert!(
            c.session
                .recent(10)
                .iter()
                .any(|e| e.event == "unlinked" && e.detail.contains("went off while request")),
            "logged: {:?}",
            c.session.recent(10)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_the_computer_never_got_fails_as_lost_after_ten_seconds() {
        let mut c = Computer::start(600_000);
        c.hello(SECRET);
        c.next_of("welcome").await;
        // A client that sends receipts says so with its `limit`.
        c.send(json!({"type": "limit", "max_message": 131072}));
        c.send(json!({"type": "serve", "types": ["exec-lua"]}));
        let started = tokio::time::Instant::now();
        let dropped = exec(&c.session, "miner", "return 1".into());
        let first = c.next_of("gateway_request").await;
        let kept = exec(&c.session, "miner", "sleep(20)".into());
        let second = c.next_of("gateway_request").await;
        c.send(json!({"type": "received", "id": second["id"]}));
        let err = dropped.await.expect("the call task").expect_err("lost");
        assert_eq!(err.code(), "lost", "{err}");
        assert!(err.to_string().contains("256"), "{err}");
        let waited = started.elapsed();
        assert!(
            waited >= std::time::Duration::from_secs(10)
                && waited < std::time::Duration::from_secs(11),
            "failed after {waited:?}"
        );
        let cancel = c.next_of("cancel").await;
        assert_eq!(
            cancel["id"], first["id"],
            "told not to run it if it comes late"
        );
        // The request with its receipt runs on past the deadline, and answers.
        tokio::time::advance(std::time::Duration::from_secs(15)).await;
        c.send(
            json!({"type": "computer_response", "id": second["id"], "ok": true,
            "payload": {"returns": []}}),
        );
        kept.await.expect("the call task").expect("answered");
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_without_receipts_is_not_held_to_them() {
        let mut c = Computer::start(600_000);
        c.hello(SECRET);
        c.next_of("welcome").await;
        c.send(json!({"type": "serve", "types": ["exec-lua"]}));
        let call = exec(&c.session, "miner", "sleep(20)".into());
        let req = c.next_of("gateway_request").await;
        tokio::time::advance(std::time::Duration::from_secs(20)).await;
        c.send(
            json!({"type": "computer_response", "id": req["id"], "ok": true,
            "payload": {"returns": []}}),
        );
        call.await.expect("the call task").expect("answered");
    }

    #[tokio::test(start_paused = true)]
    async fn a_short_request_lost_with_its_link_is_only_disconnected() {
        let mut c = Computer::start(600_000);
        c.hello(SECRET);
        c.next_of("welcome").await;
        c.send(json!({"type": "serve", "types": ["exec-lua"]}));
        let call = exec(&c.session, "miner", "return 1".into());
        c.next_of("gateway_request").await;
        tokio::time::advance(std::time::Duration::from_secs(2)).await;
        drop(c.to_gateway);
        c.link.await.expect("the link task ends");
        let err = call.await.expect("the call task").expect_err("no answer");
        assert_eq!(err.code(), "disconnected", "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_computer_that_answers_no_ping_is_closed_after_three() {
        let mut c = Computer::start(1_000);
        c.hello(SECRET);
        c.next_of("welcome").await;
        let mut pings = 0;
        let code = loop {
            match c.next().await {
                Ok(v) if v["type"] == "ping" => pings += 1,
                Ok(_) => {}
                Err(code) => break code,
            }
        };
        assert_eq!(code, Some(CLOSE_HEARTBEAT));
        assert_eq!(
            pings, 3,
            "closed at the heartbeat after three unanswered pings"
        );
        c.link.await.expect("the link task ends");
    }

    #[tokio::test(start_paused = true)]
    async fn a_computer_that_answers_every_ping_stays() {
        let mut c = Computer::start(1_000);
        c.hello(SECRET);
        c.next_of("welcome").await;
        for _ in 0..10 {
            let ping = c.next_of("ping").await;
            c.send(json!({"type": "pong", "t": ping["t"]}));
        }
        assert_eq!(c.session.computers().len(), 1);
        drop(c.to_gateway);
        c.link.await.expect("the link ends when the socket does");
    }
}

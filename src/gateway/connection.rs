//! One linked computer's task: the handshake ([`super::handshake`]), then one `select!` loop
//! over the socket, the session's outbound queue, the heartbeat and shutdown, then the close.
//! The socket belongs to this task alone; it is any pair of [`SocketTx`]/[`SocketRx`] halves,
//! so the loop is unit-tested over channels (below).

use std::future::Future;
use std::time::{Duration, SystemTime};

use axum::extract::ws::WebSocket;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::GatewayState;
use super::binary::Blobs;
use super::door::Peer;
use super::fragment::Reassembler;
use super::handshake::{Enrolling, start};
use super::protocol::{
    CLOSE_GOING_AWAY, CLOSE_HEARTBEAT, CLOSE_TOO_BIG, Message, RECEIPT_DEADLINE_MS,
};
use super::sender::Sender;
use super::socket::{SocketRx, SocketTx};
use frame::Frame;
use receipts::{RECEIPT_DEADLINE, Receipts};
use trapdesk_core::session::{Link, Outbound};

mod frame;
mod receipts;

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
    let mut heartbeat = heartbeat_timer(state.settings.heartbeat);
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
                let t = match next_ping(&mut awaiting_pong, &mut missed) {
                    Ok(t) => t,
                    Err(q) => return q,
                };
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
                let sent = match cmd {
                    Some(Outbound::Request(r)) => {
                        await_receipt(&r.id, &mut receipts, &mut deadline);
                        out.send_request(&r).await
                    }
                    Some(Outbound::Cancel { id }) => out.send_owned(Message::Cancel { id }).await,
                    Some(Outbound::Close { code, reason }) => {
                        out.close(code, &reason).await;
                        return Quit::Replaced;
                    }
                    // The session dropped our sender: it replaced us without a close order.
                    None => return Quit::Replaced,
                };
                sent.err().map(|e| Quit::SendFailed(e.to_string()))
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

/// Ticks every `period` (10 ms at least), the first one period from now; a late tick delays
/// the next rather than bunching them.
fn heartbeat_timer(period: Duration) -> tokio::time::Interval {
    let period = period.max(Duration::from_millis(10));
    let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    heartbeat
}

/// A heartbeat tick: the time to ping with, or `Quit::Heartbeat` when too many pings in a row
/// went unanswered.
fn next_ping(awaiting_pong: &mut Option<u64>, missed: &mut u32) -> Result<u64, Quit> {
    if awaiting_pong.is_some() {
        *missed += 1;
        if *missed >= MAX_MISSED {
            return Err(Quit::Heartbeat);
        }
    }
    let t = now_ms();
    *awaiting_pong = Some(t);
    Ok(t)
}

/// A request going out waits for its receipt; the first one outstanding sets the deadline.
fn await_receipt(
    id: &str,
    receipts: &mut Receipts,
    deadline: &mut Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
) {
    if receipts.sent.is_empty() {
        let at = tokio::time::Instant::now() + RECEIPT_DEADLINE;
        match deadline.as_mut() {
            Some(d) => d.as_mut().reset(at),
            None => *deadline = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }
    receipts
        .sent
        .push_back((id.to_owned(), tokio::time::Instant::now()));
}

// The link loop's unit tests run it over channels with a real session (their own files in
// connection_tests/: they are as long as the loop).
#[cfg(test)]
#[path = "connection_tests/mod.rs"]
mod tests;

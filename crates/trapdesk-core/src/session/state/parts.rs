//! The parts the state is made of: a computer, its link, a pending request, what is sent on
//! a link and what a requester receives, and where a computer's scrollback numbering goes on.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::session::approval::Gate;
use crate::session::captured::Captured;
use crate::session::model::{ComputerInfo, Ending, PendingInfo, Stream};
use crate::session::output::OutputRing;
use trapdesk_proto::protocol::{Outgoing, RequestBody};

/// What the session asks a connection task to do. The socket belongs to that task alone.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    /// Boxed: the channel's first block holds 32 of these, allocated at link time, so the
    /// largest variant sets what every idle link costs (~3 KiB unboxed; BENCHMARKS.md).
    Request(Box<Outgoing>),
    Cancel {
        id: String,
    },
    Close {
        code: u16,
        reason: String,
    },
}

/// Where a new request goes (see `State::admit`).
pub(crate) struct Admitted {
    pub trapos_id: String,
    pub conn_id: u64,
    pub gate: Gate,
}

/// A piece of live output delivered to the requester.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputChunk {
    pub stream: Stream,
    pub text: String,
}

pub(crate) type Waiter = oneshot::Sender<Ending>;

pub(crate) struct Conn {
    pub id: u64,
    /// Bounded (`outbound_queue`): a computer that stops reading its socket fills it and is
    /// unlinked (see `State::send_to`) instead of growing the host's memory.
    pub tx: mpsc::Sender<Outbound>,
    /// Requests sent and not answered (or timed out / cancelled) yet.
    pub in_flight: usize,
    /// Request ids waiting for a slot, oldest first.
    pub queue: VecDeque<String>,
    /// Detached runs sent on this connection and not ended: their own budget (`max_detached`),
    /// never counted in `in_flight`, so a long run never holds a slot a ping needs.
    pub detached: usize,
    /// Detached runs approved and not sent yet (sent at the next pump, whatever `in_flight`).
    pub detached_queue: VecDeque<String>,
}

impl Conn {
    /// Puts a request in line for this connection: its own line for a detached run.
    pub fn enqueue(&mut self, id: String, detached: bool) {
        if detached {
            self.detached_queue.push_back(id);
        } else {
            self.queue.push_back(id);
        }
    }
}

pub(crate) struct Computer {
    pub info: ComputerInfo,
    pub conn: Option<Conn>,
    pub output: OutputRing,
    /// Why it is probably switched off (see `State::hard_abort`), until it links again.
    pub off: Option<String>,
}

impl Computer {
    /// Shows the link's counts (running, queued, detached) in what the console and the tools
    /// read: the one place they are copied, after any change to them.
    pub fn show_counts(&mut self) {
        if let Some(conn) = &self.conn {
            self.info.running = conn.in_flight;
            self.info.queued = conn.queue.len();
            self.info.detached = conn.detached;
        }
    }
}

/// CC: Tweaked's "Too long without yielding" comes after 7 s of Lua without a yield
/// (`computer_threads` timeout, `TimeoutState.TIMEOUT`); 1.5 s later (`ABORT_TIMEOUT`) it shuts
/// the computer down. A link that ends without a close frame while a request has run this
/// long is reported as that shutdown.
pub(crate) const HARD_ABORT_AFTER: Duration = Duration::from_secs(7);

/// Whether a link that ended for `reason` probably ended in CC's hard abort: a request
/// sent on it had run at least [`HARD_ABORT_AFTER`] when the socket closed. CC closes a
/// socket the same way whether the computer shut down or its program closed it (both are
/// `Resource.dispose`, the TCP connection closed with no close frame), so the time is the
/// evidence; a link the host ended itself (replaced, heartbeat, shutdown, a full queue) is
/// not one. Returns what to tell the person and agents, with what to do.
pub(super) fn hard_abort<'a>(
    pending: impl Iterator<Item = &'a Pending>,
    (id, trapos_id): (u64, &str),
    conn_id: u64,
    reason: &str,
) -> Option<String> {
    let ours = reason.starts_with("replaced")
        || reason.starts_with("host shutting down")
        || reason.starts_with("outbound queue full")
        || reason.contains("heartbeats missed");
    if ours {
        return None;
    }
    // A detached run is long by design: its age says nothing about a hard abort.
    let longest = pending
        .filter(|p| p.conn_id == conn_id && !p.detached)
        .filter_map(|p| Some((p.sent_at?.elapsed(), p)))
        .filter(|(ran, _)| *ran >= HARD_ABORT_AFTER)
        .max_by_key(|(ran, _)| *ran)?;
    let (ran, p) = longest;
    Some(format!(
        "{trapos_id} went off while request {} ({}) had run {:.1} s, probably shut down by \
         CC's hard abort: CC: Tweaked shuts a computer down when one piece of Lua runs \
         1.5 s past \"Too long without yielding\" \
         (7 s), and it stays off until a player turns it on (right-click it, or \
         `/computercraft turn-on #{id}`); the client relinks once it is on. If it links \
         again by itself, it was rebooted instead. What the request printed is in the \
         computer's scrollback and the session log",
        p.info.request_id,
        p.info.kind.as_str(),
        ran.as_secs_f64(),
    ))
}

pub(crate) struct Pending {
    pub info: PendingInfo,
    pub conn_id: u64,
    /// What is sent; none for a run taken back from an earlier host (already running).
    pub body: Option<RequestBody>,
    /// A test's payload of the wrong shape, sent instead of the body's.
    pub as_written: Option<serde_json::Value>,
    pub waiter: Option<Waiter>,
    /// Bounded (`stream_buffer`); chunks the reader has no room for are counted in
    /// `output_dropped` and reported in the next chunk that fits.
    pub output_tx: Option<mpsc::Sender<OutputChunk>>,
    pub output_dropped: u64,
    /// Its key in `State::deadlines`, while it has a deadline.
    pub timer: Option<DeadlineKey>,
    pub sent_at: Option<Instant>,
    /// Live output received (head and tail, true totals): what the final answer has beyond
    /// it is added to the scrollback, and a failure without an answer carries it.
    pub live: Captured,
    /// Who asked to cancel it, when someone did.
    pub cancel_by: Option<String>,
    /// Leaves no trace in the computer's scrollback (see [`crate::session::RequestSpec::quiet`]).
    pub quiet: bool,
    /// Carries an approval only; never sent (see [`crate::session::RequestSpec::local`]).
    pub local: bool,
    /// A detached run: a dropped link leaves it pending without a connection (`conn_id` 0)
    /// until the computer names it again (see `detached.rs`).
    pub detached: bool,
    /// Output of a detached run that the computer dropped while unlinked: the live output is
    /// then no prefix of the answer's, and the answer's is not shown again from `live`'s end.
    pub dropped_unlinked: u64,
    /// Its deadline passed and the computer was asked to stop it: the timeout and when
    /// (see `stopping.rs`).
    pub timed_out: Option<(std::time::Duration, Instant)>,
    /// A timeout's: whether the computer stopped it (see `Ending::stopped`).
    pub stopped: Option<bool>,
}

/// The connection id of a detached run whose link dropped: no connection has it.
pub(crate) const ORPHANED: u64 = 0;

/// Most computers whose own scrollback numbering [`SeqFloors`] keeps after their ring was
/// dropped; the numbering of the others goes on from the highest of theirs.
pub(crate) const SEQ_FLOORS_KEPT: usize = 1024;

/// Where each computer's scrollback numbering goes on after its ring was dropped: the newest
/// [`SEQ_FLOORS_KEPT`] computers' own, and for every other one (forgotten, or never seen) the
/// highest any forgotten one had. Numbers only grow, so a cursor never means two lines, and a
/// computer that changes its label (a new traposId) every second grows nothing: one entry was
/// kept for every traposId ever dropped.
#[derive(Debug, Default)]
pub(crate) struct SeqFloors {
    floors: HashMap<String, u64>,
    /// The keys of `floors`, oldest first.
    order: VecDeque<String>,
    /// The highest floor forgotten.
    rest: u64,
}

impl SeqFloors {
    /// Keeps `next` as where `trapos_id`'s numbering goes on.
    pub fn keep(&mut self, trapos_id: &str, next: u64) {
        if let Some(old) = self.floors.insert(trapos_id.to_owned(), next) {
            // Seen before: it moves to the newest end.
            self.order.retain(|k| k != trapos_id);
            self.floors.insert(trapos_id.to_owned(), old.max(next));
        }
        self.order.push_back(trapos_id.to_owned());
        while self.order.len() > SEQ_FLOORS_KEPT {
            if let Some(k) = self.order.pop_front()
                && let Some(floor) = self.floors.remove(&k)
            {
                self.rest = self.rest.max(floor);
            }
        }
    }

    /// Where `trapos_id`'s numbering goes on (0: anywhere).
    pub fn of(&self, trapos_id: &str) -> u64 {
        self.floors.get(trapos_id).copied().unwrap_or(self.rest)
    }

    /// How many computers have their own.
    pub fn len(&self) -> usize {
        self.floors.len()
    }
}

/// A deadline and the request number that makes it unique.
pub(crate) type DeadlineKey = (Instant, u64);

/// Bytes of an output message an `Event::Output` carries.
pub const EVENT_TEXT_MAX: usize = 4096;

/// What makes this host start's request ids its own (`h-<tag>-<n>`): its start time in tenths
/// of a second, base 36, six characters (it comes round after about seven years).
pub(crate) fn run_tag(now: SystemTime) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let tenths = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() / 100);
    let mut n = (tenths % 36u128.pow(6)) as usize;
    let mut out = [b'0'; 6];
    for slot in out.iter_mut().rev() {
        *slot = DIGITS[n % 36];
        n /= 36;
    }
    String::from_utf8_lossy(&out).into_owned()
}

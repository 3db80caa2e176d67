//! The state behind the session's mutex and the operations that keep it consistent: finishing a
//! request (exactly once), a link's end, logging. Sending (a computer's queue pumped) is in
//! `send.rs` (more `impl State`); finding the computer a name means is `names.rs`, functions
//! of the computers' table alone, which `State::resolve` lends to the rest of the session.
//!
//! Every function here runs with the lock held and never awaits; the lock is a
//! `std::sync::Mutex` because no critical section crosses an `.await`.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;

use super::captured::Captured;
use super::model::{
    ComputerInfo, Deadline, Ending, Event, LogEntry, LogEvent, OutputEntry, PendingInfo,
    RequestError, RequestSpec, StartEntry, Status, Stream, ToolCall, epoch_ms,
};
use super::output::OutputRing;
use super::summary;
use super::transcript::{Extra, Transcript};
use crate::config::Settings;
use trapdesk_proto::protocol::{Kind, Request};

/// What the session asks a connection task to do. The socket belongs to that task alone.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    /// Boxed: the channel's first block holds 32 of these, allocated at link time, so the
    /// largest variant sets what every idle link costs (~3 KiB unboxed; BENCHMARKS.md).
    Request(Box<Request>),
    Cancel {
        id: String,
    },
    Close {
        code: u16,
        reason: String,
    },
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
    /// unlinked (see [`State::send_to`]) instead of growing the host's memory.
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
    /// Why it is probably switched off (see [`State::hard_abort`]), until it links again.
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

pub(crate) struct Pending {
    pub info: PendingInfo,
    pub conn_id: u64,
    pub payload: Value,
    pub waiter: Option<Waiter>,
    /// Bounded (`stream_buffer`); chunks the reader has no room for are counted in
    /// `output_dropped` and reported in the next chunk that fits.
    pub output_tx: Option<mpsc::Sender<OutputChunk>>,
    pub output_dropped: u64,
    /// Its key in [`State::deadlines`], while it has a deadline.
    pub timer: Option<DeadlineKey>,
    pub sent_at: Option<Instant>,
    /// Live output received (head and tail, true totals): what the final answer has beyond
    /// it is added to the scrollback, and a failure without an answer carries it.
    pub live: Captured,
    /// Who asked to cancel it, when someone did.
    pub cancel_by: Option<String>,
    /// Leaves no trace in the computer's scrollback (see [`super::RequestSpec::quiet`]).
    pub quiet: bool,
    /// Carries an approval only; never sent (see [`super::RequestSpec::local`]).
    pub local: bool,
    /// A detached run: a dropped link leaves it pending without a connection (`conn_id` 0)
    /// until the computer names it again (see `detached.rs`).
    pub detached: bool,
    /// Output of a detached run that the computer dropped while unlinked: the live output is
    /// then no prefix of the answer's, and the answer's is not shown again from `live`'s end.
    pub dropped_unlinked: u64,
}

/// The connection id of a detached run whose link dropped: no connection has it.
pub(crate) const ORPHANED: u64 = 0;

pub(crate) struct State {
    pub settings: Settings,
    pub computers: HashMap<String, Computer>,
    /// Every key of `computers` in `(id, traposId)` order: a page of linked computers is a
    /// range of this, where a scan of `computers` read all of them for every page (10,000
    /// computers of ~400 bytes each: 4 MB read per page of ~90).
    pub order: BTreeSet<(u64, String)>,
    /// Connection id → traposId.
    pub conns: HashMap<u64, String>,
    pub pending: HashMap<String, Pending>,
    pub recent: VecDeque<LogEntry>,
    pub tool_calls: VecDeque<ToolCall>,
    pub next_conn: u64,
    pub next_request: u64,
    pub next_log: u64,
    pub next_call: u64,
    pub transcript: Transcript,
    pub events: broadcast::Sender<Event>,
    pub shutting_down: bool,
    /// Requests waiting for the person, the session's grants, who can answer.
    pub approvals: super::approval::Approvals,
    /// The person's stop for all agents, while it holds (see [`super::pause`]).
    pub paused: Option<super::pause::Paused>,
    /// Computers the person is attached to (F8): their keyboard is the person's.
    pub keyboard: std::collections::HashMap<String, usize>,
    /// Ended requests whose results `wait-request` still gives (see `detached.rs`).
    pub finished: super::detached::Finished,
    /// This host start's part of every request id (see `run_tag` in `mod.rs`).
    pub run_tag: String,
    /// `history.db`, when the host keeps history (see `history`).
    pub history: Option<std::sync::Arc<super::history::History>>,
    /// Where a computer's scrollback numbering goes on when it links again after its ring was
    /// dropped (`prune_offline`): a cursor never means two lines.
    pub seq_floor: SeqFloors,
    /// Who started each detached run, kept in the data dir (see `history::runs`).
    pub runs: super::history::runs::Runs,
    /// Claims in hellos that were not taken back and not logged yet, and when that was last
    /// logged (see `detached.rs`).
    pub claims_dropped: (u64, Option<Instant>),
    /// The first number of this start's output entries (see `history`).
    pub first_seq: u64,
    /// Pending requests' deadlines, earliest first: the request id and its timeout (for the
    /// error). One task (`reap` in `mod.rs`) ends each when it passes.
    pub deadlines: std::collections::BTreeMap<DeadlineKey, (String, std::time::Duration)>,
    /// Whether that task was started (at the first deadline: a session is made outside a
    /// runtime in places).
    pub reaping: bool,
}

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

/// Bytes of an output message an [`Event::Output`] carries.
pub const EVENT_TEXT_MAX: usize = 4096;

/// Tool calls kept for the activity pane.
const TOOL_CALLS_KEPT: usize = 500;
/// Unlinked computers kept for display.
const OFFLINE_KEPT: usize = 32;

impl State {
    /// The linked computer a caller means (see `names.rs`).
    pub fn resolve(&self, query: &str) -> Result<String, RequestError> {
        super::names::resolve(&self.computers, query)
    }

    pub fn emit(&self, event: Event) {
        // No subscriber is fine: events are for live views only.
        let _ = self.events.send(event);
    }

    /// [`State::emit`] for an event that costs copies to make: made only when a live view
    /// (the console, a `wait-request`) is there to read it. A host without a console served
    /// every agent call two copies of the call and of each log entry for nobody.
    pub fn emit_with(&self, event: impl FnOnce() -> Event) {
        if self.events.receiver_count() > 0 {
            self.emit(event());
        }
    }

    pub fn log(&mut self, entry: LogEntry) {
        self.log_with(entry, Extra::default());
    }

    /// Logs an entry whose transcript line carries more than the log keeps (see [`Extra`]).
    pub fn log_with(&mut self, mut entry: LogEntry, mut extra: Extra) {
        entry.seq = self.next_log;
        self.next_log += 1;
        entry.time_ms = epoch_ms(SystemTime::now());
        let failed = if self.transcript.is_on() {
            // The writer thread makes the line (off the session's lock) and hands it to the
            // history too: it gets its own copy of the entry, which the recent log and the live
            // views keep too.
            self.transcript.append(entry.clone(), extra)
        } else {
            // No transcript file (or its writer stopped): the history still gets the line, with
            // big payloads kept as their size, hash and head (docs/security.md).
            if let Some(h) = &self.history {
                if !self.settings.transcript_full_text
                    && let Some(args) = &extra.args
                    && super::history::trim::needs_trim(args)
                {
                    extra.args = Some(super::history::trim::trim(args));
                }
                if let Some(line) = super::transcript::line(&entry, &extra) {
                    h.log(entry.seq, entry.time_ms, line);
                }
            }
            None
        };
        self.remember(entry);
        if let Some(why) = failed {
            // Said once, where the person and agents look (console log, session-log), not only
            // in the tracing log: the transcript is off from here on, requests carry on.
            let mut alarm = State::entry(
                LogEvent::TranscriptFailed,
                format!(
                    "the transcript in {} stopped: {why}; requests are still served, but nothing more is recorded there",
                    self.settings.data_dir.display()
                ),
            );
            alarm.seq = self.next_log;
            self.next_log += 1;
            alarm.time_ms = epoch_ms(SystemTime::now());
            self.remember(alarm);
        }
    }

    /// Keeps an entry in the recent log and tells live views.
    fn remember(&mut self, entry: LogEntry) {
        self.emit_with(|| Event::Logged {
            entry: entry.clone(),
        });
        self.recent.push_back(entry);
        while self.recent.len() > self.settings.recent_events {
            self.recent.pop_front();
        }
    }

    /// A log entry with the common fields empty.
    pub fn entry(event: LogEvent, detail: impl Into<String>) -> LogEntry {
        LogEntry {
            seq: 0,
            time_ms: 0,
            event,
            who: None,
            trapos_id: None,
            request_id: None,
            what: None,
            status: None,
            detail: detail.into(),
            duration_ms: None,
            call_id: None,
        }
    }

    /// Marks a computer's connection gone: offline, its requests failed as `disconnected`,
    /// logged and announced. The caller has removed `conn_id` from `conns`.
    pub fn unlink(&mut self, trapos_id: &str, conn_id: u64, reason: String) {
        let off = self.hard_abort(trapos_id, conn_id, &reason);
        if let Some(c) = self.computers.get_mut(trapos_id) {
            c.off.clone_from(&off);
            if c.conn.as_ref().is_some_and(|c| c.id == conn_id) {
                c.conn = None;
            }
            c.info.online = false;
            c.info.disconnected_at = Some(SystemTime::now());
            c.info.running = 0;
            c.info.queued = 0;
        }
        let reason = match &off {
            Some(note) => {
                self.orphan_detached(conn_id);
                let ids: Vec<String> = self
                    .pending
                    .values()
                    .filter(|p| p.conn_id == conn_id)
                    .map(|p| p.info.request_id.clone())
                    .collect();
                for id in ids {
                    self.finish(
                        &id,
                        Err(RequestError::Remote {
                            code: "shut_down".into(),
                            message: note.clone(),
                            output: None,
                        }),
                    );
                }
                format!("{reason}; {note}")
            }
            None => {
                self.fail_conn(conn_id);
                reason
            }
        };
        let mut entry = State::entry(LogEvent::Unlinked, reason.clone());
        entry.trapos_id = Some(trapos_id.to_owned());
        if off.is_some() {
            entry.status = Some(super::model::Status::Failed);
        }
        self.log(entry);
        self.emit(Event::Unlinked {
            trapos_id: trapos_id.to_owned(),
            reason,
        });
        self.prune_offline();
    }

    /// Whether a link that ended for `reason` probably ended in CC's hard abort: a request
    /// sent on it had run at least [`HARD_ABORT_AFTER`] when the socket closed. CC closes a
    /// socket the same way whether the computer shut down or its program closed it (both are
    /// `Resource.dispose`, the TCP connection closed with no close frame), so the time is the
    /// evidence; a link the host ended itself (replaced, heartbeat, shutdown, a full queue) is
    /// not one. Returns what to tell the person and agents, with what to do.
    fn hard_abort(&self, trapos_id: &str, conn_id: u64, reason: &str) -> Option<String> {
        let ours = reason.starts_with("replaced")
            || reason.starts_with("host shutting down")
            || reason.starts_with("outbound queue full")
            || reason.contains("heartbeats missed");
        if ours {
            return None;
        }
        // A detached run is long by design: its age says nothing about a hard abort.
        let longest = self
            .pending
            .values()
            .filter(|p| p.conn_id == conn_id && !p.detached)
            .filter_map(|p| Some((p.sent_at?.elapsed(), p)))
            .filter(|(ran, _)| *ran >= HARD_ABORT_AFTER)
            .max_by_key(|(ran, _)| *ran)?;
        let (ran, p) = longest;
        let id = self.computers.get(trapos_id).map_or(0, |c| c.info.id);
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

    /// Frees the slot a sent request held (or its place in the queue).
    fn release(&mut self, p: &Pending) {
        let Some(computer) = self.computers.get_mut(&p.info.trapos_id) else {
            return;
        };
        if let Some(conn) = computer.conn.as_mut()
            && conn.id == p.conn_id
        {
            match (p.info.sent, p.detached) {
                (true, true) => conn.detached = conn.detached.saturating_sub(1),
                (true, false) => conn.in_flight = conn.in_flight.saturating_sub(1),
                (false, true) => conn.detached_queue.retain(|q| q != &p.info.request_id),
                (false, false) => conn.queue.retain(|q| q != &p.info.request_id),
            }
        }
        computer.show_counts();
    }

    /// The connection a new request on `trapos_id` goes to, if it has room for one more.
    pub(super) fn room_on(&self, trapos_id: &str) -> Result<u64, RequestError> {
        let Some(conn) = self.computers.get(trapos_id).and_then(|c| c.conn.as_ref()) else {
            return Err(RequestError::Disconnected);
        };
        if conn.in_flight >= self.settings.max_in_flight
            && conn.queue.len() >= self.settings.max_queued
        {
            return Err(RequestError::Busy {
                trapos_id: trapos_id.to_owned(),
                limit: self.settings.max_queued,
            });
        }
        Ok(conn.id)
    }

    /// Whether a request runs without a deadline, and its timeout: the asked one, else the
    /// configured default, never over the maximum or under a millisecond.
    pub(super) fn deadline_of(&self, spec: &RequestSpec) -> (bool, Duration) {
        let no_deadline = spec.deadline == Deadline::None;
        let timeout = if no_deadline {
            super::NO_DEADLINE
        } else {
            spec.deadline
                .after()
                .unwrap_or(self.settings.request_timeout)
                .min(self.settings.max_request_timeout)
                .max(Duration::from_millis(1))
        };
        (no_deadline, timeout)
    }

    /// A new request where people look: its header in the computer's scrollback, its place in
    /// the computer's queue (unless it waits for approval or is local), and the log, which
    /// keeps only the one-line summary while the transcript keeps what ran in full.
    pub(super) fn record_start(&mut self, info: &PendingInfo, spec: &RequestSpec, queue: bool) {
        if let Some(c) = self.computers.get_mut(&info.trapos_id) {
            if !spec.mode.is_quiet() {
                let mut changes = Vec::new();
                c.output.push_to(
                    OutputEntry::Start(Box::new(StartEntry {
                        request_id: info.request_id.clone(),
                        origin: info.origin.clone(),
                        kind: info.kind,
                        summary: info.summary.clone(),
                        at: SystemTime::now(),
                    })),
                    self.history.is_some().then_some(&mut changes),
                );
                if let Some(h) = &self.history {
                    h.output(&info.trapos_id, changes);
                }
            }
            if let Some(conn) = c.conn.as_mut()
                && queue
                && !spec.mode.is_local()
            {
                conn.enqueue(info.request_id.clone(), spec.mode.is_detached());
            }
        }
        if spec.mode.is_quiet() && info.kind == Kind::Ping {
            // A quiet ping is a look (probe-computers' pings, the console's status every few
            // seconds while its Screen view is open), not an act: logging each would bury the
            // log and history.db in thousands of lines an hour.
            return;
        }
        let mut entry = State::entry(LogEvent::Request, info.summary.clone());
        entry.who = Some(info.origin.name().to_owned());
        entry.trapos_id = Some(info.trapos_id.clone());
        entry.request_id = Some(info.request_id.clone());
        entry.what = Some(info.kind.to_string());
        entry.status = Some(Status::Running);
        let extra = Extra {
            origin: Some(info.origin.clone()),
            args: Some(spec.payload.clone()),
            ..Default::default()
        };
        self.log_with(entry, extra);
    }

    /// Ends a pending request exactly once: removes it, frees its slot, records the outcome
    /// in the computer's output and the log, and hands the result to the waiter.
    pub fn finish(&mut self, id: &str, result: Result<Value, RequestError>) -> bool {
        let Some(mut p) = self.pending.remove(id) else {
            return false;
        };
        if let Some(key) = p.timer.take() {
            self.deadlines.remove(&key);
        }
        if self.approvals.take(id).is_some() {
            self.emit(Event::ApprovalAnswered {
                request_id: id.to_owned(),
            });
        }
        self.release(&p);
        let trapos_id = p.info.trapos_id.clone();
        if p.detached {
            let code = result.as_ref().map_or_else(RequestError::code, |_| "ok");
            self.runs.ended(id, code);
        }

        let output_len = self.show_unstreamed_output(&p, id, &result);

        let (status, mut summary) = summary::outcome(&result);
        let duration_ms = p.info.started.elapsed().as_millis() as u64;
        let ending = Ending {
            output: (result.is_err() && !p.live.is_empty()).then(|| p.live.text()),
            output_bytes: p.live.bytes(),
            output_lines: p.live.lines(),
            cancelled_by: p.cancel_by.clone(),
            elapsed_ms: duration_ms,
            result,
        };
        if status == Status::Cancelled {
            summary = ending.cancel_line();
        }
        if p.info.kind == Kind::Ping
            && status == Status::Ok
            && let (Some(sent), Some(c)) = (p.sent_at, self.computers.get_mut(&trapos_id))
        {
            c.info.last_rtt_ms = Some(sent.elapsed().as_millis() as u64);
        }
        self.record_end(&p, &ending, status, summary, output_len);
        if !p.local {
            self.finished.keep(&p, &ending, status);
        }
        if let Some(w) = p.waiter.take() {
            // The waiter may have gone (an abandoned call); the outcome is logged regardless.
            let _ = w.send(ending);
        }
        self.pump(&trapos_id);
        true
    }

    /// Shows the output the answer carries beyond what streamed live (a computer that sends
    /// no live `output` still gets its output shown); returns the answer's output length.
    fn show_unstreamed_output(
        &mut self,
        p: &Pending,
        id: &str,
        result: &Result<Value, RequestError>,
    ) -> usize {
        let final_output = match result {
            Ok(v) => v.get("output").and_then(Value::as_str),
            Err(e) => e.output(),
        };
        let live_bytes = p.live.bytes() + p.dropped_unlinked as usize;
        let output_len = final_output.map_or(0, str::len);
        if let Some(out) = final_output
            && !p.quiet
            && out.len() > live_bytes
            && let Some(rest) = out.get(live_bytes..)
        {
            self.push_output(&p.info.trapos_id, Some(id), Stream::Out, rest);
        }
        output_len
    }

    /// A request's end where people look: its computer's scrollback, the log and transcript,
    /// and the events the console and agents' subscriptions follow.
    fn record_end(
        &mut self,
        p: &Pending,
        ending: &Ending,
        status: Status,
        summary: String,
        output_len: usize,
    ) {
        if let Some(c) = self.computers.get_mut(&p.info.trapos_id)
            && !p.quiet
        {
            let mut changes = Vec::new();
            c.output.push_to(
                OutputEntry::End {
                    request_id: p.info.request_id.clone(),
                    status,
                    summary: summary.clone(),
                    duration_ms: ending.elapsed_ms,
                },
                self.history.is_some().then_some(&mut changes),
            );
            if let Some(h) = &self.history {
                h.output(&p.info.trapos_id, changes);
            }
        }
        if !(p.quiet && p.info.kind == Kind::Ping) {
            self.log_finished(p, ending, status, &summary, output_len);
        }
        self.emit(Event::RequestFinished {
            request_id: p.info.request_id.clone(),
            trapos_id: p.info.trapos_id.clone(),
            origin: p.info.origin.clone(),
            status,
            summary,
            duration_ms: ending.elapsed_ms,
        });
        self.emit(Event::ComputerChanged {
            trapos_id: p.info.trapos_id.clone(),
        });
    }

    /// The log's `finished` line of a request (see [`State::record_end`]).
    fn log_finished(
        &mut self,
        p: &Pending,
        ending: &Ending,
        status: Status,
        summary: &str,
        output_len: usize,
    ) {
        let mut entry = State::entry(LogEvent::Finished, summary.to_owned());
        entry.who = Some(p.info.origin.name().to_owned());
        entry.trapos_id = Some(p.info.trapos_id.clone());
        entry.request_id = Some(p.info.request_id.clone());
        entry.what = Some(p.info.kind.to_string());
        entry.status = Some(status);
        entry.duration_ms = Some(ending.elapsed_ms);
        let extra = Extra {
            origin: Some(p.info.origin.clone()),
            output_bytes: Some(output_len.max(p.live.bytes()) as u64),
            error: ending.result.as_ref().err().map(ToString::to_string),
            ..Extra::default()
        };
        self.log_with(entry, extra);
    }

    pub fn push_output(
        &mut self,
        trapos_id: &str,
        request_id: Option<&str>,
        stream: Stream,
        text: &str,
    ) {
        if text.is_empty() {
            return;
        }
        if let Some(c) = self.computers.get_mut(trapos_id) {
            let mut changes = Vec::new();
            c.output.push_text_to(
                request_id,
                stream,
                text,
                self.history.is_some().then_some(&mut changes),
            );
            if let Some(h) = &self.history {
                h.output(trapos_id, changes);
            }
        }
        // The broadcast keeps its last 4 096 events whoever reads them: a whole 1 MiB message
        // in each would be 4 GiB. Live views read the scrollback; the event carries a head.
        let mut cut = text.len().min(EVENT_TEXT_MAX);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.emit(Event::Output {
            trapos_id: trapos_id.to_owned(),
            request_id: request_id.map(str::to_owned),
            stream,
            text: text[..cut].to_owned(),
        });
    }

    /// Fails every request of a connection at once (disconnect or replacement).
    pub fn fail_conn(&mut self, conn_id: u64) {
        self.orphan_detached(conn_id);
        let ids: Vec<String> = self
            .pending
            .values()
            .filter(|p| p.conn_id == conn_id)
            .map(|p| p.info.request_id.clone())
            .collect();
        for id in ids {
            self.finish(&id, Err(RequestError::Disconnected));
        }
    }

    pub fn prune_offline(&mut self) {
        let mut offline: Vec<(SystemTime, String)> = self
            .computers
            .values()
            .filter(|c| c.conn.is_none())
            .map(|c| {
                (
                    c.info.disconnected_at.unwrap_or(SystemTime::UNIX_EPOCH),
                    c.info.trapos_id.clone(),
                )
            })
            .collect();
        if offline.len() <= OFFLINE_KEPT {
            return;
        }
        offline.sort();
        for (_, id) in offline.iter().take(offline.len() - OFFLINE_KEPT) {
            if let Some(c) = self.computers.remove(id) {
                self.seq_floor.keep(&c.info.trapos_id, c.output.next_seq());
                self.order.remove(&(c.info.id, c.info.trapos_id));
            }
        }
    }

    /// A new scrollback for `trapos_id`, numbered on from anything it had before.
    pub fn new_ring(&self, trapos_id: &str) -> OutputRing {
        let first = self.seq_floor.of(trapos_id).max(self.first_seq);
        OutputRing::starting_at(self.settings.scrollback_lines, first)
    }

    pub fn record_call(&mut self, call: ToolCall) {
        // Newest last, and the call being updated is nearly always one of the newest: search
        // from the back rather than through up to 500 older ones.
        if let Some(existing) = self
            .tool_calls
            .iter_mut()
            .rev()
            .find(|c| c.call_id == call.call_id)
        {
            *existing = call;
        } else {
            self.tool_calls.push_back(call);
            while self.tool_calls.len() > TOOL_CALLS_KEPT {
                self.tool_calls.pop_front();
            }
        }
    }
}

//! The state behind the session's mutex and the operations that keep it consistent: a link's
//! end, logging, the log's entries. A request's way (admitted, started, its deadline kept,
//! finished exactly once) is `request.rs`, its sending `send.rs`; the parts the state holds (a
//! computer, its link, a pending request) are `parts.rs`; finding the computer a name means is
//! `names.rs`, functions of the computers' table alone, which `State::resolve` lends to the
//! rest of the session.
//!
//! Every function here runs with the lock held and never awaits; the lock is a
//! `std::sync::Mutex` because no critical section crosses an `.await`.

mod parts;
mod request;
mod send;

use crate::session::LogEvent;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::SystemTime;

use tokio::sync::broadcast;
use tokio::time::Instant;

use super::model::{Event, LogEntry, RequestError, ToolCall, epoch_ms};
use super::output::OutputRing;
use super::transcript::{Extra, Transcript};
use crate::config::Settings;

#[cfg(test)]
pub(crate) use parts::SEQ_FLOORS_KEPT;
pub(crate) use parts::{
    Computer, Conn, DeadlineKey, HARD_ABORT_AFTER, ORPHANED, Pending, SeqFloors,
};
pub use parts::{EVENT_TEXT_MAX, Outbound, OutputChunk};
pub(crate) use request::{Admitted, Wake};

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
    next_log: u64,
    pub next_call: u64,
    transcript: Transcript,
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
    /// This host start's part of every request id (see [`run_tag`]).
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
    /// The computer ids whose computers live in this host's process (`--demo`): their
    /// detached runs end with the host (see `history::runs`).
    pub in_process: std::collections::HashSet<u64>,
    /// Requests that timed out without stopping, oldest first: id, computer, when (see
    /// `stopping.rs`).
    pub unstopped: VecDeque<(String, String, Instant)>,
    /// The first number of this start's output entries (see `history`).
    first_seq: u64,
    /// Pending requests' deadlines, earliest first: the request id and its timeout (for the
    /// error). One task (`reap` in `mod.rs`) ends each when it passes. Changed only by the
    /// operations that set or clear a pending request's `timer` (`request.rs`), which it
    /// mirrors.
    deadlines: std::collections::BTreeMap<DeadlineKey, (String, std::time::Duration)>,
    /// Whether that task was started (at the first deadline: a session is made outside a
    /// runtime in places).
    reaping: bool,
}

/// Tool calls kept for the activity pane.
const TOOL_CALLS_KEPT: usize = 500;
/// Unlinked computers kept for display.
const OFFLINE_KEPT: usize = 32;

impl State {
    /// The state of a new session (see `Session::new`): with `persist`, the transcript is
    /// written to the data directory, and with `history` on, output, the log and the transcript
    /// go to `history.db` there too: the log starts with what the database kept.
    pub fn new(settings: Settings, persist: bool, events: broadcast::Sender<Event>) -> State {
        let history = (persist && settings.history)
            .then(
                || match super::history::History::open(&settings.data_dir, &settings) {
                    Ok(h) => Some(std::sync::Arc::new(h)),
                    Err(e) => {
                        tracing::warn!("history off: {e}");
                        None
                    }
                },
            )
            .flatten();
        let transcript = Transcript::open(
            persist.then_some(settings.data_dir.as_path()),
            settings.transcript_max_bytes,
            settings.transcript_keep,
            settings.transcript_queue,
            history.clone(),
            settings.transcript_full_text,
        );
        let first_seq = history.as_ref().map_or(1, |h| h.first_seq());
        let recent: VecDeque<LogEntry> = history
            .as_ref()
            .map(|h| h.recent_log(settings.recent_events).into())
            .unwrap_or_default();
        let mut runs =
            super::history::runs::Runs::open(persist.then_some(settings.data_dir.as_path()));
        let run_tag = run_tag(SystemTime::now());
        let gone = runs.began(&run_tag);
        let mut st = State {
            settings,
            computers: HashMap::new(),
            order: BTreeSet::new(),
            conns: HashMap::new(),
            pending: HashMap::new(),
            recent,
            tool_calls: VecDeque::new(),
            next_conn: 1,
            next_request: 1,
            next_log: first_seq,
            next_call: 1,
            transcript,
            events,
            shutting_down: false,
            approvals: Default::default(),
            paused: None,
            keyboard: HashMap::new(),
            finished: Default::default(),
            run_tag,
            history,
            seq_floor: Default::default(),
            runs,
            claims_dropped: (0, None),
            in_process: Default::default(),
            unstopped: VecDeque::new(),
            first_seq,
            deadlines: Default::default(),
            reaping: false,
        };
        for r in gone {
            let mut entry = State::entry(
                LogEvent::Lost,
                "the detached run ended with the host that ran its computer in its process",
            );
            entry.trapos_id = Some(r.trapos_id);
            entry.request_id = Some(r.id);
            st.log(entry);
        }
        st
    }

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

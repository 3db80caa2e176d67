//! The state behind the session's mutex and the operations that keep it consistent: made,
//! logged, gated, a link's end, sending. A request's way (admitted, started, its deadline
//! kept, finished exactly once) is `request.rs`. The rest are parts, each keeping its own
//! fields and invariant, which these operations call into (a part never reaches into the
//! state): the gate (`gatekeeper.rs`), the deadlines that mirror pending requests' timers
//! (`deadlines.rs`), the log (`log.rs`), the tool calls (`calls.rs`), a link's queue sent
//! (`send.rs`), what outlives a request (`detached/store.rs`), and a computer, its link and a
//! pending request (`parts.rs`). Finding the computer a name means is `names.rs`, which
//! `State::resolve` lends to the rest of the session.
//!
//! Every function here runs with the lock held and never awaits; the lock is a
//! `std::sync::Mutex` because no critical section crosses an `.await`.

mod calls;
mod computers;
mod deadlines;
mod gatekeeper;
mod log;
mod parts;
mod request;
mod send;

use crate::session::LogEvent;
use std::collections::{HashMap, VecDeque};
use std::time::SystemTime;

use tokio::sync::broadcast;
use tokio::time::Instant;

use super::model::{Event, LogEntry, RequestError};
use super::output::OutputRing;
use super::transcript::Extra;
use crate::config::Settings;
use crate::policy::{Action, Decided, Target};
use trapdesk_proto::protocol::RequestBody;

use super::approval::Gate;
use super::model::Origin;

pub(crate) use computers::Computers;
pub(crate) use deadlines::Wake;
#[cfg(test)]
pub(crate) use parts::SEQ_FLOORS_KEPT;
pub(crate) use parts::{
    Admitted, Computer, Conn, DeadlineKey, ORPHANED, Pending, SeqFloors, run_tag,
};
pub use parts::{EVENT_TEXT_MAX, Outbound, OutputChunk};

pub(crate) struct State {
    pub settings: Settings,
    /// The computers, their order and their live connections, kept in step (see
    /// `computers.rs`).
    pub computers: Computers,
    pub pending: HashMap<String, Pending>,
    /// Agents' tool calls (see `calls.rs`).
    pub calls: calls::ToolCalls,
    next_conn: u64,
    next_request: u64,
    /// The session log (see `log.rs`).
    log: log::Log,
    events: broadcast::Sender<Event>,
    shutting_down: bool,
    /// The policy's gate: approvals, the stop for all agents, the keyboards (see
    /// `gatekeeper.rs`).
    pub gate: gatekeeper::Gatekeeper,
    /// Ended requests' results and the record of detached runs (see `detached/store.rs`).
    pub store: super::detached::RunStore,
    /// This host start's part of every request id (see `parts::run_tag`).
    run_tag: String,
    /// `history.db`, when the host keeps history (see `history`).
    history: Option<std::sync::Arc<super::history::History>>,
    /// Where a computer's scrollback numbering goes on when it links again after its ring was
    /// dropped (`prune_offline`): a cursor never means two lines.
    seq_floor: SeqFloors,
    /// The first number of this start's output entries (see `history`).
    first_seq: u64,
    /// Pending requests' deadlines, which mirror their `timer`s (see `deadlines.rs`).
    deadlines: deadlines::Deadlines,
}

/// Unlinked computers kept for display.
const OFFLINE_KEPT: usize = 32;

impl State {
    /// The state of a new session (see `Session::new`): with `persist`, the transcript is
    /// written to the data directory, and with `history` on, output, the log and the transcript
    /// go to `history.db` there too: the log starts with what the database kept.
    pub fn new(settings: Settings, persist: bool, events: broadcast::Sender<Event>) -> State {
        let (log, history, first_seq) = log::Log::open(&settings, persist);
        let mut runs =
            super::history::runs::Runs::open(persist.then_some(settings.data_dir.as_path()));
        let run_tag = run_tag(SystemTime::now());
        let gone = runs.began(&run_tag);
        let mut st = State {
            settings,
            computers: Computers::default(),
            pending: HashMap::new(),
            calls: Default::default(),
            next_conn: 1,
            next_request: 1,
            log,
            events,
            shutting_down: false,
            gate: Default::default(),
            store: super::detached::RunStore::new(runs),
            run_tag,
            history,
            seq_floor: Default::default(),
            first_seq,
            deadlines: Default::default(),
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

    /// The id and label a rule may name `trapos_id` by: the linked computer's, else (one only
    /// the history or the log knows) as the traposId spells them.
    pub(crate) fn target_of(&self, trapos_id: &str) -> (u64, Option<String>) {
        if let Some(c) = self.computers.get(trapos_id) {
            return (c.info.id, c.info.label.clone());
        }
        let (id, label) = trapos_id.split_once(':').unwrap_or((trapos_id, ""));
        let label = (!label.is_empty()).then(|| label.to_owned());
        (id.parse().unwrap_or(0), label)
    }

    /// The policy's decision for `origin` doing `action` on `trapos_id`, with the person's
    /// session grants applied (see `Gatekeeper::decide`).
    pub(crate) fn decide(&self, origin: &Origin, trapos_id: &str, action: Action) -> Decided {
        let (id, label) = self.target_of(trapos_id);
        let target = Target {
            trapos_id,
            id,
            label: label.as_deref(),
        };
        self.gate
            .decide(&self.settings.policy, target, origin, action)
    }

    /// Checks a request before it starts (see `Gatekeeper::check`); a refusal is logged.
    pub(crate) fn gate(
        &mut self,
        origin: &Origin,
        trapos_id: &str,
        body: &RequestBody,
    ) -> Result<Gate, RequestError> {
        let (id, label) = self.target_of(trapos_id);
        let target = Target {
            trapos_id,
            id,
            label: label.as_deref(),
        };
        let refused = match self.gate.check(&self.settings.policy, target, origin, body) {
            Ok(gate) => return Ok(gate),
            Err(refused) => refused,
        };
        let mut entry = State::entry(LogEvent::Refused, refused.to_string());
        entry.who = Some(origin.name().to_owned());
        entry.trapos_id = Some(trapos_id.to_owned());
        entry.what = Some(body.kind().to_string());
        self.log(entry);
        Err(refused)
    }

    /// A new link's number.
    pub(crate) fn new_conn_id(&mut self) -> u64 {
        self.next_conn += 1;
        self.next_conn - 1
    }

    /// From here on, new requests are refused.
    pub(crate) fn shut_down(&mut self) {
        self.shutting_down = true;
    }

    /// What became of `id`, neither pending nor kept (see `detached/fate.rs`).
    pub(crate) fn fate(&self, id: &str) -> super::detached::Fate {
        self.store.fate(id, &self.run_tag, self.next_request)
    }

    /// This host start's part of every request id (see `run_tag`).
    pub(crate) fn run_tag(&self) -> &str {
        &self.run_tag
    }

    /// Computers whose own scrollback numbering is kept.
    pub(crate) fn seq_floors(&self) -> usize {
        self.seq_floor.len()
    }

    /// Whether a live view (the console, a `wait-request`) follows the events.
    pub(crate) fn watched(&self) -> bool {
        self.events.receiver_count() > 0
    }

    /// `history.db`, when the host keeps history.
    pub(crate) fn history(&self) -> Option<&std::sync::Arc<super::history::History>> {
        self.history.as_ref()
    }

    pub fn emit(&self, event: Event) {
        // No subscriber is fine: events are for live views only.
        let _ = self.events.send(event);
    }

    pub fn log(&mut self, entry: LogEntry) {
        self.log_with(entry, Extra::default());
    }

    /// Logs an entry whose transcript line carries more than the log keeps (see [`Extra`]).
    pub fn log_with(&mut self, entry: LogEntry, extra: Extra) {
        let to = log::Sinks {
            settings: &self.settings,
            history: self.history.as_deref(),
            events: &self.events,
        };
        self.log.write(entry, extra, &to);
    }

    /// The newest log entries, oldest first.
    pub fn recent(&self) -> &VecDeque<LogEntry> {
        self.log.recent()
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
        let id = self.computers.get(trapos_id).map_or(0, |c| c.info.id);
        let off = parts::hard_abort(self.pending.values(), (id, trapos_id), conn_id, &reason);
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

    /// Sends queued requests of a computer while it has free slots (see
    /// [`Conn::send_queued`]); a full channel unlinks it ([`State::overflowed`]).
    pub fn pump(&mut self, trapos_id: &str) {
        let max = self.settings.max_in_flight;
        let Some(conn) = self
            .computers
            .get_mut(trapos_id)
            .and_then(|c| c.conn.as_mut())
        else {
            return;
        };
        if let Err(send::Full) = conn.send_queued(&mut self.pending, max) {
            let conn_id = conn.id;
            self.overflowed(trapos_id, conn_id);
        }
        if let Some(c) = self.computers.get_mut(trapos_id) {
            c.show_counts();
        }
    }

    /// Sends `msg` to the computer's connection `conn_id` if it is still the current one. A
    /// full queue unlinks it (see [`State::overflowed`]); a closed one is already unlinking.
    pub fn send_to(&mut self, trapos_id: &str, conn_id: u64, msg: Outbound) {
        let Some(conn) = self
            .computers
            .get(trapos_id)
            .and_then(|c| c.conn.as_ref())
            .filter(|c| c.id == conn_id)
        else {
            return;
        };
        if let Err(tokio::sync::mpsc::error::TrySendError::Full(_)) = conn.tx.try_send(msg) {
            self.overflowed(trapos_id, conn_id);
        }
    }

    /// The connection's outbound queue is full: its socket has not taken a message for as long
    /// as `outbound_queue` messages took to pile up, so the computer is not reading. It is
    /// unlinked like a dropped link (its requests end `disconnected`); dropping the sender ends
    /// the connection task once it has written what it holds.
    pub(crate) fn overflowed(&mut self, trapos_id: &str, conn_id: u64) {
        let limit = self.settings.outbound_queue;
        tracing::warn!(computer = %trapos_id, limit, "unlinked: outbound queue full (the computer is not reading)");
        self.computers.disconnect(conn_id);
        self.unlink(
            trapos_id,
            conn_id,
            format!("outbound queue full ({limit} messages): the computer is not reading"),
        );
    }

    /// The detached runs sent on connection `conn_id` lose it but stay pending: the computer
    /// keeps running them and names them when it links again ([`Session::adopt`]). Those not
    /// sent yet are left to end with the link, as ordinary requests do.
    fn orphan_detached(&mut self, conn_id: u64) {
        let mut orphaned = Vec::new();
        for p in self.pending.values_mut() {
            if p.conn_id == conn_id && p.detached && p.info.sent {
                p.conn_id = ORPHANED;
                orphaned.push((p.info.trapos_id.clone(), p.info.request_id.clone()));
            }
        }
        for (trapos_id, id) in orphaned {
            if let Some(c) = self.computers.get_mut(&trapos_id)
                && let Some(conn) = c.conn.as_mut()
                && conn.id == conn_id
            {
                conn.detached = conn.detached.saturating_sub(1);
                c.show_counts();
            }
            let mut entry = State::entry(
                LogEvent::Detached,
                "link down: the detached run goes on on the computer, taken back when it links again",
            );
            entry.trapos_id = Some(trapos_id);
            entry.request_id = Some(id);
            self.log(entry);
        }
        self.bound_orphans();
    }

    /// Detached runs of a computer that are pending, sent or not.
    pub(crate) fn detached_on(&self, trapos_id: &str) -> usize {
        self.pending
            .values()
            .filter(|p| p.detached && p.info.trapos_id == trapos_id)
            .count()
    }

    /// Keeps at most [`super::detached::ORPHANS_KEPT`] detached runs whose link is down: the oldest beyond it
    /// end as `lost`.
    fn bound_orphans(&mut self) {
        let mut orphans: Vec<(Instant, String)> = self
            .pending
            .values()
            .filter(|p| p.detached && p.conn_id == ORPHANED)
            .map(|p| (p.info.started, p.info.request_id.clone()))
            .collect();
        let kept = super::detached::ORPHANS_KEPT;
        if orphans.len() <= kept {
            return;
        }
        orphans.sort();
        let over = orphans.len() - kept;
        for (_, id) in orphans.into_iter().take(over) {
            self.finish(
                &id,
                Err(RequestError::Lost {
                    reason: "not_followed",
                    message: format!(
                        "the host keeps at most {kept} detached runs whose computer is \
                         away, and this was the oldest: it may still run on its computer, but \
                         this host no longer follows it"
                    ),
                }),
            );
        }
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
            }
        }
    }

    /// A new scrollback for `trapos_id`, numbered on from anything it had before.
    pub fn new_ring(&self, trapos_id: &str) -> OutputRing {
        let first = self.seq_floor.of(trapos_id).max(self.first_seq);
        OutputRing::starting_at(self.settings.scrollback_lines, first)
    }
}

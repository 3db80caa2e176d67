//! The session: the one hub of state that the gateway, the console and the MCP endpoint share.
//!
//! The gateway links computers into it ([`link`]); everyone else asks it to run requests, to
//! cancel them, and for snapshots of what is linked, pending and printed. Changes go out as
//! [`Event`]s on a broadcast; a subscriber that lags re-reads snapshots, and outcomes never
//! depend on the broadcast because they go to each request's waiter.

mod activity;
pub mod approval;
pub mod captured;
pub mod detached;
pub mod devices;
pub mod fleet;
mod gate;
pub mod history;
pub mod link;
pub mod model;
mod names;
pub mod output;
mod output_view;
pub mod pause;
pub mod screen;
mod state;
mod stopping;
pub mod summary;
#[cfg(test)]
mod tests;
pub mod throttle;
mod ticket;
pub mod transcript;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;

pub use approval::{Answer, AnswerError, Approval};
pub use detached::{Bookkeeping, FinishedRequest, RequestState};
pub use devices::{DeviceError, DeviceStatus, Fuel, PeripheralInfo, TurtleInfo, TurtleSlot};
pub use gate::ApproverGuard;
pub use link::{Link, Relabelled};
pub use model::*;
pub use state::{Outbound, OutputChunk};
pub use ticket::Ticket;

use state::{Pending, State};

use crate::config::Settings;

/// Where a request without a deadline has its `deadline` (it is never waited for): far enough
/// to mean never, near enough that adding it to an `Instant` cannot overflow.
const NO_DEADLINE: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// The order of `Session::computers`: online first, then by id and traposId. A console that
/// takes changed entries one by one sorts its list with it, to keep the host's order.
pub fn computer_order(a: &ComputerInfo, b: &ComputerInfo) -> std::cmp::Ordering {
    b.online
        .cmp(&a.online)
        .then(a.id.cmp(&b.id))
        .then(a.trapos_id.cmp(&b.trapos_id))
}

/// Cheap, clonable handle to the shared session.
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the deadline task (`reap`) when a deadline earlier than all others comes.
    deadlines: Arc<tokio::sync::Notify>,
    events: broadcast::Sender<Event>,
    /// Terminal mirrors, apart from `state` so that screen updates never wait on it.
    screens: Mutex<screen::Screens>,
    /// How many refused links are logged one by one (see [`throttle`]).
    refusals: throttle::Throttle,
}

impl Session {
    /// A session with the given limits. With `persist`, the transcript is written to the data
    /// directory, and with `history` on, output, the log and the transcript go to `history.db`
    /// there too (see [`history`]): the log starts with what the database kept.
    pub fn new(settings: Settings, persist: bool) -> Session {
        let (events, _) = broadcast::channel(4096);
        let state = State::new(settings, persist, events.clone());
        Session {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                deadlines: Arc::default(),
                events,
                screens: Mutex::new(screen::Screens::default()),
                refusals: throttle::Throttle::new(throttle::LINK_REFUSALS_PER_MINUTE),
            }),
        }
    }

    /// Locks the state. A panic while the lock was held cannot leave it half-updated in a way
    /// that matters more than stopping, so a poisoned lock is simply taken over.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn settings(&self) -> Settings {
        self.lock().settings.clone()
    }

    /// Live notifications. See [`Event`].
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.shared.events.subscribe()
    }

    /// Resolves what a caller typed (full traposId, bare id, unique label) to a linked traposId.
    ///
    /// # Errors
    /// [`RequestError::UnknownComputer`] or [`RequestError::Ambiguous`], listing the candidates.
    pub fn resolve(&self, query: &str) -> Result<String, RequestError> {
        self.lock().resolve(query)
    }

    /// Starts a request and returns at once with its ticket.
    ///
    /// # Errors
    /// When the target matches no linked computer (or several), when its queue is full, or when
    /// the host is shutting down. Everything later arrives through [`Ticket::wait`].
    pub fn start(
        &self,
        target: &str,
        spec: RequestSpec,
        origin: Origin,
    ) -> Result<Ticket, RequestError> {
        let mut st = self.lock();
        let state::Admitted {
            trapos_id,
            conn_id,
            gate,
        } = st.admit(target, &spec, &origin)?;
        let (info, timeout) = st.new_info(&trapos_id, origin, &spec, &gate);
        let id = info.request_id.clone();
        let deadline = (!info.no_deadline).then_some(info.deadline);
        let approval = match &gate {
            approval::Gate::Ask(d) => Some(Approval::of(&info, &spec, d)),
            approval::Gate::Go => None,
        };
        let (tx, rx) = oneshot::channel();
        let (out_tx, out_rx) = if spec.mode.streams() {
            let (a, b) = mpsc::channel(st.settings.stream_buffer.max(2));
            (Some(a), Some(b))
        } else {
            (None, None)
        };
        // Recorded before the request is kept, so that the request (its payload, a whole file
        // for write-file) moves into it rather than being copied; it is sent by `pump` below.
        st.record_start(&info, &spec, approval.is_none());
        if spec.mode.is_detached() {
            st.store.started(&info);
        }
        let event = st.watched().then(|| info.clone());
        st.pending.insert(
            id.clone(),
            Pending {
                info,
                conn_id,
                body: Some(spec.body),
                as_written: spec.as_written,
                waiter: Some(tx),
                output_tx: out_tx,
                output_dropped: 0,
                timer: None,
                sent_at: None,
                live: Default::default(),
                cancel_by: None,
                quiet: spec.mode.is_quiet(),
                local: spec.mode.is_local(),
                detached: spec.mode.is_detached(),
                dropped_unlinked: 0,
                timed_out: None,
                stopped: None,
            },
        );
        // The session, not the caller, owns the deadline, so an abandoned caller cannot leave
        // a request pending forever. A run without a deadline has no timer: it ends when it
        // ends, is cancelled, or its computer goes away.
        if let Some(at) = deadline {
            self.expire_after(&mut st, &id, at, timeout);
        }
        if let Some(info) = event {
            st.emit(Event::RequestStarted { info });
        }
        match approval {
            Some(a) => st.ask(a),
            None if spec.mode.is_local() => {
                st.finish(&id, Ok(Value::Null));
            }
            None => st.pump(&trapos_id),
        }
        drop(st);
        Ok(Ticket {
            id,
            trapos_id,
            outcome: Some(rx),
            output: out_rx,
            session: self.clone(),
        })
    }

    /// Ends request `id` with a timeout at `at` unless it ends first: its key in the session's
    /// deadlines, which one task for the whole session (`reap`) keeps. A task per request
    /// (spawned, then aborted when the request ended) woke the runtime's other worker twice
    /// for every request.
    fn expire_after(&self, st: &mut State, id: &str, at: Instant, timeout: Duration) {
        match st.set_deadline(id, at, timeout) {
            state::Wake::Start => {
                tokio::spawn(reap(
                    Arc::downgrade(&self.shared),
                    self.shared.deadlines.clone(),
                ));
            }
            state::Wake::Earlier => self.shared.deadlines.notify_one(),
            state::Wake::Later => {}
        }
    }

    /// Starts a request and waits for its outcome.
    ///
    /// # Errors
    /// As [`Session::start`] and [`Ticket::wait`].
    pub async fn request(
        &self,
        target: &str,
        spec: RequestSpec,
        origin: Origin,
    ) -> Result<Value, RequestError> {
        self.start(target, spec, origin)?.wait().await
    }

    /// Cancels a request because its requester went away (the ticket was dropped unfinished).
    pub(crate) fn abandon(&self, request_id: &str) {
        let by = {
            let st = self.lock();
            st.pending
                .get(request_id)
                .map(|p| format!("its requester {} (it went away)", p.info.origin.name()))
        };
        // Already finished is fine: then there is nothing to cancel.
        let _ = self.cancel_as(request_id, by);
    }

    /// Ends every request whose deadline has passed; the earliest deadline left, if any.
    fn expire_due(&self) -> Option<Instant> {
        let now = Instant::now();
        loop {
            let due = self.lock().take_due(now);
            match due {
                Ok((id, timeout)) => self.expire(&id, timeout),
                Err(next) => return next,
            }
        }
    }

    fn expire(&self, id: &str, timeout: Duration) {
        let mut st = self.lock();
        if let Some(grace) = stopping::time_out(&mut st, id, timeout) {
            self.expire_after(&mut st, id, grace, timeout);
        }
    }

    /// Cancels a pending request, whoever started it. A request still waiting on the host ends
    /// at once; one running on the computer is asked to stop and ends when the computer says so
    /// (with its output so far), or at its deadline.
    ///
    /// # Errors
    /// When no request with that id is pending.
    pub fn cancel(&self, request_id: &str) -> Result<(), CancelError> {
        self.cancel_as(request_id, None)
    }

    /// [`Session::cancel`], recording who cancelled, so that the requester's result and the
    /// log say it (an agent that reads "cancelled by the person" knows not to retry).
    ///
    /// # Errors
    /// When no request with that id is pending.
    pub fn cancel_by(&self, request_id: &str, by: &Origin) -> Result<(), CancelError> {
        self.cancel_as(request_id, Some(by.name().to_owned()))
    }

    fn cancel_as(&self, request_id: &str, by: Option<String>) -> Result<(), CancelError> {
        let mut st = self.lock();
        let Some(p) = st.pending.get_mut(request_id) else {
            return Err(CancelError::NotPending(request_id.to_owned()));
        };
        // The first to ask is the one who cancelled it.
        if p.cancel_by.is_none() {
            p.cancel_by = by;
        }
        // Not sent, or a detached run whose link is down: nobody to ask, so it ends now (the
        // computer is told when it names the run again, see `detached.rs`).
        if !p.info.sent || p.conn_id == state::ORPHANED {
            st.finish(request_id, Err(RequestError::Cancelled { output: None }));
            return Ok(());
        }
        p.info.cancel_requested = true;
        let (trapos_id, conn_id) = (p.info.trapos_id.clone(), p.conn_id);
        // A closed connection fails the request as disconnected anyway.
        st.send_to(
            &trapos_id,
            conn_id,
            Outbound::Cancel {
                id: request_id.to_owned(),
            },
        );
        st.emit(Event::ComputerChanged { trapos_id });
        Ok(())
    }

    /// Cancels every pending request of `origin` (a removed named agent); returns how many.
    pub fn cancel_all_of(&self, origin: &Origin) -> usize {
        let ids: Vec<String> = self
            .lock()
            .pending
            .values()
            .filter(|p| &p.info.origin == origin)
            .map(|p| p.info.request_id.clone())
            .collect();
        ids.iter().filter(|id| self.cancel(id).is_ok()).count()
    }

    /// [`Session::cancel_all_of`], saying what cancelled them (`the removal of agent x`), so
    /// that the console and the result say why and not only "cancelled after 1.1 s".
    pub fn cancel_all_of_by(&self, origin: &Origin, by: &str) -> usize {
        let ids: Vec<String> = self
            .lock()
            .pending
            .values()
            .filter(|p| &p.info.origin == origin)
            .map(|p| p.info.request_id.clone())
            .collect();
        ids.iter()
            .filter(|id| self.cancel_as(id, Some(by.to_owned())).is_ok())
            .count()
    }

    /// Linked computers, then recently unlinked ones, each group by traposId.
    pub fn computers(&self) -> Vec<ComputerInfo> {
        let st = self.lock();
        let mut list: Vec<ComputerInfo> = st.computers.values().map(|c| c.info.clone()).collect();
        list.sort_by(computer_order);
        list
    }

    /// One computer, linked or recently unlinked.
    pub fn computer(&self, trapos_id: &str) -> Option<ComputerInfo> {
        self.lock().computers.get(trapos_id).map(|c| c.info.clone())
    }

    /// Pending requests, oldest first.
    pub fn pending(&self) -> Vec<PendingInfo> {
        let st = self.lock();
        let mut list: Vec<PendingInfo> = st.pending.values().map(|p| p.info.clone()).collect();
        list.sort_by_key(|p| p.started);
        list
    }

    /// The most recent `limit` log entries, oldest first.
    pub fn recent(&self, limit: usize) -> Vec<LogEntry> {
        let st = self.lock();
        let skip = st.recent().len().saturating_sub(limit);
        st.recent().iter().skip(skip).cloned().collect()
    }

    /// The whole recent log, oldest first, with the agents' tool calls, read at one moment so
    /// that every request a running call made is in both (a view folds them into one entry per
    /// call: MCP's `session-log`).
    pub fn log_and_calls(&self) -> (Vec<LogEntry>, Vec<ToolCall>) {
        let st = self.lock();
        let calls = st.calls.iter().cloned().collect();
        (st.recent().iter().cloned().collect(), calls)
    }

    /// Up to `limit` log entries older than the cursor `before` (the newest when `None`),
    /// oldest first, with the cursor for the page before them (`None` when nothing older is
    /// kept).
    pub fn log_page(&self, limit: usize, before: Option<u64>) -> (Vec<LogEntry>, Option<u64>) {
        let st = self.lock();
        let end = match before {
            Some(b) => st.recent().partition_point(|e| e.seq < b),
            None => st.recent().len(),
        };
        let start = end.saturating_sub(limit);
        let page: Vec<LogEntry> = st.recent().range(start..end).cloned().collect();
        let cursor = (start > 0).then(|| page.first().map(|e| e.seq)).flatten();
        (page, cursor)
    }

    /// The traposId a computer query or a request id refers to, even after it unlinked.
    pub fn known_computer(&self, query: &str) -> Option<String> {
        let st = self.lock();
        if st.computers.contains_key(query) {
            return Some(query.to_owned());
        }
        if let Ok(found) = st.resolve(query) {
            return Some(found);
        }
        // One whose output the history keeps (from before a restart), by its full id.
        let history = st.history().cloned();
        drop(st);
        history
            .filter(|h| h.knows_computer(query))
            .map(|_| query.to_owned())
    }

    /// Refuses new requests and fails the pending ones (a detached run on its computer goes on
    /// and stays pending); connections are closed by the gateway.
    pub fn shutdown(&self) {
        let mut st = self.lock();
        st.shut_down();
        let ids: Vec<String> = st.pending.keys().cloned().collect();
        for id in ids {
            // A detached run on its computer does not end with the host: the next host takes
            // it back (docs/protocol.md, "Detached runs"). Logged, not finished.
            if let Some(p) = st.pending.get(&id)
                && p.detached
                && p.info.sent
            {
                let mut entry = State::entry(
                    LogEvent::Detached,
                    "host stopping: the detached run goes on on the computer; the next host takes it back",
                );
                entry.trapos_id = Some(p.info.trapos_id.clone());
                entry.request_id = Some(id.clone());
                st.log(entry);
                continue;
            }
            st.finish(&id, Err(RequestError::ShuttingDown));
        }
    }
}

/// The session's deadline task: sleeps until the earliest deadline and ends what is due; a new
/// earliest deadline wakes it. It holds the session only while it works, so that a session
/// nobody holds any more is dropped (and its transcript drained) as before.
async fn reap(shared: std::sync::Weak<Shared>, wake: Arc<tokio::sync::Notify>) {
    loop {
        let next = match shared.upgrade() {
            Some(shared) => Session { shared }.expire_due(),
            None => return,
        };
        match next {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}

/// Why a cancel did nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CancelError {
    #[error("no pending request {0:?} (it may have finished already)")]
    NotPending(String),
}

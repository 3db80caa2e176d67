//! Detached runs and what outlives a request: runs that keep going when their requester, their
//! link or the host goes away, the results `wait-request` gives after the end, and the
//! adoption of the runs a computer kept through a dropped link (docs/protocol.md, "Detached
//! runs"; docs/mcp.md, "Detached runs").

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::time::Instant;

use super::Session;
use super::link::Link;
use super::model::{
    Ending, Event, OutputEntry, PendingInfo, RequestError, StartEntry, Status, Stream,
};
use super::state::{ORPHANED, Outbound, Pending, State};
use crate::protocol::{DetachedRun, Kind};

/// Ended requests kept for `wait-request`: the most recent this many detached runs, and as
/// many other requests (apart, so that a fleet's pings never push a detached run's result out)…
pub const FINISHED_KEPT: usize = 64;
/// …each for at most this long after it ended.
pub const FINISHED_FOR: Duration = Duration::from_secs(15 * 60);

/// An ended request as `wait-request` gives it.
#[derive(Debug, Clone)]
pub struct FinishedRequest {
    pub request_id: String,
    pub trapos_id: String,
    pub kind: Kind,
    pub status: Status,
    pub ending: Ending,
    pub ended: Instant,
}

/// The last [`FINISHED_KEPT`] ended detached runs and other requests, none older than
/// [`FINISHED_FOR`]. Pings and the console's own housekeeping (`quiet`) are not kept.
#[derive(Debug, Default)]
pub struct Finished {
    detached: VecDeque<FinishedRequest>,
    other: VecDeque<FinishedRequest>,
}

impl Finished {
    pub(super) fn keep(&mut self, p: &Pending, ending: &Ending, status: Status) {
        if p.quiet || p.info.kind == Kind::Ping {
            return;
        }
        self.prune();
        let list = if p.detached {
            &mut self.detached
        } else {
            &mut self.other
        };
        list.push_back(FinishedRequest {
            request_id: p.info.request_id.clone(),
            trapos_id: p.info.trapos_id.clone(),
            kind: p.info.kind,
            status,
            ending: ending.clone(),
            ended: Instant::now(),
        });
        while list.len() > FINISHED_KEPT {
            list.pop_front();
        }
    }

    fn prune(&mut self) {
        for list in [&mut self.detached, &mut self.other] {
            while list
                .front()
                .is_some_and(|f| f.ended.elapsed() > FINISHED_FOR)
            {
                list.pop_front();
            }
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<&FinishedRequest> {
        self.detached
            .iter()
            .chain(self.other.iter())
            .find(|f| f.request_id == id && f.ended.elapsed() <= FINISHED_FOR)
    }
}

/// Where a request stands, for `wait-request` and `computer-output`.
#[derive(Debug, Clone)]
pub enum RequestState {
    /// Still pending (waiting for approval, queued, running, or a detached run whose link is
    /// down).
    Running { trapos_id: String, kind: Kind },
    /// Ended, with its result.
    Ended(Box<FinishedRequest>),
}

impl State {
    /// The detached runs sent on connection `conn_id` lose it but stay pending: the computer
    /// keeps running them and names them when it links again ([`Session::adopt`]). Those not
    /// sent yet are left to end with the link, as ordinary requests do.
    pub(super) fn orphan_detached(&mut self, conn_id: u64) {
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
                "detached",
                "link down: the detached run goes on on the computer, taken back when it links again",
            );
            entry.trapos_id = Some(trapos_id);
            entry.request_id = Some(id);
            self.log(entry);
        }
    }

    /// Detached runs of a computer that are pending, sent or not.
    pub(super) fn detached_on(&self, trapos_id: &str) -> usize {
        self.pending
            .values()
            .filter(|p| p.detached && p.info.trapos_id == trapos_id)
            .count()
    }
}

impl Session {
    /// Takes back the detached runs a computer names in its hello (`runs`) on its new link:
    /// one this host still has pending goes on under its requestId; one it never saw (the
    /// host restarted) is adopted under the computer's id; a pending detached run of this
    /// computer that it does not name is gone (it restarted meanwhile) and fails as `lost`.
    /// Their output and answers come on the new link like any request's.
    pub fn adopt(&self, link: &Link, runs: Vec<DetachedRun>) {
        let trapos_id = link.trapos_id().to_owned();
        let conn_id = link.conn_id();
        let mut st = self.lock();
        let named: std::collections::HashSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        let gone: Vec<String> = st
            .pending
            .values()
            .filter(|p| {
                p.detached
                    && p.conn_id == ORPHANED
                    && p.info.trapos_id == trapos_id
                    && !named.contains(p.info.request_id.as_str())
            })
            .map(|p| p.info.request_id.clone())
            .collect();
        for id in gone {
            st.finish(
                &id,
                Err(RequestError::Remote {
                    code: "lost".into(),
                    message: "the computer linked again without this detached run: it restarted \
                              (or its client did) while the link was down, and the run is gone \
                              (a client from before detached runs keeps none: re-run the \
                              installer there)"
                        .into(),
                    output: None,
                }),
            );
        }
        for run in runs {
            st.take_back(&trapos_id, conn_id, run);
        }
        st.pump(&trapos_id);
    }
}

impl State {
    fn take_back(&mut self, trapos_id: &str, conn_id: u64, run: DetachedRun) {
        let known = match self.pending.get_mut(&run.id) {
            Some(p) if p.detached && p.info.trapos_id == trapos_id => {
                p.conn_id = conn_id;
                Some(p.info.cancel_requested)
            }
            // An id this host uses for something else cannot be this run (ids are never reused
            // across restarts, so this is a confused computer): leave it alone.
            Some(_) => return,
            None if self.finished.get(&run.id).is_some() => {
                // It ended here while the link was down (cancelled, timed out): the computer
                // still runs it, so it is told to stop; its answer is dropped as not pending.
                self.send_to(trapos_id, conn_id, Outbound::Cancel { id: run.id });
                return;
            }
            None => None,
        };
        let cancel = match known {
            Some(cancel) => cancel,
            None => {
                let Ok(kind) = run.request.parse::<Kind>() else {
                    return;
                };
                self.adopt_unknown(trapos_id, conn_id, &run, kind);
                false
            }
        };
        if let Some(c) = self.computers.get_mut(trapos_id)
            && let Some(conn) = c.conn.as_mut()
        {
            conn.detached += 1;
            c.show_counts();
        }
        if let Some(p) = self.pending.get_mut(&run.id) {
            p.dropped_unlinked += run.dropped_bytes;
        }
        if run.dropped_bytes > 0 {
            let note = format!(
                "[trapdesk: the computer dropped {} bytes of this run's output while unlinked]\n",
                run.dropped_bytes
            );
            self.push_output(trapos_id, Some(&run.id), Stream::Err, &note);
        }
        let mut entry = State::entry(
            "adopted",
            match run.status.as_deref() {
                Some("finished") => "taken back after the link came back: it finished meanwhile",
                _ => "taken back after the link came back: still running",
            },
        );
        entry.trapos_id = Some(trapos_id.to_owned());
        entry.request_id = Some(run.id.clone());
        entry.what = Some(run.request.clone());
        self.log(entry);
        if cancel {
            // Cancelled while its link was down: the computer hears it now.
            self.send_to(trapos_id, conn_id, Outbound::Cancel { id: run.id });
        }
    }

    /// A run this host never started (it restarted meanwhile): pending again under the
    /// computer's id, on behalf of whoever started it, with no deadline and nobody waiting.
    fn adopt_unknown(&mut self, trapos_id: &str, conn_id: u64, run: &DetachedRun, kind: Kind) {
        let origin = super::Origin::from_recorded(run.by.as_deref().unwrap_or("agent"));
        let origin = if origin.name() == "person" {
            super::Origin::Person
        } else {
            origin
        };
        let now = Instant::now();
        let info = PendingInfo {
            request_id: run.id.clone(),
            trapos_id: trapos_id.to_owned(),
            origin: origin.clone(),
            kind,
            summary: format!("{kind} (detached, taken back after a host restart)"),
            started_at: SystemTime::now(),
            started: now,
            deadline: now + super::NO_DEADLINE,
            timeout_ms: 0,
            no_deadline: true,
            sent: true,
            cancel_requested: false,
            awaiting_approval: false,
        };
        if let Some(c) = self.computers.get_mut(trapos_id) {
            c.output.push(OutputEntry::Start(Box::new(StartEntry {
                request_id: info.request_id.clone(),
                origin,
                kind,
                summary: info.summary.clone(),
                at: SystemTime::now(),
            })));
        }
        self.pending.insert(
            run.id.clone(),
            Pending {
                info: info.clone(),
                conn_id,
                payload: Value::Null,
                waiter: None,
                output_tx: None,
                output_dropped: 0,
                timer: None,
                sent_at: Some(now),
                live: Default::default(),
                cancel_by: None,
                quiet: false,
                local: false,
                detached: true,
                dropped_unlinked: 0,
            },
        );
        self.emit(Event::RequestStarted { info });
    }
}

impl Session {
    /// A cursor into a computer's output as this host start knows it: one at or past the next
    /// line's number cannot be of this start (numbers only grow; a restarted host counts from
    /// 1 again), so it reads from the oldest kept line.
    pub fn output_cursor(&self, trapos_id: &str, after: u64) -> u64 {
        let st = self.lock();
        match st.computers.get(trapos_id) {
            Some(c) if after >= c.output.next_seq() => 0,
            _ => after,
        }
    }

    /// Where request `id` stands: pending, or ended with its result while that is kept
    /// ([`FINISHED_KEPT`], [`FINISHED_FOR`]); `None` when the host does not know it.
    pub fn request_state(&self, id: &str) -> Option<RequestState> {
        let mut st = self.lock();
        if let Some(p) = st.pending.get(id) {
            return Some(RequestState::Running {
                trapos_id: p.info.trapos_id.clone(),
                kind: p.info.kind,
            });
        }
        st.finished.prune();
        st.finished
            .get(id)
            .map(|f| RequestState::Ended(Box::new(f.clone())))
    }
}

#[cfg(test)]
#[path = "detached_tests.rs"]
mod tests;

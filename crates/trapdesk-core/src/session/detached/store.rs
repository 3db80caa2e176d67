//! What the session keeps of detached runs and of requests beyond their end ([`RunStore`]):
//! the results `wait-request` still gives, the record of who started each detached run, the
//! count of hellos' claims dropped since it was last logged, the computers in this host's
//! process, and the requests that timed out without stopping.

use std::collections::{HashSet, VecDeque};
use std::time::SystemTime;

use tokio::time::Instant;

use super::CLAIMS_LOGGED_EVERY;
use super::claim::computer_number;
use super::fate::{Fate, fate};
use super::finished::{Finished, FinishedRequest};
use crate::session::history::runs::{RunRecord, Runs};
use crate::session::model::{Ending, PendingInfo, Status, epoch_ms};
use crate::session::state::Pending;

/// Requests that timed out without stopping kept for their late answer's log entry.
const UNSTOPPED_KEPT: usize = 256;

pub(crate) struct RunStore {
    /// Ended requests whose results `wait-request` still gives.
    finished: Finished,
    /// Who started each detached run, kept in the data dir (see `history::runs`).
    runs: Runs,
    /// Claims in hellos that were not taken back and not logged yet, and when that was last
    /// logged.
    claims_dropped: (u64, Option<Instant>),
    /// The computer ids whose computers live in this host's process (`--demo`): their
    /// detached runs end with the host (see `history::runs`).
    in_process: HashSet<u64>,
    /// Requests that timed out without stopping, oldest first: id, computer, when (see
    /// `stopping.rs`).
    unstopped: VecDeque<(String, String, Instant)>,
}

impl RunStore {
    pub(crate) fn new(runs: Runs) -> RunStore {
        RunStore {
            finished: Finished::default(),
            runs,
            claims_dropped: (0, None),
            in_process: HashSet::new(),
            unstopped: VecDeque::new(),
        }
    }

    pub(crate) fn runs(&self) -> &Runs {
        &self.runs
    }

    pub(crate) fn runs_mut(&mut self) -> &mut Runs {
        &mut self.runs
    }

    /// Keeps an ended request's result for `wait-request` (see [`Finished`]).
    pub(crate) fn keep(&mut self, p: &Pending, ending: &Ending, status: Status) {
        self.finished.keep(p, ending, status);
    }

    /// The kept result of `id`, the expired ones dropped first.
    pub(crate) fn finished(&mut self, id: &str) -> Option<&FinishedRequest> {
        self.finished.prune();
        self.finished.get(id)
    }

    /// Whether `id` ended here and its result is still kept.
    pub(crate) fn ended_here(&self, id: &str) -> bool {
        self.finished.get(id).is_some()
    }

    /// Who started a detached run, kept where the next host finds it (`history::runs`): the
    /// only source of that when a computer names this run again.
    pub(crate) fn started(&mut self, info: &PendingInfo) {
        self.runs.started(RunRecord {
            id: info.request_id.clone(),
            trapos_id: info.trapos_id.clone(),
            kind: info.kind,
            origin: info.origin.clone(),
            started_ms: epoch_ms(SystemTime::now()),
            timeout_ms: info.timeout_ms,
            in_process: self.in_process.contains(&computer_number(&info.trapos_id)),
            ended: None,
        });
    }

    pub(crate) fn mark_in_process(&mut self, ids: impl IntoIterator<Item = u64>) {
        self.in_process.extend(ids);
    }

    /// What became of `id`, neither pending nor kept (see [`Fate`]), given this start's tag
    /// and the next request number it gives.
    pub(crate) fn fate(&self, id: &str, run_tag: &str, next_request: u64) -> Fate {
        fate(&self.runs, id, run_tag, next_request)
    }

    /// Counts `dropped` claims; returns how many were dropped before since the last line when
    /// a line is due now (at most one per [`CLAIMS_LOGGED_EVERY`]).
    pub(crate) fn claims_to_log(&mut self, dropped: u64) -> Option<u64> {
        let (before, last) = self.claims_dropped;
        if last.is_some_and(|t| t.elapsed() < CLAIMS_LOGGED_EVERY) {
            self.claims_dropped.0 = before + dropped;
            return None;
        }
        self.claims_dropped = (0, Some(Instant::now()));
        Some(before)
    }

    /// Keeps a request that timed out at `at` without stopping, for its late answer.
    pub(crate) fn unstopped(&mut self, id: &str, trapos_id: String, at: Instant) {
        self.unstopped.push_back((id.to_owned(), trapos_id, at));
        while self.unstopped.len() > UNSTOPPED_KEPT {
            self.unstopped.pop_front();
        }
    }

    /// Takes out a request that timed out without stopping: its computer and when.
    pub(crate) fn take_unstopped(&mut self, id: &str) -> Option<(String, Instant)> {
        let i = self.unstopped.iter().position(|(r, _, _)| r == id)?;
        self.unstopped.remove(i).map(|(_, t, at)| (t, at))
    }
}

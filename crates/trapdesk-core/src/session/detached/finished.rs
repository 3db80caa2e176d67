//! Ended requests kept for `wait-request`: [`Finished`], and where a request stands
//! ([`RequestState`]).

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use crate::session::model::{Ending, Status};
use crate::session::state::Pending;
use trapdesk_proto::protocol::Kind;

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
    pub(in crate::session) fn keep(&mut self, p: &Pending, ending: &Ending, status: Status) {
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

    pub(super) fn prune(&mut self) {
        for list in [&mut self.detached, &mut self.other] {
            while list
                .front()
                .is_some_and(|f| f.ended.elapsed() > FINISHED_FOR)
            {
                list.pop_front();
            }
        }
    }

    pub(in crate::session) fn get(&self, id: &str) -> Option<&FinishedRequest> {
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

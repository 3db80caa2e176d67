//! A timeout the computer has to carry out. When a request's deadline passes, the host asks
//! the computer to stop it and waits [`STOP_GRACE`] for its answer: the request then ends as
//! `timeout`, saying whether the computer stopped it (`Ending::stopped`). A chunk that never
//! yields cannot hear the cancel and runs on until CC's own watchdog ends it; when that
//! computer answers at last, the log says when (`late_answer`).

use std::time::Duration;

use tokio::time::Instant;

use super::LogEvent;
use super::model::{RequestError, seconds};
use super::state::{ORPHANED, Outbound, State};

/// How long after a timeout's cancel the host waits for the computer to stop the request.
pub const STOP_GRACE: Duration = Duration::from_secs(1);
/// Requests that timed out without stopping kept for their late answer's log entry.
const UNSTOPPED_KEPT: usize = 256;

impl State {
    /// Request `id`'s deadline passed. One running on a linked computer is asked to stop and
    /// kept until it answers or the grace ends: `Some` is the grace's deadline to set. Any
    /// other ends now.
    pub(crate) fn time_out(&mut self, id: &str, timeout: Duration) -> Option<Instant> {
        let p = self.pending.get(id)?;
        let (trapos_id, conn_id) = (p.info.trapos_id.clone(), p.conn_id);
        if let Some((timeout, at)) = p.timed_out {
            // The grace passed without an answer: the computer did not stop it.
            if let Some(p) = self.pending.get_mut(id) {
                p.stopped = Some(false);
            }
            self.finish(id, Err(RequestError::Timeout { timeout }));
            self.unstopped.push_back((id.to_owned(), trapos_id, at));
            while self.unstopped.len() > UNSTOPPED_KEPT {
                self.unstopped.pop_front();
            }
            return None;
        }
        let sent = p.info.sent && conn_id != ORPHANED;
        if let Some(error) = self.approvals.not_answered(id, timeout) {
            self.finish(id, Err(error));
            return None;
        }
        if !sent {
            self.finish(id, Err(RequestError::Timeout { timeout }));
            return None;
        }
        if let Some(p) = self.pending.get_mut(id) {
            p.timed_out = Some((timeout, Instant::now()));
        }
        // The connection may be closing; then it fails as disconnected.
        self.send_to(&trapos_id, conn_id, Outbound::Cancel { id: id.to_owned() });
        Some(Instant::now() + STOP_GRACE)
    }

    /// The computer answered request `id` while it was being timed out: it stopped, and the
    /// request ends as `timeout`. False when `id` was not being timed out.
    pub(crate) fn stopped_in_time(&mut self, id: &str) -> bool {
        let Some(p) = self.pending.get_mut(id) else {
            return false;
        };
        let Some((timeout, _)) = p.timed_out else {
            return false;
        };
        p.stopped = Some(true);
        self.finish(id, Err(RequestError::Timeout { timeout }));
        true
    }

    /// An answer to `id`, no longer pending, that timed out without stopping: logged as
    /// `late_answer` with how long after the timeout it came. False for any other id.
    pub(crate) fn answered_late(&mut self, id: &str) -> bool {
        let Some(i) = self.unstopped.iter().position(|(r, _, _)| r == id) else {
            return false;
        };
        let Some((id, trapos_id, at)) = self.unstopped.remove(i) else {
            return false;
        };
        let ms = at.elapsed().as_millis() as u64;
        let mut entry = State::entry(
            LogEvent::LateAnswer,
            format!(
                "the computer answered {} after the request timed out: it ran on until then",
                seconds(ms)
            ),
        );
        entry.trapos_id = Some(trapos_id);
        entry.request_id = Some(id);
        entry.duration_ms = Some(ms);
        self.log(entry);
        true
    }
}

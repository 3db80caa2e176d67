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

/// Request `id`'s deadline passed. One running on a linked computer is asked to stop and
/// kept until it answers or the grace ends: `Some` is the grace's deadline to set. Any
/// other ends now.
pub(crate) fn time_out(st: &mut State, id: &str, timeout: Duration) -> Option<Instant> {
    let p = st.pending.get(id)?;
    let (trapos_id, conn_id) = (p.info.trapos_id.clone(), p.conn_id);
    if let Some((timeout, at)) = p.timed_out {
        // The grace passed without an answer: the computer did not stop it.
        if let Some(p) = st.pending.get_mut(id) {
            p.stopped = Some(false);
        }
        st.finish(id, Err(RequestError::Timeout { timeout }));
        st.store.unstopped(id, trapos_id, at);
        return None;
    }
    let sent = p.info.sent && conn_id != ORPHANED;
    if let Some(error) = st.gate.approvals().not_answered(id, timeout) {
        st.finish(id, Err(error));
        return None;
    }
    if !sent {
        st.finish(id, Err(RequestError::Timeout { timeout }));
        return None;
    }
    if let Some(p) = st.pending.get_mut(id) {
        p.timed_out = Some((timeout, Instant::now()));
    }
    // The connection may be closing; then it fails as disconnected.
    st.send_to(&trapos_id, conn_id, Outbound::Cancel { id: id.to_owned() });
    Some(Instant::now() + STOP_GRACE)
}

/// The computer answered request `id` while it was being timed out: it stopped, and the
/// request ends as `timeout`. False when `id` was not being timed out.
pub(crate) fn stopped_in_time(st: &mut State, id: &str) -> bool {
    let Some(p) = st.pending.get_mut(id) else {
        return false;
    };
    let Some((timeout, _)) = p.timed_out else {
        return false;
    };
    p.stopped = Some(true);
    st.finish(id, Err(RequestError::Timeout { timeout }));
    true
}

/// An answer to `id`, no longer pending, that timed out without stopping: logged as
/// `late_answer` with how long after the timeout it came. False for any other id.
pub(crate) fn answered_late(st: &mut State, id: &str) -> bool {
    let Some((trapos_id, at)) = st.store.take_unstopped(id) else {
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
    entry.request_id = Some(id.to_owned());
    entry.duration_ms = Some(ms);
    st.log(entry);
    true
}

//! A tool call's row in the session, finished exactly once whatever way the call ends.
//!
//! A call is recorded when it starts, so that the console shows it running. Its end is
//! recorded by [`Recorded::finish`], which consumes the record; a record dropped unfinished
//! (the call's future was dropped: the client cancelled, the connection closed, the host is
//! stopping) ends its row as cancelled instead of leaving it running forever.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use trapdesk_core::session::{Ending, Origin, RequestError, Session, Status};

/// What the row of a call dropped unfinished says.
const DROPPED: &str =
    "cancelled: the call ended before its answer (the client cancelled or went away)";

/// How long a cancelled call may still take to answer by itself (a request-backed tool answers
/// `cancelled` with the output so far) before its future is dropped.
pub(crate) const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// A tool call being recorded in the session, so the console shows it from its start.
pub(crate) struct Recorded {
    session: Session,
    pub(crate) call_id: u64,
    pub origin: Origin,
    started: Instant,
    /// Set by [`Recorded::finish`]: the drop then records nothing.
    finished: bool,
}

impl Recorded {
    /// Records the start of `tool`, called by `origin` (on `target`, when it names one).
    pub(crate) fn start(
        session: &Session,
        origin: Origin,
        tool: &str,
        target: Option<&str>,
        args: Value,
    ) -> Recorded {
        let call_id = session.tool_call_started(origin.name(), tool, target, args);
        Recorded {
            session: session.clone(),
            call_id,
            origin,
            started: Instant::now(),
            finished: false,
        }
    }

    /// Records the end of the call: its status, its one-line summary and what it answered.
    pub(crate) fn finish(self, status: Status, line: &str, result: Option<&Value>) {
        let json: Arc<str> = result.map_or_else(|| "null".into(), |v| v.to_string().into());
        self.finish_json(status, line, json);
    }

    /// [`Recorded::finish`] with the answer already as JSON text.
    pub(crate) fn finish_json(mut self, status: Status, line: &str, json: Arc<str>) {
        self.finished = true;
        let summary = trapdesk_core::session::summary::one_line(line, 120);
        self.session
            .tool_call_finished_json(self.call_id, status, &summary, json);
        tracing::debug!(
            call = self.call_id,
            elapsed_ms = self.started.elapsed().as_millis() as u64,
            "tool call finished"
        );
    }
}

impl Drop for Recorded {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // The session measures the duration from the row's own start: the real time it ran.
        let shown = json!({"ok": false, "error": {"code": "cancelled", "message": DROPPED}});
        self.session
            .tool_call_finished(self.call_id, Status::Cancelled, DROPPED, Some(&shown));
        tracing::debug!(
            call = self.call_id,
            elapsed_ms = self.started.elapsed().as_millis() as u64,
            "tool call dropped unfinished"
        );
    }
}

/// Runs a call until it answers; once `ct` is cancelled it has [`CANCEL_GRACE`] more to answer
/// by itself, then it is dropped (its [`Recorded`] ends its row as cancelled) and `None` is
/// returned. A tool that waits on something that does not watch `ct` (the person's approval,
/// a sleep) so never holds its row running after its client is gone.
pub(crate) async fn unless_cancelled<T>(
    call: impl Future<Output = T>,
    ct: &CancellationToken,
) -> Option<T> {
    tokio::pin!(call);
    tokio::select! {
        biased;
        r = &mut call => return Some(r),
        () = ct.cancelled() => {}
    }
    tokio::time::timeout(CANCEL_GRACE, call).await.ok()
}

/// The ending of a request whose call its client cancelled: the request is cancelled in the
/// caller's name, and the computer's answer (with the output so far) is awaited a little;
/// without one, the ending still names who cancelled and how long it ran (the call's row once
/// said "cancelled after 0 ms" for a call that ran 2 s). Dropping `wait` drops the ticket,
/// which cancels a request still running (docs/protocol.md, `cancel`).
pub(crate) async fn cancelled(
    session: &Session,
    request_id: &str,
    rec: &Recorded,
    wait: std::pin::Pin<&mut impl Future<Output = Ending>>,
    started: Instant,
) -> Ending {
    // Already ended is fine: then its ending is what the wait gives.
    let _ = session.cancel_by(request_id, &rec.origin);
    // Within the call's own grace, after which the whole call is dropped.
    match tokio::time::timeout(CANCEL_GRACE / 2, wait).await {
        Ok(ending) => ending,
        Err(_) => Ending {
            result: Err(RequestError::Cancelled { output: None }),
            output: None,
            output_bytes: 0,
            output_lines: 0,
            cancelled_by: Some(rec.origin.name().to_owned()),
            elapsed_ms: started.elapsed().as_millis() as u64,
            stopped: None,
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use trapdesk_core::config::Settings;

    fn session(dir: &std::path::Path) -> Session {
        let settings = Settings {
            data_dir: dir.to_owned(),
            ..Settings::default()
        };
        Session::new(settings, false)
    }

    fn statuses(s: &Session) -> Vec<Status> {
        s.tool_calls().into_iter().map(|c| c.status).collect()
    }

    /// A call whose future is dropped while it waits leaves its row cancelled, not running.
    #[tokio::test(start_paused = true)]
    async fn a_dropped_call_ends_its_row_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path());
        let call = async {
            let rec = Recorded::start(&s, Origin::Agent("a".into()), "exec-lua", None, json!({}));
            tokio::time::sleep(Duration::from_secs(3600)).await;
            rec.finish(Status::Ok, "done", None);
        };
        assert!(
            tokio::time::timeout(Duration::from_secs(5), call)
                .await
                .is_err()
        );
        assert_eq!(statuses(&s), vec![Status::Cancelled]);
        assert_eq!(s.tool_calls_running(), 0);
    }

    /// A finished call keeps the status it finished with.
    #[tokio::test]
    async fn a_finished_call_is_recorded_once() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path());
        let rec = Recorded::start(&s, Origin::Agent("a".into()), "exec-lua", None, json!({}));
        rec.finish(Status::Ok, "done", Some(&json!({"ok": true})));
        assert_eq!(statuses(&s), vec![Status::Ok]);
    }

    /// A cancelled call that does not answer by itself is dropped after the grace; one that
    /// answers in time is kept.
    #[tokio::test(start_paused = true)]
    async fn a_cancelled_call_is_dropped_after_its_grace() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path());
        let ct = CancellationToken::new();
        let deaf = async {
            let rec = Recorded::start(
                &s,
                Origin::Agent("a".into()),
                "computer-output",
                None,
                json!({}),
            );
            tokio::time::sleep(Duration::from_secs(3600)).await;
            rec.finish(Status::Ok, "done", None);
        };
        ct.cancel();
        assert!(unless_cancelled(deaf, &ct).await.is_none());
        assert_eq!(statuses(&s), vec![Status::Cancelled]);

        let prompt = async { 7 };
        assert_eq!(unless_cancelled(prompt, &ct).await, Some(7));
    }
}

//! `--run`: the program run on the computer after a push, its output streamed to stdout, and
//! cancelled when a new save arrives.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::say;
use crate::commands::remote::{Conn, Failure, exit};

/// A `--run` going on the computer.
pub(super) struct Running {
    stop: CancellationToken,
    /// Why it is stopped ("a new save arrived", "Ctrl-C"), set before `stop` is cancelled, so
    /// the line that says it was cancelled says why.
    why: Arc<OnceLock<&'static str>>,
    /// How the run ended: `Err` with the exit code when it failed (already said on stderr).
    pub(super) task: tokio::task::JoinHandle<Result<(), Failure>>,
}

/// Starts `program` (its path, then its arguments) on `computer`, its output going to stdout.
pub(super) fn start_run(
    conn: Arc<Conn>,
    computer: String,
    program: Vec<String>,
    timeout: Option<Duration>,
) -> Running {
    let stop = CancellationToken::new();
    let why = Arc::new(OnceLock::new());
    let (token, reason) = (stop.clone(), why.clone());
    let task = tokio::spawn(async move {
        let (path, args) = match program.split_first() {
            Some((p, a)) => (p.clone(), a.to_vec()),
            None => return Ok(()),
        };
        let mut call = serde_json::json!({"traposId": computer, "path": path, "args": args});
        if let (Some(t), Some(o)) = (timeout, call.as_object_mut()) {
            o.insert("timeoutMs".into(), serde_json::json!(t.as_millis() as u64));
        }
        let mut out = |t: &str| {
            use std::io::Write;
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(t.as_bytes());
            let _ = o.flush();
        };
        let deadline = timeout.map(|t| t + Duration::from_secs(5));
        let r = conn
            .call_until("run-file", call, deadline, &mut out, async move {
                token.cancelled().await;
                Failure::new(exit::INTERRUPTED, "")
            })
            .await;
        let failure = match r {
            Ok(reply) if !reply.is_error => {
                // The text's first line is the result's one-line summary; the rest is the
                // whole structured result, which a person watching saves does not read.
                let summary = reply.text.lines().next().unwrap_or("done");
                say(&format!("ran {path}: {summary}"));
                return Ok(());
            }
            Ok(reply) => reply.failure(&format!("{path} failed")),
            Err(f) if f.interrupted() => {
                let why = reason.get().copied().unwrap_or("stopped");
                say(&format!("{path} cancelled ({why})"));
                return Err(Failure::new(f.code, ""));
            }
            Err(f) => f,
        };
        say(&failure.message);
        Err(Failure::new(failure.code, ""))
    });
    Running { stop, why, task }
}

/// Stops the run going, if any, for the reason `why` (said on stderr), and waits for it to end.
pub(super) async fn stop_run(run: &mut Option<Running>, why: &'static str) {
    if let Some(r) = run.take() {
        let _ = r.why.set(why);
        r.stop.cancel();
        let _ = r.task.await;
    }
}

//! Carrying out [`Intent`]s through the [`Hub`]. Requests run in their own tasks; outcomes
//! reach the screen through the session's output rings like anybody's, so nothing here draws.
//! Each intent has its own function; what comes back for the app goes through `msg_tx`.
//!
//! The hub's calls return futures: in process they are ready at once and their notice is sent
//! before `execute` returns, as before; attached, the answer crosses the connection and the
//! notice follows from a task ([`settle`]).

use std::future::Future;

use futures_util::FutureExt as _;
use serde_json::Value;
use tokio::sync::mpsc;

use super::app::{AppMsg, Intent};
use super::hub::Hub;
use trapdesk_core::session::Answer;

/// Where results for the app go. The app is gone only when the loop is, and then nobody needs
/// them, so a failed send is ignored.
struct Reply<'a>(&'a mpsc::UnboundedSender<AppMsg>);

impl Reply<'_> {
    fn notice(&self, text: String, error: bool) {
        let _ = self.0.send(AppMsg::Notice { text, error });
    }
}

/// Calls `then` with the outcome of `fut`: at once when it is ready (in process), else from a
/// task when it comes (attached).
fn settle<T: Send + 'static>(
    fut: impl Future<Output = T> + Send + 'static,
    then: impl FnOnce(T) + Send + 'static,
) {
    let mut fut = Box::pin(fut);
    match fut.as_mut().now_or_never() {
        Some(v) => then(v),
        None => {
            tokio::spawn(async move { then(fut.await) });
        }
    }
}

/// Starts what an intent asks for. Failures to start become notices.
pub fn execute<H: Hub>(hub: &H, intent: Intent, msg_tx: &mpsc::UnboundedSender<AppMsg>) {
    match intent {
        Intent::Start {
            targets,
            body,
            deadline,
        } => start(hub, &targets, &body, deadline, msg_tx),
        Intent::Answer(request_id, answer) => self::answer(hub, &request_id, answer, msg_tx),
        Intent::ReloadPolicy => reload_policy(hub, msg_tx),
        // Said in the notice; the status line's marker follows the session's event.
        Intent::Pause(stop) => {
            let tx = msg_tx.clone();
            let said = move |text| Reply(&tx).notice(text, false);
            if stop {
                settle(hub.pause(), said);
            } else {
                settle(hub.resume(), said);
            }
        }
        Intent::Complete { target, dir } => complete(hub, &target, dir, msg_tx),
        Intent::Cancel(id) => cancel(hub, &id, msg_tx),
        Intent::Input { target, steps } => input(hub, target, steps, msg_tx),
        Intent::Touch {
            target,
            monitor,
            x,
            y,
        } => touch(hub, target, monitor, (x, y), msg_tx),
        Intent::Quit => {}
    }
}

/// One request per target; a broadcast says how many started.
fn start<H: Hub>(
    hub: &H,
    targets: &[String],
    body: &trapdesk_proto::protocol::RequestBody,
    deadline: Option<std::time::Duration>,
    msg_tx: &mpsc::UnboundedSender<AppMsg>,
) {
    let runs: Vec<_> = targets
        .iter()
        .map(|target| {
            let named = target.clone();
            hub.run(target, body.clone(), deadline)
                .map(move |r| (named, r))
        })
        .collect();
    let kind = body.kind();
    let tx = msg_tx.clone();
    settle(futures_util::future::join_all(runs), move |outcomes| {
        let reply = Reply(&tx);
        let mut started = 0;
        for (target, r) in outcomes {
            match r {
                Ok(()) => started += 1,
                Err(e) => reply.notice(format!("{target}: {e}"), true),
            }
        }
        if started > 1 {
            reply.notice(format!("sent {kind} to {started} computers"), false);
        }
    });
}

fn answer<H: Hub>(
    hub: &H,
    request_id: &str,
    answer: Answer,
    msg_tx: &mpsc::UnboundedSender<AppMsg>,
) {
    let tx = msg_tx.clone();
    settle(hub.answer(request_id, answer), move |r| {
        // The session's error names the request by its internal id, which the person sees
        // nowhere: the status line says it in the words of the prompt they answered.
        if r.is_err() {
            Reply(&tx).notice(
                "not answered: the call no longer waits (it timed out, was cancelled, or another console answered it)"
                    .to_owned(),
                true,
            );
        }
    });
}

fn reload_policy<H: Hub>(hub: &H, msg_tx: &mpsc::UnboundedSender<AppMsg>) {
    let tx = msg_tx.clone();
    settle(hub.reload_policy(), move |r| match r {
        Ok(source) => Reply(&tx).notice(format!("policy reloaded: {source}"), false),
        Err(e) => Reply(&tx).notice(
            format!("policy not reloaded (the old one stays): {e}"),
            true,
        ),
    });
}

fn cancel<H: Hub>(hub: &H, id: &str, msg_tx: &mpsc::UnboundedSender<AppMsg>) {
    let tx = msg_tx.clone();
    settle(hub.cancel(id), move |r| {
        // The pane said what is being cancelled; only a failure has more to say, and in the
        // pane's words, not by the request's internal id (the one way a cancel fails).
        if r.is_err() {
            Reply(&tx).notice(
                "nothing cancelled: the request has ended already".to_owned(),
                true,
            );
        }
    });
}

/// Lists `dir` in the background; the entries come back as [`AppMsg::Completion`].
fn complete<H: Hub>(hub: &H, target: &str, dir: String, msg_tx: &mpsc::UnboundedSender<AppMsg>) {
    let listing = hub.list_files(target, &dir);
    let tx = msg_tx.clone();
    tokio::spawn(async move {
        let _ = tx.send(completion(dir, listing.await));
    });
}

/// A `list-files` answer as the completion it gives, or the notice of why there is none.
fn completion(dir: String, answer: Result<Value, String>) -> AppMsg {
    let error = |text| AppMsg::Notice { text, error: true };
    match answer {
        Ok(v) if v.get("ok").and_then(Value::as_bool) != Some(false) => AppMsg::Completion {
            entries: entries(&v),
            dir,
        },
        Ok(v) => error(format!(
            "list-files {dir:?}: {}",
            v.get("error").and_then(Value::as_str).unwrap_or("failed")
        )),
        Err(e) => error(format!("list-files {dir:?}: {e}")),
    }
}

/// The `(name, is a directory)` pairs of a `list-files` answer.
fn entries(v: &Value) -> Vec<(String, bool)> {
    let Some(list) = v.get("entries").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|e| {
            let name = e.get("name")?.as_str()?.to_owned();
            let dir = e.get("dir").and_then(Value::as_bool);
            Some((name, dir == Some(true)))
        })
        .collect()
}

/// Input for an attached terminal; a failure after it was sent still reaches the status line.
fn input<H: Hub>(
    hub: &H,
    target: String,
    steps: Vec<Value>,
    msg_tx: &mpsc::UnboundedSender<AppMsg>,
) {
    let tx = msg_tx.clone();
    settle(hub.input(&target, steps), move |r| {
        if let Err(e) = r {
            Reply(&tx).notice(format!("input to {target}: {e}"), true);
        }
    });
}

/// A touch on a monitor. It shows on the monitor only if a program there answers it, so the
/// status line says that it went (or why not).
fn touch<H: Hub>(
    hub: &H,
    target: String,
    monitor: String,
    (x, y): (u32, u32),
    msg_tx: &mpsc::UnboundedSender<AppMsg>,
) {
    let tx = msg_tx.clone();
    settle(hub.touch(&target, &monitor, x, y), move |r| {
        // The monitor's name comes from the computer: shown through the sanitiser.
        let monitor = crate::tui::output::printable(&monitor);
        let who = crate::tui::draw::name_of(&target);
        match r {
            Ok(()) => Reply(&tx).notice(
                format!("touched monitor {monitor} of {who} at {x},{y}"),
                false,
            ),
            Err(e) => Reply(&tx).notice(format!("touch on monitor {monitor} of {who}: {e}"), true),
        }
    });
}

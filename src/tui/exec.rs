//! Carrying out [`Intent`]s through the [`Hub`]. Requests run in their own tasks; outcomes
//! reach the screen through the session's output rings like anybody's, so nothing here draws.
//! Each intent has its own function; what comes back for the app goes through `msg_tx`.

use serde_json::Value;
use tokio::sync::mpsc;

use super::app::{AppMsg, Intent};
use super::hub::Hub;
use crate::session::Answer;

/// Where results for the app go. The app is gone only when the loop is, and then nobody needs
/// them, so a failed send is ignored.
struct Reply<'a>(&'a mpsc::UnboundedSender<AppMsg>);

impl Reply<'_> {
    fn notice(&self, text: String, error: bool) {
        let _ = self.0.send(AppMsg::Notice { text, error });
    }
}

/// Starts what an intent asks for. Failures to start become notices.
pub fn execute<H: Hub>(hub: &H, intent: Intent, msg_tx: &mpsc::UnboundedSender<AppMsg>) {
    let reply = Reply(msg_tx);
    match intent {
        Intent::Start {
            targets,
            kind,
            payload,
            deadline,
        } => start(hub, &targets, kind, &payload, deadline, &reply),
        Intent::Answer(request_id, answer) => self::answer(hub, &request_id, answer, &reply),
        Intent::ReloadPolicy => reload_policy(hub, &reply),
        // Said in the notice; the status line's marker follows the session's event.
        Intent::Pause(true) => reply.notice(hub.pause(), false),
        Intent::Pause(false) => reply.notice(hub.resume(), false),
        Intent::Complete { target, dir } => complete(hub, &target, dir, msg_tx),
        Intent::Cancel(id) => cancel(hub, &id, &reply),
        Intent::Input { target, steps } => input(hub, target, steps, msg_tx),
        Intent::Quit => {}
    }
}

/// One request per target; a broadcast says how many started.
fn start<H: Hub>(
    hub: &H,
    targets: &[String],
    kind: crate::protocol::Kind,
    payload: &Value,
    deadline: Option<std::time::Duration>,
    reply: &Reply,
) {
    let mut started = 0;
    for target in targets {
        match hub.run(target, kind, payload.clone(), deadline) {
            Ok(()) => started += 1,
            Err(e) => reply.notice(format!("{target}: {e}"), true),
        }
    }
    if started > 1 {
        reply.notice(format!("sent {kind} to {started} computers"), false);
    }
}

fn answer<H: Hub>(hub: &H, request_id: &str, answer: Answer, reply: &Reply) {
    if let Err(e) = hub.answer(request_id, answer) {
        reply.notice(e, true);
    }
}

fn reload_policy<H: Hub>(hub: &H, reply: &Reply) {
    match hub.reload_policy() {
        Ok(()) => reply.notice("policy reloaded".to_owned(), false),
        Err(e) => reply.notice(
            format!("policy not reloaded (the old one stays): {e}"),
            true,
        ),
    }
}

fn cancel<H: Hub>(hub: &H, id: &str, reply: &Reply) {
    match hub.cancel(id) {
        Ok(()) => reply.notice(format!("cancelling {id}"), false),
        Err(e) => reply.notice(e, true),
    }
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
    match hub.input(&target, steps) {
        Ok(sent) => {
            let tx = msg_tx.clone();
            tokio::spawn(async move {
                if let Err(e) = sent.await {
                    Reply(&tx).notice(format!("input to {target}: {e}"), true);
                }
            });
        }
        Err(e) => Reply(msg_tx).notice(format!("input to {target}: {e}"), true),
    }
}

//! What a console asks of the session, in the console's words: the person's runs (one origin,
//! no deadline unless asked), the policy as lines, the answers with the answering console's
//! name. Both consoles use it: the in-process one through `tui::hub`'s `impl Hub for Session`,
//! an attached one through the control channel (`control::attach`), so the two cannot drift
//! apart. Errors are the text the status line shows. The session keeps no console words: these
//! are functions of its public operations.

use std::time::Duration;

use serde_json::Value;

use trapdesk_core::session::{Answer, Origin, RequestSpec, Session};
use trapdesk_proto::protocol::RequestBody;
use trapdesk_proto::protocol::kind::ListFiles;

/// The name the in-process console answers under.
pub const LOCAL_CONSOLE: &str = "the host's console";

/// The policy in force, as the lines the F7 popup shows.
pub fn policy_lines(session: &Session) -> Vec<String> {
    session.policy().describe()
}

/// Where the policy is read from, in words: the config file, or where a file would be
/// read from and that none is there (the defaults).
pub fn policy_source(session: &Session) -> String {
    let s = session.settings();
    match s.config_file.as_ref().or(s.config_path.as_ref()) {
        Some(p) if p.exists() => format!("from {}", p.display()),
        Some(p) => format!(
            "defaults: no file at {} (one made there is read on reload)",
            p.display()
        ),
        None => "defaults: no config file".to_owned(),
    }
}

/// The shared secret computers link with now (a rotation by another process included).
pub fn secret_now(session: &Session) -> String {
    trapdesk_core::trust::secrets::shared_now(&session.settings())
}

/// Starts the person's request; the outcome arrives through the computer's output.
///
/// # Errors
/// Why it could not start (unknown computer, full queue, the policy, shutting down).
pub fn person_run(
    session: &Session,
    target: &str,
    body: RequestBody,
    deadline: Option<Duration>,
) -> Result<(), String> {
    // The person's runs have no deadline unless one was asked for with `t`.
    let spec = RequestSpec::of(body);
    let spec = match deadline {
        Some(d) => spec.timeout(Some(d)),
        None => spec.without_deadline(),
    };
    let ticket = session
        .start(target, spec, Origin::Person)
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        // The outcome is shown from the output ring; the ticket is kept here only so the
        // request is not cancelled.
        let _ = ticket.wait().await;
    });
    Ok(())
}

/// `list-files` of `dir` on `target`, quietly (completion is not output to show).
///
/// # Errors
/// The request's failure, in words.
pub async fn person_list_files(
    session: &Session,
    target: &str,
    dir: &str,
) -> Result<Value, String> {
    let spec = RequestSpec::of(ListFiles {
        path: dir.to_owned(),
    })
    .quiet();
    session
        .request(target, spec, Origin::Person)
        .await
        .map_err(|e| e.to_string())
}

/// Sends the person's input to a computer's terminal and waits until the computer took it.
///
/// # Errors
/// Why the input could not be sent or was not taken.
pub fn person_input(
    session: &Session,
    target: &str,
    steps: Vec<Value>,
) -> Result<impl Future<Output = Result<(), String>> + Send + 'static, String> {
    let ticket = session
        .start_input(target, steps, Origin::Person)
        .map_err(|e| e.to_string())?;
    Ok(async move { ticket.wait().await.map(drop).map_err(|e| e.to_string()) })
}

/// Cancels one of the person's requests (or an agent's: the person may cancel any).
///
/// # Errors
/// Why the request cannot be cancelled (unknown, or not the person's to cancel).
pub fn person_cancel(session: &Session, request_id: &str) -> Result<(), String> {
    session
        .cancel_by(request_id, &Origin::Person)
        .map_err(|e| e.to_string())
}

/// Answers a waiting approval as the console named `by` ([`Session::answer_by`]).
///
/// # Errors
/// When no approval of that request is waiting.
pub fn answer_by(
    session: &Session,
    request_id: &str,
    answer: Answer,
    by: &str,
) -> Result<(), String> {
    session
        .answer_by(request_id, answer, by)
        .map_err(|e| e.to_string())
}

/// Reloads the policy; says where the policy now in force came from.
///
/// # Errors
/// Why the config file's policy was not taken (the old one stays).
pub fn reload_policy_words(session: &Session) -> Result<String, String> {
    session.reload_policy().map_err(|e| e.to_string())?;
    Ok(policy_source(session))
}

/// Stops all agents from a console; returns what the status line says.
pub fn pause_words(session: &Session) -> String {
    let r = session.pause("console");
    if r.already {
        return "agents are already stopped".to_owned();
    }
    format!(
        "all agents stopped: their runs and writes are refused ({} running call(s) cancelled); reads go on",
        r.stopped
    )
}

/// Lets agents run again from a console; returns what the status line says.
pub fn resume_words(session: &Session) -> String {
    if session.resume("console") {
        "agents may run again".to_owned()
    } else {
        "agents were not stopped".to_owned()
    }
}

/// An answer as the other consoles' status lines say it: `approved`, `refused`,
/// `approved for the session`.
pub fn answer_words(answer: Answer) -> &'static str {
    match answer {
        Answer::Yes => "approved",
        Answer::No => "refused",
        Answer::Always => "approved for the session",
    }
}

//! Outcome of a request → tool outcome, and the small conversions the tools share.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::Ran;
use super::params::Encoding;
use super::results::Outcome;
use trapdesk_core::session::summary;
use trapdesk_core::session::{Ending, RequestError, Status};

/// `{traposId, requestId}` of a run, for structured content.
pub(crate) fn ids(ran: &Ran) -> Map<String, Value> {
    let mut m = Map::new();
    if let Some(t) = &ran.trapos_id {
        m.insert("traposId".into(), Value::String(t.clone()));
    }
    if let Some(r) = &ran.request_id {
        m.insert("requestId".into(), Value::String(r.clone()));
    }
    m
}

/// The message of a failure without its code: the code is said once, beside it
/// (`internal: internal: …` read as two failures).
pub(crate) fn error_message(e: &RequestError) -> String {
    match e {
        RequestError::Remote { code, message, .. } => {
            let prefix = format!("{code}: ");
            let mut m = message.as_str();
            while let Some(rest) = m.strip_prefix(&prefix) {
                m = rest;
            }
            m.to_owned()
        }
        other => other.to_string(),
    }
}

/// The structured form of a request that produced no answer, with what the host saw of it:
/// the output so far, who cancelled it, how long it ran.
pub(crate) fn request_failure_of(
    e: &RequestError,
    ending: &Ending,
    mut extra: Map<String, Value>,
) -> Outcome {
    if let Some(out) = ending.failure_output() {
        extra.insert("output".into(), Value::String(out.to_owned()));
        if ending.output_bytes > 0 {
            extra.insert("outputBytes".into(), json!(ending.output_bytes));
            extra.insert("outputLines".into(), json!(ending.output_lines));
        }
    }
    if ending.elapsed_ms > 0 {
        extra.insert("elapsedMs".into(), json!(ending.elapsed_ms));
    }
    if let Some(stopped) = ending.stopped {
        extra.insert("stopped".into(), json!(stopped));
        if !stopped {
            let message = format!(
                "{}; the computer did not stop it when asked (a chunk that never yields runs on \
                 until CC's watchdog ends it; session-log says when it answered)",
                error_message(e)
            );
            return request_failure_with(e, &message, extra);
        }
    }
    if let RequestError::Cancelled { .. } = e {
        if let Some(by) = &ending.cancelled_by {
            extra.insert("cancelledBy".into(), json!(by));
        }
        let message = ending.cancel_line();
        return request_failure_with(e, &message, extra);
    }
    request_failure(e, extra)
}

/// The structured form of a request that produced no answer.
pub(crate) fn request_failure(e: &RequestError, extra: Map<String, Value>) -> Outcome {
    request_failure_with(e, &error_message(e), extra)
}

fn request_failure_with(e: &RequestError, message: &str, mut extra: Map<String, Value>) -> Outcome {
    match e {
        RequestError::UnknownComputer { linked, .. } => {
            extra.insert("linked".into(), json!(linked));
        }
        RequestError::Ambiguous { matches, .. } => {
            extra.insert("matches".into(), json!(matches));
        }
        RequestError::Lost { reason, .. } => {
            extra.insert("reason".into(), json!(reason));
        }
        _ => {}
    }
    if let Some(out) = e.output() {
        extra
            .entry("output")
            .or_insert_with(|| Value::String(out.to_owned()));
    }
    Outcome::failure(e.code(), message, extra)
}

/// Turns a finished request into an outcome: the answer payload plus ids, an error when the
/// payload says `ok: false` or no answer came. `line` words a success.
pub(crate) fn outcome_of(
    ran: Ran,
    what: &str,
    line: impl FnOnce(&Value) -> String,
) -> (Status, Outcome) {
    let (status, short) = summary::outcome(&ran.ending.result);
    let extra = ids(&ran);
    let mut ending = ran.ending;
    if let Err(e) = &ending.result {
        // A failure reads the rest of the ending (its output so far, who cancelled) with it.
        return (status, request_failure_of(e, &ending, extra));
    }
    // Taken, not copied: the answer is the result's data from here on.
    let Ok(answer) = std::mem::replace(&mut ending.result, Ok(Value::Null)) else {
        return (status, Outcome::ok(short, Value::Object(extra)));
    };
    match answer {
        Value::Object(mut payload) => {
            complete_totals(&mut payload, &ending);
            // The MCP edge: the computer's answer reads in camelCase from here on.
            let mut payload = match super::wire::passed_on(ran.kind, payload) {
                Ok(p) => p,
                Err(e) => {
                    let message = format!("the computer's {} answer did not read: {e}", ran.kind);
                    return (
                        Status::Failed,
                        Outcome::failure("bad_answer", &message, extra),
                    );
                }
            };
            let failed = payload.get("ok").and_then(Value::as_bool) == Some(false);
            payload.extend(extra);
            let data = Value::Object(payload);
            if failed {
                (
                    status,
                    Outcome::error(format!("{what} failed: {short}"), data),
                )
            } else {
                let text = line(&data);
                (status, Outcome::ok(text, data))
            }
        }
        other => {
            let mut m = extra;
            m.insert("ok".into(), Value::Bool(true));
            m.insert("payload".into(), other);
            (status, Outcome::ok(short, Value::Object(m)))
        }
    }
}

/// A Result from a client that does not state its output's totals gets the ones the host
/// counted from the live output (which always carries all of it).
fn complete_totals(payload: &mut Map<String, Value>, ending: &Ending) {
    let Some(Value::String(out)) = payload.get("output") else {
        return;
    };
    if payload.contains_key("output_bytes") {
        return;
    }
    let bytes = ending.output_bytes.max(out.len());
    let lines = if ending.output_bytes >= out.len() {
        ending.output_lines
    } else {
        line_count(out)
    };
    payload.insert("output_bytes".into(), json!(bytes));
    payload.insert("output_lines".into(), json!(lines));
}

/// Lines in `text`, an unfinished last line included.
pub(crate) fn line_count(text: &str) -> usize {
    let newlines = text.bytes().filter(|b| *b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// `1 line`, `3 lines`.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(crate) fn timeout(ms: Option<u64>) -> Option<Duration> {
    ms.map(Duration::from_millis)
}

/// First line of a successful run: its returned values and how much it printed, or that the
/// chunk rebooted or shut the computer down (`power`, apis/run.lua).
pub(crate) fn run_line(d: &Value) -> String {
    match d.get("power").and_then(Value::as_str) {
        Some("reboot") => {
            return "the chunk called os.reboot(): the computer is rebooting and links again by itself (reboot-computer waits for that)".to_owned();
        }
        Some("shutdown") => {
            return "the chunk called os.shutdown(): the computer is shutting down and stays off until a player turns it on".to_owned();
        }
        _ => {}
    }
    let returns = d
        .get("returns")
        .and_then(Value::as_array)
        .map(|r| summary::returns_line(r))
        .unwrap_or_default();
    let text = d.get("output").and_then(Value::as_str).unwrap_or_default();
    let printed = d
        .get("outputLines")
        .and_then(Value::as_u64)
        .map_or_else(|| line_count(text), |n| n as usize);
    let bytes = d
        .get("outputBytes")
        .and_then(Value::as_u64)
        .map_or(text.len(), |n| n as usize);
    let cut = d.get("outputTruncated").and_then(Value::as_bool) == Some(true);
    let mut out = format!("{} of output", plural(printed, "line", "lines"));
    if cut {
        out.push_str(&format!(
            " ({bytes} bytes; head and tail kept here, all of it with computer-output)"
        ));
    }
    match (returns.is_empty(), printed) {
        (true, 0) => "ok (no values, no output)".to_owned(),
        (true, _) => format!("ok, {out}"),
        (false, 0) => format!("returned {returns}"),
        (false, _) => format!("returned {returns}; {out}"),
    }
}

pub(crate) fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::Utf8 => "utf8",
        Encoding::Base64 => "base64",
    }
}

/// The bytes to write: the host carries them as bytes, and a JSON frame as base64 (byte-exact
/// through any peer).
pub(crate) fn decode_content(content: &str, encoding: Encoding) -> Result<Vec<u8>, String> {
    use base64::Engine;
    match encoding {
        Encoding::Utf8 => Ok(content.as_bytes().to_vec()),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD
            .decode(content.trim())
            .map_err(|e| format!("content is not valid base64: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_says_its_code_once() {
        let e = RequestError::Remote {
            code: "internal".into(),
            message: "internal: /trapdesk/apis/base64.lua:38: Too long without yielding".into(),
            output: None,
        };
        let o = request_failure(&e, Map::new());
        assert_eq!(
            o.line,
            "internal: /trapdesk/apis/base64.lua:38: Too long without yielding"
        );
        assert_eq!(
            o.data["error"]["message"],
            "/trapdesk/apis/base64.lua:38: Too long without yielding"
        );
    }

    #[test]
    fn counts_are_singular_when_one() {
        assert_eq!(plural(1, "entry", "entries"), "1 entry");
        assert_eq!(plural(0, "line", "lines"), "0 lines");
        assert_eq!(line_count("a\nb"), 2);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count(""), 0);
    }
}

//! Outcome of a request → tool outcome, and the small conversions the tools share.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::Ran;
use super::params::Encoding;
use super::results::Outcome;
use crate::session::summary;
use crate::session::{RequestError, Status};

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

/// The structured form of a request that produced no answer.
pub(crate) fn request_failure(e: &RequestError, mut extra: Map<String, Value>) -> Outcome {
    match e {
        RequestError::UnknownComputer { linked, .. } => {
            extra.insert("linked".into(), json!(linked));
        }
        RequestError::Ambiguous { matches, .. } => {
            extra.insert("matches".into(), json!(matches));
        }
        _ => {}
    }
    if let Some(out) = e.output() {
        extra.insert("output".into(), Value::String(out.to_owned()));
    }
    Outcome::failure(e.code(), &e.to_string(), extra)
}

/// Turns a finished request into an outcome: the answer payload plus ids, an error when the
/// payload says `ok: false` or no answer came. `line` words a success.
pub(crate) fn outcome_of(
    ran: Ran,
    what: &str,
    line: impl FnOnce(&Value) -> String,
) -> (Status, Outcome) {
    let (status, short) = summary::outcome(&ran.result);
    let extra = ids(&ran);
    match ran.result {
        Ok(Value::Object(mut payload)) => {
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
        Ok(other) => {
            let mut m = extra;
            m.insert("ok".into(), Value::Bool(true));
            m.insert("payload".into(), other);
            (status, Outcome::ok(short, Value::Object(m)))
        }
        Err(e) => (status, request_failure(&e, extra)),
    }
}

pub(crate) fn timeout(ms: Option<u64>) -> Option<Duration> {
    ms.map(Duration::from_millis)
}

/// First line of a successful run: its returned values and how much it printed.
pub(crate) fn run_line(d: &Value) -> String {
    let returns = d
        .get("returns")
        .and_then(Value::as_array)
        .map(|r| summary::returns_line(r))
        .unwrap_or_default();
    let printed = d
        .get("output")
        .and_then(Value::as_str)
        .map_or(0, |o| o.lines().count());
    let lines = if printed == 1 { "line" } else { "lines" };
    match (returns.is_empty(), printed) {
        (true, 0) => "ok (no values, no output)".to_owned(),
        (true, n) => format!("ok, {n} {lines} of output"),
        (false, 0) => format!("returned {returns}"),
        (false, n) => format!("returned {returns}; {n} {lines} of output"),
    }
}

pub(crate) fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::Utf8 => "utf8",
        Encoding::Base64 => "base64",
    }
}

pub(crate) fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The bytes to write. Content always travels base64 on the wire (byte-exact through any peer).
pub(crate) fn decode_content(content: &str, encoding: Encoding) -> Result<Vec<u8>, String> {
    use base64::Engine;
    match encoding {
        Encoding::Utf8 => Ok(content.as_bytes().to_vec()),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD
            .decode(content.trim())
            .map_err(|e| format!("content is not valid base64: {e}")),
    }
}

//! `exec-lua`, `run-file`, `wait-request`, `computer-output` and `session-log`.
#![allow(dead_code)]

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::super::schemas::Common;

/// The computer's Result (docs/protocol.md, "Payloads") as a run's result carries it.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Ran {
    #[serde(flatten)]
    common: Common,
    /// one descriptor per returned value: {type, value} or {type, repr}; a value too large for the result keeps its head in value (a table: the head of its JSON text), its full length in bytes, and cut: true
    #[serde(skip_serializing_if = "Option::is_none")]
    returns: Option<Vec<Map<String, Value>>>,
    /// number of returned values
    #[serde(skip_serializing_if = "Option::is_none")]
    n: Option<u64>,
    /// captured print/write output (head and tail when cut)
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    /// true only when output was left out
    #[serde(skip_serializing_if = "Option::is_none")]
    output_truncated: Option<bool>,
    /// bytes of output the run produced in all
    #[serde(skip_serializing_if = "Option::is_none")]
    output_bytes: Option<u64>,
    /// lines of output the run produced in all
    #[serde(skip_serializing_if = "Option::is_none")]
    output_lines: Option<u64>,
    /// bytes of output in `output` when it was cut (the marker excluded)
    #[serde(skip_serializing_if = "Option::is_none")]
    output_kept_bytes: Option<u64>,
    /// what the run wrote to the error stream (printError, text drawn in red), also in `output` in its place; present only when there was some
    #[serde(skip_serializing_if = "Option::is_none")]
    error_output: Option<String>,
    /// who cancelled the request: person, or an agent's client name
    #[serde(skip_serializing_if = "Option::is_none")]
    cancelled_by: Option<String>,
    /// how long the request ran before it failed
    #[serde(skip_serializing_if = "Option::is_none")]
    elapsed_ms: Option<u64>,
    /// a timeout's: whether the computer stopped the run when asked
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    traceback: Option<String>,
    /// a Lua error that was not a string: its descriptor
    #[serde(skip_serializing_if = "Option::is_none")]
    error_value: Option<Value>,
    /// how long the chunk ran on the computer
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<f64>,
}

/// `exec-lua` and `run-file`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct RunResult {
    #[serde(flatten)]
    ran: Ran,
    /// with detach: running (the run goes on; follow it with wait-request)
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
}

/// `wait-request`: a running request's lines so far, or the ended request's own result.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Waited {
    #[serde(flatten)]
    ran: Ran,
    /// running, or how it ended: ok, error, timeout, cancelled, disconnected, failed
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    /// pass as after next time: output after it is new
    cursor: Option<u64>,
    /// running: whether `until` was found (in `line`)
    #[serde(skip_serializing_if = "Option::is_none")]
    matched: Option<bool>,
    /// the line where `until` was found
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<String>,
    /// its number among the run's lines (1 = its first)
    #[serde(rename = "lineNumber", skip_serializing_if = "Option::is_none")]
    line_number: Option<u64>,
    /// lines between the cursor given and those shown, left out
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<u64>,
    /// how long this call waited
    #[serde(rename = "waitedMs", skip_serializing_if = "Option::is_none")]
    waited_ms: Option<u64>,
    /// ended, with after: output is the lines after this cursor
    #[serde(rename = "outputAfter", skip_serializing_if = "Option::is_none")]
    output_after: Option<u64>,
    /// lost: host_restarted, computer_restarted, not_followed or no_receipt
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// running, or ended with after: output holds the lines after the cursor, oldest first
    #[serde(flatten)]
    page: Lines,
    /// running, or ended with after: more lines follow the cursor than fitted
    #[serde(skip_serializing_if = "Option::is_none")]
    more: Option<bool>,
}

/// An output page's lines beside their text in `output` (each line once, as printed).
#[derive(Serialize, JsonSchema)]
pub(crate) struct Lines {
    /// when the page's first line came, in ms since the Unix epoch
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<u64>,
    /// one per line of output: ms after the line before it (the first: after at)
    #[serde(skip_serializing_if = "Option::is_none")]
    times: Option<Vec<u64>>,
    /// the indices of the lines written to the error stream
    #[serde(skip_serializing_if = "Option::is_none")]
    err: Option<Vec<u64>>,
    /// lines of several requests: {from (a line index), requestId (null: none)} for each run of lines of one
    #[serde(skip_serializing_if = "Option::is_none")]
    requests: Option<Vec<Map<String, Value>>>,
}

/// `computer-output`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OutputPage {
    #[serde(flatten)]
    common: Common,
    /// the lines' text, oldest first, each ending with a newline unless still open
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    #[serde(flatten)]
    page: Lines,
    /// cursor for the page before this one; null when nothing older is kept
    before: Option<u64>,
    /// the newest line's seq: pass as after to read only newer lines
    cursor: Option<u64>,
    /// with after: more lines follow the cursor than fitted
    #[serde(skip_serializing_if = "Option::is_none")]
    more: Option<bool>,
    /// with requestId: running, how it ended (ok, error, timeout, cancelled, disconnected, failed), or ended once its result is no longer kept
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
}

/// `session-log`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LogPage {
    #[serde(flatten)]
    common: Common,
    /// oldest first; one per call (event "call") or request ("request"), links and refusals as they are; each with seq, timeMs, who, traposId (resolved), requestId, what, status, detail, durationMs; empty on a failure
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<Vec<Map<String, Value>>>,
    /// cursor for the entries before these; null when nothing older is kept
    before: Option<u64>,
    /// the log's newest cursor: pass it as since to get only what began or changed after this answer
    #[serde(skip_serializing_if = "Option::is_none")]
    latest: Option<u64>,
}

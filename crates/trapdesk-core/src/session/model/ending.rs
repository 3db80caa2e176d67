//! How a request ended: [`Ending`], [`RequestError`] when there is no answer, and the
//! [`Status`] shown and logged.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use trapdesk_proto::protocol::ErrorCode;

/// Why a request produced no answer payload. The computer's own failures (a Lua error, a failed
/// write) are not here: they are a successful answer whose payload says `ok: false`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("no linked computer matches {query:?}; linked: {}", list(linked))]
    UnknownComputer { query: String, linked: Vec<String> },
    #[error(
        "{query:?} matches several computers: {}; use the full traposId",
        list(matches)
    )]
    Ambiguous { query: String, matches: Vec<String> },
    #[error("timed out after {} ms", timeout.as_millis())]
    Timeout { timeout: Duration },
    #[error("the computer disconnected before answering")]
    Disconnected,
    /// A run the host no longer follows, and why (`reason`, one of [`LOST_REASONS`]).
    #[error("{message}")]
    Lost {
        reason: &'static str,
        message: String,
    },
    #[error("cancelled")]
    Cancelled { output: Option<String> },
    #[error("too many requests waiting for {trapos_id} (limit {limit})")]
    Busy { trapos_id: String, limit: usize },
    /// A dispatch failure reported by the computer (`unknown_type`, `bad_request`, ...).
    #[error("{code}: {message}")]
    Remote {
        code: String,
        message: String,
        output: Option<String>,
    },
    #[error(
        "{trapos_id} already runs {limit} detached runs (the limit per computer, max_detached); wait for one to end or cancel one"
    )]
    DetachedLimit { trapos_id: String, limit: usize },
    #[error("the host is shutting down")]
    ShuttingDown,
    /// The policy stopped it: `denied`, `refused` (by the person), `not_answered`, or
    /// `no_approver` (`ask` with no console to answer).
    #[error("{message}")]
    Policy { code: ErrorCode, message: String },
}

/// Why a request is `lost`: its host restarted (the emulated computers of `--demo` live in
/// the host's process), its computer restarted, the host stopped following it (too many runs
/// whose computers are away), or the computer never received it (no receipt).
pub const LOST_REASONS: [&str; 4] = [
    "host_restarted",
    "computer_restarted",
    "not_followed",
    "no_receipt",
];

fn list(ids: &[String]) -> String {
    if ids.is_empty() {
        "none".to_owned()
    } else {
        ids.join(", ")
    }
}

impl RequestError {
    /// The protocol's error code for this failure.
    pub fn code(&self) -> &str {
        match self {
            RequestError::UnknownComputer { .. } => ErrorCode::UnknownComputer.as_str(),
            RequestError::Ambiguous { .. } => ErrorCode::AmbiguousComputer.as_str(),
            RequestError::Timeout { .. } => ErrorCode::Timeout.as_str(),
            RequestError::Disconnected => ErrorCode::Disconnected.as_str(),
            RequestError::Lost { .. } => ErrorCode::Lost.as_str(),
            RequestError::Cancelled { .. } => ErrorCode::Cancelled.as_str(),
            RequestError::Busy { .. } => ErrorCode::Busy.as_str(),
            RequestError::Remote { code, .. } => code,
            RequestError::DetachedLimit { .. } => ErrorCode::DetachedLimit.as_str(),
            RequestError::ShuttingDown => ErrorCode::ShuttingDown.as_str(),
            RequestError::Policy { code, .. } => code.as_str(),
        }
    }

    /// Why a `lost` request was lost (one of [`LOST_REASONS`]).
    pub fn lost_reason(&self) -> Option<&'static str> {
        match self {
            RequestError::Lost { reason, .. } => Some(reason),
            _ => None,
        }
    }

    /// Output captured before the failure, when the computer sent it.
    pub fn output(&self) -> Option<&str> {
        match self {
            RequestError::Cancelled { output } | RequestError::Remote { output, .. } => {
                output.as_deref()
            }
            _ => None,
        }
    }
}

/// How a request ended, with what the host knows beyond the computer's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    /// The answer payload, or why there is none.
    pub result: Result<Value, RequestError>,
    /// Output the host received live before a failure that has no answer of its own to carry
    /// it (timeout, disconnect, shutdown, a cancel the computer did not answer): head and tail
    /// with a marker when long. `None` on success and when nothing was printed.
    pub output: Option<String>,
    /// Bytes of live output received in all.
    pub output_bytes: usize,
    /// Lines of live output received in all.
    pub output_lines: usize,
    /// Who cancelled it (`person`, an agent's name), when it was cancelled by someone.
    pub cancelled_by: Option<String>,
    /// From the start of the request to its end.
    pub elapsed_ms: u64,
    /// A timeout's: whether the computer stopped the request when the host asked it to
    /// (`false`: it went on, as a chunk that never yields does until CC's own watchdog).
    pub stopped: Option<bool>,
}

impl Ending {
    /// The output so far of a failed request: the computer's own (cancel) or the host's.
    pub fn failure_output(&self) -> Option<&str> {
        match &self.result {
            Ok(_) => None,
            Err(e) => e.output().or(self.output.as_deref()),
        }
    }

    /// One line for a cancelled request: who and after how long.
    pub fn cancel_line(&self) -> String {
        let after = seconds(self.elapsed_ms);
        match &self.cancelled_by {
            Some(by) => format!("cancelled by {by} after {after}"),
            None => format!("cancelled after {after}"),
        }
    }
}

/// `850 ms`, `2.3 s`.
pub fn seconds(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// How a request ended, for display and the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Running,
    Ok,
    /// The computer answered, but the work failed (a Lua error, a failed write).
    Error,
    Timeout,
    Cancelled,
    Disconnected,
    /// Refused or failed before the work ran (busy, unknown type, unknown computer).
    Failed,
}

impl Status {
    /// The status [`Status::as_str`] names (`failed` for a name it does not know), for what
    /// `history.db` gives back.
    pub fn parse(s: &str) -> Status {
        match s {
            "running" => Status::Running,
            "ok" => Status::Ok,
            "error" => Status::Error,
            "timeout" => Status::Timeout,
            "cancelled" => Status::Cancelled,
            "disconnected" => Status::Disconnected,
            _ => Status::Failed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Timeout => "timeout",
            Status::Cancelled => "cancelled",
            Status::Disconnected => "disconnected",
            Status::Failed => "failed",
        }
    }
}

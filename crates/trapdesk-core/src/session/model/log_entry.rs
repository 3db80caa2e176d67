//! A line of the recent-events log and of `transcript.jsonl` ([`LogEntry`]), and the closed
//! set of its event names.

use serde::{Deserialize, Serialize};

use super::Status;

/// A log entry's event name. An alias, not `&'static str` written out, because serde's derive
/// takes a written-out `&str` field as borrowed from the input (which a `'static` one cannot
/// be); the alias lets `de_event_name` read it.
pub type EventName = &'static str;

/// One line of the recent-events log and of `transcript.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    pub seq: u64,
    pub time_ms: u64,
    /// `linked`, `unlinked`, `refused` (a link attempt turned away), `relabelled` (its label
    /// changed while linked), `back` (linked again after it went off in a hard abort),
    /// `request`, `finished`,
    /// `tool_call`, `tool_result`, `dropped`, `transcript_failed` (once, when the transcript
    /// cannot be written: a full disk).
    #[serde(deserialize_with = "de_event_name")]
    pub event: EventName,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub who: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trapos_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Request type or tool name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The agent's tool call this entry belongs to (`tool_call`, `tool_result`): pairs a
    /// call's start and end in the transcript, and lets `session-log` fold them into one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<u64>,
}

/// Every name a log entry's `event` can have: the host writes only these. One list for every
/// reader that turns a stored or received name back into the `&'static str` the entry holds
/// (the attached console, `history.db`), so a new event is added in one place.
pub(crate) const EVENT_NAMES: &[&str] = &[
    "linked",
    "unlinked",
    "refused",
    "relabelled",
    "back",
    "request",
    "finished",
    "tool_call",
    "tool_result",
    "dropped",
    "transcript_failed",
    "approved",
    "approval_asked",
    "policy",
    "paused",
    "resumed",
    "output",
    "detached",
    "adopted",
    "call",
];

/// The known event name equal to `name`, if any.
pub(crate) fn event_name(name: &str) -> Option<&'static str> {
    EVENT_NAMES.iter().find(|k| **k == name).copied()
}

/// The log's event names are a closed set written by the host; one this build does not know
/// (a newer host's) reads as `other`, never as a leaked string.
fn de_event_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let s = String::deserialize(d)?;
    Ok(event_name(&s).unwrap_or("other"))
}

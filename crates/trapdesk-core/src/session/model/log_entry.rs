//! A line of the recent-events log and of `transcript.jsonl` ([`LogEntry`]), and the closed
//! set of its event names ([`LogEvent`]).

use serde::{Deserialize, Serialize};

use super::Status;

/// One line of the recent-events log and of `transcript.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    pub seq: u64,
    pub time_ms: u64,
    /// What happened.
    #[serde(deserialize_with = "de_event")]
    pub event: LogEvent,
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

impl LogEntry {
    /// A computer's link attempt turned away: `refused` naming no request type (a refused
    /// request names its type in `what`).
    pub fn is_turned_away(&self) -> bool {
        self.event == LogEvent::Refused && self.what.is_none()
    }
}

trapdesk_proto::wire_names! {
    /// What a log entry records, by its name in the log, `transcript.jsonl` and `session-log`
    /// (docs/mcp.md, "The session log", holds the same list as a table). The host writes all
    /// but the last two, which name what a reader did not know.
    pub enum LogEvent ("log event") {
        /// A computer linked.
        Linked = "linked",
        /// A computer unlinked.
        Unlinked = "unlinked",
        /// A link attempt turned away, or a request the policy or the person refused.
        Refused = "refused",
        /// A linked computer's label changed.
        Relabelled = "relabelled",
        /// Linked again after it went off in a hard abort.
        Back = "back",
        /// A request started.
        Request = "request",
        /// A request ended.
        Finished = "finished",
        /// An agent's tool call started.
        ToolCall = "tool_call",
        /// An agent's tool call ended.
        ToolResult = "tool_result",
        /// A response to a request that is not pending.
        Dropped = "dropped",
        /// The transcript cannot be written (a full disk); once.
        TranscriptFailed = "transcript_failed",
        /// The person approved a request.
        Approved = "approved",
        /// A request waits for the person's approval.
        ApprovalAsked = "approval_asked",
        /// The policy was loaded, or a reload refused.
        Policy = "policy",
        /// The person stopped all agents.
        Paused = "paused",
        /// Agents may run again.
        Resumed = "resumed",
        /// Output outside a request.
        Output = "output",
        /// A detached run's link went down, or the host stopped with it running.
        Detached = "detached",
        /// A detached run taken back when its computer linked again.
        Adopted = "adopted",
        /// A request found lost (`reason` in the detail), or a run that ended with its host.
        Lost = "lost",
        /// A request whose result is no longer kept was asked for.
        Expired = "expired",
        /// A request id this host never issued was asked for.
        UnknownRequest = "unknown_request",
        /// A computer answered a request that timed out without stopping: when it stopped.
        LateAnswer = "late_answer",
        /// `session-log`'s fold of a tool call's start and end.
        Call = "call",
        /// A name read from the attached console's wire that this build does not know.
        Other = "other",
        /// A name read back from `history.db` that this build does not know (a newer host's).
        Event = "event",
    }
}

impl LogEvent {
    /// The event named `name`, if this build knows it.
    pub fn parse(name: &str) -> Option<LogEvent> {
        name.parse().ok()
    }
}

/// The log's event names are a closed set written by the host; one this build does not know
/// (a newer host's) reads as `other`, never as a leaked string.
fn de_event<'de, D: serde::Deserializer<'de>>(d: D) -> Result<LogEvent, D::Error> {
    let s = String::deserialize(d)?;
    Ok(LogEvent::parse(&s).unwrap_or(LogEvent::Other))
}

#[cfg(test)]
mod tests {
    use super::LogEvent;
    use trapdesk_proto::protocol::docs_table_names;

    #[test]
    fn the_docs_table_names_exactly_the_events() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/mcp.md"))
                .unwrap_or_default();
        let listed = docs_table_names(&doc, "`LogEvent` in");
        let events: Vec<&str> = LogEvent::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(
            listed, events,
            "docs/mcp.md, \"The session log\": one row per LogEvent, in its order"
        );
    }

    #[test]
    fn an_unknown_event_reads_as_other() {
        let e: Result<super::LogEntry, _> =
            serde_json::from_str(r#"{"seq":1,"timeMs":2,"event":"teleported","detail":""}"#);
        assert_eq!(e.map(|e| e.event).ok(), Some(LogEvent::Other));
        assert_eq!(LogEvent::parse("linked"), Some(LogEvent::Linked));
    }
}

//! The notifications on the session's broadcast: [`Event`].

use serde::{Deserialize, Serialize};

use super::{LogEntry, Origin, PendingInfo, Status, Stream, ToolCall};

/// Notifications on the session's broadcast. They say *that* something changed and carry what a
/// live view needs; a subscriber that lags re-reads snapshots and loses nothing that matters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    Linked {
        trapos_id: String,
    },
    Unlinked {
        trapos_id: String,
        reason: String,
    },
    /// Serves, round-trip time or counts changed.
    ComputerChanged {
        trapos_id: String,
    },
    RequestStarted {
        info: PendingInfo,
    },
    Output {
        trapos_id: String,
        request_id: Option<String>,
        stream: Stream,
        /// The first 4 KiB of the message at most, so that the broadcast's ring stays small;
        /// the scrollback ([`crate::session::Session::output_since`]) has all of it.
        text: String,
    },
    RequestFinished {
        request_id: String,
        trapos_id: String,
        origin: Origin,
        status: Status,
        summary: String,
        duration_ms: u64,
    },
    ToolCallStarted {
        call: ToolCall,
    },
    ToolCallFinished {
        call: ToolCall,
    },
    /// A computer's terminal mirror or a monitor's shadow changed (a frame or an update
    /// arrived).
    ScreenChanged {
        trapos_id: String,
        #[serde(default)]
        display: crate::session::screen::Display,
    },
    /// A log entry was added (every entry, including the ones above).
    Logged {
        entry: LogEntry,
    },
    /// A request waits for the person's approval (see [`crate::session::Session::approvals`]).
    ApprovalAsked {
        request_id: String,
    },
    /// A waiting request was approved or refused.
    ApprovalAnswered {
        request_id: String,
    },
    /// A console answered an approval (see [`crate::session::Session::answer_by`]): who, how and
    /// when, so that the other consoles attached can say it (the first answer wins).
    AnsweredBy {
        request_id: String,
        /// The answering console's name (`alice@box`, `the host's console`).
        by: String,
        answer: crate::session::Answer,
        /// What was answered, in words: `exec-lua on 3:miner for claude`.
        what: String,
        at_ms: u64,
    },
    /// The policy was reloaded.
    PolicyChanged,
    /// The stop for all agents was set or lifted (see [`crate::session::Session::paused`]).
    PauseChanged,
    /// The person attached to a computer or left it (see
    /// [`crate::session::Session::hold_keyboard`]).
    KeyboardChanged {
        trapos_id: String,
    },
}

//! The session's public data: who asks, what is linked, what happened.
//!
//! These are plain snapshot values. The TUI and the MCP endpoint read them after a notification
//! ("notify, then pull"), so none of them borrows session state.

mod computer;
mod ending;
mod event;
mod json;
mod log_entry;
mod origin;
mod output;
mod request;
mod tool_call;

pub use computer::ComputerInfo;
pub use ending::{Ending, LOST_REASONS, RequestError, Status, seconds};
pub use event::Event;
pub use log_entry::{LogEntry, LogEvent};
pub use origin::Origin;
pub use output::{OutputEntry, OutputItem, StartEntry, Stream};
pub use request::{Deadline, Mode, PendingInfo, RequestSpec};
pub use tool_call::ToolCall;

pub(crate) use trapdesk_proto::time::epoch_ms;

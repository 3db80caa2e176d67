//! A computer's output as the session keeps it: [`OutputEntry`] and its [`OutputItem`] cursor.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use trapdesk_proto::protocol::Kind;

use super::json::{de_time, ser_time};
use super::{Origin, Status};

/// Which stream a piece of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Out,
    Err,
}

impl Stream {
    pub fn parse(s: &str) -> Stream {
        if s == "err" { Stream::Err } else { Stream::Out }
    }
}

/// One entry in a computer's output ring.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum OutputEntry {
    /// A request began on this computer. Boxed: every entry of a ring is as large as the
    /// largest variant, and lines, which are nearly all of them, need far less than this.
    Start(Box<StartEntry>),
    /// A line of output (`complete` false while the line has no newline yet).
    Line {
        request_id: Option<String>,
        stream: Stream,
        text: String,
        complete: bool,
    },
    /// A request ended.
    End {
        request_id: String,
        status: Status,
        summary: String,
        duration_ms: u64,
    },
}

/// The start of a request in a computer's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartEntry {
    pub request_id: String,
    pub origin: Origin,
    pub kind: Kind,
    pub summary: String,
    #[serde(serialize_with = "ser_time", deserialize_with = "de_time")]
    pub at: SystemTime,
}

/// An output entry with its position, the cursor for paging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputItem {
    pub seq: u64,
    /// When the host received the entry (a line: its first piece), in ms since the Unix epoch.
    #[serde(skip)]
    pub at_ms: u64,
    #[serde(flatten)]
    pub entry: OutputEntry,
}

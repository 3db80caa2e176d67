//! The session's public data: who asks, what is linked, what happened.
//!
//! These are plain snapshot values. The TUI and the MCP endpoint read them after a notification
//! ("notify, then pull"), so none of them borrows session state.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use trapdesk_proto::protocol::{Kind, Payload};

/// Who started a request: the person at the console, an agent by its MCP client name, or the
/// person's own shell through `trapdesk`'s one-shot commands (`cli`) or `trapdesk sync`
/// (`sync`). The host knows the last two by the credential they present (the person token,
/// `crate::mcp::caller_origin`), never by the name a client gives itself: the clientInfo
/// names below only pick between `cli` and `sync` for a request that carried that token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Origin {
    Person,
    Agent(String),
    Cli,
    Sync,
    /// The host itself, on the person's behalf: upgrading a client too old to upgrade itself
    /// (`gateway/upgrade.rs`).
    Host,
}

impl Origin {
    /// clientInfo name of `trapdesk exec/run/computers/ls/get/put`.
    pub const CLI_CLIENT: &str = "trapdesk-cli";
    /// clientInfo name of `trapdesk sync`.
    pub const SYNC_CLIENT: &str = "trapdesk-sync";

    /// The origin a name the host itself recorded stands for ([`Origin::name`] read back):
    /// `person`, `cli`, `sync` and `host` are the person's, every other name an agent's. Only
    /// for names the host wrote; a name a client or computer sends is an agent's
    /// (`crate::mcp::caller_origin`).
    pub fn from_recorded(name: &str) -> Origin {
        match name {
            "person" => Origin::Person,
            "cli" => Origin::Cli,
            "sync" => Origin::Sync,
            "host" => Origin::Host,
            other => Origin::Agent(other.to_owned()),
        }
    }

    /// Short display form for the person at the console: `you`, the agent's client name,
    /// `cli` or `sync`.
    pub fn label(&self) -> &str {
        match self {
            Origin::Person => "you",
            Origin::Agent(name) => name,
            Origin::Cli => "cli",
            Origin::Sync => "sync",
            Origin::Host => "host",
        }
    }

    /// The name in the log and in what agents read: `person`, or the agent's client name.
    /// ("you" would tell an agent reading `session-log` that it did what the person did.)
    pub fn name(&self) -> &str {
        match self {
            Origin::Person => "person",
            Origin::Agent(name) => name,
            Origin::Cli => "cli",
            Origin::Sync => "sync",
            Origin::Host => "host",
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// What to ask a computer.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub kind: Kind,
    pub payload: Value,
    /// `None` takes the configured default; longer than the maximum is clamped.
    pub timeout: Option<Duration>,
    /// Deliver live output of this request on [`super::Ticket::output`].
    pub stream_output: bool,
    /// No deadline at all (a person's long-running program, cancelled by hand): the session
    /// sets no timer and the computer is sent no `timeout_ms`. Ignored when `timeout` is set.
    pub no_deadline: bool,
    /// Housekeeping the console does for itself (path completion): logged like any request,
    /// but it leaves no header, output or ending in the computer's scrollback. A quiet `ping`
    /// (probe-computers', the console's status) is not logged either: a look, not an act.
    pub quiet: bool,
    /// Never sent to a computer: it only carries a policy approval for an action that reads
    /// what the session already holds (see [`super::Session::permit`]), and ends when approved.
    pub local: bool,
    /// Refused (`needs_approval`) where the policy says `ask`, instead of asking the person:
    /// for what an agent never waits on, such as completions.
    pub never_ask: bool,
    /// A detached run (docs/mcp.md, "Detached runs"): no deadline unless `timeout` is set, its
    /// own budget per computer outside the in-flight limit, and it outlives its requester and
    /// a dropped link; only its end or a cancel ends it.
    pub detach: bool,
}

impl RequestSpec {
    pub fn new(kind: Kind, payload: Value) -> Self {
        RequestSpec {
            kind,
            payload,
            timeout: None,
            stream_output: false,
            no_deadline: false,
            quiet: false,
            local: false,
            never_ask: false,
            detach: false,
        }
    }

    /// A detached run: see [`RequestSpec::detach`].
    pub fn detached(mut self) -> Self {
        self.detach = true;
        self.no_deadline = true;
        self
    }

    /// Runs until it ends or is cancelled, unless a `timeout` is also given.
    /// A request of a typed payload, of the payload's own kind.
    pub fn of<P: Payload>(payload: &P) -> Self {
        RequestSpec::new(P::KIND, payload.to_value())
    }

    /// Runs until it ends or is cancelled, unless a `timeout` is also given.
    pub fn without_deadline(mut self) -> Self {
        self.no_deadline = true;
        self
    }

    pub fn timeout(mut self, t: Option<Duration>) -> Self {
        self.timeout = t;
        self
    }

    pub fn streaming(mut self) -> Self {
        self.stream_output = true;
        self
    }

    pub fn quiet(mut self) -> Self {
        self.quiet = true;
        self
    }

    pub fn never_ask(mut self) -> Self {
        self.never_ask = true;
        self
    }

    pub fn local(mut self) -> Self {
        self.local = true;
        self.quiet = true;
        self
    }
}

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
    Policy { code: &'static str, message: String },
}

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
            RequestError::UnknownComputer { .. } => "unknown_computer",
            RequestError::Ambiguous { .. } => "ambiguous_computer",
            RequestError::Timeout { .. } => "timeout",
            RequestError::Disconnected => "disconnected",
            RequestError::Cancelled { .. } => "cancelled",
            RequestError::Busy { .. } => "busy",
            RequestError::Remote { code, .. } => code,
            RequestError::DetachedLimit { .. } => "detached_limit",
            RequestError::ShuttingDown => "shutting_down",
            RequestError::Policy { code, .. } => code,
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

/// A linked (or recently unlinked) computer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComputerInfo {
    pub trapos_id: String,
    pub id: u64,
    pub label: Option<String>,
    pub online: bool,
    #[serde(serialize_with = "ser_time", deserialize_with = "de_time")]
    pub connected_at: SystemTime,
    #[serde(serialize_with = "ser_opt_time", deserialize_with = "de_opt_time")]
    pub disconnected_at: Option<SystemTime>,
    pub serves: Vec<String>,
    /// Requests sent and not answered.
    pub running: usize,
    /// Requests waiting on the host because `running` is at the in-flight limit.
    pub queued: usize,
    /// Detached runs going on the computer (apart from `running`: they have their own budget).
    #[serde(default)]
    pub detached: usize,
    pub last_rtt_ms: Option<u64>,
    pub client: Option<String>,
    pub host: Option<String>,
    /// Largest frame the computer accepts.
    pub max_message: u64,
    /// What the computer is (device, flags, screen size), as its `hello` said.
    pub machine: trapdesk_proto::protocol::MachineInfo,
    /// What it has attached and, on a turtle, its fuel and selected slot, as its last status
    /// ping answered ([`super::Session::refresh_status`]); `None` until one answered (and from
    /// a client that does not answer them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<super::devices::DeviceStatus>,
}

/// A request that has not ended yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingInfo {
    pub request_id: String,
    pub trapos_id: String,
    pub origin: Origin,
    pub kind: Kind,
    /// One line describing the payload (the code's first line, the path and args, ...).
    pub summary: String,
    #[serde(serialize_with = "ser_time", deserialize_with = "de_time")]
    pub started_at: SystemTime,
    /// Not serialized (an `Instant` means nothing in another process): the attach channel
    /// sends how long ago and how far ahead instead (`session::attach::Timed`).
    #[serde(skip, default = "tokio::time::Instant::now")]
    pub started: tokio::time::Instant,
    #[serde(skip, default = "tokio::time::Instant::now")]
    pub deadline: tokio::time::Instant,
    /// 0 when there is no deadline.
    pub timeout_ms: u64,
    /// Runs until it ends or is cancelled (a person's run without a deadline); `deadline` is
    /// then far away and means nothing.
    pub no_deadline: bool,
    /// Sent to the computer (false while it waits on the host for a slot).
    pub sent: bool,
    pub cancel_requested: bool,
    /// Held until the person answers (policy `ask`); not in the computer's queue meanwhile.
    pub awaiting_approval: bool,
}

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

/// A tool call made by an agent, as the console's activity pane shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub call_id: u64,
    pub client: String,
    pub tool: String,
    pub target: Option<String>,
    pub args: Value,
    #[serde(serialize_with = "ser_time", deserialize_with = "de_time")]
    pub started_at: SystemTime,
    pub status: Status,
    pub summary: String,
    /// The result's `structuredContent` as JSON text, shared: the call is kept in the
    /// session's list (the last 500) and sent to the console, which parses it only when the
    /// person opens the call. As a `Value` tree a 24 KiB probe page was ~2,000 allocations to
    /// copy and as many to free again, per call.
    #[serde(serialize_with = "ser_json_text", deserialize_with = "de_json_text")]
    pub result: Option<std::sync::Arc<str>>,
    pub duration_ms: Option<u64>,
    /// The gateway request this call made, if any.
    pub request_id: Option<String>,
}

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
        /// the scrollback ([`super::Session::output_since`]) has all of it.
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
        display: super::screen::Display,
    },
    /// A log entry was added (every entry, including the ones above).
    Logged {
        entry: LogEntry,
    },
    /// A request waits for the person's approval (see [`super::Session::approvals`]).
    ApprovalAsked {
        request_id: String,
    },
    /// A waiting request was approved or refused.
    ApprovalAnswered {
        request_id: String,
    },
    /// A console answered an approval (see [`super::Session::answer_by`]): who, how and
    /// when, so that the other consoles attached can say it (the first answer wins).
    AnsweredBy {
        request_id: String,
        /// The answering console's name (`alice@box`, `the host's console`).
        by: String,
        answer: super::Answer,
        /// What was answered, in words: `exec-lua on 3:miner for claude`.
        what: String,
        at_ms: u64,
    },
    /// The policy was reloaded.
    PolicyChanged,
    /// The stop for all agents was set or lifted (see [`super::Session::paused`]).
    PauseChanged,
    /// The person attached to a computer or left it (see [`super::Session::hold_keyboard`]).
    KeyboardChanged {
        trapos_id: String,
    },
}

pub(crate) use trapdesk_proto::time::epoch_ms;

fn ser_time<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(epoch_ms(*t))
}

/// JSON text serialized as the JSON it holds (text that does not parse, as a string).
fn ser_json_text<S: serde::Serializer>(
    t: &Option<std::sync::Arc<str>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match t.as_deref().map(serde_json::from_str::<Value>) {
        Some(Ok(v)) => s.serialize_some(&v),
        Some(Err(_)) => s.serialize_some(&t.as_deref()),
        None => s.serialize_none(),
    }
}

fn ser_opt_time<S: serde::Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_some(&epoch_ms(*t)),
        None => s.serialize_none(),
    }
}

// The readers of the writers above, for the attach channel (`session::attach`), whose far
// side rebuilds these values from their JSON.

fn de_time<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    let ms = u64::deserialize(d)?;
    Ok(UNIX_EPOCH + Duration::from_millis(ms))
}

fn de_opt_time<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
    let ms = Option::<u64>::deserialize(d)?;
    Ok(ms.map(|ms| UNIX_EPOCH + Duration::from_millis(ms)))
}

/// The JSON a result was serialized as, back to its text.
fn de_json_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<std::sync::Arc<str>>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    Ok(v.map(|v| match v {
        Value::String(s) => s.into(),
        v => v.to_string().into(),
    }))
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

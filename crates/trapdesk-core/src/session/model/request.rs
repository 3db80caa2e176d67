//! A request: what to ask a computer ([`RequestSpec`]) and one that has not ended yet
//! ([`PendingInfo`]).

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use trapdesk_proto::protocol::{Kind, Payload};

use super::Origin;
use super::json::{de_time, ser_time};

/// What to ask a computer.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub kind: Kind,
    pub payload: Value,
    /// `None` takes the configured default; longer than the maximum is clamped.
    pub timeout: Option<Duration>,
    /// Deliver live output of this request on [`crate::session::Ticket::output`].
    pub stream_output: bool,
    /// No deadline at all (a person's long-running program, cancelled by hand): the session
    /// sets no timer and the computer is sent no `timeout_ms`. Ignored when `timeout` is set.
    pub no_deadline: bool,
    /// Housekeeping the console does for itself (path completion): logged like any request,
    /// but it leaves no header, output or ending in the computer's scrollback. A quiet `ping`
    /// (probe-computers', the console's status) is not logged either: a look, not an act.
    pub quiet: bool,
    /// Never sent to a computer: it only carries a policy approval for an action that reads
    /// what the session already holds (see [`crate::session::Session::permit`]), and ends when
    /// approved.
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
    /// sends how long ago and how far ahead instead (`control::attach::wire::Timed`).
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

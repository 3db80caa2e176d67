//! A request: what to ask a computer ([`RequestSpec`]) and one that has not ended yet
//! ([`PendingInfo`]).

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use trapdesk_proto::protocol::{Kind, RequestBody};

use super::Origin;
use super::json::{de_time, ser_time};

/// What to ask a computer.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    /// What to ask, typed by its kind.
    pub body: RequestBody,
    /// Sent instead of the body's JSON: only a test's payload of the wrong shape (see
    /// [`RequestSpec::new`]).
    pub(crate) as_written: Option<serde_json::Value>,
    /// When the host gives up on it.
    pub deadline: Deadline,
    /// How it is sent, shown and approved.
    pub mode: Mode,
}

/// When the host gives up on a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Deadline {
    /// The configured default (`request_timeout`).
    #[default]
    Default,
    /// After this long; longer than the configured maximum is clamped.
    After(Duration),
    /// Never (a person's long-running program, a detached run; cancelled by hand): the
    /// session sets no timer and the computer is sent no `timeout_ms`.
    None,
}

impl Deadline {
    /// The asked timeout, when one was asked.
    pub fn after(self) -> Option<Duration> {
        match self {
            Deadline::After(t) => Some(t),
            Deadline::Default | Deadline::None => None,
        }
    }
}

/// How a request is sent, shown and approved: the combinations that exist, so that none
/// that cannot (a local request detached, a detached one quiet) can be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The ordinary request: logged, shown in the computer's scrollback, its caller waiting on
    /// its ticket; with `stream`, its live output is delivered on
    /// [`crate::session::Ticket::output`].
    Attached { stream: bool },
    /// Housekeeping (path completion, a device's state, a screen frame): logged like any
    /// request, but it leaves no header, output or ending in the computer's scrollback. A
    /// quiet `ping` (probe-computers', the console's status) is not logged either: a look, not
    /// an act. With `never_ask`, refused (`needs_approval`) where the policy says `ask`,
    /// instead of asking the person: for what an agent never waits on, such as completions.
    Quiet { never_ask: bool },
    /// A detached run (docs/mcp.md, "Detached runs"): its own budget per computer outside
    /// the in-flight limit, and it outlives its requester and a dropped link; only its end
    /// or a cancel ends it.
    Detached,
    /// Never sent to a computer, and quiet: it only carries a policy approval for an action
    /// that reads what the session already holds (see [`crate::session::Session::permit`]),
    /// and ends when approved.
    Local,
}

impl Mode {
    /// Its live output goes to the ticket.
    pub fn streams(self) -> bool {
        self == Mode::Attached { stream: true }
    }

    /// Leaves nothing in the computer's scrollback.
    pub fn is_quiet(self) -> bool {
        matches!(self, Mode::Quiet { .. } | Mode::Local)
    }

    /// Refused where the policy would ask.
    pub fn never_asks(self) -> bool {
        self == Mode::Quiet { never_ask: true }
    }

    pub fn is_detached(self) -> bool {
        self == Mode::Detached
    }

    pub fn is_local(self) -> bool {
        self == Mode::Local
    }
}

impl RequestSpec {
    /// A request of a typed payload, of the payload's own kind.
    pub fn of(body: impl Into<RequestBody>) -> Self {
        RequestSpec {
            body: body.into(),
            as_written: None,
            deadline: Deadline::Default,
            mode: Mode::Attached { stream: false },
        }
    }

    /// A request of `kind` whose payload is JSON from elsewhere (the console's channel).
    ///
    /// # Errors
    /// A payload that is not one of `kind`: a field missing or of the wrong type.
    pub fn from_json(kind: Kind, payload: serde_json::Value) -> Result<Self, serde_json::Error> {
        RequestBody::from_value(kind, payload).map(RequestSpec::of)
    }

    /// A request of `kind` whose payload a test wrote as JSON. One of the wrong shape goes to
    /// the computer as written (the body the host reads is then an empty one of `kind`), so
    /// that a test reaches the computer's own checks; nothing else can send such a payload.
    #[cfg(any(test, feature = "test-support"))]
    pub fn new(kind: Kind, payload: serde_json::Value) -> Self {
        match RequestBody::from_value(kind, payload.clone()) {
            Ok(body) => RequestSpec::of(body),
            Err(_) => RequestSpec {
                as_written: Some(payload),
                ..RequestSpec::of(RequestBody::empty(kind))
            },
        }
    }

    pub fn kind(&self) -> Kind {
        self.body.kind()
    }

    /// The payload as the JSON frame carries it (for the log).
    pub fn payload(&self) -> serde_json::Value {
        match &self.as_written {
            Some(v) => v.clone(),
            None => self.body.to_value(),
        }
    }

    /// A detached run (see [`Mode::Detached`]): no deadline unless a `timeout` is given.
    pub fn detached(mut self) -> Self {
        self.mode = Mode::Detached;
        self.without_deadline()
    }

    /// Runs until it ends or is cancelled, unless a `timeout` is also given.
    pub fn without_deadline(mut self) -> Self {
        if self.deadline == Deadline::Default {
            self.deadline = Deadline::None;
        }
        self
    }

    /// Gives up after `t`; `None` leaves the default (or no deadline, where one was asked
    /// for).
    pub fn timeout(mut self, t: Option<Duration>) -> Self {
        self.deadline = match (t, self.deadline) {
            (Some(t), _) => Deadline::After(t),
            (None, Deadline::After(_)) => Deadline::Default,
            (None, d) => d,
        };
        self
    }

    /// Delivers its live output on the ticket (an attached request's).
    pub fn streaming(mut self) -> Self {
        if let Mode::Attached { stream } = &mut self.mode {
            *stream = true;
        }
        self
    }

    /// Housekeeping: see [`Mode::Quiet`].
    pub fn quiet(mut self) -> Self {
        if let Mode::Attached { .. } = self.mode {
            self.mode = Mode::Quiet { never_ask: false };
        }
        self
    }

    /// Quiet, and refused where the policy would ask: see [`Mode::Quiet`].
    pub fn never_ask(mut self) -> Self {
        if let Mode::Attached { .. } | Mode::Quiet { .. } = self.mode {
            self.mode = Mode::Quiet { never_ask: true };
        }
        self
    }

    /// Only an approval: see [`Mode::Local`].
    pub fn local(mut self) -> Self {
        self.mode = Mode::Local;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RequestSpec {
        RequestSpec::of(trapdesk_proto::protocol::kind::Ping::default())
    }

    #[test]
    fn an_asked_timeout_wins_over_no_deadline_in_either_order() {
        let t = Some(Duration::from_secs(3));
        let after = Deadline::After(Duration::from_secs(3));
        assert_eq!(spec().detached().timeout(t).deadline, after);
        assert_eq!(spec().timeout(t).detached().deadline, after);
        assert_eq!(spec().timeout(t).without_deadline().deadline, after);
        assert_eq!(spec().timeout(None).detached().deadline, Deadline::None);
        assert_eq!(spec().detached().timeout(None).deadline, Deadline::None);
        assert_eq!(spec().timeout(None).deadline, Deadline::Default);
    }

    #[test]
    fn a_tests_payload_of_the_wrong_shape_goes_as_written() {
        use serde_json::json;
        let good = RequestSpec::new(Kind::MoveFile, json!({"from": "a", "to": "b"}));
        assert_eq!(good.as_written, None);
        assert_eq!(good.payload(), json!({"from": "a", "to": "b"}));
        let bad = RequestSpec::new(Kind::MoveFile, json!({"from": "a"}));
        assert_eq!(bad.kind(), Kind::MoveFile);
        assert_eq!(bad.payload(), json!({"from": "a"}));
    }

    #[test]
    fn the_modes_combine_as_the_builders_read() {
        assert!(spec().streaming().mode.streams());
        assert!(!spec().detached().streaming().mode.streams());
        let completion = spec().quiet().never_ask().mode;
        assert!(completion.is_quiet() && completion.never_asks());
        let local = spec().timeout(Some(Duration::from_secs(1))).local().mode;
        assert!(local.is_local() && local.is_quiet() && !local.never_asks());
        let detached = spec().detached().mode;
        assert!(detached.is_detached() && !detached.is_quiet());
    }
}

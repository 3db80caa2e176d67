//! The words of the attach channel (`trapdesk attach`): the console in one process, the
//! session in another. The host's side is `control::attach` (this module's parent), the console's side
//! `commands::attach`; both speak these types as JSON text messages on one WebSocket
//! (`GET /control/attach`).
//!
//! **Down** (host to console): [`Down::Hello`] once, then [`Down::Update`]s, each the
//! snapshots that changed and the session [`Event`]s that changed them, in that order, so the
//! console's mirror is current before its panes hear of the change and pull ("notify, then
//! pull", as in process). [`Down::Reply`] answers a call.
//!
//! **Up** (console to host): [`Up`], one [`Call`] with an id the reply carries back.
//!
//! JSON names as on the rest of the control channel: fields camelCase, tags snake_case.
//!
//! An `Instant` means nothing in another process: requests and approvals travel as
//! [`Timed`], with how long ago they started and how long they have left.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use trapdesk_core::session::screen::{Display, ScreenFrame};
use trapdesk_core::session::{
    Answer, Approval, ComputerInfo, Event, OutputEntry, OutputItem, PendingInfo, ToolCall,
};
use trapdesk_proto::protocol::Kind;

/// The route under the control prefix.
pub const ROUTE: &str = "attach";

/// The query parameter the console names itself with (`alice@box`).
pub const NAME_PARAM: &str = "name";

/// Largest message either side takes: a first update carries every computer's scrollback.
pub const MAX_MESSAGE: usize = 256 << 20;

/// Host to console.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Down {
    Hello(Hello),
    Update(Box<Update>),
    Reply {
        id: u64,
        result: Result<Value, String>,
    },
}

/// What the host says first.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// The host's machine and user, `trapdesk@mc-server`.
    pub host: String,
    /// This console's name as the others see it (its own, made unique with `#2`, `#3`).
    pub name: String,
    pub version: String,
    pub gateway: SocketAddr,
    pub mcp: SocketAddr,
    /// Output entries the host keeps per computer (the mirror keeps as many).
    pub scrollback: usize,
}

/// The snapshots that changed, then the events that changed them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Update {
    /// Everything is sent again (the first update, or after the host's side lagged): the
    /// console marks everything changed.
    #[serde(default)]
    pub resync: bool,
    /// The whole list: on a resync, and when computers linked or unlinked (which can drop
    /// others from the list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computers: Option<Vec<ComputerInfo>>,
    /// Only the computers that changed (counts, round trip), when none linked or unlinked:
    /// with a thousand computers the whole list is ~400 KB, one changed entry ~400 bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub computers_changed: Vec<ComputerInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Vec<Timed<PendingInfo>>>,
    /// The whole activity list (a resync only: later calls come in their events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<Vec<Timed<Approval>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output: Vec<OutputSlice>,
    /// Frames of the screens this console watches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub screens: Vec<ScreenSlice>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
}

/// The policy as the F7 popup shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyView {
    pub lines: Vec<String>,
    pub source: String,
}

/// New (or grown) output entries of one computer. An entry whose `seq` the console has
/// already is that entry grown (a line that was still open) and replaces it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputSlice {
    pub trapos_id: String,
    /// `(seq, at_ms, entry)`: `OutputItem` leaves `at_ms` out of its JSON (the MCP shape).
    pub items: Vec<(u64, u64, OutputEntry)>,
}

impl OutputSlice {
    pub fn new(trapos_id: &str, items: Vec<OutputItem>) -> OutputSlice {
        OutputSlice {
            trapos_id: trapos_id.to_owned(),
            items: items
                .into_iter()
                .map(|i| (i.seq, i.at_ms, i.entry))
                .collect(),
        }
    }

    pub fn into_items(self) -> Vec<OutputItem> {
        self.items
            .into_iter()
            .map(|(seq, at_ms, entry)| OutputItem { seq, at_ms, entry })
            .collect()
    }
}

/// One watched display of a computer (`None`: no frame known yet).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScreenSlice {
    pub trapos_id: String,
    /// The terminal when left out (a host from before monitors).
    #[serde(default)]
    pub display: Display,
    pub frame: Option<ScreenFrame>,
}

/// A value with the clocks an `Instant` held, in milliseconds from when it was sent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timed<T> {
    pub value: T,
    /// How long ago it started.
    pub age_ms: u64,
    /// How long until its deadline.
    pub left_ms: u64,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Timed<PendingInfo> {
    pub fn pending(p: PendingInfo, now: Instant) -> Self {
        Timed {
            age_ms: ms(now.saturating_duration_since(p.started)),
            left_ms: ms(p.deadline.saturating_duration_since(now)),
            value: p,
        }
    }

    /// The request with its clocks set again from `now`.
    pub fn into_pending(self, now: Instant) -> PendingInfo {
        let mut p = self.value;
        p.started = now
            .checked_sub(Duration::from_millis(self.age_ms))
            .unwrap_or(now);
        p.deadline = now + Duration::from_millis(self.left_ms);
        p
    }
}

impl Timed<Approval> {
    pub fn approval(a: Approval, now: Instant) -> Self {
        Timed {
            age_ms: 0,
            left_ms: ms(a.deadline.saturating_duration_since(now)),
            value: a,
        }
    }

    pub fn into_approval(self, now: Instant) -> Approval {
        let mut a = self.value;
        a.deadline = now + Duration::from_millis(self.left_ms);
        a
    }
}

/// Console to host: one call, answered by a [`Down::Reply`] with the same id.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Up {
    pub id: u64,
    pub call: Call,
}

/// The console's calls that change something or ask the computer (everything else it reads
/// from its mirror). Each is the in-process `Hub` call of the same name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(
    tag = "call",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Call {
    Run {
        target: String,
        kind: Kind,
        payload: Value,
        deadline_ms: Option<u64>,
    },
    ListFiles {
        target: String,
        dir: String,
    },
    Input {
        target: String,
        steps: Vec<Value>,
    },
    /// A click on a monitor's cell in the Screen view: `monitor_touch` there (1-based cell).
    Touch {
        target: String,
        monitor: String,
        x: u32,
        y: u32,
    },
    Cancel {
        request_id: String,
    },
    Answer {
        request_id: String,
        answer: Answer,
    },
    ReloadPolicy,
    Pause,
    Resume,
    /// Mirror one display of the computer to this console (`on`), or stop (the terminal
    /// when `display` is left out).
    WatchScreen {
        trapos_id: String,
        #[serde(default)]
        display: Display,
        on: bool,
    },
    /// Ask the computer for its status (peripherals, monitors, a turtle's fuel): it comes
    /// back on the computer's entry.
    RefreshStatus {
        trapos_id: String,
    },
    /// The person has the computer's keyboard (`on`), or let go.
    HoldKeyboard {
        trapos_id: String,
        on: bool,
    },
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn an_update_reads_back_as_it_was_written() {
        let u = Update {
            resync: true,
            paused: Some(true),
            events: vec![
                Event::PolicyChanged,
                Event::AnsweredBy {
                    request_id: "r1".into(),
                    by: "alice@box".into(),
                    answer: Answer::Always,
                    what: "exec-lua on 1:a for claude".into(),
                    at_ms: 5,
                },
            ],
            output: vec![OutputSlice {
                trapos_id: "1".into(),
                items: vec![(
                    3,
                    7,
                    OutputEntry::Line {
                        request_id: None,
                        stream: trapdesk_core::session::Stream::Err,
                        text: "x".into(),
                        complete: false,
                    },
                )],
            }],
            ..Update::default()
        };
        let text = serde_json::to_string(&Down::Update(Box::new(u.clone()))).unwrap();
        let Down::Update(back) = serde_json::from_str(&text).unwrap() else {
            panic!("not an update: {text}");
        };
        assert_eq!(back.events, u.events);
        assert_eq!(back.paused, Some(true));
        assert_eq!(back.output[0].items, u.output[0].items);
    }

    #[test]
    fn clocks_travel_as_age_and_time_left() {
        let now = Instant::now();
        let a = Approval {
            request_id: "r".into(),
            trapos_id: "1".into(),
            origin: trapdesk_core::session::Origin::Agent("a".into()),
            kind: Kind::ExecLua,
            action: trapdesk_core::policy::Action::Exec,
            detail: "x".into(),
            size: 1,
            because: "ask".into(),
            deadline: now + Duration::from_secs(30),
        };
        let t = Timed::approval(a, now);
        assert_eq!(t.left_ms, 30_000);
        let back: Timed<Approval> =
            serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        let later = now + Duration::from_secs(1);
        assert_eq!(
            back.into_approval(later).deadline,
            later + Duration::from_secs(30)
        );
    }
}

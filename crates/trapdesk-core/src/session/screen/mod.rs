//! Computers' terminals and monitors: the session's one door for the mirror (docs/protocol.md
//! "Screen").
//!
//! A computer has displays: its terminal, and each monitor attached to it (a monitor's frame is
//! the shadow the client keeps of what this computer drew on it, with the cells it cannot know
//! marked unknown). The host keeps the last frame of each display it has seen, by
//! `(traposId, Display)`. Watching is counted per display: the first watcher (the console's
//! Screen view, an attach) asks the computer to send updates of that display (`screen` with
//! `watch: true`), the last one to leave asks it to stop, so nothing is sent while nobody
//! watches; watching a monitor does not watch the terminal, nor the reverse. Agents read a
//! frame on demand and send input; both go through the ordinary request path, so they queue,
//! time out and show up like every request.

pub mod frame;
pub mod input;

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use frame::{ScreenFrame, ScreenRow, UNKNOWN_CELL};
pub use input::InputError;

use super::Session;
use super::link::Link;
use super::model::{Event, Origin, RequestError, RequestSpec};
use trapdesk_proto::protocol::{Kind, kind};

/// How long a screen or input request may take.
const SCREEN_TIMEOUT: Duration = Duration::from_secs(10);

/// One display of a computer: its own terminal, or a monitor attached to it, by the
/// peripheral name the computer knows it by (a side such as `top`, or a wired network name
/// such as `monitor_0`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Display {
    #[default]
    Terminal,
    Monitor(String),
}

impl Display {
    /// The monitor's name, `None` for the terminal.
    pub fn monitor(&self) -> Option<&str> {
        match self {
            Display::Terminal => None,
            Display::Monitor(m) => Some(m),
        }
    }

    /// The display a frame or update from a computer is of: its `monitor` field, else the
    /// terminal.
    pub fn of(v: &Value) -> Display {
        match v.get("monitor").and_then(Value::as_str) {
            Some(m) => Display::Monitor(m.to_owned()),
            None => Display::Terminal,
        }
    }

    /// A monitor given as an optional argument (`None`: the terminal).
    pub fn from_monitor(monitor: Option<&str>) -> Display {
        match monitor {
            Some(m) => Display::Monitor(m.to_owned()),
            None => Display::Terminal,
        }
    }
}

impl std::fmt::Display for Display {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Display::Terminal => f.write_str("terminal"),
            Display::Monitor(m) => write!(f, "monitor {m}"),
        }
    }
}

type Key = (String, Display);

#[derive(Default)]
pub(crate) struct Screens {
    map: HashMap<Key, Entry>,
}

#[derive(Default)]
struct Entry {
    frame: Option<ScreenFrame>,
    watchers: usize,
}

fn key(trapos_id: &str, display: &Display) -> Key {
    (trapos_id.to_owned(), display.clone())
}

/// Why a screen could not be read or input not sent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScreenError {
    /// The computer's client has no mirror (an older client, or the screen server stopped),
    /// or no monitor shadows (a client from before them).
    #[error("{trapos_id} does not serve {what} ({why}: re-run the installer to update it)")]
    NotServed {
        trapos_id: String,
        what: String,
        why: String,
    },
    /// The input was refused before it was sent.
    #[error("{0}")]
    Input(#[from] InputError),
    /// The request failed.
    #[error("{0}")]
    Request(#[from] RequestError),
    /// The computer answered something that is not a frame.
    #[error("{0}")]
    Bad(String),
    /// Input aimed at a request that is not a chunk or program running on that computer.
    #[error(
        "no chunk or program {request_id} is running on {trapos_id} (input goes to a running exec-lua or run-file request; leave requestId out to type at the computer)"
    )]
    NotRunning {
        trapos_id: String,
        request_id: String,
    },
    /// The computer's client cannot aim input at one request (a client from before that).
    #[error(
        "{trapos_id}'s client cannot send input to one request (re-run the installer to update it); without requestId the input goes to the computer as typed"
    )]
    NoRouting { trapos_id: String },
}

impl ScreenError {
    /// A short code, as the other errors have.
    pub fn code(&self) -> &str {
        match self {
            ScreenError::NotServed { .. } => "unknown_type",
            ScreenError::Input(_) => "bad_request",
            ScreenError::Request(e) => e.code(),
            ScreenError::Bad(_) => "bad_screen",
            ScreenError::NotRunning { .. } => "unknown_request",
            ScreenError::NoRouting { .. } => "unknown_type",
        }
    }
}

/// Holds one display of a computer watched; dropping it stops watching (the last watcher's
/// drop asks the computer to stop sending that display).
pub struct ScreenWatch {
    session: Session,
    trapos_id: String,
    display: Display,
}

impl ScreenWatch {
    pub fn trapos_id(&self) -> &str {
        &self.trapos_id
    }

    pub fn display(&self) -> &Display {
        &self.display
    }
}

impl Drop for ScreenWatch {
    fn drop(&mut self) {
        let last = {
            let mut screens = self.session.screens();
            let e = screens
                .map
                .entry(key(&self.trapos_id, &self.display))
                .or_default();
            e.watchers = e.watchers.saturating_sub(1);
            e.watchers == 0
        };
        if last {
            self.session
                .ask_frame(&self.trapos_id, &self.display, false);
        }
    }
}

/// Why the client must serve `what` for this display: a terminal needs the mirror (`screen`),
/// a monitor also the monitor shadows, which came with `peripherals` (docs/protocol.md).
fn needs(display: &Display, what: Kind) -> Vec<(Kind, &'static str)> {
    let mut out = vec![(what, "its client has no terminal mirror")];
    if display.monitor().is_some() {
        out.push((Kind::Peripherals, "its client keeps no monitor shadows"));
    }
    out
}

impl Session {
    fn screens(&self) -> std::sync::MutexGuard<'_, Screens> {
        self.shared
            .screens
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The last frame seen of a computer's display (kept current while it is watched).
    pub fn screen(&self, trapos_id: &str, display: &Display) -> Option<ScreenFrame> {
        self.screens()
            .map
            .get(&key(trapos_id, display))
            .and_then(|e| e.frame.clone())
    }

    /// A computer's label changed: its displays go with it to its new traposId.
    pub(crate) fn screens_renamed(&self, old: &str, new: &str) {
        let mut screens = self.screens();
        let moved: Vec<Key> = screens
            .map
            .keys()
            .filter(|(id, _)| id == old)
            .cloned()
            .collect();
        for k in moved {
            if let Some(e) = screens.map.remove(&k) {
                screens.map.insert((new.to_owned(), k.1), e);
            }
        }
    }

    /// `trapos_id` linked again: a new connection is a new terminal (a reboot, a restarted
    /// client), so the frames held from the old one are not its screen any more and a view must
    /// not show them as if they were. They are dropped; the watchers stay and are asked again
    /// (a view watches again on `Linked`, and `screen_served` asks when the mirror announces
    /// itself).
    pub(crate) fn screens_relinked(&self, trapos_id: &str) {
        for ((id, _), e) in &mut self.screens().map {
            if id == trapos_id {
                e.frame = None;
            }
        }
    }

    /// How many watch a computer's display.
    pub fn screen_watchers(&self, trapos_id: &str, display: &Display) -> usize {
        self.screens()
            .map
            .get(&key(trapos_id, display))
            .map_or(0, |e| e.watchers)
    }

    /// The displays of a computer someone watches.
    fn watched_displays(&self, trapos_id: &str) -> Vec<Display> {
        self.screens()
            .map
            .iter()
            .filter(|((id, _), e)| id == trapos_id && e.watchers > 0)
            .map(|((_, d), _)| d.clone())
            .collect()
    }

    fn serves(&self, trapos_id: &str, display: &Display, what: Kind) -> Result<(), ScreenError> {
        let Some(c) = self.computer(trapos_id) else {
            return Err(ScreenError::Request(RequestError::UnknownComputer {
                query: trapos_id.to_owned(),
                linked: self.computers().into_iter().map(|c| c.trapos_id).collect(),
            }));
        };
        if !c.online {
            return Err(ScreenError::Request(RequestError::Disconnected));
        }
        for (kind, why) in needs(display, what) {
            if !c.serves.iter().any(|s| s == kind.as_str()) {
                let what = match display {
                    Display::Terminal => what.to_string(),
                    Display::Monitor(_) => format!("{what} on a monitor"),
                };
                return Err(ScreenError::NotServed {
                    trapos_id: trapos_id.to_owned(),
                    what,
                    why: why.to_owned(),
                });
            }
        }
        Ok(())
    }

    fn store(&self, trapos_id: &str, v: &Value) -> Result<ScreenFrame, ScreenError> {
        let display = Display::of(v);
        let frame = {
            let mut screens = self.screens();
            let e = screens.map.entry(key(trapos_id, &display)).or_default();
            let f = ScreenFrame::apply(e.frame.as_ref(), v).map_err(|e| ScreenError::Bad(e.0))?;
            e.frame = Some(f.clone());
            f
        };
        let _ = self.shared.events.send(Event::ScreenChanged {
            trapos_id: trapos_id.to_owned(),
            display,
        });
        Ok(frame)
    }

    /// A monitor the computer says is not attached (`not_found`) has no frame any more: the
    /// one held is dropped, and a view showing it hears so, rather than showing it as if it
    /// were current.
    fn gone(&self, trapos_id: &str, display: &Display, e: &RequestError) {
        if display.monitor().is_none() || e.code() != "not_found" {
            return;
        }
        let had = self
            .screens()
            .map
            .get_mut(&key(trapos_id, display))
            .and_then(|e| e.frame.take())
            .is_some();
        if had {
            let _ = self.shared.events.send(Event::ScreenChanged {
                trapos_id: trapos_id.to_owned(),
                display: display.clone(),
            });
        }
    }

    fn screen_spec(display: &Display, watch: bool) -> RequestSpec {
        RequestSpec::of(kind::Screen {
            watch: Some(watch),
            monitor: display.monitor().map(str::to_owned),
        })
        .timeout(Some(SCREEN_TIMEOUT))
        .quiet()
    }

    /// Asks the computer for a whole frame of a display, telling it whether anyone watches,
    /// without waiting (the answer is stored when it comes).
    fn ask_frame(&self, trapos_id: &str, display: &Display, watch: bool) {
        if self.serves(trapos_id, display, Kind::Screen).is_err() {
            return;
        }
        let spec = Self::screen_spec(display, watch);
        let Ok(ticket) = self.start(trapos_id, spec, Origin::Person) else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (session, id, display) = (self.clone(), trapos_id.to_owned(), display.clone());
        rt.spawn(async move {
            match ticket.wait().await {
                // A frame that does not parse leaves the old one; the next update asks again.
                // A frame is of the display asked for, even from a client that leaves the
                // monitor's name out of its answer.
                Ok(v) => {
                    let _ = session.store(&id, &with_display(v, &display));
                }
                Err(e) => session.gone(&id, &display, &e),
            }
        });
    }

    /// Starts watching a computer's display: the first watcher asks the computer for a frame
    /// and updates. Works on a computer that does not serve the mirror too (it simply never
    /// gets a frame), so a view can be open before the screen server announces itself.
    ///
    /// # Errors
    /// When the target matches no computer.
    pub fn watch_screen(&self, target: &str, display: Display) -> Result<ScreenWatch, ScreenError> {
        let trapos_id = self.known_computer(target).ok_or_else(|| {
            ScreenError::Request(RequestError::UnknownComputer {
                query: target.to_owned(),
                linked: self.computers().into_iter().map(|c| c.trapos_id).collect(),
            })
        })?;
        let first = {
            let mut screens = self.screens();
            let e = screens.map.entry(key(&trapos_id, &display)).or_default();
            e.watchers += 1;
            e.watchers == 1
        };
        if first {
            self.ask_frame(&trapos_id, &display, true);
        }
        Ok(ScreenWatch {
            session: self.clone(),
            trapos_id,
            display,
        })
    }

    /// Reads a computer's display now (a whole frame from the computer).
    ///
    /// # Errors
    /// When the computer is unknown, offline, has no mirror (or no monitor shadows, for a
    /// monitor), the monitor is not attached (`not_found`), or the request fails.
    pub async fn read_screen(
        &self,
        target: &str,
        display: &Display,
        origin: Origin,
    ) -> Result<ScreenFrame, ScreenError> {
        let trapos_id = self.resolve(target)?;
        self.serves(&trapos_id, display, Kind::Screen)?;
        let watch = self.screen_watchers(&trapos_id, display) > 0;
        let spec = Self::screen_spec(display, watch);
        let v = match self.request(&trapos_id, spec, origin).await {
            Ok(v) => v,
            Err(e) => {
                self.gone(&trapos_id, display, &e);
                return Err(e.into());
            }
        };
        self.store(&trapos_id, &with_display(v, display))
    }
}

/// A frame answered for `display`, named so: the client names a monitor's frame itself, and
/// this keeps one that does not from being taken for the terminal.
fn with_display(mut v: Value, display: &Display) -> Value {
    if let (Some(m), Some(obj)) = (display.monitor(), v.as_object_mut()) {
        obj.entry("monitor").or_insert_with(|| json!(m));
    }
    v
}

impl Link {
    /// The computer sent a `screen` update (of its terminal, or of the monitor it names). One
    /// that does not fit the frame held (a lost update, a resize) asks for a whole frame.
    pub fn screen(&self, body: Value) {
        let id = self.trapos_id().to_owned();
        let session = self.session();
        if session.store(&id, &body).is_err() {
            let display = Display::of(&body);
            let watched = session.screen_watchers(&id, &display) > 0;
            session.ask_frame(&id, &display, watched);
        }
    }

    /// After the computer's served types changed: a computer that starts serving the mirror
    /// while someone watches is asked for the frames and updates of the displays watched (a
    /// relink, a restarted server).
    pub(crate) fn screen_served(&self, before: &[String], after: &[String]) {
        let had = before.iter().any(|t| t == Kind::Screen.as_str());
        let has = after.iter().any(|t| t == Kind::Screen.as_str());
        let session = self.session();
        if has && !had {
            for display in session.watched_displays(self.trapos_id()) {
                session.ask_frame(self.trapos_id(), &display, true);
            }
        }
    }
}

#[cfg(test)]
mod tests;

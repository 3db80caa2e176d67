//! Computers' terminals: the session's one door for the mirror (docs/protocol.md "Screen").
//!
//! The host keeps the last frame of each computer it has seen. Watching is counted: the first
//! watcher (the console's Screen view, an attach) asks the computer to send updates
//! (`screen` with `watch: true`), the last one to leave asks it to stop, so nothing is sent
//! while nobody watches. Agents read a frame on demand and send input; both go through the
//! ordinary request path, so they queue, time out and show up like every request.

pub mod frame;
pub mod input;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

pub use frame::{ScreenFrame, ScreenRow};
pub use input::InputError;

use super::Session;
use super::link::Link;
use super::model::{Event, Origin, RequestError, RequestSpec};
use crate::protocol::{Kind, kind};

/// How long a screen or input request may take.
const SCREEN_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Default)]
pub(crate) struct Screens {
    map: HashMap<String, Entry>,
}

#[derive(Default)]
struct Entry {
    frame: Option<ScreenFrame>,
    watchers: usize,
}

/// Why a screen could not be read or input not sent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScreenError {
    /// The computer's client has no mirror (an older client, or the screen server stopped).
    #[error(
        "{trapos_id} does not serve {what} (its client has no terminal mirror: re-run the installer to update it)"
    )]
    NotServed { trapos_id: String, what: String },
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

/// Holds a computer's screen watched; dropping it stops watching (the last watcher's drop asks
/// the computer to stop sending).
pub struct ScreenWatch {
    session: Session,
    trapos_id: String,
}

impl ScreenWatch {
    pub fn trapos_id(&self) -> &str {
        &self.trapos_id
    }
}

impl Drop for ScreenWatch {
    fn drop(&mut self) {
        let last = {
            let mut screens = self.session.screens();
            let e = screens.map.entry(self.trapos_id.clone()).or_default();
            e.watchers = e.watchers.saturating_sub(1);
            e.watchers == 0
        };
        if last {
            self.session.ask_frame(&self.trapos_id, false);
        }
    }
}

impl Session {
    fn screens(&self) -> std::sync::MutexGuard<'_, Screens> {
        self.shared
            .screens
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The last frame seen of a computer's terminal (kept current while it is watched).
    pub fn screen(&self, trapos_id: &str) -> Option<ScreenFrame> {
        self.screens()
            .map
            .get(trapos_id)
            .and_then(|e| e.frame.clone())
    }

    /// A computer's label changed: its screen goes with it to its new traposId.
    pub(crate) fn screens_renamed(&self, old: &str, new: &str) {
        let mut screens = self.screens();
        if let Some(e) = screens.map.remove(old) {
            screens.map.insert(new.to_owned(), e);
        }
    }

    /// How many watch a computer's terminal.
    pub fn screen_watchers(&self, trapos_id: &str) -> usize {
        self.screens().map.get(trapos_id).map_or(0, |e| e.watchers)
    }

    fn serves(&self, trapos_id: &str, what: Kind) -> Result<(), ScreenError> {
        match self.computer(trapos_id) {
            Some(c) if c.online && c.serves.iter().any(|s| s == what.as_str()) => Ok(()),
            Some(c) if !c.online => Err(ScreenError::Request(RequestError::Disconnected)),
            _ => Err(ScreenError::NotServed {
                trapos_id: trapos_id.to_owned(),
                what: what.to_string(),
            }),
        }
    }

    fn store(&self, trapos_id: &str, v: &Value) -> Result<ScreenFrame, ScreenError> {
        let frame = {
            let mut screens = self.screens();
            let e = screens.map.entry(trapos_id.to_owned()).or_default();
            let f = ScreenFrame::apply(e.frame.as_ref(), v).map_err(|e| ScreenError::Bad(e.0))?;
            e.frame = Some(f.clone());
            f
        };
        let _ = self.shared.events.send(Event::ScreenChanged {
            trapos_id: trapos_id.to_owned(),
        });
        Ok(frame)
    }

    /// Asks the computer for a whole frame, telling it whether anyone watches, without waiting
    /// (the answer is stored when it comes).
    fn ask_frame(&self, trapos_id: &str, watch: bool) {
        if self.serves(trapos_id, Kind::Screen).is_err() {
            return;
        }
        let spec = RequestSpec::of(&kind::Screen { watch: Some(watch) })
            .timeout(Some(SCREEN_TIMEOUT))
            .quiet();
        let Ok(ticket) = self.start(trapos_id, spec, Origin::Person) else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (session, id) = (self.clone(), trapos_id.to_owned());
        rt.spawn(async move {
            if let Ok(v) = ticket.wait().await {
                // A frame that does not parse leaves the old one; the next update asks again.
                let _ = session.store(&id, &v);
            }
        });
    }

    /// Starts watching a computer's terminal: the first watcher asks the computer for a frame
    /// and updates. Works on a computer that does not serve the mirror too (it simply never
    /// gets a frame), so a view can be open before the screen server announces itself.
    ///
    /// # Errors
    /// When the target matches no computer.
    pub fn watch_screen(&self, target: &str) -> Result<ScreenWatch, ScreenError> {
        let trapos_id = self.known_computer(target).ok_or_else(|| {
            ScreenError::Request(RequestError::UnknownComputer {
                query: target.to_owned(),
                linked: self.computers().into_iter().map(|c| c.trapos_id).collect(),
            })
        })?;
        let first = {
            let mut screens = self.screens();
            let e = screens.map.entry(trapos_id.clone()).or_default();
            e.watchers += 1;
            e.watchers == 1
        };
        if first {
            self.ask_frame(&trapos_id, true);
        }
        Ok(ScreenWatch {
            session: self.clone(),
            trapos_id,
        })
    }

    /// Reads a computer's terminal now (a whole frame from the computer).
    ///
    /// # Errors
    /// When the computer is unknown, offline, has no mirror, or the request fails.
    pub async fn read_screen(
        &self,
        target: &str,
        origin: Origin,
    ) -> Result<ScreenFrame, ScreenError> {
        let trapos_id = self.resolve(target)?;
        self.serves(&trapos_id, Kind::Screen)?;
        let watch = self.screen_watchers(&trapos_id) > 0;
        let spec = RequestSpec::of(&kind::Screen { watch: Some(watch) })
            .timeout(Some(SCREEN_TIMEOUT))
            .quiet();
        let v = self.request(&trapos_id, spec, origin).await?;
        self.store(&trapos_id, &v)
    }

    /// Sends input steps (see [`input::steps`]) to a computer's terminal. Resolves once the
    /// computer has queued every event.
    ///
    /// An agent's input waits while the person is attached to the computer, or is refused
    /// with `person_typing` (the policy's `person_typing`).
    ///
    /// # Errors
    /// When the computer is unknown, offline, has no mirror, or refuses the input.
    pub async fn send_input(
        &self,
        target: &str,
        steps: Vec<Value>,
        origin: Origin,
    ) -> Result<Value, ScreenError> {
        // While the person is attached to it, the keyboard is theirs (see `pause.rs`).
        let trapos_id = self.resolve(target)?;
        self.wait_keyboard(&trapos_id, &origin, SCREEN_TIMEOUT)
            .await?;
        Ok(self.start_input(&trapos_id, steps, origin)?.wait().await?)
    }

    /// Sends input to one running chunk or program (`request_id`, an `exec-lua` or `run-file`
    /// request pending on `target`): the events reach that request alone, not the shell nor
    /// other programs (docs/protocol.md, "Payloads": `input`). The person's keyboard is not
    /// waited for: nothing reaches the terminal they are typing at.
    ///
    /// # Errors
    /// When the computer is unknown, offline or has no mirror, when its client cannot aim input
    /// (a client from before that), or when no such request is running there.
    pub async fn send_input_to(
        &self,
        target: &str,
        request_id: &str,
        steps: Vec<Value>,
        origin: Origin,
    ) -> Result<Value, ScreenError> {
        let trapos_id = self.resolve(target)?;
        self.serves(&trapos_id, Kind::Input)?;
        let running = self.pending().into_iter().any(|r| {
            r.request_id == request_id
                && r.trapos_id == trapos_id
                && matches!(r.kind, Kind::ExecLua | Kind::RunFile)
        });
        if !running {
            return Err(ScreenError::NotRunning {
                trapos_id,
                request_id: request_id.to_owned(),
            });
        }
        let routes = self
            .computer(&trapos_id)
            .is_some_and(|c| c.machine.routes_input == Some(true));
        if !routes {
            return Err(ScreenError::NoRouting { trapos_id });
        }
        let spec = RequestSpec::of(&kind::Input {
            steps,
            request_id: Some(request_id.to_owned()),
        })
        .timeout(Some(SCREEN_TIMEOUT))
        .quiet();
        Ok(self.start(&trapos_id, spec, origin)?.wait().await?)
    }

    /// Starts sending input and returns at once: requests to one computer go out in the
    /// order they were started, so keys typed one by one arrive in order.
    ///
    /// # Errors
    /// When the computer is unknown, offline or has no mirror.
    pub fn start_input(
        &self,
        target: &str,
        steps: Vec<Value>,
        origin: Origin,
    ) -> Result<super::Ticket, ScreenError> {
        let trapos_id = self.resolve(target)?;
        self.serves(&trapos_id, Kind::Input)?;
        let spec = RequestSpec::of(&kind::Input {
            steps,
            request_id: None,
        })
        .timeout(Some(SCREEN_TIMEOUT))
        .quiet();
        Ok(self.start(&trapos_id, spec, origin)?)
    }
}

impl Link {
    /// The computer sent a `screen` update. One that does not fit the frame held (a lost
    /// update, a resize) asks for a whole frame.
    pub fn screen(&self, body: Value) {
        let id = self.trapos_id().to_owned();
        let session = self.session();
        if session.store(&id, &body).is_err() {
            let watched = session.screen_watchers(&id) > 0;
            session.ask_frame(&id, watched);
        }
    }

    /// After the computer's served types changed: a computer that starts serving the mirror
    /// while someone watches is asked for its frame and updates (a relink, a restarted server).
    pub(crate) fn screen_served(&self, before: &[String], after: &[String]) {
        let had = before.iter().any(|t| t == Kind::Screen.as_str());
        let has = after.iter().any(|t| t == Kind::Screen.as_str());
        let session = self.session();
        if has && !had && session.screen_watchers(self.trapos_id()) > 0 {
            session.ask_frame(self.trapos_id(), true);
        }
    }
}

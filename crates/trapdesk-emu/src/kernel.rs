//! What the machine's loop and its native functions share: the event queue and timers
//! ([`Kernel`]), the messages that reach the machine thread, and [`Ctx`], which
//! every native closure holds. Beneath the loop (`machine.rs`) and the natives (`fs`, `net`,
//! `os_api`, `term`), so that neither imports the other.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::kind::DeviceState;
use super::peripherals::bench::SharedBench;
use super::peripherals::spec::DiskDrive;
use super::screen::Screen;
use super::value::Event;
use super::watchdog::Watchdog;

/// CC's event queue length; further events are dropped silently.
pub(crate) const QUEUE_LIMIT: usize = 256;
/// `keys.enter` in CC: Tweaked (GLFW key codes).
pub(crate) const KEY_ENTER: u16 = 257;

/// Whether a computer is on, and if off, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PowerState {
    /// Running (or booting).
    On,
    /// Shut down: by `os.shutdown`, by [`Computer::shutdown`](crate::Computer::shutdown), or because its bios program
    /// ended.
    Off,
    /// Shut down by CC's hard abort: a program went on running past "Too long without
    /// yielding". It stays off until turned on ([`Computer::turn_on`](crate::Computer::turn_on)), as a player would.
    Aborted,
}

/// A request to change power state, from Lua (`os.reboot`) or from the handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Power {
    Reboot,
    Shutdown,
    /// What a player's right-click does to a computer that is off; nothing when it is on.
    TurnOn,
    /// The watchdog's hard abort: the machine shuts the computer down (never sent, only
    /// returned by the loop).
    Abort,
}

/// What reaches the machine thread from elsewhere.
pub(crate) enum Msg {
    /// An event; the number is the power cycle it belongs to (socket events of a previous boot
    /// must not reach the next one), `None` for events from the handle.
    Event(Event, Option<u64>),
    RunLua {
        code: String,
        reply: tokio::sync::oneshot::Sender<Result<String, String>>,
    },
    Power(Power),
}

/// State that the native functions share with the loop.
pub(crate) struct Kernel {
    pub id: u64,
    pub label: Option<String>,
    pub queue: VecDeque<Event>,
    pub timers: HashMap<u64, Instant>,
    pub next_timer: u64,
    pub boot: Instant,
    /// How long one server tick lasts: 50 ms at 20 ticks a second, longer on a server that
    /// falls behind.
    pub tick: Duration,
    pub power: Option<Power>,
}

impl Kernel {
    /// Whole server ticks since boot: what `os.clock` counts (`OSAPI.update` adds one a tick).
    pub(crate) fn ticks(&self, now: Instant) -> u64 {
        let tick = self.tick.as_nanos().max(1);
        u64::try_from(now.saturating_duration_since(self.boot).as_nanos() / tick)
            .unwrap_or(u64::MAX)
    }

    /// When a timer of `ticks` ticks started now fires: CC counts each timer down once a tick and
    /// queues it at the tick it reaches 0 (`Environment.tick`), so a timer of 0 or 1 tick fires at
    /// the next tick.
    pub(crate) fn timer_due(&self, now: Instant, ticks: u64) -> Instant {
        let at = self.ticks(now).saturating_add(ticks.max(1));
        let tick = self.tick.max(Duration::from_nanos(1));
        let after = tick.saturating_mul(u32::try_from(at).unwrap_or(u32::MAX));
        // A timer for centuries never fires within a test; the far future stands in.
        self.boot
            .checked_add(after)
            .unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX)))
    }

    /// Queues an event, dropping it when the queue is full (as CC does).
    pub(crate) fn push(&mut self, ev: Event) {
        if self.queue.len() < QUEUE_LIMIT {
            self.queue.push_back(ev);
        }
    }
}

/// Everything a native function may need, cloned into each closure.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub kernel: Arc<Mutex<Kernel>>,
    pub screen: Arc<Mutex<Screen>>,
    pub watchdog: Arc<Mutex<Watchdog>>,
    pub root: PathBuf,
    pub rt: tokio::runtime::Handle,
    pub tx: Sender<Msg>,
    pub generation: u64,
    pub cancel: CancellationToken,
    pub websockets: Arc<AtomicUsize>,
    /// The http rule's `max_websocket_message` (0: no limit).
    pub max_websocket_message: usize,
    /// The disk's capacity in bytes (`computer_space_limit`).
    pub disk_space: u64,
    /// The disk drive beside the computer, shared with the handle that inserts and ejects.
    pub drive: Arc<Mutex<Option<DiskDrive>>>,
    /// The peripherals around the computer (`peripherals/`), shared with the handle.
    pub bench: SharedBench,
    /// A turtle's or pocket computer's own state (`device.rs`).
    pub device: DeviceState,
    /// Whether the terminal is a colour one (`term.isColour`): advanced computers, turtles and
    /// pocket computers.
    pub advanced: bool,
}

/// The text of a Lua error, without mlua's decorations where it can.
pub(crate) fn error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::RuntimeError(m) | mlua::Error::SyntaxError { message: m, .. } => m.clone(),
        mlua::Error::CallbackError { cause, .. } => error_text(cause),
        other => other.to_string(),
    }
}

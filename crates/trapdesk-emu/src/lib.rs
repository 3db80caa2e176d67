//! An emulated CC: Tweaked computer: an embedded Lua 5.2 state that offers the subset of CC's APIs
//! the `lua/` client uses, with CC's semantics (what the emulator follows and where it differs:
//! `docs/emulator.md`, "The emulator against CraftOS-PC"), so that tests and `--demo` run the
//! real client end to end against the real gateway.
//!
//! # Layout
//!
//! - this file: the [`Computer`] handle and the public API (spawn, events, `run_lua`, power).
//! - `boot`: a fresh Lua state per power cycle: natives, watchdog, bios; `sandbox`: that state
//!   holds CC's libraries and nothing of the host (a filtered `debug`, text-only `load`);
//!   `clock`: `os.date`/`os.time(table)` in Rust, so the C `os` library is never opened.
//! - `machine`: the computer's own OS thread: event queue, timers, the coroutine loop, power cycles.
//! - `value`: event arguments as they cross from Rust into Lua.
//! - `term`: the text screen (a computer's, turtle's or pocket computer's size) and the native
//!   `term` table.
//! - `fs`: the computer's disk, a host directory with CC's path rules; `handles`: its file handles.
//! - `os_api`: the Rust half of `os` (timers, clock, labels, power).
//! - `net`: `http.websocket*` and `http.get`, bridged onto the tokio runtime.
//! - `peripherals/`: the peripherals around the computer (`periphemu` and CC's native
//!   `peripheral`): drive (its floppy `fs` mounts at `/disk`), monitor, modem, speaker, chest.
//! - `device`: a turtle or pocket computer ([`Device`]) and the main-thread worker their APIs
//!   wait on; `turtle`: a turtle's fuel, slots and commands in an empty world.
//! - `install`: writing the client onto a disk, and the `--demo` / `emulate` run modes.
//! - `rom/*.lua`: what CC itself writes in Lua (bios, `parallel`, `textutils`, `settings`, `shell`),
//!   in our own words.

mod boot;
mod clock;
mod device;
mod fs;
mod handles;
mod install;
mod kernel;
mod machine;
mod net;
mod number;
mod os_api;
mod peripherals;
mod quota;
mod sandbox;
mod screen;
mod term;
mod turtle;
mod value;
mod websocket;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use device::Device;
pub use install::{install_client, run_demo, run_emulate};
pub use peripherals::{InventorySpec, Item, MonitorSpec, MonitorView, PeripheralSpec};
pub use turtle::{
    ADVANCED_TURTLE_FUEL_LIMIT, Item as TurtleItem, TURTLE_FUEL_LIMIT, TURTLE_SLOTS, TurtleSpec,
    fuel_per_item,
};

/// Everything that can go wrong with an emulated computer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmuError {
    /// The Lua state could not be built (a bug in the emulator, not in the program).
    #[error("lua setup failed: {0}")]
    Setup(String),
    /// A Lua program failed; the text is its error message as Lua produced it.
    #[error("{0}")]
    Lua(String),
    /// The computer is off, or turned off before it could answer.
    #[error("the computer is off")]
    Stopped,
    /// The host disk of the computer could not be written or read.
    #[error("disk error at {path}: {source}")]
    Io {
        /// The host path involved.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// One argument of an event queued from Rust, as CC would pass it to Lua.
#[derive(Debug, Clone, PartialEq)]
pub enum EventArg {
    /// A Lua string: bytes, not necessarily UTF-8.
    Str(Vec<u8>),
    /// A Lua number (CC has doubles only).
    Num(f64),
    /// A boolean.
    Bool(bool),
    /// nil.
    Nil,
}

/// What one computer is: its identity and its disk.
#[derive(Debug, Clone)]
pub struct ComputerSpec {
    /// `os.getComputerID()`.
    pub id: u64,
    /// `os.getComputerLabel()`; `None` when unlabelled.
    pub label: Option<String>,
    /// The host directory that is the computer's disk (`/` inside the computer).
    pub root: PathBuf,
    /// How long a coroutine may run without yielding before "Too long without yielding"
    /// (7 s on CC: Tweaked; tests shorten it).
    pub yield_timeout: Duration,
    /// How long a program may go on after "Too long without yielding" before the computer is
    /// shut down (1.5 s on CC: Tweaked; tests shorten it with [`ComputerSpec::with_timeouts`]).
    pub abort_timeout: Duration,
    /// The terminal's size in cells (columns, rows): [`COMPUTER_SIZE`] unless set.
    pub size: (usize, usize),
    /// What the server's config allows this computer: a default world's unless set.
    pub limits: Limits,
    /// How long a server tick lasts: 50 ms (20 ticks a second) unless set. `os.clock`, timers
    /// and in-game time count ticks, so a longer tick is a server that falls behind.
    pub tick: Duration,
    /// A disk drive beside the computer; none unless set.
    pub drive: Option<DiskDrive>,
    /// Other peripherals attached from boot, by name (a side or a network name).
    pub peripherals: Vec<(String, PeripheralSpec)>,
    /// A computer, a turtle or a pocket computer: [`Device::Computer`] unless set
    /// ([`ComputerSpec::turtle`], [`ComputerSpec::pocket`]).
    pub device: Device,
    /// An advanced (gold) one: a colour terminal (`term.isColour`), and for a turtle the
    /// advanced fuel limit. True unless set.
    pub advanced: bool,
}

/// A disk drive attached to the computer, empty or with a floppy in it.
#[derive(Debug, Clone)]
pub struct DiskDrive {
    /// Where it is attached: its peripheral name (`"left"`, `"drive_0"`, ...).
    pub side: String,
    /// The floppy in it, if any.
    pub floppy: Option<Floppy>,
}

/// A floppy disk: a host directory mounted at `/disk` while it is in the drive, with its own
/// quota.
#[derive(Debug, Clone)]
pub struct Floppy {
    /// `disk.getID()`.
    pub id: u64,
    /// The host directory that holds its files.
    pub root: PathBuf,
    /// Its capacity in bytes: [`FLOPPY_SPACE_LIMIT`] unless set.
    pub space: u64,
    /// `disk.getLabel()`; `None` when unlabelled.
    pub label: Option<String>,
}

impl Floppy {
    /// A floppy of CC's default size on `root`.
    pub fn new(id: u64, root: PathBuf) -> Self {
        Self {
            id,
            root,
            space: FLOPPY_SPACE_LIMIT,
            label: None,
        }
    }
}

/// CC: Tweaked's default `max_websocket_message` (its default `*` http rule).
pub const DEFAULT_WEBSOCKET_MESSAGE: usize = 131_072;

/// The limits a server's config sets for one computer. [`Limits::default`] is what a default
/// CC: Tweaked world enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The longest websocket message, either way, as set by the http rule that matches the
    /// host the computer connects to (`max_websocket_message`); 0 is no limit.
    pub max_websocket_message: usize,
    /// The computer's disk capacity in bytes (`computer_space_limit`), counted as CC: Tweaked
    /// counts it: every file and folder costs at least 500 bytes.
    pub disk_space: u64,
}

/// CC: Tweaked's default `computer_space_limit`: a computer's disk, in bytes.
pub const COMPUTER_SPACE_LIMIT: u64 = 1_000_000;
/// CC: Tweaked's default `floppy_space_limit`: a floppy disk, in bytes.
pub const FLOPPY_SPACE_LIMIT: u64 = 125_000;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_websocket_message: DEFAULT_WEBSOCKET_MESSAGE,
            disk_space: COMPUTER_SPACE_LIMIT,
        }
    }
}

/// A computer's terminal size, as CC: Tweaked gives it.
pub const COMPUTER_SIZE: (usize, usize) = (51, 19);
/// A turtle's terminal size.
pub const TURTLE_SIZE: (usize, usize) = (39, 13);
/// A pocket computer's terminal size.
pub const POCKET_SIZE: (usize, usize) = (26, 20);

impl ComputerSpec {
    /// A spec with CC's default yield timeout of 7 s.
    pub fn new(id: u64, label: Option<String>, root: PathBuf) -> Self {
        Self {
            id,
            label,
            root,
            yield_timeout: Duration::from_secs(7),
            abort_timeout: Duration::from_millis(1500),
            size: COMPUTER_SIZE,
            limits: Limits::default(),
            tick: Duration::from_millis(50),
            drive: None,
            peripherals: Vec::new(),
            device: Device::Computer,
            advanced: true,
        }
    }

    /// The same spec with a peripheral attached from boot, named by a side (`"top"`) or a
    /// network name (`"monitor_0"`, `"minecraft:chest_2"`: reached through a wired modem on a
    /// side, as on CC: Tweaked). A drive is [`ComputerSpec::with_disk_drive`].
    pub fn with_peripheral(mut self, name: &str, spec: PeripheralSpec) -> Self {
        if let PeripheralSpec::Drive(floppy) = spec {
            return self.with_disk_drive(name, floppy);
        }
        self.peripherals.push((name.to_owned(), spec));
        self
    }

    /// The same spec as a turtle: a 39x13 terminal and the `turtle` API (no fuel, empty slots
    /// until [`ComputerSpec::with_fuel`] and [`ComputerSpec::with_slot`] say otherwise). A turtle
    /// already stays as it is.
    pub fn turtle(mut self) -> Self {
        if !matches!(self.device, Device::Turtle(_)) {
            self.device = Device::Turtle(TurtleSpec::default());
        }
        self.size = TURTLE_SIZE;
        self
    }

    /// The same spec as a pocket computer: a 26x20 terminal and the `pocket` API.
    pub fn pocket(mut self) -> Self {
        self.device = Device::Pocket;
        self.size = POCKET_SIZE;
        self
    }

    /// The same spec, advanced (colour terminal, a turtle's 100 000 fuel limit) or not (a
    /// greyscale terminal, 20 000).
    pub fn with_advanced(mut self, advanced: bool) -> Self {
        self.advanced = advanced;
        self
    }

    fn turtle_spec(&mut self) -> &mut TurtleSpec {
        if !matches!(self.device, Device::Turtle(_)) {
            *self = self.clone().turtle();
        }
        match &mut self.device {
            Device::Turtle(t) => t,
            // `turtle()` just made it one.
            _ => unreachable!("the spec was made a turtle"),
        }
    }

    /// The same spec as a turtle with `fuel` in it at its first boot (capped at its limit).
    pub fn with_fuel(mut self, fuel: u32) -> Self {
        self.turtle_spec().fuel = fuel;
        self
    }

    /// The same spec as a turtle with `count` of item `name` (`"coal"`, `"minecraft:coal"`) in
    /// slot `slot` (1..=16) at its first boot; a count of 0 empties the slot.
    ///
    /// # Panics
    /// When `slot` is not 1..=16: a turtle has sixteen slots.
    pub fn with_slot(mut self, slot: usize, name: &str, count: u32) -> Self {
        assert!(
            (1..=TURTLE_SLOTS).contains(&slot),
            "a turtle's slots are 1..=16, not {slot}"
        );
        self.turtle_spec().slots[slot - 1] = (count > 0).then(|| turtle::Item::new(name, count));
        self
    }

    /// The same spec as a turtle on a server whose `turtle.need_fuel` is false: moving is free
    /// and `turtle.getFuelLevel()` answers `"unlimited"`.
    pub fn unlimited_fuel(mut self) -> Self {
        self.turtle_spec().needs_fuel = false;
        self
    }

    /// The same spec as a mining turtle (a diamond pickaxe equipped): `turtle.dig()` answers
    /// "Nothing to dig here" in the empty world instead of "No tool to dig with".
    pub fn with_tools(mut self) -> Self {
        self.turtle_spec().tools = true;
        self
    }

    /// The same spec with a disk drive on `side`, holding `floppy` from boot on (so that its
    /// `startup.lua` runs at boot, as CC runs a disk's startup).
    pub fn with_disk_drive(mut self, side: &str, floppy: Option<Floppy>) -> Self {
        self.drive = Some(DiskDrive {
            side: side.to_owned(),
            floppy,
        });
        self
    }

    /// The same spec on a server whose ticks last `tick` (say 100 ms for one running at 10 ticks
    /// a second): `os.clock` and timers slow down with it, `os.epoch("utc")` does not.
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// The same spec with another `max_websocket_message` (0: no limit), as if the server's
    /// http rule for the host said so.
    pub fn with_max_websocket_message(mut self, bytes: usize) -> Self {
        self.limits.max_websocket_message = bytes;
        self
    }

    /// The same spec with another disk capacity in bytes, as a server whose
    /// `computer_space_limit` was raised (or lowered) gives it.
    pub fn with_disk_space(mut self, bytes: u64) -> Self {
        self.limits.disk_space = bytes;
        self
    }

    /// The same spec with other watchdog times: `soft` until "Too long without yielding",
    /// `hard` more until the computer is shut down (CC: Tweaked: 7 s and 1.5 s).
    pub fn with_timeouts(mut self, soft: Duration, hard: Duration) -> Self {
        self.yield_timeout = soft;
        self.abort_timeout = hard;
        self
    }

    /// The same spec with another terminal size (say [`TURTLE_SIZE`] or [`POCKET_SIZE`]).
    pub fn with_size(mut self, size: (usize, usize)) -> Self {
        self.size = size;
        self
    }
}

/// Whether a computer is on, and if off, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PowerState {
    /// Running (or booting).
    On,
    /// Shut down: by `os.shutdown`, by [`Computer::shutdown`], or because its bios program
    /// ended.
    Off,
    /// Shut down by CC's hard abort: a program went on running past "Too long without
    /// yielding". It stays off until turned on ([`Computer::turn_on`]), as a player would.
    Aborted,
}

/// A handle on an emulated computer, on or off. Cheap to clone. Dropping every handle does not
/// turn the computer off (its own sockets still feed it events): call [`Computer::shutdown`].
/// A computer that is off and has no handle left is gone for good.
#[derive(Clone)]
pub struct Computer {
    tx: std::sync::mpsc::Sender<kernel::Msg>,
    screen: Arc<Mutex<screen::Screen>>,
    /// The disk drive, shared with the machine's `fs` and `peripheral`.
    drive: Arc<Mutex<Option<DiskDrive>>>,
    /// The peripherals, shared with the machine.
    bench: peripherals::SharedBench,
    state: tokio::sync::watch::Receiver<PowerState>,
    /// Counts the handles, for the machine thread (see `machine::Machine::handles`).
    _alive: Arc<()>,
    id: u64,
}

impl Computer {
    /// Boots the computer on its own thread; returns at once.
    ///
    /// # Errors
    /// `EmuError::Io` when the disk directory cannot be created, `EmuError::Setup` when the OS
    /// refuses a thread.
    pub fn spawn(spec: ComputerSpec, rt: tokio::runtime::Handle) -> Result<Computer, EmuError> {
        fs::private_dir(&spec.root).map_err(|source| EmuError::Io {
            path: spec.root.clone(),
            source,
        })?;
        fs::tighten(&spec.root);
        let (tx, rx) = std::sync::mpsc::channel();
        let screen = Arc::new(Mutex::new(screen::Screen::new(spec.size.0, spec.size.1)));
        let drive = Arc::new(Mutex::new(spec.drive.clone()));
        let device = device::DeviceState::new(&spec.device, spec.advanced);
        if let Some(f) = spec.drive.as_ref().and_then(|d| d.floppy.as_ref()) {
            fs::private_dir(&f.root).map_err(|source| EmuError::Io {
                path: f.root.clone(),
                source,
            })?;
            fs::tighten(&f.root);
        }
        let floppies = spec.root.parent().map(|p| p.join("disk"));
        let mut bench = peripherals::Bench::new(spec.id, drive.clone(), floppies);
        for (name, p) in &spec.peripherals {
            // Events of peripherals there from boot are nobody's: the computer finds them.
            bench.attach(name, p.clone()).map_err(EmuError::Setup)?;
        }
        let bench = Arc::new(Mutex::new(bench));
        let (state_tx, state) = tokio::sync::watch::channel(PowerState::On);
        let alive = Arc::new(());
        let id = spec.id;
        let machine = machine::Machine::new(
            spec,
            rt,
            tx.clone(),
            rx,
            machine::Shared {
                screen: screen.clone(),
                drive: drive.clone(),
                bench: bench.clone(),
                device,
                state: state_tx,
                handles: Arc::downgrade(&alive),
            },
        );
        std::thread::Builder::new()
            .name(format!("emu-{id}"))
            // Dropping the machine drops the state's sender: handles then read the computer
            // as off for good.
            .spawn(move || machine.run())
            .map_err(|e| EmuError::Setup(e.to_string()))?;
        Ok(Computer {
            tx,
            screen,
            drive,
            bench,
            state,
            _alive: alive,
            id,
        })
    }

    /// The computer's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Queue an event as if CC did (e.g. "char"/"key" for typing, "terminate"). Like CC, the
    /// event is dropped when the queue already holds 256.
    pub fn queue_event(&self, name: &str, args: Vec<EventArg>) {
        let args = args.into_iter().map(value::Val::from).collect();
        // A computer that is off has no queue: dropping the event is what CC would do.
        let _ = self
            .tx
            .send(kernel::Msg::Event(kernel::Event::new(name, args), None));
    }

    /// Types text as a person would: one `char` event per character, and `key` enter for each
    /// newline.
    pub fn type_text(&self, text: &str) {
        for c in text.chars() {
            if c == '\n' {
                self.queue_event(
                    "key",
                    vec![
                        EventArg::Num(f64::from(kernel::KEY_ENTER)),
                        EventArg::Bool(false),
                    ],
                );
            } else {
                let mut buf = [0u8; 4];
                self.queue_event(
                    "char",
                    vec![EventArg::Str(c.encode_utf8(&mut buf).as_bytes().to_vec())],
                );
            }
        }
    }

    /// Loads `code` and runs it in a new coroutine beside the running programs (it gets events
    /// like any top-level coroutine). Resolves with what it wrote to the terminal, or its error.
    ///
    /// # Errors
    /// `EmuError::Lua` with the message when it fails to compile or raises, `EmuError::Stopped`
    /// when the computer is off or turns off first.
    pub async fn run_lua(&self, code: &str) -> Result<String, EmuError> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(kernel::Msg::RunLua {
                code: code.to_owned(),
                reply,
            })
            .map_err(|_| EmuError::Stopped)?;
        match rx.await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(msg)) => Err(EmuError::Lua(msg)),
            Err(_) => Err(EmuError::Stopped),
        }
    }

    /// The terminal's lines, as text (bytes above 0x7F shown as Latin-1).
    pub fn screen_text(&self) -> Vec<String> {
        match self.screen.lock() {
            Ok(s) => s.lines(),
            Err(p) => p.into_inner().lines(),
        }
    }

    /// The terminal's size in cells (columns, rows).
    pub fn screen_size(&self) -> (usize, usize) {
        match self.screen.lock() {
            Ok(s) => s.size(),
            Err(p) => p.into_inner().size(),
        }
    }

    /// Puts `floppy` into the disk drive, as a player would: it is mounted at `/disk` and a
    /// `disk` event names the drive. Nothing happens without a drive or with a floppy in it
    /// already (the player's hand holds the new one).
    ///
    /// # Errors
    /// `EmuError::Io` when the floppy's directory cannot be made.
    pub fn insert_disk(&self, floppy: Floppy) -> Result<(), EmuError> {
        fs::private_dir(&floppy.root).map_err(|source| EmuError::Io {
            path: floppy.root.clone(),
            source,
        })?;
        let side = {
            let mut d = kernel::lock(&self.drive);
            match d.as_mut() {
                Some(drive) if drive.floppy.is_none() => {
                    drive.floppy = Some(floppy);
                    drive.side.clone()
                }
                _ => return Ok(()),
            }
        };
        self.queue_event("disk", vec![EventArg::Str(side.into_bytes())]);
        Ok(())
    }

    /// Takes the floppy out of the drive, as a player would: `/disk` is unmounted and a
    /// `disk_eject` event names the drive. Returns the floppy, if there was one.
    pub fn eject_disk(&self) -> Option<Floppy> {
        let (side, floppy) = {
            let mut d = kernel::lock(&self.drive);
            let drive = d.as_mut()?;
            (drive.side.clone(), drive.floppy.take()?)
        };
        self.queue_event("disk_eject", vec![EventArg::Str(side.into_bytes())]);
        Some(floppy)
    }

    /// Resizes the terminal as CC does when a monitor or the window holding the terminal
    /// changes size: what fits is kept, and a `term_resize` event is queued.
    pub fn resize(&self, width: usize, height: usize) {
        match self.screen.lock() {
            Ok(mut s) => s.resize(width, height),
            Err(p) => p.into_inner().resize(width, height),
        }
        self.queue_event("term_resize", Vec::new());
    }

    /// Restarts the computer: a fresh Lua state that runs startup again. Returns at once.
    pub fn reboot(&self) {
        // Off already: nothing to reboot.
        let _ = self.tx.send(kernel::Msg::Power(kernel::Power::Reboot));
    }

    /// Turns the computer off. Returns at once; await [`Computer::wait_stopped`] to know it is off.
    pub fn shutdown(&self) {
        // Off already: nothing to do.
        let _ = self.tx.send(kernel::Msg::Power(kernel::Power::Shutdown));
    }

    /// Turns on a computer that is off, as a player's right-click does: it boots afresh and
    /// runs startup. Nothing happens to a computer that is on. Returns at once.
    pub fn turn_on(&self) {
        // The thread is gone only when every handle was, and this is one.
        let _ = self.tx.send(kernel::Msg::Power(kernel::Power::TurnOn));
    }

    /// Resolves when the computer is off (shut down, or its program ended, or it was shut down
    /// for not yielding).
    pub async fn wait_stopped(&self) {
        let mut rx = self.state.clone();
        // An error means the machine is gone, which also means off.
        let _ = rx.wait_for(|s| *s != PowerState::On).await;
    }

    /// Whether the computer is off.
    pub fn is_stopped(&self) -> bool {
        *self.state.borrow() != PowerState::On
    }

    /// On, off, or off by a hard abort.
    pub fn power_state(&self) -> PowerState {
        *self.state.borrow()
    }
}

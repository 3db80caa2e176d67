//! An emulated CC: Tweaked computer: an embedded Lua 5.2 state that offers the subset of CC's APIs
//! the `lua/` client uses, with CC's semantics (what the emulator follows and where it differs:
//! `docs/emulator.md`, "The emulator against CraftOS-PC"), so that tests and `--demo` run the
//! real client end to end against the real gateway.
//!
//! # Layout
//!
//! - this file: the [`Computer`] handle and the public API (spawn, events, `run_lua`, power).
//! - `spec`: what a computer is before it boots ([`ComputerSpec`], [`Limits`], CC's default
//!   sizes); `error`: [`EmuError`].
//! - `boot`: a fresh Lua state per power cycle: natives, watchdog, bios; `sandbox`: that state
//!   holds CC's libraries and nothing of the host (a filtered `debug`, text-only `load`);
//!   `clock`: `os.date`/`os.time(table)` in Rust, so the C `os` library is never opened.
//! - `machine`: the computer's own OS thread: event queue, timers, the coroutine loop, power cycles;
//!   `kernel`: what the loop and the natives share (`Ctx`); `watchdog`: "Too long
//!   without yielding"; `sync`: locking shared state.
//! - `value`: events and their arguments as they cross from Rust into Lua.
//! - `term`: the text screen (a computer's, turtle's or pocket computer's size) and the native
//!   `term` table.
//! - `fs`: the computer's disk, a host directory with CC's path rules; `handles`: its file handles;
//!   `quota`: its capacity.
//! - `os_api`: the Rust half of `os` (timers, clock, labels, power).
//! - `net`: `http.websocket*` and `http.get`, bridged onto the tokio runtime.
//! - `peripherals/`: the peripherals around the computer (`periphemu` and CC's native
//!   `peripheral`): drive (its floppy `fs` mounts at `/disk`), monitor, modem, speaker, chest.
//!
//! No module imports one that imports it back (the kernel holds the bench, the kind and the
//! drive, all plain data beneath it); only this file gathers them all.
//! - `kind`: what kind of computer ([`Device`]) and the state a turtle keeps across power cycles;
//!   `device`: the main-thread worker a turtle's and pocket computer's APIs wait on; `turtle`: a turtle's fuel, slots and commands in an empty world.
//! - `install`: writing the client onto a disk, and the `--demo` / `emulate` run modes.
//! - `rom/*.lua`: what CC itself writes in Lua (bios, `parallel`, `textutils`, `settings`, `shell`),
//!   in our own words.

mod boot;
mod clock;
mod device;
mod error;
mod fs;
mod handles;
mod install;
mod kernel;
mod kind;
mod machine;
mod net;
mod number;
mod os_api;
mod peripherals;
mod quota;
mod sandbox;
mod screen;
mod spec;
mod sync;
mod term;
mod turtle;
mod value;
mod watchdog;
mod websocket;

use std::sync::{Arc, Mutex};

pub use error::EmuError;
pub use install::{install_client, run_demo, run_emulate};
pub use kind::Device;
pub use peripherals::{
    DiskDrive, FLOPPY_SPACE_LIMIT, Floppy, InventorySpec, Item, MonitorSpec, MonitorView,
    PeripheralSpec,
};
pub use spec::{
    COMPUTER_SIZE, COMPUTER_SPACE_LIMIT, ComputerSpec, DEFAULT_WEBSOCKET_MESSAGE, Limits,
    POCKET_SIZE, TURTLE_SIZE,
};
pub use turtle::{
    ADVANCED_TURTLE_FUEL_LIMIT, Item as TurtleItem, TURTLE_FUEL_LIMIT, TURTLE_SLOTS, TurtleSpec,
    fuel_per_item,
};

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
    bench: peripherals::bench::SharedBench,
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
        let device = kind::DeviceState::new(&spec.device, spec.advanced);
        if let Some(f) = spec.drive.as_ref().and_then(|d| d.floppy.as_ref()) {
            fs::private_dir(&f.root).map_err(|source| EmuError::Io {
                path: f.root.clone(),
                source,
            })?;
            fs::tighten(&f.root);
        }
        let floppies = spec.root.parent().map(|p| p.join("disk"));
        let mut bench = peripherals::bench::Bench::new(spec.id, drive.clone(), floppies);
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
            .send(kernel::Msg::Event(value::Event::new(name, args), None));
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
            let mut d = sync::lock(&self.drive);
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
            let mut d = sync::lock(&self.drive);
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

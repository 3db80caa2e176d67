//! An emulated CC: Tweaked computer: an embedded Lua 5.2 state that offers the subset of CC's APIs
//! the `lua/` client uses, with CC's semantics (what the emulator follows and where it differs:
//! `docs/emulator.md`, "The emulator against CraftOS-PC"), so that tests and `--demo` run the
//! real client end to end against the real gateway.
//!
//! # Layout
//!
//! - this file: the public API, re-exported from the modules; `computer`: the [`Computer`] handle
//!   (spawn, events, `run_lua`, power).
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
//! - `kind`: what kind of computer ([`Device`]) and the state a turtle keeps across power cycles;
//!   `device`: the main-thread worker a turtle's and pocket computer's APIs wait on; `turtle`: a
//!   turtle's fuel, slots and commands in an empty world.
//! - `install`: writing the client onto a disk, and the `--demo` / `emulate` run modes.
//! - `rom/*.lua`: what CC itself writes in Lua (bios, `parallel`, `textutils`, `settings`, `shell`),
//!   in our own words.
//!
//! No file imports one that imports it back: the kernel holds the bench, the kind and the drive,
//! all plain data beneath it, and this file only re-exports.

mod boot;
mod clock;
mod computer;
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

pub use computer::Computer;
pub use error::EmuError;
pub use install::{install_client, run_demo, run_emulate};
pub use kernel::PowerState;
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
pub use value::EventArg;

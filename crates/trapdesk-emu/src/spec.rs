//! What one computer is before it boots: [`ComputerSpec`] (identity, disk, device, peripherals),
//! its drive and floppy, the [`Limits`] a server's config sets, and CC: Tweaked's default sizes.

use std::path::PathBuf;
use std::time::Duration;

use crate::kind::Device;
use crate::peripherals::spec::{DiskDrive, Floppy, PeripheralSpec};
use crate::turtle::{self, TURTLE_SLOTS, TurtleSpec};

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

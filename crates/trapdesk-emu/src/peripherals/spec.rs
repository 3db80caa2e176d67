//! What Rust puts beside a computer before or while it runs: a [`PeripheralSpec`], and the disk
//! drive with its floppy ([`DiskDrive`], [`Floppy`]). Plain data, beneath both the computer's spec
//! (`spec.rs`) and the bench of attached peripherals (`bench.rs`).

use std::path::PathBuf;

use super::inventory::InventorySpec;
use super::monitor::MonitorSpec;

/// CC: Tweaked's default `floppy_space_limit`: a floppy disk, in bytes.
pub const FLOPPY_SPACE_LIMIT: u64 = 125_000;

/// A peripheral to put beside a computer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PeripheralSpec {
    /// An advanced monitor.
    Monitor(MonitorSpec),
    /// A modem: wired (a `peripheral_hub` onto the computer's network, CraftOS-PC's `modem`)
    /// or wireless.
    Modem {
        /// Wireless (`isWireless()` true, no remote peripherals).
        wireless: bool,
    },
    /// A disk drive, with a floppy in it or empty. The emulator models one drive a computer.
    Drive(Option<Floppy>),
    /// A speaker.
    Speaker,
    /// A vanilla chest (`minecraft:chest`, `inventory`) with these slots.
    Chest(InventorySpec),
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

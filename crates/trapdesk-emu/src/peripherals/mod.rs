//! The peripherals around an emulated computer, created and removed at run time with
//! CraftOS-PC's own API (`periphemu.create(side, type, ...)`, `periphemu.remove(side)`:
//! CraftOS-PC's src/apis/periphemu.cpp) or from Rust ([`crate::ComputerSpec::with_peripheral`],
//! [`crate::Computer::attach`]), each with CC: Tweaked's methods.
//!
//! # The model
//!
//! A peripheral is named by a side (`top`, `left`, ...) or by a network name (`monitor_0`,
//! `minecraft:chest_3`). As in CC: Tweaked, the computer itself (the native `peripheral` table
//! the bios builds CC's `peripheral` API on) sees only its six sides; a peripheral with a
//! network name is on the computer's one wired network and is reached through a wired modem on
//! a side (a `peripheral_hub`: `getNamesRemote`, `callRemote`, ...), as CC's
//! rom/apis/peripheral.lua reaches it. That is also how CraftOS-PC shapes it: its `modem` is
//! wired, and its remote names are every peripheral not on a side (src/peripheral/modem.cpp
//! `getNamesRemote`), so one test body builds the same network on both runtimes:
//! `periphemu.create("back", "modem")`, then `periphemu.create("monitor_0", "monitor")`.
//!
//! The peripherals are blocks beside the computer: they outlive its reboots.
//!
//! One module per type: `drive`, `monitor`, `modem`, `speaker`, `inventory`; `args` reads
//! method arguments as CC: Tweaked does; `native` is the computer's native `peripheral` table,
//! `periphemu` CraftOS-PC's; `spec` what Rust attaches, `bench` what is attached; `handle` what
//! Rust does to them on a running computer; this file the demo's peripherals.
//!
//! This file only gathers: no module beneath it imports it, so the kernel, which holds the bench,
//! does not depend on the peripherals' methods.

mod args;
pub(crate) mod bench;
mod drive;
mod handle;
mod inventory;
mod modem;
mod monitor;
pub(crate) mod native;
pub(crate) mod periphemu;
mod speaker;
pub(crate) mod spec;

pub use inventory::{InventorySpec, Item};
pub use monitor::{MonitorSpec, MonitorView};
pub use spec::{DiskDrive, FLOPPY_SPACE_LIMIT, Floppy, PeripheralSpec};

/// What demo computer `id` has around it: the first, a monitor on top, and behind a wired modem on
/// its back a second monitor and a chest with a few items, so that monitors and peripherals have
/// something to show on a first try.
pub(crate) fn demo(id: u64) -> Vec<(&'static str, PeripheralSpec)> {
    if id != 1 {
        return Vec::new();
    }
    vec![
        ("top", PeripheralSpec::Monitor(MonitorSpec::blocks(3, 2))),
        ("back", PeripheralSpec::Modem { wireless: false }),
        ("monitor_0", PeripheralSpec::Monitor(MonitorSpec::default())),
        (
            "minecraft:chest_0",
            PeripheralSpec::Chest(
                InventorySpec::chest()
                    .with_item(1, Item::new("minecraft:cobblestone", 64))
                    .with_item(2, Item::new("minecraft:coal", 23)),
            ),
        ),
    ]
}

//! What Rust (tests, the demo) does to a running computer's peripherals: attach and detach them
//! as a player places and breaks blocks, read a monitor, click it, fill a chest.

use std::sync::{Arc, Mutex};

use super::bench::Device;
use super::inventory::Item;
use super::monitor::{Monitor, MonitorView};
use super::spec::PeripheralSpec;
use crate::computer::Computer;
use crate::error::EmuError;
use crate::kernel;
use crate::sync::lock;
use crate::value::{Event, Val};

impl Computer {
    fn queue(&self, events: Vec<Event>) {
        for ev in events {
            // A computer that is off has no queue: CC drops the event too.
            let _ = self.tx.send(kernel::Msg::Event(ev, None));
        }
    }

    /// Attaches a peripheral named `name` (a side, or a network name reached through a wired
    /// modem), as a player places it: the computer gets `peripheral` events as on CC: Tweaked.
    ///
    /// # Errors
    /// `EmuError::Setup` with CraftOS-PC's words when the name is taken (or a second drive is
    /// asked for); `EmuError::Io` when a floppy's directory cannot be made.
    pub fn attach(&self, name: &str, spec: PeripheralSpec) -> Result<(), EmuError> {
        if let PeripheralSpec::Drive(Some(f)) = &spec {
            crate::fs::private_dir(&f.root).map_err(|source| EmuError::Io {
                path: f.root.clone(),
                source,
            })?;
        }
        let events = lock(&self.bench)
            .attach(name, spec)
            .map_err(EmuError::Setup)?;
        self.queue(events);
        Ok(())
    }

    /// Detaches the peripheral named `name`, as a player breaks it (`peripheral_detach`).
    /// False when nothing has that name.
    pub fn detach(&self, name: &str) -> bool {
        let events = lock(&self.bench).detach(name);
        let found = events.is_some();
        self.queue(events.unwrap_or_default());
        found
    }

    /// What the monitor named `name` shows now (attached, seen by the computer or not).
    pub fn monitor(&self, name: &str) -> Option<MonitorView> {
        match lock(&self.bench).get(name)? {
            Device::Monitor(m) => Some(monitor_view(&m)),
            _ => None,
        }
    }

    /// A player's right-click on the monitor the computer knows as `name`, at cell (`x`, `y`)
    /// (1-based): queues `monitor_touch(name, x, y)` as CC: Tweaked does
    /// (`MonitorBlockEntity`: every attached computer gets it, named as it sees the monitor).
    /// False when the computer sees no monitor by that name or the cell is off it.
    pub fn monitor_touch(&self, name: &str, x: u32, y: u32) -> bool {
        let Some(m) = lock(&self.bench).monitor(name) else {
            return false;
        };
        let (w, h) = lock(&m).screen.size();
        if x < 1 || y < 1 || x as usize > w || y as usize > h {
            return false;
        }
        self.queue(vec![Event::new(
            "monitor_touch",
            vec![
                Val::from(name),
                Val::Num(f64::from(x)),
                Val::Num(f64::from(y)),
            ],
        )]);
        true
    }

    /// The slots of the inventory named `name` (slot 1 first).
    pub fn inventory(&self, name: &str) -> Option<Vec<Option<Item>>> {
        let inv = lock(&self.bench).inventory(name)?;
        let slots = lock(&inv).slots.clone();
        Some(slots)
    }

    /// Puts `item` in (or, with `None`, empties) slot `slot` (1-based) of the inventory named
    /// `name`, as a player or a hopper would. False when there is no such inventory or slot.
    pub fn set_item(&self, name: &str, slot: usize, item: Option<Item>) -> bool {
        let Some(inv) = lock(&self.bench).inventory(name) else {
            return false;
        };
        let mut inv = lock(&inv);
        match slot.checked_sub(1).and_then(|i| inv.slots.get_mut(i)) {
            Some(s) => {
                *s = item;
                true
            }
            None => false,
        }
    }
}

/// Reads a monitor for the handle.
fn monitor_view(m: &Arc<Mutex<Monitor>>) -> MonitorView {
    lock(m).view()
}

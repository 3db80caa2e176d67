//! The bench: every peripheral attached around one computer, by side or network name, and the
//! events attaching and detaching them queue. Shared by the machine's natives (`native.rs`,
//! `periphemu.rs`) and the Rust handle (`handle.rs`); it knows the peripherals' state but none
//! of their methods, so that it sits beneath the kernel that holds it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::inventory::Inventory;
use super::modem::Modem;
use super::monitor::Monitor;
use super::spec::{DiskDrive, PeripheralSpec};
use crate::sync::lock;
use crate::value::{Event, Val};

/// The six sides, in CC: Tweaked's order (`rs.getSides()`).
pub(crate) const SIDES: [&str; 6] = ["bottom", "top", "back", "front", "right", "left"];

pub(crate) fn is_side(name: &str) -> bool {
    SIDES.contains(&name)
}

/// One attached peripheral.
#[derive(Clone)]
pub(crate) enum Device {
    Drive,
    Monitor(Arc<Mutex<Monitor>>),
    Modem(Arc<Mutex<Modem>>),
    Speaker,
    Inventory(Arc<Mutex<Inventory>>),
}

impl Device {
    /// Its types, the first being what `getType` answers first.
    pub(crate) fn types(&self) -> Vec<&'static str> {
        match self {
            Device::Drive => vec!["drive"],
            Device::Monitor(_) => vec!["monitor"],
            Device::Modem(m) if lock(m).wireless => vec!["modem"],
            Device::Modem(_) => vec!["modem", "peripheral_hub"],
            Device::Speaker => vec!["speaker"],
            // As CC: Tweaked types a vanilla chest (its generic peripheral: the block's id,
            // then `inventory`); CraftOS-PC's chest adds "chest".
            Device::Inventory(_) => vec!["minecraft:chest", "inventory"],
        }
    }

    fn is_hub(&self) -> bool {
        matches!(self, Device::Modem(m) if !lock(m).wireless)
    }
}

/// Every peripheral around one computer.
pub(crate) struct Bench {
    devices: BTreeMap<String, Device>,
    /// The computer's one disk drive slot, shared with `fs` (which mounts its floppy).
    pub(super) drive: Arc<Mutex<Option<DiskDrive>>>,
    /// For `getNameLocal`: `computer_<id>`, as CC names a computer on a network.
    pub(super) computer_id: u64,
    /// Where `insertDisk(id)` finds floppy `id`: `disk/` beside the computer's directory.
    pub(super) floppies: Option<PathBuf>,
}

pub(crate) type SharedBench = Arc<Mutex<Bench>>;

pub(super) fn event(name: &str, peripheral: &str) -> Event {
    Event::new(name, vec![Val::from(peripheral)])
}

impl Bench {
    pub(crate) fn new(
        computer_id: u64,
        drive: Arc<Mutex<Option<DiskDrive>>>,
        floppies: Option<PathBuf>,
    ) -> Self {
        let mut devices = BTreeMap::new();
        if let Some(d) = lock(&drive).as_ref() {
            devices.insert(d.side.clone(), Device::Drive);
        }
        Self {
            devices,
            drive,
            computer_id,
            floppies,
        }
    }

    fn has_hub(&self) -> bool {
        self.devices.iter().any(|(n, d)| is_side(n) && d.is_hub())
    }

    /// The network's names, sorted.
    pub(super) fn network(&self) -> Vec<String> {
        self.devices
            .keys()
            .filter(|n| !is_side(n))
            .cloned()
            .collect()
    }

    /// The device the computer sees by `name`: on a side, or on the network behind a hub.
    fn visible(&self, name: &str) -> Option<Device> {
        if !is_side(name) && !self.has_hub() {
            return None;
        }
        self.devices.get(name).cloned()
    }

    /// A device by name, seen or not (for the Rust handle).
    pub(crate) fn get(&self, name: &str) -> Option<Device> {
        self.devices.get(name).cloned()
    }

    /// Attaches a peripheral; the events the computer gets (`peripheral` for it, and for each
    /// remote peripheral when it is the first wired modem), or why not (CraftOS-PC's words).
    pub(crate) fn attach(
        &mut self,
        name: &str,
        spec: PeripheralSpec,
    ) -> Result<Vec<Event>, String> {
        if self.devices.contains_key(name) {
            return Err(format!("Peripheral already attached on side {name}"));
        }
        let device = match spec {
            PeripheralSpec::Drive(floppy) => {
                let mut slot = lock(&self.drive);
                if let Some(d) = slot.as_ref() {
                    return Err(format!(
                        "the emulator models one disk drive a computer, and one is on {}",
                        d.side
                    ));
                }
                *slot = Some(DiskDrive {
                    side: name.to_owned(),
                    floppy,
                });
                Device::Drive
            }
            PeripheralSpec::Monitor(m) => Device::Monitor(Arc::new(Mutex::new(Monitor::new(m)))),
            PeripheralSpec::Modem { wireless } => {
                Device::Modem(Arc::new(Mutex::new(Modem::new(wireless))))
            }
            PeripheralSpec::Speaker => Device::Speaker,
            PeripheralSpec::Chest(inv) => Device::Inventory(Arc::new(Mutex::new(inv))),
        };
        let hub_before = self.has_hub();
        let hub = device.is_hub();
        self.devices.insert(name.to_owned(), device);
        let mut events = Vec::new();
        if is_side(name) {
            events.push(event("peripheral", name));
            if hub && !hub_before {
                events.extend(self.network().iter().map(|n| event("peripheral", n)));
            }
        } else if hub_before {
            events.push(event("peripheral", name));
        }
        Ok(events)
    }

    /// Detaches a peripheral: `None` when nothing has that name, else the events (a drive's
    /// floppy comes out first, as CraftOS-PC ejects it; the last wired modem takes the
    /// network's peripherals with it).
    pub(crate) fn detach(&mut self, name: &str) -> Option<Vec<Event>> {
        let device = self.devices.remove(name)?;
        let mut events = Vec::new();
        if let Device::Drive = device {
            let old = lock(&self.drive).take();
            if old.is_some_and(|d| d.floppy.is_some()) {
                events.push(event("disk_eject", name));
            }
        }
        if is_side(name) {
            if device.is_hub() && !self.has_hub() {
                events.extend(self.network().iter().map(|n| event("peripheral_detach", n)));
            }
            events.push(event("peripheral_detach", name));
        } else if self.has_hub() {
            events.push(event("peripheral_detach", name));
        }
        Some(events)
    }

    /// The names of the attached monitors the computer sees.
    pub(crate) fn monitor(&self, name: &str) -> Option<Arc<Mutex<Monitor>>> {
        match self.visible(name)? {
            Device::Monitor(m) => Some(m),
            _ => None,
        }
    }

    /// An inventory by name, seen or not.
    pub(crate) fn inventory(&self, name: &str) -> Option<Arc<Mutex<Inventory>>> {
        match self.get(name)? {
            Device::Inventory(i) => Some(i),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::super::inventory::InventorySpec;
    use super::super::monitor::MonitorSpec;
    use super::*;

    fn bench() -> Bench {
        Bench::new(7, Arc::new(Mutex::new(None)), None)
    }

    fn names(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .map(|e| {
                let arg = match e.args.first() {
                    Some(Val::Str(s)) => String::from_utf8_lossy(s).into_owned(),
                    _ => String::new(),
                };
                format!("{} {arg}", String::from_utf8_lossy(&e.name))
            })
            .collect()
    }

    #[test]
    fn the_network_appears_with_the_first_wired_modem() {
        let mut b = bench();
        let ev = b
            .attach("monitor_0", PeripheralSpec::Monitor(MonitorSpec::default()))
            .unwrap();
        assert!(ev.is_empty(), "no modem yet: the computer sees nothing");
        assert!(b.visible("monitor_0").is_none());
        let ev = b
            .attach("back", PeripheralSpec::Modem { wireless: false })
            .unwrap();
        assert_eq!(names(&ev), ["peripheral back", "peripheral monitor_0"]);
        assert!(b.monitor("monitor_0").is_some());
        let ev = b
            .attach("chest_1", PeripheralSpec::Chest(InventorySpec::chest()))
            .unwrap();
        assert_eq!(names(&ev), ["peripheral chest_1"]);
        let ev = b.detach("back").unwrap();
        assert_eq!(
            names(&ev),
            [
                "peripheral_detach chest_1",
                "peripheral_detach monitor_0",
                "peripheral_detach back"
            ]
        );
        assert!(b.detach("back").is_none());
    }

    #[test]
    fn a_wireless_modem_is_no_hub() {
        let mut b = bench();
        b.attach("top", PeripheralSpec::Modem { wireless: true })
            .unwrap();
        b.attach("monitor_0", PeripheralSpec::Monitor(MonitorSpec::default()))
            .unwrap();
        assert!(b.visible("monitor_0").is_none());
        assert_eq!(b.get("top").map(|d| d.types()), Some(vec!["modem"]));
    }

    #[test]
    fn one_name_one_peripheral_and_one_drive() {
        let mut b = bench();
        b.attach("left", PeripheralSpec::Speaker).unwrap();
        assert_eq!(
            b.attach("left", PeripheralSpec::Speaker).unwrap_err(),
            "Peripheral already attached on side left"
        );
        b.attach("top", PeripheralSpec::Drive(None)).unwrap();
        assert!(b.attach("bottom", PeripheralSpec::Drive(None)).is_err());
    }
}

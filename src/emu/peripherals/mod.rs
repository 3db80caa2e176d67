//! The peripherals around an emulated computer, created and removed at run time with
//! CraftOS-PC's own API (`periphemu.create(side, type, ...)`, `periphemu.remove(side)`:
//! CraftOS-PC's src/apis/periphemu.cpp) or from Rust ([`crate::emu::ComputerSpec::with_peripheral`],
//! [`crate::emu::Computer::attach`]), each with CC: Tweaked's methods.
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
//! method arguments as CC: Tweaked does.

mod args;
mod drive;
mod handle;
mod inventory;
mod modem;
mod monitor;
mod speaker;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mlua::{IntoLuaMulti, Lua, MultiValue, Table, Value};

pub use inventory::{InventorySpec, Item};
pub use monitor::{MonitorSpec, MonitorView};

use super::kernel::{Ctx, Event, lock};
use super::value::Val;
use super::{DiskDrive, Floppy};
use args::Args;
use inventory::Inventory;
use modem::Modem;
use monitor::Monitor;

/// The six sides, in CC: Tweaked's order (`rs.getSides()`).
pub(crate) const SIDES: [&str; 6] = ["bottom", "top", "back", "front", "right", "left"];

fn is_side(name: &str) -> bool {
    SIDES.contains(&name)
}

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
    fn types(&self) -> Vec<&'static str> {
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

    fn methods(&self) -> Vec<&'static str> {
        match self {
            Device::Drive => drive::METHODS.to_vec(),
            Device::Monitor(_) => monitor::METHODS.to_vec(),
            Device::Modem(m) => {
                let mut v = modem::METHODS.to_vec();
                if !lock(m).wireless {
                    v.extend_from_slice(modem::WIRED_METHODS);
                    v.sort_unstable();
                }
                v
            }
            Device::Speaker => speaker::METHODS.to_vec(),
            Device::Inventory(_) => inventory::METHODS.to_vec(),
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
    drive: Arc<Mutex<Option<DiskDrive>>>,
    /// For `getNameLocal`: `computer_<id>`, as CC names a computer on a network.
    computer_id: u64,
    /// Where `insertDisk(id)` finds floppy `id`: `disk/` beside the computer's directory.
    floppies: Option<PathBuf>,
}

pub(crate) type SharedBench = Arc<Mutex<Bench>>;

fn event(name: &str, peripheral: &str) -> Event {
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
    fn network(&self) -> Vec<String> {
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

/// Reads a monitor for the handle.
pub(crate) fn monitor_view(m: &Arc<Mutex<Monitor>>) -> MonitorView {
    lock(m).view()
}

type Answer = Result<MultiValue, String>;

fn strings(lua: &Lua, v: &[&str]) -> mlua::Result<Value> {
    Ok(Value::Table(lua.create_sequence_from(v.iter().copied())?))
}

/// A device's types as several values (`getType` answers `"modem", "peripheral_hub"`).
fn types(lua: &Lua, d: &Device) -> mlua::Result<MultiValue> {
    d.types()
        .into_iter()
        .map(|t| lua.create_string(t).map(Value::String))
        .collect()
}

/// Calls `method` on `device`, known to the computer as `name`.
fn invoke(
    lua: &Lua,
    bench: &SharedBench,
    name: &str,
    device: Device,
    method: &str,
    a: Args,
    events: &mut Vec<Event>,
) -> Answer {
    let answer = match device {
        Device::Drive => {
            let (slot, floppies) = {
                let b = lock(bench);
                (b.drive.clone(), b.floppies.clone())
            };
            drive::call(lua, &slot, floppies.as_deref(), name, method, &a, events)?
        }
        Device::Speaker => speaker::call(lua, method, &a)?,
        Device::Monitor(m) => {
            let mut m = lock(&m);
            match monitor::call(lua, &mut m, method, &a)? {
                Some((v, monitor::Effect::Resized)) => {
                    events.push(event("monitor_resize", name));
                    Some(v)
                }
                Some((v, monitor::Effect::None)) => Some(v),
                None => None,
            }
        }
        Device::Inventory(inv) if method == "pushItems" || method == "pullItems" => {
            Some(transfer(lua, bench, name, &inv, method, &a)?)
        }
        Device::Inventory(inv) => inventory::call(lua, &mut lock(&inv), method, &a)?,
        Device::Modem(m) => {
            // The modem's own lock is let go before a hub method runs: `callRemote` may reach
            // another modem on the network, and a call through one back to itself must not wait
            // on its own lock.
            let (own, wired) = {
                let mut g = lock(&m);
                let wired = !g.wireless;
                (modem::call(lua, &mut g, method, &a)?, wired)
            };
            match own {
                Some(v) => Some(v),
                None if wired => hub(lua, bench, method, a, events)?,
                None => None,
            }
        }
    };
    match answer {
        Some(v) => Ok(v),
        None => Err(format!("No such method {method}")),
    }
}

/// `pushItems(toName, fromSlot, limit?, toSlot?)` / `pullItems(fromName, ...)`: the other
/// inventory must be one this peripheral can reach (CC: `IComputerAccess.getAvailablePeripheral`:
/// a side peripheral reaches the computer's other sides, a remote one its network).
fn transfer(
    lua: &Lua,
    bench: &SharedBench,
    name: &str,
    this: &Arc<Mutex<Inventory>>,
    method: &str,
    a: &Args,
) -> Answer {
    let other_name = a.string(1)?;
    let push = method == "pushItems";
    let role = if push { "Target" } else { "Source" };
    let other = {
        let b = lock(bench);
        let reachable = is_side(&other_name) == is_side(name);
        match reachable.then(|| b.get(&other_name)).flatten() {
            None => return Err(format!("{role} '{other_name}' does not exist")),
            Some(Device::Inventory(i)) => i,
            Some(_) => return Err(format!("{role} '{other_name}' is not an inventory")),
        }
    };
    let (from, to) = if push { (this, &other) } else { (&other, this) };
    let moved = if Arc::ptr_eq(from, to) {
        let mut inv = lock(from);
        let size = inv.slots.len();
        let (from_slot, limit, to_slot) = inventory::transfer_args(a, size, size)?;
        if limit == 0 || to_slot == Some(from_slot) {
            0
        } else {
            // Within one inventory: take the stack out, move it, put back what is left.
            let mut out = Inventory {
                slots: vec![inv.slots[from_slot - 1].take()],
            };
            let n = inventory::move_items(&mut out, 1, &mut inv, to_slot, limit);
            if let Some(rest) = out.slots[0].take() {
                match &mut inv.slots[from_slot - 1] {
                    Some(i) => i.count += rest.count,
                    s => *s = Some(rest),
                }
            }
            n
        }
    } else {
        let mut f = lock(from);
        let mut t = lock(to);
        let (from_slot, limit, to_slot) =
            inventory::transfer_args(a, f.slots.len(), t.slots.len())?;
        if limit == 0 {
            0
        } else {
            inventory::move_items(&mut f, from_slot, &mut t, to_slot, limit)
        }
    };
    f64::from(moved)
        .into_lua_multi(lua)
        .map_err(|e| e.to_string())
}

/// A wired modem's `peripheral_hub` methods (`WiredModemPeripheral`). `Ok(None)`: not one.
fn hub(
    lua: &Lua,
    bench: &SharedBench,
    method: &str,
    a: Args,
    events: &mut Vec<Event>,
) -> Result<Option<MultiValue>, String> {
    let e = |e: mlua::Error| e.to_string();
    let remote = |n: &str| -> Option<Device> { if is_side(n) { None } else { lock(bench).get(n) } };
    Ok(Some(match method {
        "getNamesRemote" => {
            let names = lock(bench).network();
            Value::Table(lua.create_sequence_from(names).map_err(e)?)
                .into_lua_multi(lua)
                .map_err(e)?
        }
        "getNameLocal" => format!("computer_{}", lock(bench).computer_id)
            .into_lua_multi(lua)
            .map_err(e)?,
        "isPresentRemote" => remote(&a.string(1)?)
            .is_some()
            .into_lua_multi(lua)
            .map_err(e)?,
        "getTypeRemote" => match remote(&a.string(1)?) {
            Some(d) => types(lua, &d).map_err(e)?,
            None => Value::Nil.into_lua_multi(lua).map_err(e)?,
        },
        "hasTypeRemote" => {
            let (n, t) = (a.string(1)?, a.string(2)?);
            match remote(&n) {
                Some(d) => d
                    .types()
                    .contains(&t.as_str())
                    .into_lua_multi(lua)
                    .map_err(e)?,
                None => Value::Nil.into_lua_multi(lua).map_err(e)?,
            }
        }
        "getMethodsRemote" => match remote(&a.string(1)?) {
            Some(d) => strings(lua, &d.methods())
                .map_err(e)?
                .into_lua_multi(lua)
                .map_err(e)?,
            None => Value::Nil.into_lua_multi(lua).map_err(e)?,
        },
        "callRemote" => {
            let (n, m) = (a.string(1)?, a.string(2)?);
            let Some(d) = remote(&n) else {
                return Err(format!("No peripheral: {n}"));
            };
            let rest = Args(a.0.into_iter().skip(2).collect());
            invoke(lua, bench, &n, d, &m, rest, events)?
        }
        _ => return Ok(None),
    }))
}

/// Answers `true, values...` or `false, message` (the bios raises the message).
fn answer(lua: &Lua, r: Answer) -> mlua::Result<MultiValue> {
    match r {
        Ok(mut v) => {
            v.push_front(Value::Boolean(true));
            Ok(v)
        }
        Err(m) => (false, m).into_lua_multi(lua),
    }
}

fn name_of(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s.to_string_lossy()),
        _ => None,
    }
}

/// The native `peripheral` table: what CC: Tweaked's `PeripheralAPI` offers the bios, the six
/// sides only (`isPresent`, `getType`, `hasType`, `getMethods`, `call`).
pub(crate) fn native(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let side_device = |bench: &SharedBench, v: Option<&Value>| -> Option<(String, Device)> {
        let n = name_of(v)?;
        if !is_side(&n) {
            return None;
        }
        let d = lock(bench).get(&n)?;
        Some((n, d))
    };
    let b = ctx.bench.clone();
    t.set(
        "isPresent",
        lua.create_function(move |_, n: Value| Ok(side_device(&b, Some(&n)).is_some()))?,
    )?;
    let b = ctx.bench.clone();
    t.set(
        "getType",
        lua.create_function(move |lua, n: Value| match side_device(&b, Some(&n)) {
            Some((_, d)) => types(lua, &d),
            None => Ok(MultiValue::new()),
        })?,
    )?;
    let b = ctx.bench.clone();
    t.set(
        "hasType",
        lua.create_function(move |_, (n, ty): (Value, String)| {
            Ok(side_device(&b, Some(&n)).map(|(_, d)| d.types().contains(&ty.as_str())))
        })?,
    )?;
    let b = ctx.bench.clone();
    t.set(
        "getMethods",
        lua.create_function(move |lua, n: Value| match side_device(&b, Some(&n)) {
            Some((_, d)) => strings(lua, &d.methods()),
            None => Ok(Value::Nil),
        })?,
    )?;
    let b = ctx.bench.clone();
    let kernel = ctx.kernel.clone();
    t.set(
        "call",
        lua.create_function(move |lua, args: MultiValue| {
            let mut args: Vec<Value> = args.into_iter().collect();
            let Some((name, device)) = side_device(&b, args.first()) else {
                return answer(lua, Err("No peripheral attached".into()));
            };
            let Some(method) = name_of(args.get(1)) else {
                return answer(lua, Err(args::bad(2, "string", args.get(1))));
            };
            let rest = Args(args.drain(..).skip(2).collect());
            let mut events = Vec::new();
            let r = invoke(lua, &b, &name, device, &method, rest, &mut events);
            let mut k = lock(&kernel);
            for ev in events {
                k.push(ev);
            }
            answer(lua, r)
        })?,
    )?;
    Ok(t)
}

/// What a demo computer has around it: the first, a monitor on top, and behind a wired modem on
/// its back a second monitor and a chest with a few items, so that monitors and peripherals have
/// something to show on a first try.
pub(crate) fn demo(spec: super::ComputerSpec) -> super::ComputerSpec {
    if spec.id != 1 {
        return spec;
    }
    spec.with_peripheral("top", PeripheralSpec::Monitor(MonitorSpec::blocks(3, 2)))
        .with_peripheral("back", PeripheralSpec::Modem { wireless: false })
        .with_peripheral("monitor_0", PeripheralSpec::Monitor(MonitorSpec::default()))
        .with_peripheral(
            "minecraft:chest_0",
            PeripheralSpec::Chest(
                InventorySpec::chest()
                    .with_item(1, Item::new("minecraft:cobblestone", 64))
                    .with_item(2, Item::new("minecraft:coal", 23)),
            ),
        )
}

/// The types `periphemu.create` makes, as CraftOS-PC names them.
const CREATABLE: &[&str] = &[
    "chest",
    "drive",
    "minecraft:chest",
    "modem",
    "monitor",
    "speaker",
];

/// The spec `periphemu.create(side, kind, ...)` asks for, from its extra arguments:
/// a monitor's width and height at scale 1 (CraftOS-PC's), a chest's `true` for a double chest
/// (CraftOS-PC's), a modem's network number (CraftOS-PC's; one network here) or the emulator's
/// `{wireless = true}`.
fn spec_from(kind: &str, extra: &[Value]) -> Result<PeripheralSpec, String> {
    let num = |i: usize| match extra.get(i) {
        Some(Value::Integer(n)) => Some(*n as f64),
        Some(Value::Number(n)) => Some(*n),
        _ => None,
    };
    Ok(match kind {
        "monitor" => PeripheralSpec::Monitor({
            let d = MonitorSpec::default();
            match (num(0), num(1)) {
                (None, None) => d,
                (w, h) => MonitorSpec::cells(
                    w.map_or(51, |w| w.max(1.0) as u32),
                    h.map_or(19, |h| h.max(1.0) as u32),
                ),
            }
        }),
        "modem" => {
            let wireless = match extra.first() {
                Some(Value::Table(t)) => t
                    .get::<Option<bool>>("wireless")
                    .ok()
                    .flatten()
                    .unwrap_or(false),
                _ => false,
            };
            PeripheralSpec::Modem { wireless }
        }
        "drive" => PeripheralSpec::Drive(None),
        "speaker" => PeripheralSpec::Speaker,
        "chest" | "minecraft:chest" => {
            let double = matches!(extra.first(), Some(Value::Boolean(true)));
            PeripheralSpec::Chest(InventorySpec {
                slots: vec![None; if double { 54 } else { 27 }],
            })
        }
        other => return Err(format!("No peripheral named {other}")),
    })
}

/// CraftOS-PC's naming: a number side (or a side of digits only) is `<type>_<n>`.
pub(crate) fn created_name(side: &str, kind: &str) -> String {
    if !side.is_empty() && side.chars().all(|c| c.is_ascii_digit()) {
        format!("{kind}_{side}")
    } else {
        side.to_owned()
    }
}

/// The native `periphemu` table (`create`, `remove`, `names`), CraftOS-PC's API; the bios checks
/// the argument types.
pub(crate) fn periphemu(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let b = ctx.bench.clone();
    let kernel = ctx.kernel.clone();
    t.set(
        "create",
        lua.create_function(
            move |lua, (side, kind, extra): (String, String, MultiValue)| {
                let extra: Vec<Value> = extra.into_iter().collect();
                let name = created_name(&side, &kind);
                let r = spec_from(&kind, &extra).and_then(|spec| lock(&b).attach(&name, spec));
                match r {
                    Ok(events) => {
                        let mut k = lock(&kernel);
                        for ev in events {
                            k.push(ev);
                        }
                        true.into_lua_multi(lua)
                    }
                    Err(m) => (false, m).into_lua_multi(lua),
                }
            },
        )?,
    )?;
    let b = ctx.bench.clone();
    let kernel = ctx.kernel.clone();
    t.set(
        "remove",
        lua.create_function(move |_, side: String| {
            let events = lock(&b).detach(&side);
            let found = events.is_some();
            let mut k = lock(&kernel);
            for ev in events.unwrap_or_default() {
                k.push(ev);
            }
            Ok(found)
        })?,
    )?;
    t.set(
        "names",
        lua.create_function(|lua, ()| strings(lua, CREATABLE))?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
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
        assert_eq!(created_name("3", "modem"), "modem_3");
        assert_eq!(created_name("top", "modem"), "top");
        assert!(spec_from("printer", &[]).is_err());
    }
}

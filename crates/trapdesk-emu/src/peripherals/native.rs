//! The native `peripheral` table the bios builds CC's `peripheral` API on: the six sides only
//! (CC: Tweaked's `core/apis/PeripheralAPI.java`), each method call answered by the
//! peripheral's type, and a wired modem's remote methods (`callRemote`, ...) onto the network.

use std::sync::{Arc, Mutex};

use mlua::{IntoLuaMulti, Lua, MultiValue, Table, Value};

use super::args::{self, Args};
use super::bench::{Device, SharedBench, event, is_side};
use super::inventory::Inventory;
use super::{drive, inventory, modem, monitor, speaker};
use crate::kernel::Ctx;
use crate::sync::lock;
use crate::value::Event;

type Answer = Result<MultiValue, String>;

pub(super) fn strings(lua: &Lua, v: &[&str]) -> mlua::Result<Value> {
    Ok(Value::Table(lua.create_sequence_from(v.iter().copied())?))
}

/// A device's methods, sorted (a wired modem's with its remote ones).
fn methods(device: &Device) -> Vec<&'static str> {
    match device {
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
            Some(d) => strings(lua, &methods(&d))
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
            Some((_, d)) => strings(lua, &methods(&d)),
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

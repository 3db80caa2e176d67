//! The native half of CC's `os` API: timers, the event queue, clocks, identity and power. The
//! Lua half (`pullEvent`, `sleep`, `version`, ...) is in `rom/bios.lua`, as in CC.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use mlua::{Lua, MultiValue, Table, Value};

use super::kernel::{Ctx, Power};
use super::sync::lock;
use super::value::{Event, Val};

/// One in-game day lasts 24,000 ticks (an hour 1,000); the game starts at 6:00 on day 1.
const TICKS_PER_HOUR: f64 = 1000.0;

/// Wall-clock milliseconds since the Unix epoch.
fn wall_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}

/// In-game (day, hour of day) since boot: the emulator's world starts with the computer, and
/// its time moves with the server's ticks.
fn ingame(ticks: u64) -> (f64, f64) {
    let t = ticks as f64 / TICKS_PER_HOUR + 6.0;
    ((t / 24.0).floor() + 1.0, t % 24.0)
}

/// A Lua value as an event argument (tables and functions kept by reference, as CC copies them).
fn to_val(lua: &Lua, v: Value) -> mlua::Result<Val> {
    Ok(match v {
        Value::Nil => Val::Nil,
        Value::Boolean(b) => Val::Bool(b),
        Value::Number(n) => Val::Num(n),
        Value::Integer(n) => Val::Num(n as f64),
        Value::String(s) => Val::Str(s.as_bytes().to_vec()),
        other => Val::Lua(Arc::new(lua.create_registry_value(other)?)),
    })
}

/// The native `os` table.
pub(crate) fn native(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    identity(lua, ctx, &t)?;
    timers(lua, ctx, &t)?;
    events(lua, ctx, &t)?;
    clocks(lua, ctx, &t)?;
    power(lua, ctx, &t)?;
    Ok(t)
}

/// `getComputerID`, `getComputerLabel` and `setComputerLabel`.
fn identity(lua: &Lua, ctx: &Ctx, t: &Table) -> mlua::Result<()> {
    let k = ctx.kernel.clone();
    t.set(
        "getComputerID",
        lua.create_function(move |_, ()| Ok(lock(&k).id as f64))?,
    )?;
    let k = ctx.kernel.clone();
    t.set(
        "getComputerLabel",
        lua.create_function(move |lua, ()| {
            // CC returns nothing at all (not nil) when unlabelled.
            let mut out = MultiValue::new();
            if let Some(l) = &lock(&k).label {
                out.push_back(Value::String(lua.create_string(l)?));
            }
            Ok(out)
        })?,
    )?;
    let k = ctx.kernel.clone();
    t.set(
        "setComputerLabel",
        lua.create_function(move |_, label: Option<mlua::LuaString>| {
            lock(&k).label = label.map(|l| l.to_string_lossy()).filter(|l| !l.is_empty());
            Ok(())
        })?,
    )?;
    Ok(())
}

/// `startTimer` and `cancelTimer`.
fn timers(lua: &Lua, ctx: &Ctx, t: &Table) -> mlua::Result<()> {
    let k = ctx.kernel.clone();
    t.set(
        "startTimer",
        lua.create_function(move |_, secs: f64| {
            // CC counts timers in server ticks: `Math.round(time / 0.05)` of them (OSAPI.startTimer),
            // the nearest whole number, not the next.
            let ticks = (secs.max(0.0) / 0.05 + 0.5).floor() as u64;
            let mut k = lock(&k);
            k.next_timer += 1;
            let id = k.next_timer;
            let due = k.timer_due(Instant::now(), ticks);
            k.timers.insert(id, due);
            Ok(id as f64)
        })?,
    )?;
    let k = ctx.kernel.clone();
    t.set(
        "cancelTimer",
        lua.create_function(move |_, id: f64| {
            lock(&k).timers.remove(&(id as u64));
            Ok(())
        })?,
    )?;
    Ok(())
}

/// `queueEvent`.
fn events(lua: &Lua, ctx: &Ctx, t: &Table) -> mlua::Result<()> {
    let k = ctx.kernel.clone();
    t.set(
        "queueEvent",
        lua.create_function(move |lua, (name, rest): (mlua::LuaString, MultiValue)| {
            let args = rest
                .into_iter()
                .map(|v| to_val(lua, v))
                .collect::<mlua::Result<Vec<_>>>()?;
            lock(&k).push(Event {
                name: name.as_bytes().to_vec(),
                args,
            });
            Ok(())
        })?,
    )?;
    Ok(())
}

/// `clock`, and `epoch`, `time` and `day` with the clock each reads.
fn clocks(lua: &Lua, ctx: &Ctx, t: &Table) -> mlua::Result<()> {
    let k = ctx.kernel.clone();
    t.set(
        "clock",
        lua.create_function(move |_, ()| {
            // Server ticks since boot, 0.05 each (`OSAPI.clock`): slower than real time on a
            // server that falls behind.
            Ok(lock(&k).ticks(Instant::now()) as f64 * 0.05)
        })?,
    )?;
    // os.epoch, os.time and os.day each take a clock name ("ingame" by default, "utc" or
    // "local" for wall time) and read it in their own unit.
    // (name, reading of wall milliseconds, reading of the in-game (day, hour))
    type Clock = (&'static str, fn(f64) -> f64, fn((f64, f64)) -> f64);
    let clocks: [Clock; 3] = [
        (
            "epoch",
            |ms| ms,
            |(day, hour)| ((day * 24.0 + hour) * 3_600_000.0).floor(),
        ),
        ("time", |ms| (ms / 3_600_000.0) % 24.0, |(_, hour)| hour),
        ("day", |ms| (ms / 86_400_000.0).floor(), |(day, _)| day),
    ];
    for (name, wall_reading, game_reading) in clocks {
        let k = ctx.kernel.clone();
        t.set(
            name,
            lua.create_function(move |_, kind: Option<String>| {
                match kind.as_deref().unwrap_or("ingame") {
                    "utc" | "local" => Ok(wall_reading(wall_ms())),
                    "ingame" => {
                        let ticks = lock(&k).ticks(Instant::now());
                        Ok(game_reading(ingame(ticks)))
                    }
                    other => Err(mlua::Error::RuntimeError(format!(
                        "Unsupported operation '{other}'"
                    ))),
                }
            })?,
        )?;
    }
    Ok(())
}

/// `reboot` and `shutdown`, which the kernel carries out once the chunk yields.
fn power(lua: &Lua, ctx: &Ctx, t: &Table) -> mlua::Result<()> {
    for (name, power) in [("reboot", Power::Reboot), ("shutdown", Power::Shutdown)] {
        let k = ctx.kernel.clone();
        t.set(
            name,
            lua.create_function(move |_, ()| {
                lock(&k).power = Some(power);
                Ok(())
            })?,
        )?;
    }
    Ok(())
}

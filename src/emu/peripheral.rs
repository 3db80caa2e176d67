//! The native half of `peripheral` for the one peripheral the emulator models: a disk drive
//! (`ComputerSpec::with_disk_drive`), with or without a floppy. The Lua half, CC's
//! `peripheral` and `disk` APIs, is in `rom/bios.lua`.

use mlua::{IntoLuaMulti, Lua, MultiValue, Table, Value};

use super::kernel::{Ctx, Event, lock};
use super::value::Val;

pub(crate) fn native(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let drive = ctx.drive.clone();
    t.set(
        "names",
        lua.create_function(move |_, ()| {
            Ok(lock(&drive)
                .as_ref()
                .map(|d| vec![d.side.clone()])
                .unwrap_or_default())
        })?,
    )?;
    // `drive(side)`: nothing when no drive is there; else whether a floppy is in, its id and
    // its label.
    let drive = ctx.drive.clone();
    t.set(
        "drive",
        lua.create_function(move |lua, side: String| {
            let d = lock(&drive);
            let Some(d) = d.as_ref().filter(|d| d.side == side) else {
                return Ok(MultiValue::new());
            };
            match &d.floppy {
                None => (true, false).into_lua_multi(lua),
                Some(f) => {
                    let label = match &f.label {
                        Some(l) => Value::String(lua.create_string(l)?),
                        None => Value::Nil,
                    };
                    // Floppy ids are small integers: exact as doubles.
                    #[allow(clippy::cast_precision_loss)]
                    let id = f.id as f64;
                    (true, true, id, label).into_lua_multi(lua)
                }
            }
        })?,
    )?;
    let drive = ctx.drive.clone();
    t.set(
        "setLabel",
        lua.create_function(move |_, (side, label): (String, Option<String>)| {
            let mut d = lock(&drive);
            if let Some(f) = d
                .as_mut()
                .filter(|d| d.side == side)
                .and_then(|d| d.floppy.as_mut())
            {
                f.label = label.filter(|l| !l.is_empty());
            }
            Ok(())
        })?,
    )?;
    // `eject(side)`: the floppy comes out and `disk_eject` is queued, as when a player takes it.
    let drive = ctx.drive.clone();
    let kernel = ctx.kernel.clone();
    t.set(
        "eject",
        lua.create_function(move |_, side: String| {
            let out = lock(&drive)
                .as_mut()
                .filter(|d| d.side == side)
                .and_then(|d| d.floppy.take());
            if out.is_some() {
                lock(&kernel).push(Event::new("disk_eject", vec![Val::from(side.as_str())]));
            }
            Ok(())
        })?,
    )?;
    Ok(t)
}

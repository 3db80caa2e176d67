//! Building one power cycle's Lua state: CC's standard library, the native tables, the watchdog
//! the bios hooks into every coroutine, and the bios itself with the ROM APIs.

use std::time::Instant;

use mlua::{Lua, LuaOptions, StdLib, Table};

use super::kernel::{Ctx, lock};

/// Builds a fresh Lua state with CC's globals and runs the bios, which returns its hooks.
pub(crate) fn build(ctx: &Ctx) -> mlua::Result<(Lua, Table)> {
    // SAFETY: `unsafe_new_with` is needed only to load the `debug` library, which CC offers and
    // which the bios uses to install the yield watchdog; no C modules are ever loaded (the
    // bios removes `package.loadlib` and `require`'s C searchers).
    // `catch_rust_panics` stays on: mlua's replacement `pcall` cannot be yielded across, and
    // CC programs yield inside `pcall` all the time.
    let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::new()) };
    let natives = lua.create_table()?;
    natives.set("term", super::term::native(&lua, ctx)?)?;
    natives.set("fs", super::fs::native(&lua, ctx)?)?;
    natives.set("os", super::os_api::native(&lua, ctx)?)?;
    natives.set("http", super::net::native(&lua, ctx)?)?;
    natives.set("peripheral", super::peripherals::native(&lua, ctx)?)?;
    natives.set("periphemu", super::peripherals::periphemu(&lua, ctx)?)?;
    super::device::install(&lua, ctx, &natives)?;
    let wd = ctx.watchdog.clone();
    natives.set(
        "watchdog",
        lua.create_function(move |_, ()| {
            let mut w = lock(&wd);
            let now = Instant::now();
            match w.warned_at {
                Some(at) if w.killed || now.duration_since(at) > w.abort_timeout => {
                    w.killed = true;
                    Ok(2)
                }
                Some(_) => Ok(0),
                None if now.duration_since(w.resumed_at) > w.timeout => {
                    w.warned_at = Some(now);
                    Ok(1)
                }
                None => Ok(0),
            }
        })?,
    )?;
    let rom = lua.create_table()?;
    for (name, src) in ROM {
        rom.set(*name, lua.create_string(src)?)?;
    }
    natives.set("rom", rom)?;
    let bios = lua
        .load(BIOS)
        .set_name("@bios.lua")
        .call::<Table>(natives)?;
    Ok((lua, bios))
}

const BIOS: &str = include_str!("rom/bios.lua");

/// The Lua-side APIs, loaded by the bios in this order.
const ROM: &[(&str, &str)] = &[
    ("utf8", include_str!("rom/utf8.lua")),
    ("textutils", include_str!("rom/textutils.lua")),
    ("settings", include_str!("rom/settings.lua")),
    ("parallel", include_str!("rom/parallel.lua")),
    ("shell", include_str!("rom/shell.lua")),
    ("device", include_str!("rom/device.lua")),
];

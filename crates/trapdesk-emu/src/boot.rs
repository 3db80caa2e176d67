//! Building one power cycle's Lua state: the sandbox (`sandbox`: CC's standard library and
//! nothing of the host), the native tables, the watchdog every coroutine is hooked with, and
//! the bios itself with the ROM APIs.

use std::time::Instant;

use mlua::{Lua, Table};

use super::kernel::Ctx;
use super::sync::lock;

/// Builds a fresh Lua state with CC's globals and runs the bios, which returns its hooks.
pub(crate) fn build(ctx: &Ctx) -> mlua::Result<(Lua, Table)> {
    // The watchdog: asked by the hook every coroutine carries (`sandbox`), it says whether the
    // running resume has run too long (1) or the computer is killed (2).
    let wd = ctx.watchdog.clone();
    let lua = super::sandbox::state(move || {
        let mut w = lock(&wd);
        let now = Instant::now();
        match w.warned_at {
            Some(at) if w.killed || now.duration_since(at) > w.abort_timeout => {
                w.killed = true;
                2
            }
            Some(_) => 0,
            None if now.duration_since(w.resumed_at) > w.timeout => {
                w.warned_at = Some(now);
                1
            }
            None => 0,
        }
    })?;
    let natives = lua.create_table()?;
    natives.set("term", super::term::native(&lua, ctx)?)?;
    natives.set("fs", super::fs::native(&lua, ctx)?)?;
    let os = super::os_api::native(&lua, ctx)?;
    super::clock::install(&lua, &os)?;
    natives.set("os", os)?;
    natives.set("http", super::net::native(&lua, ctx)?)?;
    natives.set("peripheral", super::peripherals::native::native(&lua, ctx)?)?;
    natives.set(
        "periphemu",
        super::peripherals::periphemu::periphemu(&lua, ctx)?,
    )?;
    super::device::install(&lua, ctx, &natives)?;
    let rom = lua.create_table()?;
    for (name, src) in ROM {
        rom.set(*name, lua.create_string(src)?)?;
    }
    natives.set("rom", rom)?;
    let bios = lua
        .load(BIOS)
        .set_name("@bios.lua")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .call::<Table>(natives)?;
    Ok((lua, bios))
}

const BIOS: &str = include_str!("rom/bios.lua");

/// The Lua-side APIs, loaded by the bios in this order, and `require`: CC's `cc.require`, which
/// the bios's `loadfile` serves (the client builds a program's `require` with it).
const ROM: &[(&str, &str)] = &[
    ("utf8", include_str!("rom/utf8.lua")),
    ("textutils", include_str!("rom/textutils.lua")),
    ("settings", include_str!("rom/settings.lua")),
    ("parallel", include_str!("rom/parallel.lua")),
    ("shell", include_str!("rom/shell.lua")),
    ("device", include_str!("rom/device.lua")),
    ("require", include_str!("rom/require.lua")),
];

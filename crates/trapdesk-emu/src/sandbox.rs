//! The Lua state an emulated computer runs in, built so that nothing of the host is reachable
//! from it: only the libraries CC: Tweaked offers are opened (base, `coroutine`, `string`,
//! `table`, `math`, `bit32`; never `io`, `os` or `package`), the base functions that reach the
//! host (`dofile`, `loadfile`, `print`, binary `load`, `collectgarbage`) never enter the
//! computer's globals, and `debug` is a filtered library written here for the purpose.
//!
//! PUC Lua's own `debug` library lets a chunk corrupt the host's memory (mlua documents it as
//! unsafe): `setupvalue`/`setlocal` on a C function or frame replace the userdata mlua's
//! callbacks rely on, `setmetatable` on that userdata swaps its type, `getregistry` holds
//! every internal table. Its functions are taken into Rust before any Lua runs (they are in
//! no table a chunk can reach) and each one offered here checks its arguments first: upvalues
//! and locals of Lua functions and frames only, metatables of anything but userdata,
//! `getregistry` a table holding the computer's own `_LOADED`, as CC's registry holds only the
//! computer's own Lua (CC: Tweaked `CobaltLuaMachine.java`, `CoreLibraries.debugGlobals` and
//! the registry's `_LOADED`). The watchdog owns every coroutine's hook, so `sethook` is not
//! offered to chunks (CC interrupts computers from Java, not with hooks).
//!
//! Why a filtered library in this process rather than a process per computer: the emulator is
//! a convenience for trying and testing (`--demo`, `trapdesk emulate`, the test suite), many
//! computers run side by side sharing the host's gateway and runtime, and the escape routes are
//! a short, closed list of Lua API functions checked here (docs/security.md, "The emulator").

use std::sync::{Arc, Mutex};

use mlua::{Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};

mod debug;
mod guard;

use debug::filtered_debug;
use guard::{Real, Shim, call, is_userdata, message, setmetatable};

/// The most memory one emulated computer's Lua may hold. CC has no such limit, but its
/// computers live in the server's JVM with its own heap limit; here the computers share the
/// host's process, so one chunk building an endless table would grow the host. 64 MiB is many
/// times what the client and CC programs hold (the client runs in well under 2 MiB).
pub(crate) const MEMORY_LIMIT: usize = 64 * 1024 * 1024;

/// Count of VM instructions between two watchdog checks on a coroutine.
const WATCHDOG_EVERY: u32 = 1000;

/// The base functions a chunk may see as they are: none reaches outside the Lua state.
/// `load` is replaced by a text-only one; `print`, `loadfile` and `dofile` are the bios's,
/// over the computer's terminal and disk.
const BASE: &[&str] = &[
    "assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget", "rawlen",
    "rawset", "select", "tonumber", "tostring", "type", "unpack", "xpcall", "_VERSION",
];

/// The libraries CC offers that PUC Lua provides as they are.
const LIBS: &[&str] = &["coroutine", "string", "table", "math", "bit32"];

/// A fresh Lua state for one power cycle of one computer, with the sandbox's globals in place.
/// `watchdog` is asked at every check whether the running coroutine has run too long
/// (0: no, 1: raise "Too long without yielding", 2: killed, raise at every instruction).
pub(crate) fn state(watchdog: impl Fn() -> u8 + Send + 'static) -> mlua::Result<Lua> {
    // SAFETY: the `debug` library is opened only to take its C functions into `Real` below,
    // before any Lua code runs; it is removed from the globals and from `_LOADED`, and every
    // function a chunk can call checks its arguments so that no C function, C frame, userdata or
    // the real registry is reached through it. No C module is ever loaded (`package` is not
    // opened).
    let lua = unsafe {
        Lua::unsafe_new_with(
            StdLib::COROUTINE
                | StdLib::TABLE
                | StdLib::STRING
                | StdLib::MATH
                | StdLib::BIT
                | StdLib::DEBUG,
            LuaOptions::new(),
        )
    };
    let host = lua.globals();
    let debug: Table = host.get("debug")?;
    let coroutine: Table = host.get("coroutine")?;
    let real = Real {
        getinfo: debug.get("getinfo")?,
        getlocal: debug.get("getlocal")?,
        setlocal: debug.get("setlocal")?,
        getupvalue: debug.get("getupvalue")?,
        setupvalue: debug.get("setupvalue")?,
        upvalueid: debug.get("upvalueid")?,
        upvaluejoin: debug.get("upvaluejoin")?,
        getmetatable: debug.get("getmetatable")?,
        setmetatable: debug.get("setmetatable")?,
        traceback: debug.get("traceback")?,
        sethook: debug.get("sethook")?,
        create: coroutine.get("create")?,
        load: host.get("load")?,
        base_setmetatable: host.get("setmetatable")?,
    };

    let g = lua.create_table()?;
    for name in BASE {
        g.raw_set(*name, host.raw_get::<Value>(*name)?)?;
    }
    let loaded = lua.create_table()?;
    for name in LIBS {
        let lib: Table = host.get(*name)?;
        g.raw_set(*name, &lib)?;
        loaded.raw_set(*name, lib)?;
    }
    g.raw_set("_G", &g)?;
    loaded.raw_set("_G", &g)?;

    let shim = Shim::new(&lua)?;
    g.raw_set("load", shim.wrap(&lua, load(&real))?)?;
    g.raw_set("setmetatable", shim.wrap(&lua, setmetatable(&real, false))?)?;
    let base_getmetatable: Function = host.get("getmetatable")?;
    g.raw_set(
        "getmetatable",
        shim.wrap(&lua, move |_, args| match args.front() {
            // The emulator's userdata (mlua's error values among them) keep their metatables.
            Some(v) if is_userdata(v) => Ok(MultiValue::new()),
            _ => call(&base_getmetatable, args),
        })?,
    )?;
    let hook = watchdog_hook(&lua, &real, watchdog)?;
    coroutine.raw_set("create", shim.wrap(&lua, create(&real, hook))?)?;
    let dbg = filtered_debug(&lua, &real, &shim, &loaded)?;
    g.raw_set("debug", &dbg)?;
    loaded.raw_set("debug", dbg)?;

    // The real globals table and `_LOADED` (with the real `debug`) leave the registry: the
    // computer's globals are the table built above, from the first chunk on.
    lua.set_globals(g)?;
    lua.set_named_registry_value("_LOADED", loaded)?;
    lua.set_memory_limit(MEMORY_LIMIT)?;
    Ok(lua)
}

/// `load` that only reads text: a binary chunk (`string.dump`'s output, or bytecode made
/// elsewhere) can corrupt PUC Lua's memory, and Cobalt cannot load one either. The mode a chunk
/// passes is replaced by "t"; an environment is passed on only when one was given, as Lua 5.2
/// tells a missing fourth argument from a nil one.
fn load(real: &Real) -> impl Fn(&Lua, MultiValue) -> Result<MultiValue, String> + Send + 'static {
    let real = real.load.clone();
    move |lua, args| {
        let mut args: Vec<Value> = args.into_iter().collect();
        let with_env = args.len() >= 4;
        args.resize(4, Value::Nil);
        let text = lua.create_string("t").map_err(|e| message(&e))?;
        args[2] = Value::String(text);
        if !with_env {
            args.truncate(3);
        }
        call(&real, args.into_iter().collect())
    }
}

/// The watchdog's hook: a Lua function (its error must be a plain string at the interrupted
/// function's position, "startup.lua:5: Too long without yielding", which `pcall` catches as on
/// CC) calling `check`, which asks the machine and, once the computer is killed, hooks the
/// coroutine at every instruction so no `pcall` loop can hold on.
fn watchdog_hook(
    lua: &Lua,
    real: &Real,
    watchdog: impl Fn() -> u8 + Send + 'static,
) -> mlua::Result<Function> {
    let slot: Arc<Mutex<Option<Function>>> = Arc::new(Mutex::new(None));
    let sethook = real.sethook.clone();
    let hook_slot = slot.clone();
    let check = lua.create_function(move |_, ()| {
        let state = watchdog();
        if state == 2 {
            let hook = hook_slot.lock().ok().and_then(|h| h.clone());
            if let Some(hook) = hook {
                sethook.call::<()>((hook, "", 1))?;
            }
        }
        Ok(state)
    })?;
    let hook = lua
        .load(
            "local check, error = ...
             return function()
                 if check() ~= 0 then error(\"Too long without yielding\", 2) end
             end",
        )
        .set_name("=watchdog")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .call::<Function>((check, lua.globals().get::<Function>("error")?))?;
    if let Ok(mut s) = slot.lock() {
        *s = Some(hook.clone());
    }
    Ok(hook)
}

/// `coroutine.create` that hooks every coroutine with the watchdog: no coroutine runs unwatched.
fn create(
    real: &Real,
    hook: Function,
) -> impl Fn(&Lua, MultiValue) -> Result<MultiValue, String> + Send + 'static {
    let (create, sethook) = (real.create.clone(), real.sethook.clone());
    move |_, args| {
        let out = call(&create, args)?;
        if let Some(Value::Thread(co)) = out.front() {
            sethook
                .call::<()>((co.clone(), hook.clone(), "", WATCHDOG_EVERY))
                .map_err(|e| message(&e))?;
        }
        Ok(out)
    }
}

//! The `debug` library a chunk sees: each function checks its arguments before it calls the
//! real one taken into [`super::guard::Real`] (Lua functions and frames only, no userdata's metatable,
//! a registry of the computer's own), and levels are shifted past the host's own frames.

use mlua::{Function, Lua, MultiValue, Table, Thread, Value};

use super::guard::{Real, Shim, call, is_lua, is_userdata, setmetatable};

/// Frames between a real debug function and the chunk that called the offered one: the Rust
/// closure. A chunk's level `n` is the real function's `n + FRAMES`. The functions that take a
/// level are offered without the shim, so a Lua frame never stands between: a chunk's
/// `return debug.getlocal(1, n)` is a tail call, which would replace the caller's frame with
/// the shim's (a C function is called in place, as PUC Lua calls the real one).
const FRAMES: i64 = 1;

/// A Rust function offered as it is (for the functions that take a level, see [`FRAMES`]): its
/// rare errors (a bad argument) reach Lua as mlua's error value, whose `tostring` is the message.
fn direct<F>(lua: &Lua, f: F) -> mlua::Result<Function>
where
    F: Fn(&Lua, MultiValue) -> Result<MultiValue, String> + Send + 'static,
{
    lua.create_function(move |lua, args: MultiValue| {
        f(lua, args).map_err(mlua::Error::RuntimeError)
    })
}

/// Splits `[thread,] rest...` and says how many frames to add to a level: our own frames count
/// only when the stack looked at is the running one.
fn thread_arg(lua: &Lua, args: MultiValue) -> (Option<Thread>, i64, Vec<Value>) {
    let mut args: Vec<Value> = args.into_iter().collect();
    if let Some(Value::Thread(t)) = args.first().cloned() {
        args.remove(0);
        let offset = if t == lua.current_thread() { FRAMES } else { 0 };
        return (Some(t), offset, args);
    }
    (None, FRAMES, args)
}

fn with_thread(thread: Option<Thread>, rest: Vec<Value>) -> MultiValue {
    let mut out = MultiValue::new();
    if let Some(t) = thread {
        out.push_back(Value::Thread(t));
    }
    out.extend(rest);
    out
}

fn level_of(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(n) => Some(*n),
        Value::Number(n) if n.fract() == 0.0 => Some(*n as i64),
        Value::String(s) => s.to_str().ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// Whether the frame at the chunk's `level` (of `thread`) runs Lua; `None` when there is no
/// such frame.
fn frame_is_lua(real: &Real, thread: &Option<Thread>, offset: i64, level: i64) -> Option<bool> {
    let args = with_thread(thread.clone(), vec![Value::Integer(level + offset)]);
    let info = real.getinfo.call::<Option<Table>>(args).ok().flatten()?;
    let what: String = info.get("what").ok()?;
    Some(what != "C")
}

type Offered = Box<dyn Fn(&Lua, MultiValue) -> Result<MultiValue, String> + Send + 'static>;

pub(super) fn filtered_debug(
    lua: &Lua,
    real: &Real,
    shim: &Shim,
    loaded: &Table,
) -> mlua::Result<Table> {
    let t = lua.create_table()?;

    levels(lua, real, &t)?;
    locals(lua, real, &t)?;
    upvalues(lua, real, shim, &t)?;
    metatables(lua, real, shim, loaded, &t)?;
    hooks(lua, shim, &t)?;
    Ok(t)
}

/// `getinfo` and `traceback`: their levels shifted past the host's frames.
fn levels(lua: &Lua, real: &Real, t: &Table) -> mlua::Result<()> {
    let r = real.clone();
    t.raw_set(
        "getinfo",
        direct(lua, move |lua, args| {
            let (thread, offset, mut rest) = thread_arg(lua, args);
            if let Some(first) = rest.first_mut()
                && let Some(level) = level_of(first)
            {
                *first = Value::Integer(level + offset);
            }
            call(&r.getinfo, with_thread(thread, rest))
        })?,
    )?;

    let r = real.clone();
    t.raw_set(
        "traceback",
        direct(lua, move |lua, args| {
            let (thread, offset, mut rest) = thread_arg(lua, args);
            match rest.first() {
                None
                | Some(Value::Nil)
                | Some(Value::String(_))
                | Some(Value::Integer(_))
                | Some(Value::Number(_)) => {}
                // A message that is not a string comes back untouched, as in Lua.
                Some(other) => return Ok(MultiValue::from_vec(vec![other.clone()])),
            }
            let default = if offset == 0 { 0 } else { 1 };
            let level = rest.get(1).and_then(level_of).unwrap_or(default);
            rest.resize(2, Value::Nil);
            rest[1] = Value::Integer(level + offset);
            call(&r.traceback, with_thread(thread, rest))
        })?,
    )?;
    Ok(())
}

/// `getlocal` and `setlocal`: Lua frames only, a C frame's slots being the host's.
fn locals(lua: &Lua, real: &Real, t: &Table) -> mlua::Result<()> {
    for (name, set) in [("getlocal", false), ("setlocal", true)] {
        let r = real.clone();
        let f = if set {
            real.setlocal.clone()
        } else {
            real.getlocal.clone()
        };
        let offered: Offered = Box::new(move |lua, args| {
            let (thread, offset, mut rest) = thread_arg(lua, args);
            match rest.first().cloned() {
                // `getlocal(f, n)`: a Lua function's parameter names; nothing for a C one.
                Some(Value::Function(func)) if !set => {
                    if !is_lua(&func) {
                        return Ok(MultiValue::new());
                    }
                    call(&f, with_thread(thread, rest))
                }
                Some(v) => {
                    let Some(level) = level_of(&v) else {
                        return Err(format!(
                            "bad argument #1 to '{name}' (number expected, got {})",
                            v.type_name()
                        ));
                    };
                    if level < 0 {
                        return Err(format!("bad argument #1 to '{name}' (level out of range)"));
                    }
                    match frame_is_lua(&r, &thread, offset, level) {
                        None => Err(format!("bad argument #1 to '{name}' (level out of range)")),
                        // A C frame's slots hold what the host's functions rely on.
                        Some(false) => Ok(MultiValue::new()),
                        Some(true) => {
                            rest[0] = Value::Integer(level + offset);
                            call(&f, with_thread(thread, rest))
                        }
                    }
                }
                None => Err(format!(
                    "bad argument #1 to '{name}' (number expected, got no value)"
                )),
            }
        });
        t.raw_set(name, direct(lua, offered)?)?;
    }
    Ok(())
}

/// `getupvalue`, `setupvalue`, `upvalueid` and `upvaluejoin`.
fn upvalues(lua: &Lua, real: &Real, shim: &Shim, t: &Table) -> mlua::Result<()> {
    // Upvalues of Lua functions only: a C function's upvalues are the host's (mlua keeps its
    // callbacks there), and CC's native functions have none.
    for (name, f) in [
        ("getupvalue", real.getupvalue.clone()),
        ("setupvalue", real.setupvalue.clone()),
        ("upvalueid", real.upvalueid.clone()),
    ] {
        t.raw_set(
            name,
            shim.wrap(lua, move |_, args| match args.front() {
                Some(Value::Function(func)) if is_lua(func) => call(&f, args),
                Some(Value::Function(_)) => Ok(MultiValue::new()),
                other => Err(format!(
                    "bad argument #1 to '{name}' (function expected, got {})",
                    other.map_or("no value", |v| v.type_name())
                )),
            })?,
        )?;
    }
    let f = real.upvaluejoin.clone();
    t.raw_set(
        "upvaluejoin",
        shim.wrap(lua, move |_, args| {
            let lua_fn =
                |v: Option<&Value>| matches!(v, Some(Value::Function(func)) if is_lua(func));
            if !lua_fn(args.front()) || !lua_fn(args.get(2)) {
                return Err("bad argument to 'upvaluejoin' (Lua function expected)".into());
            }
            call(&f, args)
        })?,
    )?;
    Ok(())
}

/// `getmetatable`, `setmetatable` and `getregistry`: none of the host's own tables.
fn metatables(lua: &Lua, real: &Real, shim: &Shim, loaded: &Table, t: &Table) -> mlua::Result<()> {
    let f = real.getmetatable.clone();
    t.raw_set(
        "getmetatable",
        shim.wrap(lua, move |_, args| match args.front() {
            // Userdata here is the emulator's own (handles, errors, mlua's callbacks).
            Some(v) if is_userdata(v) => Ok(MultiValue::new()),
            _ => call(&f, args),
        })?,
    )?;
    t.raw_set("setmetatable", shim.wrap(lua, setmetatable(real, true))?)?;

    let registry = lua.create_table()?;
    registry.raw_set("_LOADED", loaded)?;
    t.raw_set(
        "getregistry",
        shim.wrap(lua, move |_, _| {
            Ok(MultiValue::from_vec(vec![Value::Table(registry.clone())]))
        })?,
    )?;
    Ok(())
}

/// `sethook` refuses and `gethook` answers nothing: the watchdog owns the hooks.
fn hooks(lua: &Lua, shim: &Shim, t: &Table) -> mlua::Result<()> {
    t.raw_set(
        "sethook",
        shim.wrap(lua, |_, _| {
            Err("debug.sethook is not offered by the emulator: its watchdog holds every coroutine's hook".into())
        })?,
    )?;
    t.raw_set("gethook", shim.wrap(lua, |_, _| Ok(MultiValue::new()))?)?;
    Ok(())
}

//! The sandbox's hold on PUC Lua's real C functions ([`Real`]) and the checks every door onto
//! them shares: errors as CC's strings ([`Shim`], [`call`]), what counts as the emulator's
//! userdata, and a `setmetatable` that never marks for finalisation. Beneath both the state
//! (`sandbox.rs`) and the filtered `debug` (`debug.rs`).

use mlua::{Function, Lua, MultiValue, Value};

/// The real C functions, kept in the sandbox and only there.
#[derive(Clone)]
pub(super) struct Real {
    pub(super) getinfo: Function,
    pub(super) getlocal: Function,
    pub(super) setlocal: Function,
    pub(super) getupvalue: Function,
    pub(super) setupvalue: Function,
    pub(super) upvalueid: Function,
    pub(super) upvaluejoin: Function,
    pub(super) getmetatable: Function,
    pub(super) setmetatable: Function,
    pub(super) traceback: Function,
    pub(super) sethook: Function,
    pub(super) create: Function,
    pub(super) load: Function,
    pub(super) base_setmetatable: Function,
}

/// Turns a Rust function answering `true, ...` or `false, message` into a Lua function that
/// returns the values or raises the message at its caller, as CC's Java functions do (an error
/// returned from an mlua callback would reach Lua as a userdata, not as CC's string).
pub(super) struct Shim(Function);

impl Shim {
    pub(super) fn new(lua: &Lua) -> mlua::Result<Shim> {
        let f = lua
            .load(
                "local pack, unpack, error = table.pack, table.unpack, error
                 return function(native)
                     return function(...)
                         local r = pack(native(...))
                         if not r[1] then error(r[2], 2) end
                         return unpack(r, 2, r.n)
                     end
                 end",
            )
            .set_name("=[C]")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .call::<Function>(())?;
        Ok(Shim(f))
    }

    pub(super) fn wrap<F>(&self, lua: &Lua, f: F) -> mlua::Result<Function>
    where
        F: Fn(&Lua, MultiValue) -> Result<MultiValue, String> + Send + 'static,
    {
        let native = lua.create_function(move |lua, args: MultiValue| {
            let mut out = MultiValue::new();
            match f(lua, args) {
                Ok(values) => {
                    out.push_back(Value::Boolean(true));
                    out.extend(values);
                }
                Err(msg) => {
                    out.push_back(Value::Boolean(false));
                    out.push_back(Value::String(lua.create_string(msg)?));
                }
            }
            Ok(out)
        })?;
        self.0.call(native)
    }
}

/// The message of a failed call into a real function: its first line (mlua appends a
/// traceback), without the position of our own frames.
pub(super) fn message(e: &mlua::Error) -> String {
    let text = match e {
        mlua::Error::CallbackError { cause, .. } => cause.to_string(),
        other => other.to_string(),
    };
    let first = text.lines().next().unwrap_or_default();
    first
        .strip_prefix("runtime error: ")
        .unwrap_or(first)
        .to_owned()
}

pub(super) fn call(f: &Function, args: MultiValue) -> Result<MultiValue, String> {
    f.call::<MultiValue>(args).map_err(|e| message(&e))
}

pub(super) fn is_lua(f: &Function) -> bool {
    f.info().what != "C"
}

/// Whether `v` is anything but Lua's own kinds of value: full and light userdata, mlua's error
/// values and whatever else mlua makes. All of it is the emulator's (handles, mlua's internals).
pub(super) fn is_userdata(v: &Value) -> bool {
    !matches!(
        v,
        Value::Nil
            | Value::Boolean(_)
            | Value::Integer(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Table(_)
            | Value::Function(_)
            | Value::Thread(_)
    )
}

/// `setmetatable` (base, or `debug`'s) that never marks a value for finalisation: a `__gc`
/// runs with hooks off (no watchdog could stop it) and whenever a collection happens; Cobalt
/// does not run `__gc` either. The `__gc` field stays in the metatable, unused.
pub(super) fn setmetatable(
    real: &Real,
    debug: bool,
) -> impl Fn(&Lua, MultiValue) -> Result<MultiValue, String> + Send + 'static {
    let f = if debug {
        real.setmetatable.clone()
    } else {
        real.base_setmetatable.clone()
    };
    move |_, args| {
        let target = args.front().cloned().unwrap_or(Value::Nil);
        if is_userdata(&target) {
            return Err(
                "bad argument #1 to 'setmetatable' (userdata belongs to the emulator)".into(),
            );
        }
        let gc = match args.get(1) {
            Some(Value::Table(mt)) => {
                let gc: Value = mt.raw_get("__gc").map_err(|e| message(&e))?;
                if gc.is_nil() {
                    None
                } else {
                    mt.raw_set("__gc", Value::Nil).map_err(|e| message(&e))?;
                    Some((mt.clone(), gc))
                }
            }
            _ => None,
        };
        let result = call(&f, args);
        if let Some((mt, gc)) = gc {
            mt.raw_set("__gc", gc).map_err(|e| message(&e))?;
        }
        result
    }
}

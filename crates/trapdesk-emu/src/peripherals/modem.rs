//! A modem: CC: Tweaked's `ModemPeripheral` (open, isOpen, close, closeAll, transmit,
//! isWireless; at most 128 open channels, each 0..65535) and, for a wired modem, the
//! `peripheral_hub` methods of `WiredModemPeripheral` (answered by the bench, which knows the
//! network). Nothing is carried between computers: `transmit` checks its arguments and
//! delivers nowhere.

use std::collections::BTreeSet;

use mlua::{IntoLuaMulti, Lua, MultiValue};

use super::args::Args;

/// The methods of any modem, sorted.
pub(crate) const METHODS: &[&str] = &[
    "close",
    "closeAll",
    "isOpen",
    "isWireless",
    "open",
    "transmit",
];

/// What a wired modem adds (`WiredModemPeripheral`), sorted.
pub(crate) const WIRED_METHODS: &[&str] = &[
    "callRemote",
    "getMethodsRemote",
    "getNameLocal",
    "getNamesRemote",
    "getTypeRemote",
    "hasTypeRemote",
    "isPresentRemote",
];

/// CC: Tweaked's `ModemState` limit on open channels.
const MAX_OPEN: usize = 128;

/// A modem's own state.
#[derive(Debug, Default)]
pub(crate) struct Modem {
    pub(crate) wireless: bool,
    open: BTreeSet<u16>,
}

impl Modem {
    pub(crate) fn new(wireless: bool) -> Self {
        Self {
            wireless,
            open: BTreeSet::new(),
        }
    }
}

/// `ModemPeripheral.parseChannel`.
fn channel(a: &Args, i: usize) -> Result<u16, String> {
    let n = a.int(i)?;
    u16::try_from(n).map_err(|_| "Expected number in range 0-65535".to_owned())
}

/// The methods every modem has. `Ok(None)`: not one of them.
pub(crate) fn call(
    lua: &Lua,
    m: &mut Modem,
    method: &str,
    a: &Args,
) -> Result<Option<MultiValue>, String> {
    let e = |e: mlua::Error| e.to_string();
    Ok(Some(match method {
        "open" => {
            let c = channel(a, 1)?;
            if !m.open.contains(&c) && m.open.len() >= MAX_OPEN {
                return Err("Too many open channels".into());
            }
            m.open.insert(c);
            MultiValue::new()
        }
        "isOpen" => m
            .open
            .contains(&channel(a, 1)?)
            .into_lua_multi(lua)
            .map_err(e)?,
        "close" => {
            m.open.remove(&channel(a, 1)?);
            MultiValue::new()
        }
        "closeAll" => {
            m.open.clear();
            MultiValue::new()
        }
        "transmit" => {
            channel(a, 1)?;
            channel(a, 2)?;
            MultiValue::new()
        }
        "isWireless" => m.wireless.into_lua_multi(lua).map_err(e)?,
        _ => return Ok(None),
    }))
}

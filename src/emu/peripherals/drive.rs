//! A disk drive: CC: Tweaked's `DiskDrivePeripheral` methods over the computer's one drive slot
//! (the floppy in it is mounted at `/disk` by `fs.rs`).

use std::sync::{Arc, Mutex};

use mlua::{IntoLuaMulti, Lua, MultiValue, Value};

use super::args::Args;
use crate::emu::DiskDrive;
use crate::emu::kernel::{Event, lock};
use crate::emu::value::Val;

/// The methods, sorted.
pub(crate) const METHODS: &[&str] = &[
    "ejectDisk",
    "getAudioTitle",
    "getDiskID",
    "getDiskLabel",
    "getMountPath",
    "hasAudio",
    "hasData",
    "isDiskPresent",
    "playAudio",
    "setDiskLabel",
    "stopAudio",
];

pub(crate) fn call(
    lua: &Lua,
    slot: &Arc<Mutex<Option<DiskDrive>>>,
    name: &str,
    method: &str,
    a: &Args,
    events: &mut Vec<Event>,
) -> Result<Option<MultiValue>, String> {
    let e = |e: mlua::Error| e.to_string();
    let mut d = lock(slot);
    let floppy = d.as_mut().and_then(|d| d.floppy.as_mut());
    let present = floppy.is_some();
    Ok(Some(match method {
        "isDiskPresent" | "hasData" => present.into_lua_multi(lua).map_err(e)?,
        "getMountPath" => (if present { Some("disk") } else { None })
            .into_lua_multi(lua)
            .map_err(e)?,
        // Floppy ids are small integers: exact as doubles.
        "getDiskID" => floppy.map(|f| f.id as f64).into_lua_multi(lua).map_err(e)?,
        "getDiskLabel" => floppy
            .and_then(|f| f.label.clone())
            .into_lua_multi(lua)
            .map_err(e)?,
        "setDiskLabel" => {
            let label = a.opt_string(1)?;
            if let Some(f) = floppy {
                f.label = label.filter(|l| !l.is_empty());
            }
            MultiValue::new()
        }
        "hasAudio" => false.into_lua_multi(lua).map_err(e)?,
        // A floppy has no audio: false; an empty drive: nil.
        "getAudioTitle" => (if present {
            Value::Boolean(false)
        } else {
            Value::Nil
        })
        .into_lua_multi(lua)
        .map_err(e)?,
        "playAudio" | "stopAudio" => MultiValue::new(),
        "ejectDisk" => {
            if d.as_mut().and_then(|d| d.floppy.take()).is_some() {
                events.push(Event::new("disk_eject", vec![Val::from(name)]));
            }
            MultiValue::new()
        }
        _ => return Ok(None),
    }))
}

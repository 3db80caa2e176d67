//! A disk drive: CC: Tweaked's `DiskDrivePeripheral` methods over the computer's one drive slot
//! (the floppy in it is mounted at `/disk` by `fs.rs`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use mlua::{IntoLuaMulti, Lua, MultiValue, Value};

use super::args::Args;
use super::spec::{DiskDrive, Floppy};
use crate::sync::lock;
use crate::value::{Event, Val};

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
    floppies: Option<&Path>,
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
        // CraftOS-PC's `insertDisk(id)` (src/peripheral/drive.cpp `insertDisk`): the floppy in
        // the drive comes out, floppy `id` goes in. Its files are `disk/<id>` beside the
        // computer's own directory, as CraftOS-PC keeps them (`computer/disk/<id>`). Not in
        // `getMethods`: a CC drive has no such method.
        "insertDisk" => {
            let id = a.int(1).map_err(|_| {
                "the emulator's insertDisk takes a floppy's id (a number)".to_owned()
            })?;
            let id = u64::try_from(id).map_err(|_| "Could not mount".to_owned())?;
            let Some(dir) = floppies else {
                return Err("Could not mount".into());
            };
            let root = dir.join(id.to_string());
            crate::fs::private_dir(&root).map_err(|_| "Could not mount".to_owned())?;
            let Some(drive) = d.as_mut() else {
                return Ok(Some(MultiValue::new()));
            };
            if drive.floppy.take().is_some() {
                events.push(Event::new("disk_eject", vec![Val::from(name)]));
            }
            drive.floppy = Some(Floppy::new(id, root));
            events.push(Event::new("disk", vec![Val::from(name)]));
            MultiValue::new()
        }
        _ => return Ok(None),
    }))
}

//! A speaker: CC: Tweaked's `SpeakerPeripheral` methods (`playNote`, `playSound`, `playAudio`,
//! `stop`) with its argument checks; nothing is heard, every sound is accepted.

use mlua::{IntoLuaMulti, Lua, MultiValue, Value};

use super::args::Args;

/// The methods, sorted.
pub(crate) const METHODS: &[&str] = &["playAudio", "playNote", "playSound", "stop"];

/// Minecraft's note block instruments (`NoteBlockInstrument`), as `playNote` takes them.
const INSTRUMENTS: &[&str] = &[
    "harp",
    "basedrum",
    "snare",
    "hat",
    "bass",
    "flute",
    "bell",
    "guitar",
    "chime",
    "xylophone",
    "iron_xylophone",
    "cow_bell",
    "didgeridoo",
    "bit",
    "banjo",
    "pling",
];

pub(crate) fn call(lua: &Lua, method: &str, a: &Args) -> Result<Option<MultiValue>, String> {
    let e = |e: mlua::Error| e.to_string();
    Ok(Some(match method {
        "playNote" => {
            let name = a.string(1)?;
            a.opt_number(2)?;
            a.opt_number(3)?;
            if !INSTRUMENTS.contains(&name.to_lowercase().as_str()) {
                return Err(format!("Invalid instrument, \"{name}\"!"));
            }
            true.into_lua_multi(lua).map_err(e)?
        }
        "playSound" => {
            let name = a.string(1)?;
            a.opt_number(2)?;
            a.opt_number(3)?;
            let valid = name.split_once(':').map_or(name.as_str(), |(_, p)| p);
            if valid.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.:/".contains(c))
            {
                return Err(format!("Malformed sound name '{name}' "));
            }
            true.into_lua_multi(lua).map_err(e)?
        }
        "playAudio" => {
            let t = a.table(1)?;
            a.opt_number(2)?;
            let len = t.raw_len();
            if len == 0 {
                return Err("Cannot play empty audio".into());
            }
            if len > 128 * 1024 {
                return Err("Audio data is too large".into());
            }
            for i in 1..=len {
                match t.raw_get::<Value>(i).map_err(e)? {
                    Value::Integer(n) if (-128..=127).contains(&n) => {}
                    Value::Number(n) if (-128.0..=127.0).contains(&n) => {}
                    other => {
                        return Err(format!(
                            "table item #{i} must be a number between -128 and 127 (got {})",
                            other.type_name()
                        ));
                    }
                }
            }
            true.into_lua_multi(lua).map_err(e)?
        }
        "stop" => MultiValue::new(),
        _ => return Ok(None),
    }))
}

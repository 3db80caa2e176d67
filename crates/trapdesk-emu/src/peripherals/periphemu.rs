//! CraftOS-PC's `periphemu` table (src/apis/periphemu.cpp): `create`, `remove` and `names`,
//! answering as CraftOS-PC does, onto the computer's [`Bench`](super::bench::Bench).

use mlua::{IntoLuaMulti, Lua, MultiValue, Table, Value};

use super::native::strings;
use super::spec::PeripheralSpec;
use super::{InventorySpec, MonitorSpec};
use crate::kernel::Ctx;
use crate::sync::lock;

/// The types `periphemu.create` makes, as CraftOS-PC names them.
const CREATABLE: &[&str] = &[
    "chest",
    "drive",
    "minecraft:chest",
    "modem",
    "monitor",
    "speaker",
];

/// The spec `periphemu.create(side, kind, ...)` asks for, from its extra arguments:
/// a monitor's width and height at scale 1 (CraftOS-PC's), a chest's `true` for a double chest
/// (CraftOS-PC's), a modem's network number (CraftOS-PC's; one network here) or the emulator's
/// `{wireless = true}`.
fn spec_from(kind: &str, extra: &[Value]) -> Result<PeripheralSpec, String> {
    let num = |i: usize| match extra.get(i) {
        Some(Value::Integer(n)) => Some(*n as f64),
        Some(Value::Number(n)) => Some(*n),
        _ => None,
    };
    Ok(match kind {
        "monitor" => PeripheralSpec::Monitor({
            let d = MonitorSpec::default();
            match (num(0), num(1)) {
                (None, None) => d,
                (w, h) => MonitorSpec::cells(
                    w.map_or(51, |w| w.max(1.0) as u32),
                    h.map_or(19, |h| h.max(1.0) as u32),
                ),
            }
        }),
        "modem" => {
            let wireless = match extra.first() {
                Some(Value::Table(t)) => t
                    .get::<Option<bool>>("wireless")
                    .ok()
                    .flatten()
                    .unwrap_or(false),
                _ => false,
            };
            PeripheralSpec::Modem { wireless }
        }
        "drive" => PeripheralSpec::Drive(None),
        "speaker" => PeripheralSpec::Speaker,
        "chest" | "minecraft:chest" => {
            let double = matches!(extra.first(), Some(Value::Boolean(true)));
            PeripheralSpec::Chest(InventorySpec {
                slots: vec![None; if double { 54 } else { 27 }],
            })
        }
        other => return Err(format!("No peripheral named {other}")),
    })
}

/// CraftOS-PC's naming: a number side (or a side of digits only) is `<type>_<n>`.
pub(crate) fn created_name(side: &str, kind: &str) -> String {
    if !side.is_empty() && side.chars().all(|c| c.is_ascii_digit()) {
        format!("{kind}_{side}")
    } else {
        side.to_owned()
    }
}

/// The native `periphemu` table (`create`, `remove`, `names`), CraftOS-PC's API; the bios checks
/// the argument types.
pub(crate) fn periphemu(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let b = ctx.bench.clone();
    let kernel = ctx.kernel.clone();
    t.set(
        "create",
        lua.create_function(
            move |lua, (side, kind, extra): (String, String, MultiValue)| {
                let extra: Vec<Value> = extra.into_iter().collect();
                let name = created_name(&side, &kind);
                let r = spec_from(&kind, &extra).and_then(|spec| lock(&b).attach(&name, spec));
                match r {
                    Ok(events) => {
                        let mut k = lock(&kernel);
                        for ev in events {
                            k.push(ev);
                        }
                        true.into_lua_multi(lua)
                    }
                    Err(m) => (false, m).into_lua_multi(lua),
                }
            },
        )?,
    )?;
    let b = ctx.bench.clone();
    let kernel = ctx.kernel.clone();
    t.set(
        "remove",
        lua.create_function(move |_, side: String| {
            let events = lock(&b).detach(&side);
            let found = events.is_some();
            let mut k = lock(&kernel);
            for ev in events.unwrap_or_default() {
                k.push(ev);
            }
            Ok(found)
        })?,
    )?;
    t.set(
        "names",
        lua.create_function(|lua, ()| strings(lua, CREATABLE))?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_side_names_the_peripheral_by_its_type_and_an_unknown_type_is_refused() {
        assert_eq!(created_name("3", "modem"), "modem_3");
        assert_eq!(created_name("top", "modem"), "top");
        assert!(spec_from("printer", &[]).is_err());
    }
}

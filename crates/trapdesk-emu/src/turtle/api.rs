//! The `turtle` API as Lua sees it: the native half that answers at once (fuel, the selected
//! slot, item counts, space and detail), and `parse`, which turns a call the Lua half queues
//! into a [`Command`] for the turtle to run (`turtle.rs`).

use mlua::{Lua, Table, Value};

use super::{Command, Dir, Item, Turtle, max_stack};
use crate::sync::lock;

/// Lua-visible detail of a slot: `getItemDetail`'s basic table (`ItemDetails.fillBasic`: name
/// and count), and with `detailed` what `ItemDetails.fill` adds that the emulator can know.
fn detail(lua: &Lua, item: &Item, detailed: bool) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("name", item.name.as_str())?;
    t.set("count", item.count)?;
    if detailed {
        t.set("displayName", display_name(&item.name))?;
        t.set("maxCount", max_stack(&item.name))?;
        t.set("tags", lua.create_table()?)?;
        t.set("itemGroups", lua.create_table()?)?;
    }
    Ok(t)
}

/// "minecraft:coal_block" as "Coal Block": a stand-in for the game's translated name.
pub(super) fn display_name(name: &str) -> String {
    let id = name.rsplit(':').next().unwrap_or(name);
    id.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or_else(String::new, |f| {
                f.to_uppercase().collect::<String>() + c.as_str()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A slot argument already checked by the Lua side (1..=16), or the selected slot.
fn slot_or_selected(t: &Turtle, slot: Option<f64>) -> usize {
    match slot {
        Some(s) if (1.0..=16.0).contains(&s) => s as usize - 1,
        _ => t.selected,
    }
}

/// The native half of the `turtle` API: what CC answers at once, off the main thread
/// (`getFuelLevel`, `getItemCount`, ... and the basic `getItemDetail`), and `parse` for the
/// commands the Lua half queues through the device's worker.
pub(crate) fn native(
    lua: &Lua,
    turtle: &std::sync::Arc<std::sync::Mutex<Turtle>>,
) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let s = turtle.clone();
    t.set(
        "getFuelLevel",
        lua.create_function(move |lua, ()| {
            let t = lock(&s);
            if t.needs_fuel {
                Ok(Value::Number(f64::from(t.fuel)))
            } else {
                Ok(Value::String(lua.create_string("unlimited")?))
            }
        })?,
    )?;
    let s = turtle.clone();
    t.set(
        "getFuelLimit",
        lua.create_function(move |lua, ()| {
            let t = lock(&s);
            if t.needs_fuel {
                Ok(Value::Number(f64::from(t.limit)))
            } else {
                Ok(Value::String(lua.create_string("unlimited")?))
            }
        })?,
    )?;
    let s = turtle.clone();
    t.set(
        "getSelectedSlot",
        lua.create_function(move |_, ()| Ok(lock(&s).selected + 1))?,
    )?;
    let s = turtle.clone();
    t.set(
        "getItemCount",
        lua.create_function(move |_, slot: Option<f64>| {
            let t = lock(&s);
            Ok(t.count(slot_or_selected(&t, slot)))
        })?,
    )?;
    let s = turtle.clone();
    t.set(
        "getItemSpace",
        lua.create_function(move |_, slot: Option<f64>| {
            let t = lock(&s);
            let i = slot_or_selected(&t, slot);
            // TurtleAPI.getItemSpace: an empty slot has room for 64.
            Ok(match &t.slots[i] {
                None => 64,
                Some(item) => max_stack(&item.name).min(64).saturating_sub(item.count),
            })
        })?,
    )?;
    let s = turtle.clone();
    t.set(
        "getItemDetail",
        lua.create_function(move |lua, (slot, detailed): (Option<f64>, Option<bool>)| {
            let item = {
                let t = lock(&s);
                t.slots[slot_or_selected(&t, slot)].clone()
            };
            match item {
                None => Ok(Value::Nil),
                Some(item) => Ok(Value::Table(detail(lua, &item, detailed == Some(true))?)),
            }
        })?,
    )?;
    Ok(t)
}

/// The command a Lua call names, with its arguments as the Lua half checked them.
pub(crate) fn parse(name: &str, a: Option<f64>, b: Option<f64>) -> Option<Command> {
    let slot = |v: Option<f64>| {
        v.filter(|s| (1.0..=16.0).contains(s))
            .map(|s| s as usize - 1)
    };
    // TurtleAPI.checkCount: 64 unless given.
    let count = |v: Option<f64>| v.map_or(64, |n| n.clamp(0.0, 64.0) as u32);
    Some(match name {
        "forward" => Command::Move(Dir::Forward),
        "back" => Command::Move(Dir::Back),
        "up" => Command::Move(Dir::Up),
        "down" => Command::Move(Dir::Down),
        "turnLeft" | "turnRight" => Command::Turn,
        "dig" | "digUp" | "digDown" => Command::Dig,
        "attack" | "attackUp" | "attackDown" => Command::Attack,
        "detect" | "detectUp" | "detectDown" => Command::Detect,
        "inspect" | "inspectUp" | "inspectDown" => Command::Inspect,
        "compare" | "compareUp" | "compareDown" => Command::Compare,
        "drop" | "dropUp" | "dropDown" => Command::Drop(count(a)),
        "suck" | "suckUp" | "suckDown" => Command::Suck(count(a)),
        "select" => Command::Select(slot(a)?),
        // `refuel()` without a count burns as much as it may (`Integer.MAX_VALUE`).
        "refuel" => {
            Command::Refuel(a.map_or(u32::MAX, |n| n.clamp(0.0, f64::from(u32::MAX)) as u32))
        }
        "transferTo" => Command::TransferTo {
            slot: slot(a)?,
            count: count(b),
        },
        _ => return None,
    })
}

//! An inventory (a chest): CC: Tweaked's generic inventory methods
//! (forge/.../peripheral/generic/methods/InventoryMethods.java: `size`, `list`, `getItemDetail`,
//! `getItemLimit`, `pushItems`, `pullItems`), and CraftOS-PC's `setItem` (its chest's way to put
//! items in, src/peripheral/chest.cpp), which `getMethods` does not list.

use mlua::{IntoLuaMulti, Lua, MultiValue, Value};

use super::args::Args;

/// The methods `getMethods` lists, sorted.
pub(crate) const METHODS: &[&str] = &[
    "getItemDetail",
    "getItemLimit",
    "list",
    "pullItems",
    "pushItems",
    "size",
];

/// A stack of items in one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The item's id, `minecraft:cobblestone`.
    pub name: String,
    /// How many (1 .. `max_count`).
    pub count: u32,
    /// What `getItemDetail` calls it; the id's path with capitals when unset
    /// (`minecraft:oak_log` -> "Oak Log").
    pub display_name: Option<String>,
    /// The largest stack (64 for most items, 1 for tools).
    pub max_count: u32,
    /// Damage and its maximum, for tools.
    pub damage: Option<(u32, u32)>,
}

impl Item {
    /// `count` of item `name`, stacking to 64.
    pub fn new(name: &str, count: u32) -> Self {
        Self {
            name: name.to_owned(),
            count,
            display_name: None,
            max_count: 64,
            damage: None,
        }
    }

    fn display(&self) -> String {
        if let Some(d) = &self.display_name {
            return d.clone();
        }
        let path = self.name.rsplit(':').next().unwrap_or(&self.name);
        path.split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The slots of an inventory and what is in them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventorySpec {
    /// Slot `i` is `slots[i - 1]`.
    pub slots: Vec<Option<Item>>,
}

impl InventorySpec {
    /// An empty single chest: 27 slots.
    pub fn chest() -> Self {
        Self {
            slots: vec![None; 27],
        }
    }

    /// The same inventory with `item` in `slot` (1-based; ignored out of range).
    pub fn with_item(mut self, slot: usize, item: Item) -> Self {
        if let Some(s) = slot.checked_sub(1).and_then(|i| self.slots.get_mut(i)) {
            *s = Some(item);
        }
        self
    }
}

pub(crate) type Inventory = InventorySpec;

fn slot_in(a: &Args, i: usize, size: usize, what: &str) -> Result<usize, String> {
    let n = a.int(i)?;
    if n < 1 || n as usize > size {
        return Err(what.replace("%s", &n.to_string()));
    }
    Ok(n as usize)
}

fn basic(lua: &Lua, item: &Item) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.set("name", item.name.as_str())?;
    t.set("count", item.count)?;
    Ok(Value::Table(t))
}

/// `getItemDetail`'s table (shared/details/ItemDetails.java `fill`).
fn detail(lua: &Lua, item: &Item) -> mlua::Result<Value> {
    let Value::Table(t) = basic(lua, item)? else {
        return Ok(Value::Nil);
    };
    t.set("displayName", item.display())?;
    t.set("maxCount", item.max_count)?;
    if let Some((d, max)) = item.damage {
        t.set("damage", d)?;
        t.set("maxDamage", max)?;
    }
    t.set("tags", lua.create_table()?)?;
    t.set("itemGroups", lua.create_table()?)?;
    Ok(Value::Table(t))
}

/// Moves up to `limit` items from `from[from_slot]` into `to` (into `to_slot` only when
/// given), filling stacks of the same item and empty slots in slot order. Returns how many.
pub(crate) fn move_items(
    from: &mut Inventory,
    from_slot: usize,
    to: &mut Inventory,
    to_slot: Option<usize>,
    limit: u32,
) -> u32 {
    let Some(mut stack) = from.slots[from_slot - 1].clone() else {
        return 0;
    };
    let mut left = limit.min(stack.count);
    let mut moved = 0;
    let targets: Vec<usize> = match to_slot {
        Some(s) => vec![s - 1],
        None => (0..to.slots.len()).collect(),
    };
    for t in targets {
        if left == 0 {
            break;
        }
        let room = match &to.slots[t] {
            None => stack.max_count,
            Some(i) if i.name == stack.name && i.damage == stack.damage => {
                i.max_count.saturating_sub(i.count)
            }
            Some(_) => 0,
        };
        let n = room.min(left);
        if n == 0 {
            continue;
        }
        match &mut to.slots[t] {
            Some(i) => i.count += n,
            slot => {
                let mut put = stack.clone();
                put.count = n;
                *slot = Some(put);
            }
        }
        left -= n;
        moved += n;
    }
    stack.count -= moved;
    from.slots[from_slot - 1] = (stack.count > 0).then_some(stack);
    moved
}

/// The methods that need only this inventory. `Ok(None)`: not one of them (`pushItems` and
/// `pullItems` need the other inventory; the bench handles them).
pub(crate) fn call(
    lua: &Lua,
    inv: &mut Inventory,
    method: &str,
    a: &Args,
) -> Result<Option<MultiValue>, String> {
    let e = |e: mlua::Error| e.to_string();
    let size = inv.slots.len();
    Ok(Some(match method {
        "size" => (size as f64).into_lua_multi(lua).map_err(e)?,
        "list" => {
            let t = lua.create_table().map_err(e)?;
            for (i, s) in inv.slots.iter().enumerate() {
                if let Some(item) = s {
                    t.set(i + 1, basic(lua, item).map_err(e)?).map_err(e)?;
                }
            }
            Value::Table(t).into_lua_multi(lua).map_err(e)?
        }
        "getItemDetail" => {
            let slot = slot_in(a, 1, size, "Slot out of range (%s)")?;
            match &inv.slots[slot - 1] {
                Some(item) => detail(lua, item)
                    .map_err(e)?
                    .into_lua_multi(lua)
                    .map_err(e)?,
                None => Value::Nil.into_lua_multi(lua).map_err(e)?,
            }
        }
        "getItemLimit" => {
            slot_in(a, 1, size, "Slot out of range (%s)")?;
            64.0.into_lua_multi(lua).map_err(e)?
        }
        "setItem" => f64::from(set_item(inv, a)?)
            .into_lua_multi(lua)
            .map_err(e)?,
        _ => return Ok(None),
    }))
}

/// CraftOS-PC's chest.cpp `setItem(slot, {name, count})`: adds to the slot (0: the first that is
/// empty or holds the same item), at most 64; answers how many went in.
fn set_item(inv: &mut Inventory, a: &Args) -> Result<u32, String> {
    let e = |e: mlua::Error| e.to_string();
    let size = inv.slots.len();
    let slot = a.int(1)?;
    let t = a.table(2)?;
    let name: Value = t.get("name").map_err(e)?;
    let Value::String(name) = name else {
        return Err("bad field 'name' (expected string, got ".to_owned() + name.type_name() + ")");
    };
    let name = name.to_string_lossy();
    let count: Value = t.get("count").map_err(e)?;
    let count = match count {
        Value::Integer(n) => n,
        Value::Number(n) => n as i64,
        other => {
            return Err(format!(
                "bad field 'count' (expected number, got {})",
                other.type_name()
            ));
        }
    };
    let slot = if slot == 0 {
        inv.slots
            .iter()
            .position(|s| s.as_ref().is_none_or(|i| i.name == name))
            .map_or(size + 1, |i| i + 1) as i64
    } else {
        slot
    };
    let added = if slot < 1 || slot as usize > size || count <= 0 {
        0
    } else {
        match &mut inv.slots[slot as usize - 1] {
            Some(i) if i.name != name => 0,
            Some(i) => {
                let d = (i.count + count as u32).min(64) - i.count;
                i.count += d;
                d
            }
            s => {
                let d = (count as u32).min(64);
                *s = Some(Item::new(&name, d));
                d
            }
        }
    };
    Ok(added)
}

/// Checks `pushItems`/`pullItems`' slot and limit arguments against both inventories:
/// `(from_slot, limit, to_slot)`, with CC's errors.
pub(crate) fn transfer_args(
    a: &Args,
    from_size: usize,
    to_size: usize,
) -> Result<(usize, u32, Option<usize>), String> {
    let limit = a.opt_int(3)?.unwrap_or(i64::from(i32::MAX));
    let from_slot = slot_in(a, 2, from_size, "From slot out of range (%s)")?;
    let to_slot = if a.is_nil(4) {
        None
    } else {
        Some(slot_in(a, 4, to_size, "To slot out of range (%s)")?)
    };
    Ok((
        from_slot,
        limit.clamp(0, i64::from(u32::MAX)) as u32,
        to_slot,
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn moving_fills_stacks_then_empty_slots() {
        let mut a = InventorySpec::chest().with_item(1, Item::new("minecraft:stone", 40));
        let mut b = InventorySpec::chest()
            .with_item(1, Item::new("minecraft:dirt", 1))
            .with_item(2, Item::new("minecraft:stone", 60));
        assert_eq!(move_items(&mut a, 1, &mut b, None, 64), 40);
        assert_eq!(b.slots[1].as_ref().map(|i| i.count), Some(64));
        assert_eq!(b.slots[2].as_ref().map(|i| i.count), Some(36));
        assert!(a.slots[0].is_none());
        // Into a slot holding another item: nothing.
        let mut c = InventorySpec::chest().with_item(1, Item::new("minecraft:stone", 5));
        assert_eq!(move_items(&mut c, 1, &mut b, Some(1), 5), 0);
        assert_eq!(move_items(&mut c, 1, &mut b, Some(5), 2), 2);
        assert_eq!(c.slots[0].as_ref().map(|i| i.count), Some(3));
    }

    #[test]
    fn display_names_from_ids() {
        assert_eq!(Item::new("minecraft:oak_log", 1).display(), "Oak Log");
    }
}

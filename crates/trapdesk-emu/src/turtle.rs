//! A turtle's body: its fuel, its sixteen slots and the commands of CC: Tweaked's `turtle` API,
//! run in a world that is empty around it (air on every side, nothing to dig, attack or take).
//!
//! CC: Tweaked runs a turtle command on the server's main thread: the Lua call queues it
//! (`TurtleBrain.executeCommand`, at most 17 waiting: "Too many ongoing turtle commands"), the
//! turtle runs one per tick when no animation plays (`TurtleBrain.updateCommands`), and the
//! result comes back as a `turtle_response` event the caller waits for with `os.pullEvent`'s
//! rules (`MethodResult.pullEvent`): other events reaching that coroutine meanwhile are lost to
//! it, and `terminate` raises "Terminated". A move, a turn, a refuel that burnt something and a
//! transfer play an 8-tick animation (`TurtleBrain.ANIM_DURATION`) during which the next command
//! waits. The queue and its ticks are in `device.rs`; this file is what one command does.
//! Sources and what the emulator leaves out: `docs/emulator.md`, "Turtles and pocket
//! computers".

use super::value::Val;

pub(crate) mod api;

/// Slots in a turtle's inventory (`TurtleBlockEntity.INVENTORY_SIZE`).
pub const TURTLE_SLOTS: usize = 16;
/// `turtle.normal_fuel_limit` of a default server config (`Config.turtleFuelLimit`).
pub const TURTLE_FUEL_LIMIT: u32 = 20_000;
/// `turtle.advanced_fuel_limit` of a default server config (`Config.advancedTurtleFuelLimit`).
pub const ADVANCED_TURTLE_FUEL_LIMIT: u32 = 100_000;
/// Ticks a move, turn or a refuel's wait takes before the next command may run.
pub(crate) const ANIMATION_TICKS: u64 = 8;
/// `TurtleBrain.executeCommand` refuses a command while more than this many wait.
const QUEUE_LIMIT: usize = 16;

/// A stack of items in one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The item's id, such as `minecraft:coal` (a name without a namespace gets `minecraft:`,
    /// as Minecraft reads ids).
    pub name: String,
    /// How many, 1 to the item's stack size.
    pub count: u32,
}

impl Item {
    /// `count` of the item `name` (`"coal"` is `minecraft:coal`).
    pub fn new(name: &str, count: u32) -> Self {
        let name = if name.contains(':') {
            name.to_owned()
        } else {
            format!("minecraft:{name}")
        };
        Self { name, count }
    }
}

/// What a turtle starts with, the first time it boots: its fuel and inventory live on across
/// reboots, as a turtle block keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurtleSpec {
    /// Fuel at boot (capped at the limit).
    pub fuel: u32,
    /// Whether moving costs fuel: the server's `turtle.need_fuel` (true by default); without it
    /// `turtle.getFuelLevel()` answers `"unlimited"`.
    pub needs_fuel: bool,
    /// The sixteen slots, slot 1 first.
    pub slots: Vec<Option<Item>>,
    /// The selected slot, 1..=16.
    pub selected: u8,
    /// A diamond pickaxe and sword equipped (a mining turtle): `dig` and `attack` then answer
    /// "Nothing to dig here" / "Nothing to attack here" rather than "No tool to dig with".
    pub tools: bool,
}

impl Default for TurtleSpec {
    fn default() -> Self {
        Self {
            fuel: 0,
            needs_fuel: true,
            slots: vec![None; TURTLE_SLOTS],
            selected: 1,
            tools: false,
        }
    }
}

/// Fuel one item gives: its furnace burn time × 5 / 100 (CC: Tweaked's
/// `FurnaceRefuelHandler.getFuelPerItem`), with Minecraft's burn times
/// (`AbstractFurnaceBlockEntity.getFuel`) for the common fuels; `None` for anything else.
pub fn fuel_per_item(name: &str) -> Option<u32> {
    let burn_ticks = match name.strip_prefix("minecraft:").unwrap_or(name) {
        "coal" | "charcoal" => 1600,
        "coal_block" => 16_000,
        "lava_bucket" => 20_000,
        "blaze_rod" => 2400,
        "dried_kelp_block" => 4001,
        "stick" | "bamboo" => 100,
        n if n.ends_with("_planks") || n.ends_with("_log") || n.ends_with("_wood") => 300,
        _ => return None,
    };
    Some(burn_ticks * 5 / 100)
}

/// How many of `name` fit in one slot (Minecraft's stack sizes for the items that differ from
/// 64).
pub fn max_stack(name: &str) -> u32 {
    let n = name.strip_prefix("minecraft:").unwrap_or(name);
    if n.ends_with("_bucket")
        || n.ends_with("_pickaxe")
        || n.ends_with("_sword")
        || n.ends_with("_axe")
        || n.ends_with("_shovel")
        || n.ends_with("_hoe")
    {
        return 1;
    }
    match n {
        "bucket" | "ender_pearl" | "snowball" | "egg" | "oak_sign" => 16,
        _ => 64,
    }
}

/// What a slot's item burns into: a lava bucket leaves its bucket (Minecraft's crafting
/// remainder, which `FurnaceRefuelHandler` stores back).
fn remainder(name: &str) -> Option<&'static str> {
    (name == "minecraft:lava_bucket").then_some("minecraft:bucket")
}

/// A turtle's state while it lives: shared by its power cycles and the worker that runs its
/// commands.
#[derive(Debug)]
pub(crate) struct Turtle {
    pub fuel: u32,
    pub limit: u32,
    pub needs_fuel: bool,
    pub slots: Vec<Option<Item>>,
    /// 0-based.
    pub selected: usize,
    pub tools: bool,
    /// Commands queued and not yet run.
    pub pending: usize,
    /// The last command id handed out (`TurtleBrain.commandsIssued`).
    pub issued: u64,
}

/// A direction a command acts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    Forward,
    Back,
    Up,
    Down,
}

/// One queued turtle command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    Move(Dir),
    Turn,
    Dig,
    Attack,
    Detect,
    Inspect,
    Compare,
    Drop(u32),
    Suck(u32),
    Select(usize),
    Refuel(u32),
    TransferTo { slot: usize, count: u32 },
}

/// What running a command did.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The `turtle_response` arguments after the id: `true, ...` or `false, message`.
    pub result: Vec<Val>,
    /// Whether an animation now plays (the next command waits [`ANIMATION_TICKS`]).
    pub animates: bool,
    /// Whether a slot changed (a `turtle_inventory` event follows the response).
    pub inventory_changed: bool,
}

fn ok(animates: bool, inventory_changed: bool) -> Outcome {
    Outcome {
        result: vec![Val::Bool(true)],
        animates,
        inventory_changed,
    }
}

fn fail(message: Option<&str>) -> Outcome {
    Outcome {
        result: vec![Val::Bool(false), message.map_or(Val::Nil, Val::from)],
        animates: false,
        inventory_changed: false,
    }
}

impl Turtle {
    pub(crate) fn new(spec: &TurtleSpec, advanced: bool) -> Self {
        let limit = if advanced {
            ADVANCED_TURTLE_FUEL_LIMIT
        } else {
            TURTLE_FUEL_LIMIT
        };
        let mut slots = spec.slots.clone();
        slots.resize(TURTLE_SLOTS, None);
        for s in &mut slots {
            if s.as_ref().is_some_and(|i| i.count == 0) {
                *s = None;
            }
        }
        Self {
            fuel: spec.fuel.min(limit),
            limit,
            needs_fuel: spec.needs_fuel,
            slots,
            selected: usize::from(spec.selected.clamp(1, 16)) - 1,
            tools: spec.tools,
            pending: 0,
            issued: 0,
        }
    }

    /// Queues a command: its id, or the refusal CC answers at once.
    pub(crate) fn issue(&mut self) -> Result<u64, &'static str> {
        if self.pending > QUEUE_LIMIT {
            return Err("Too many ongoing turtle commands");
        }
        self.pending += 1;
        self.issued += 1;
        Ok(self.issued)
    }

    fn count(&self, slot: usize) -> u32 {
        self.slots
            .get(slot)
            .and_then(Option::as_ref)
            .map_or(0, |i| i.count)
    }

    /// Takes up to `n` items from `slot`.
    fn take(&mut self, slot: usize, n: u32) -> Option<Item> {
        let s = self.slots.get_mut(slot)?;
        let item = s.as_mut()?;
        let n = n.min(item.count);
        if n == 0 {
            return None;
        }
        item.count -= n;
        let taken = Item {
            name: item.name.clone(),
            count: n,
        };
        if item.count == 0 {
            *s = None;
        }
        Some(taken)
    }

    /// Stores as much of `item` into `slot` as fits; returns what did not.
    fn store(&mut self, slot: usize, mut item: Item) -> Option<Item> {
        let Some(s) = self.slots.get_mut(slot) else {
            return Some(item);
        };
        let max = max_stack(&item.name);
        match s {
            None => {
                let n = item.count.min(max);
                *s = Some(Item {
                    name: item.name.clone(),
                    count: n,
                });
                item.count -= n;
            }
            Some(there) if there.name == item.name => {
                let n = item.count.min(max.saturating_sub(there.count));
                there.count += n;
                item.count -= n;
            }
            Some(_) => {}
        }
        (item.count > 0).then_some(item)
    }

    /// Runs one command in the empty world.
    pub(crate) fn execute(&mut self, command: &Command) -> Outcome {
        self.pending = self.pending.saturating_sub(1);
        match command {
            // TurtleMoveCommand: nothing is in the way in an empty world; fuel is checked last.
            Command::Move(_) => {
                if self.needs_fuel && self.fuel < 1 {
                    return fail(Some("Out of fuel"));
                }
                if self.needs_fuel {
                    self.fuel -= 1;
                }
                ok(true, false)
            }
            Command::Turn => ok(true, false),
            // TurtleToolCommand / TurtleTool.dig: with no tool, or air in front.
            Command::Dig if self.tools => fail(Some("Nothing to dig here")),
            Command::Dig => fail(Some("No tool to dig with")),
            Command::Attack if self.tools => fail(Some("Nothing to attack here")),
            Command::Attack => fail(Some("No tool to attack with")),
            // TurtleDetectCommand: failure() without a message.
            Command::Detect => fail(None),
            Command::Inspect => fail(Some("No block to inspect")),
            // TurtleCompareCommand: air compares equal to an empty slot only.
            Command::Compare if self.count(self.selected) == 0 => ok(false, false),
            Command::Compare => fail(None),
            // TurtleDropCommand / TurtleSuckCommand: a count of 0 only waits; with no inventory
            // in front, what is dropped falls into the world and nothing lies there to take.
            Command::Drop(0) | Command::Suck(0) => ok(true, false),
            Command::Drop(n) => match self.take(self.selected, *n) {
                Some(_) => ok(true, true),
                None => fail(Some("No items to drop")),
            },
            Command::Suck(_) => fail(Some("No items to take")),
            Command::Select(slot) => {
                if *slot < TURTLE_SLOTS {
                    self.selected = *slot;
                }
                ok(false, false)
            }
            Command::Refuel(limit) => self.refuel(*limit),
            Command::TransferTo { slot, count } => self.transfer(*slot, *count),
        }
    }

    /// TurtleRefuelCommand and FurnaceRefuelHandler.
    fn refuel(&mut self, limit: u32) -> Outcome {
        let slot = self.selected;
        let Some(name) = self.slots[slot].as_ref().map(|i| i.name.clone()) else {
            return fail(Some("No items to combust"));
        };
        let Some(per) = fuel_per_item(&name) else {
            return fail(Some("Items not combustible"));
        };
        if limit == 0 {
            return ok(false, false);
        }
        let space = self.limit.saturating_sub(self.fuel);
        let wanted = space.div_ceil(per);
        let Some(burnt) = self.take(slot, limit.min(wanted)) else {
            return ok(false, false);
        };
        if let Some(rest) = remainder(&name) {
            let mut left = Some(Item::new(rest, burnt.count));
            // `TurtleUtil.storeItemOrDrop`: the selected slot first, then on round the others;
            // what does not fit drops into the world.
            for i in 0..TURTLE_SLOTS {
                if let Some(item) = left.take() {
                    left = self.store((slot + i) % TURTLE_SLOTS, item);
                }
            }
        }
        let fuel = per.saturating_mul(burnt.count);
        self.fuel = self.fuel.saturating_add(fuel).min(self.limit);
        ok(fuel != 0, true)
    }

    /// TurtleTransferToCommand.
    fn transfer(&mut self, slot: usize, count: u32) -> Outcome {
        let from = self.selected;
        let Some(stack) = self.take(from, count) else {
            return ok(true, false);
        };
        let moved = stack.count;
        let left = self.store(slot, stack);
        let back = left.as_ref().map_or(0, |l| l.count);
        if let Some(rest) = left {
            // What did not fit goes back where it came from.
            let _ = self.store(from, rest);
        }
        if back == moved {
            return fail(Some("No space for items"));
        }
        ok(true, true)
    }
}

#[cfg(test)]
mod tests;

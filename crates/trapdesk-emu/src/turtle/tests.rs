//! Unit tests of the turtle's body in `turtle.rs`.

use super::api::{display_name, parse};
use super::*;

impl Outcome {
    fn said(&self) -> String {
        text(&self.result)
    }
}

fn turtle(fuel: u32, slots: &[(usize, &str, u32)]) -> Turtle {
    let mut spec = TurtleSpec {
        fuel,
        ..TurtleSpec::default()
    };
    for (i, name, n) in slots {
        spec.slots[*i - 1] = Some(Item::new(name, *n));
    }
    Turtle::new(&spec, false)
}

/// A response's values as text (Val has no equality: it may hold sockets).
fn text(v: &[Val]) -> String {
    format!("{v:?}")
}

fn no(msg: &str) -> String {
    text(&[Val::Bool(false), Val::from(msg)])
}

fn yes() -> String {
    text(&[Val::Bool(true)])
}

#[test]
fn moving_spends_one_fuel_and_stops_without_it() {
    let mut t = turtle(1, &[]);
    let first = t.execute(&Command::Move(Dir::Forward));
    assert_eq!(first.said(), yes());
    assert!(first.animates);
    assert_eq!(t.fuel, 0);
    let second = t.execute(&Command::Move(Dir::Up));
    assert_eq!(second.said(), no("Out of fuel"));
    assert!(!second.animates);
    // Turning is free.
    assert_eq!(t.execute(&Command::Turn).said(), yes());
}

#[test]
fn no_fuel_needed_moves_for_free() {
    let mut t = Turtle::new(
        &TurtleSpec {
            needs_fuel: false,
            ..TurtleSpec::default()
        },
        true,
    );
    assert_eq!(t.execute(&Command::Move(Dir::Down)).said(), yes());
    assert_eq!(t.fuel, 0);
    assert_eq!(t.limit, ADVANCED_TURTLE_FUEL_LIMIT);
}

#[test]
fn refuel_burns_what_fits_below_the_limit() {
    // 80 per coal (1600 ticks × 5 / 100); 19 990 of 20 000: one coal fills it.
    let mut t = turtle(19_990, &[(1, "coal", 5)]);
    let o = t.execute(&Command::Refuel(u32::MAX));
    assert_eq!(o.said(), yes());
    assert!(o.animates && o.inventory_changed);
    assert_eq!((t.fuel, t.count(0)), (TURTLE_FUEL_LIMIT, 4));
    // Full: nothing burns, still a success.
    let o = t.execute(&Command::Refuel(u32::MAX));
    assert_eq!((o.said(), o.inventory_changed), (yes(), false));
    assert_eq!(t.count(0), 4);
}

#[test]
fn refuel_counts_and_refusals() {
    let mut t = turtle(0, &[(1, "coal", 3), (2, "cobblestone", 10)]);
    assert_eq!(t.execute(&Command::Refuel(0)).said(), yes());
    assert_eq!(t.count(0), 3);
    t.execute(&Command::Refuel(2));
    assert_eq!((t.fuel, t.count(0)), (160, 1));
    t.execute(&Command::Select(1));
    assert_eq!(
        t.execute(&Command::Refuel(1)).said(),
        no("Items not combustible")
    );
    t.execute(&Command::Select(2));
    assert_eq!(
        t.execute(&Command::Refuel(1)).said(),
        no("No items to combust")
    );
}

#[test]
fn a_lava_bucket_leaves_its_bucket() {
    let mut t = turtle(0, &[(1, "lava_bucket", 1)]);
    t.execute(&Command::Refuel(u32::MAX));
    assert_eq!(t.fuel, 1000);
    assert_eq!(t.slots[0], Some(Item::new("bucket", 1)));
}

#[test]
fn transfer_moves_what_fits_and_says_when_nothing_does() {
    let mut t = turtle(
        0,
        &[
            (1, "cobblestone", 40),
            (2, "cobblestone", 60),
            (3, "dirt", 1),
        ],
    );
    let o = t.execute(&Command::TransferTo { slot: 1, count: 64 });
    assert_eq!(o.said(), yes());
    assert!(o.inventory_changed);
    assert_eq!((t.count(0), t.count(1)), (36, 64));
    assert_eq!(
        t.execute(&Command::TransferTo { slot: 2, count: 64 })
            .said(),
        no("No space for items")
    );
    assert_eq!(t.count(0), 36);
    let o = t.execute(&Command::TransferTo { slot: 3, count: 10 });
    assert_eq!((t.count(0), t.count(3)), (26, 10));
    assert!(o.inventory_changed);
    // From an empty slot: a success that changes nothing.
    t.execute(&Command::Select(5));
    let o = t.execute(&Command::TransferTo { slot: 0, count: 64 });
    assert_eq!((o.said(), o.inventory_changed), (yes(), false));
}

#[test]
fn the_empty_world_answers() {
    let mut t = turtle(0, &[]);
    assert_eq!(t.execute(&Command::Dig).said(), no("No tool to dig with"));
    assert_eq!(
        t.execute(&Command::Detect).said(),
        text(&[Val::Bool(false), Val::Nil])
    );
    assert_eq!(
        t.execute(&Command::Inspect).said(),
        no("No block to inspect")
    );
    t.tools = true;
    assert_eq!(t.execute(&Command::Dig).said(), no("Nothing to dig here"));
    assert_eq!(
        t.execute(&Command::Attack).said(),
        no("Nothing to attack here")
    );
}

#[test]
fn drop_suck_and_compare_in_the_empty_world() {
    let mut t = turtle(0, &[(1, "dirt", 5)]);
    assert_eq!(
        t.execute(&Command::Compare).said(),
        text(&[Val::Bool(false), Val::Nil])
    );
    let o = t.execute(&Command::Drop(2));
    assert_eq!(
        (o.said(), o.animates, o.inventory_changed),
        (yes(), true, true)
    );
    assert_eq!(t.count(0), 3);
    assert_eq!(t.execute(&Command::Suck(64)).said(), no("No items to take"));
    assert_eq!(t.execute(&Command::Suck(0)).said(), yes());
    t.execute(&Command::Select(1));
    assert_eq!(t.execute(&Command::Drop(64)).said(), no("No items to drop"));
    assert_eq!(t.execute(&Command::Compare).said(), yes());
}

#[test]
fn the_queue_refuses_past_seventeen() {
    let mut t = turtle(0, &[]);
    for _ in 0..=QUEUE_LIMIT {
        assert!(t.issue().is_ok());
    }
    assert_eq!(t.issue(), Err("Too many ongoing turtle commands"));
    t.execute(&Command::Turn);
    assert!(t.issue().is_ok());
}

#[test]
fn fuel_values_and_names() {
    assert_eq!(fuel_per_item("minecraft:coal"), Some(80));
    assert_eq!(fuel_per_item("minecraft:coal_block"), Some(800));
    assert_eq!(fuel_per_item("minecraft:oak_planks"), Some(15));
    assert_eq!(fuel_per_item("minecraft:cobblestone"), None);
    assert_eq!(Item::new("coal", 1).name, "minecraft:coal");
    assert_eq!(Item::new("mod:ore", 1).name, "mod:ore");
    assert_eq!(display_name("minecraft:coal_block"), "Coal Block");
    assert_eq!(parse("select", Some(17.0), None), None);
    assert_eq!(parse("select", Some(16.0), None), Some(Command::Select(15)));
}

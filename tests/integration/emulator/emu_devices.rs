//! Turtles and pocket computers in the emulator: they link as what they are (the hello's
//! `device` and screen size, seen through `probe-computers`), the `turtle` API spends and
//! refuels fuel, selects slots, describes items and queues `turtle_inventory` as CC: Tweaked
//! does, the `pocket` API answers as with nothing to equip, `trapdesk emulate --kind turtle`
//! links one as a process, and `--demo` links a turtle and a pocket computer beside its
//! computers.
//!
//! Emulator only: CraftOS-PC cannot be a turtle or a pocket computer (it has no `turtle` API
//! and no pocket mode), so there is no CraftOS-PC entry point here.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake, world};

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::{SECRET, start_host, wait_until};
use trapdesk::session::{Origin, RequestSpec};
use world::{Kind, Runtime, Spec, World};

/// What a chunk returned through `exec-lua`, each value as JSON.
async fn exec(w: &World, label: &str, code: &str) -> Vec<Value> {
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos(label), "code": code}),
        )
        .await;
    let d = fake::data(&r);
    assert_eq!(d["ok"], true, "{code}: {}", fake::text(&r));
    d["returns"]
        .as_array()
        .unwrap_or_else(|| panic!("{code}: no returns in {d}"))
        .iter()
        .map(|v| v["value"].clone())
        .collect()
}

/// A turtle with 2 fuel, 3 coal and two stacks of cobblestone.
fn turtle() -> Spec {
    Spec {
        kind: Kind::Turtle,
        fuel: Some(2),
        slots: &[
            (1, "coal", 3),
            (2, "cobblestone", 60),
            (3, "cobblestone", 10),
        ],
        ..Spec::default()
    }
}

fn pocket() -> Spec {
    Spec {
        kind: Kind::Pocket,
        ..Spec::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turtle_and_a_pocket_computer_link_as_what_they_are() {
    let w = World::boot_with(
        Runtime::Emulator,
        &[
            ("digger", turtle()),
            ("phone", pocket()),
            ("desk", Spec::default()),
        ],
    )
    .await;
    let r = w.call("probe-computers", json!({"ping": false})).await;
    let d = fake::data(&r);
    let entry = |label: &str| -> Value {
        d["computers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["label"] == label)
            .cloned()
            .unwrap_or_else(|| panic!("no {label} in {d}"))
    };
    let (t, p, c) = (entry("digger"), entry("phone"), entry("desk"));
    assert_eq!(t["device"], "turtle", "{t}");
    assert_eq!(t["screen"], json!({"width": 39, "height": 13}), "{t}");
    assert_eq!(p["device"], "pocket", "{p}");
    assert_eq!(p["screen"], json!({"width": 26, "height": 20}), "{p}");
    assert_eq!(c["device"], "computer", "{c}");
    assert_eq!(c["screen"], json!({"width": 51, "height": 19}), "{c}");
    // The table a person reads says the same.
    let table = fake::text(&r);
    assert!(table.contains("turtle advanced 39x13"), "{table}");
    assert!(table.contains("pocket advanced 26x20"), "{table}");
    // Each has its own API and not the other's.
    assert_eq!(
        exec(&w, "digger", "return type(turtle), type(pocket)").await,
        [json!("table"), json!("nil")]
    );
    assert_eq!(
        exec(&w, "phone", "return type(turtle), type(pocket)").await,
        [json!("nil"), json!("table")]
    );
    assert_eq!(
        exec(&w, "desk", "return type(turtle), type(pocket)").await,
        [json!("nil"), json!("nil")]
    );
    // PocketAPI held by a player with no upgrade (PocketAPI.equipBack / unequipBack).
    assert_eq!(
        exec(
            &w,
            "phone",
            "local a, b = pocket.equipBack() local c, d = pocket.unequipBack() return a, b, c, d"
        )
        .await,
        [
            json!(false),
            json!("Cannot find a valid upgrade"),
            json!(false),
            json!("Nothing to unequip")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turtle_api_spends_refuels_and_moves_items() {
    let w = World::boot_with(Runtime::Emulator, &[("digger", turtle())]).await;
    // Two fuel: two moves, then "Out of fuel"; turning is free.
    assert_eq!(
        exec(
            &w,
            "digger",
            "local a = turtle.getFuelLevel() local b = turtle.forward() local c = turtle.up() \
             local d, why = turtle.back() local e = turtle.turnLeft() \
             return a, b, c, turtle.getFuelLevel(), d, why, e, turtle.getFuelLimit()"
        )
        .await,
        [
            json!(2),
            json!(true),
            json!(true),
            json!(0),
            json!(false),
            json!("Out of fuel"),
            json!(true),
            json!(100_000)
        ]
    );
    // Coal gives 80 each (FurnaceRefuelHandler: burn time 1600 × 5 / 100); refuel(0) only
    // asks; cobblestone does not burn.
    assert_eq!(
        exec(
            &w,
            "digger",
            "local a = turtle.refuel(0) local b = turtle.refuel(2) local fuel = turtle.getFuelLevel() \
             turtle.select(2) local c, why = turtle.refuel() \
             return a, b, fuel, turtle.getItemCount(1), c, why, turtle.getSelectedSlot()"
        )
        .await,
        [
            json!(true),
            json!(true),
            json!(160),
            json!(1),
            json!(false),
            json!("Items not combustible"),
            json!(2)
        ]
    );
    // Item detail, basic and detailed, and the space left in a slot.
    assert_eq!(
        exec(
            &w,
            "digger",
            "local d = turtle.getItemDetail(1) local e = turtle.getItemDetail(2, true) \
             return d.name, d.count, e.maxCount, turtle.getItemSpace(2), turtle.getItemDetail(9) == nil"
        )
        .await,
        [
            json!("minecraft:coal"),
            json!(1),
            json!(64),
            json!(4),
            json!(true)
        ]
    );
    // A transfer changes the inventory: `turtle_inventory` follows the answer; a full target
    // says so.
    assert_eq!(
        exec(
            &w,
            "digger",
            "turtle.select(3) local ok = turtle.transferTo(2) \
             local t = os.startTimer(2) local got \
             repeat local e, a = os.pullEvent() \
               if e == 'turtle_inventory' then got = e elseif e == 'timer' and a == t then got = 'no event' end \
             until got \
             local full, why = turtle.transferTo(2) \
             return ok, got, turtle.getItemCount(2), turtle.getItemCount(3), full, why"
        )
        .await,
        [
            json!(true),
            json!("turtle_inventory"),
            json!(64),
            json!(6),
            json!(false),
            json!("No space for items")
        ]
    );
    // Bad arguments, as TurtleAPI.checkSlot words them.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos("digger"), "code": "turtle.select(17)"}),
        )
        .await;
    assert!(
        fake::text(&r).contains("Slot number 17 out of range"),
        "{}",
        fake::text(&r)
    );
    // The empty world: nothing in front, no tool on this turtle.
    assert_eq!(
        exec(
            &w,
            "digger",
            "local a = turtle.detect() local b, c = turtle.inspect() local d, e = turtle.dig() \
             local f, g = turtle.suckUp() turtle.select(3) local h = turtle.drop(2) \
             return a, b, c, d, e, f, g, h, turtle.getItemCount(3)"
        )
        .await,
        [
            json!(false),
            json!(false),
            json!("No block to inspect"),
            json!(false),
            json!("No tool to dig with"),
            json!(false),
            json!("No items to take"),
            json!(true),
            json!(4)
        ]
    );
}

/// Turtle commands are main-thread work: each takes at least a tick, a move plays an 8-tick
/// animation before the next command runs, and the caller waits with `os.pullEvent`'s rules,
/// so an event that arrives meanwhile is lost to it (TurtleBrain, MethodResult.pullEvent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turtle_commands_take_ticks_and_swallow_events_meanwhile() {
    let w = World::boot_with(
        Runtime::Emulator,
        &[(
            "digger",
            Spec {
                fuel: Some(10),
                ..turtle()
            },
        )],
    )
    .await;
    let r = exec(
        &w,
        "digger",
        "local t0 = os.clock() turtle.forward() local one = os.clock() - t0 turtle.forward() \
         local two = os.clock() - t0 \
         os.queueEvent('mine') turtle.turnRight() os.queueEvent('after') \
         local seen repeat seen = os.pullEvent() until seen == 'mine' or seen == 'after' \
         return one, two, seen",
    )
    .await;
    let (one, two) = (r[0].as_f64().unwrap(), r[1].as_f64().unwrap());
    // At least the tick it waits for (the upper bound only catches a command that never ran
    // on its own; a loaded machine may be late). `os.clock` sums ticks of 0.05 in floating
    // point, so one tick can read 0.04999999999999999: the same tolerance as the next check.
    assert!((0.05 - 1e-9..3.0).contains(&one), "one command: {one} s");
    // The second move waits for the first one's animation: 8 ticks after it.
    assert!(two >= one + 0.4 - 1e-9, "two moves: {two} s (one: {one} s)");
    assert_eq!(
        r[2], "after",
        "the event queued before the turn reached the program"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_world_without_fuel_says_unlimited() {
    let dir = tempfile::tempdir().unwrap();
    let spec = trapdesk::emu::ComputerSpec::new(3, None, dir.path().to_owned())
        .turtle()
        .unlimited_fuel()
        .with_advanced(false);
    let c = trapdesk::emu::Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap();
    let out = c
        .run_lua(
            // Two lines: the turtle's 39 columns would wrap one.
            "print(turtle.getFuelLevel(), turtle.getFuelLimit(), turtle.forward(), \
             turtle.getFuelLevel()) print(term.isColour(), term.getSize())",
        )
        .await
        .unwrap();
    assert_eq!(
        out,
        "unlimited\tunlimited\ttrue\tunlimited\nfalse\t39\t13\n"
    );
    c.shutdown();
    c.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_turtle_has_the_lower_fuel_limit_and_keeps_its_fuel_through_a_reboot() {
    let dir = tempfile::tempdir().unwrap();
    let spec = trapdesk::emu::ComputerSpec::new(4, None, dir.path().to_owned())
        .with_fuel(50_000)
        .with_advanced(false);
    let c = trapdesk::emu::Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap();
    let out = c
        .run_lua("turtle.forward() print(turtle.getFuelLevel(), turtle.getFuelLimit())")
        .await
        .unwrap();
    assert_eq!(out, "19999\t20000\n");
    c.reboot();
    let out = crate::support::wait_ok(Duration::from_secs(10), async || {
        c.run_lua("print(turtle.getFuelLevel())")
            .await
            .map_err(|e| format!("the turtle did not come back: {e:?}"))
    })
    .await;
    assert_eq!(out, "19999\n");
    c.shutdown();
    c.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emulate_kind_turtle_links_a_turtle() {
    let host = start_host().await;
    let disk = host.dir.path().join("disk");
    let mut child = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args(["emulate", "--url", &host.gateway_url(), "--id", "9"])
        .args(["--label", "crawler", "--kind", "turtle", "--fuel", "500"])
        .args(["--secret", SECRET])
        .arg("--data-dir")
        .arg(&disk)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(|| {
        host.session
            .computer("9:crawler")
            .is_some_and(|c| c.serves.iter().any(|s| s == "exec-lua"))
    })
    .await;
    let info = host.session.computer("9:crawler").unwrap();
    assert_eq!(info.machine.device.as_deref(), Some("turtle"));
    assert_eq!(
        (info.machine.screen_width, info.machine.screen_height),
        (Some(39), Some(13))
    );
    let r = host
        .session
        .request(
            "crawler",
            RequestSpec::new(
                trapdesk::protocol::Kind::ExecLua,
                json!({"code": "return turtle.getFuelLevel(), turtle.forward(), turtle.getFuelLevel()"}),
            ),
            Origin::Person,
        )
        .await
        .unwrap();
    assert_eq!(
        r["returns"],
        json!([{"type":"number","value":500},{"type":"boolean","value":true},{"type":"number","value":499}])
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn emulate_refuses_a_bad_kind_and_fuel_for_a_computer() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
            .args([
                "emulate",
                "--url",
                "ws://127.0.0.1:9/gateway",
                "--secret",
                "s",
            ])
            .args(args)
            .arg("--data-dir")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} was accepted");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&["--kind", "robot"]);
    assert!(
        err.contains("--kind") && err.contains("turtle") && err.contains("pocket"),
        "{err}"
    );
    let err = run(&["--fuel", "10"]);
    assert!(err.contains("--fuel is for a turtle"), "{err}");
    let err = run(&["--kind", "pocket", "--fuel", "10"]);
    assert!(err.contains("--kind turtle"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_links_a_turtle_and_a_pocket_computer() {
    let mut host = start_host().await;
    host.start_demo(1);
    // The gateway links a computer, then records what its hello said it is: a snapshot can fall
    // between the two (src/gateway/handshake.rs), so wait for the description as well.
    wait_until(|| {
        ["1:miner", "2:turtle", "3:pocket"].iter().all(|id| {
            host.session.computer(id).is_some_and(|c| {
                c.online && c.serves.iter().any(|s| s == "run-file") && c.machine.device.is_some()
            })
        })
    })
    .await;
    let device = |id: &str| host.session.computer(id).unwrap().machine.device;
    assert_eq!(device("1:miner").as_deref(), Some("computer"));
    assert_eq!(device("2:turtle").as_deref(), Some("turtle"));
    assert_eq!(device("3:pocket").as_deref(), Some("pocket"));
    // The turtle's own program refuels from the coal in its slots and moves.
    let r = host
        .session
        .request(
            "2:turtle",
            RequestSpec::new(
                trapdesk::protocol::Kind::RunFile,
                json!({"path": "programs/tunnel.lua", "args": ["2"]}),
            ),
            Origin::Person,
        )
        .await
        .unwrap();
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["returns"][0]["value"], 2, "{r}");
    let out = r["output"].as_str().unwrap();
    // No fuel at first: one coal (80) burnt for the 4 moves.
    assert!(out.contains("fuel 80, tunnelling 2 blocks"), "{out}");
    assert!(out.contains("block 2, fuel 78"), "{out}");
    assert!(out.contains("back home, fuel 76"), "{out}");
    // Its slots are the demo's.
    let r = host
        .session
        .request(
            "2:turtle",
            RequestSpec::new(
                trapdesk::protocol::Kind::ExecLua,
                json!({"code": "local d = turtle.getItemDetail(1) return d.name, d.count, turtle.getItemCount(2)"}),
            ),
            Origin::Person,
        )
        .await
        .unwrap();
    assert_eq!(
        r["returns"],
        json!([{"type":"string","value":"minecraft:coal"},{"type":"number","value":15},{"type":"number","value":64}])
    );
}

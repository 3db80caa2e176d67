//! Turtles through a real MCP client, against the real Lua client on an emulated turtle:
//! `turtle-info` (fuel, limit, selected slot, the sixteen slots' items), what
//! `probe-computers` says of a turtle and a pocket computer, and `turtle-info` refused on what
//! is no turtle without anything sent.
//!
//! The emulator only: CraftOS-PC cannot be a turtle or a pocket computer.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use fake::{data, text};
use serde_json::{Value, json};
use trapdesk::protocol::Kind as RequestKind;
use trapdesk::session::Event;
use world::{Kind, Runtime, Spec, World};

fn turtle() -> Spec {
    Spec {
        kind: Kind::Turtle,
        fuel: Some(80),
        slots: &[(1, "minecraft:coal", 12), (3, "minecraft:cobblestone", 64)],
        ..Spec::default()
    }
}

fn probe_entry<'a>(d: &'a Value, trapos_id: &str) -> &'a Value {
    d["computers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["traposId"] == trapos_id)
        .unwrap_or_else(|| panic!("{trapos_id} not in {d}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turtle_says_its_fuel_and_slots() {
    let w = World::boot_with(
        Runtime::Emulator,
        &[
            ("digger", turtle()),
            ("base", Spec::default()),
            (
                "pda",
                Spec {
                    kind: Kind::Pocket,
                    ..Spec::default()
                },
            ),
        ],
    )
    .await;
    w.wait_serves("digger", &["turtle", "peripherals"]).await;

    let r = w.call("turtle-info", json!({"traposId": "digger"})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&r);
    // An advanced turtle: CC: Tweaked's advanced fuel limit, 100000.
    assert_eq!(
        (&d["fuel"], &d["fuelLimit"], &d["selected"]),
        (&json!(80), &json!(100_000), &json!(1)),
        "{d}"
    );
    let slots = d["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 16, "{d}");
    assert_eq!(
        slots[0],
        json!({"slot": 1, "count": 12, "name": "minecraft:coal"})
    );
    assert_eq!(slots[1], json!({"slot": 2, "count": 0}), "an empty slot");
    assert_eq!(slots[2]["name"], "minecraft:cobblestone");
    assert_eq!(slots[2]["count"], 64);
    let t = text(&r);
    assert!(
        t.starts_with(&format!(
            "{}: fuel 80 of 100000, slot 1 selected, 2 of 16 slots used (76 items)",
            w.trapos("digger")
        )),
        "{t}"
    );
    assert!(t.contains("\n1*\t12\tminecraft:coal\n"), "{t}");
    assert!(t.contains("\n3\t64\tminecraft:cobblestone\n"), "{t}");

    // The turtle changes: a slot selected, coal burnt.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "digger", "code": "turtle.refuel(2) turtle.select(3) return turtle.getFuelLevel()"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&w.call("turtle-info", json!({"traposId": "digger"})).await);
    assert_eq!(
        (&d["fuel"], &d["selected"]),
        (&json!(240), &json!(3)),
        "{d}"
    );
    assert_eq!(d["slots"][0]["count"], 10, "{d}");

    // probe-computers: the turtle's fuel, limit and slot; none on the others.
    let p = w.call("probe-computers", json!({})).await;
    assert_eq!(p.is_error, Some(false), "{}", text(&p));
    let pd = data(&p);
    let digger = probe_entry(&pd, &w.trapos("digger"));
    assert_eq!(digger["device"], "turtle");
    assert_eq!(
        (&digger["fuel"], &digger["fuelLimit"], &digger["selected"]),
        (&json!(240), &json!(100_000), &json!(3)),
        "{digger}"
    );
    assert_eq!(digger["peripherals"], 0, "{digger}");
    assert!(
        text(&p).contains("turtle advanced 39x13 fuel 240/100000 slot 3"),
        "{}",
        text(&p)
    );
    for other in ["base", "pda"] {
        let e = probe_entry(&pd, &w.trapos(other));
        assert!(
            e.get("fuel").is_none() && e.get("fuelLimit").is_none() && e.get("selected").is_none(),
            "{e}"
        );
        assert_eq!(e["peripherals"], 0, "{e}");
    }
    assert_eq!(probe_entry(&pd, &w.trapos("pda"))["device"], "pocket");
    // The status is kept on the computer for the console.
    let status = w
        .session()
        .computer(&w.trapos("digger"))
        .and_then(|c| c.status)
        .unwrap();
    assert_eq!(status.selected, Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turtle_info_on_a_computer_is_refused_without_sending() {
    let w = World::boot_with(
        Runtime::Emulator,
        &[
            ("base", Spec::default()),
            (
                "pda",
                Spec {
                    kind: Kind::Pocket,
                    ..Spec::default()
                },
            ),
        ],
    )
    .await;
    w.wait_serves("base", &["peripherals"]).await;
    let mut events = w.session().subscribe();
    for (label, device) in [("base", "computer"), ("pda", "pocket computer")] {
        let r = w.call("turtle-info", json!({"traposId": label})).await;
        assert_eq!(r.is_error, Some(true), "{}", text(&r));
        let d = data(&r);
        assert_eq!(d["error"]["code"], "not_a_turtle", "{d}");
        assert_eq!(
            text(&r),
            format!(
                "not_a_turtle: {} is a {device}, not a turtle",
                w.trapos(label)
            )
        );
    }
    while let Ok(e) = events.try_recv() {
        if let Event::RequestStarted { info } = e {
            assert_ne!(info.kind, RequestKind::Turtle, "nothing sent: {info:?}");
        }
    }
}

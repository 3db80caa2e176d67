//! Unit tests of the peripherals, turtle and status payloads in `session/devices.rs`.

use super::*;
use serde_json::json;

#[test]
fn fuel_is_a_number_or_unlimited() {
    assert_eq!(Fuel::from_value(&json!(20)), Some(Fuel::Level(20)));
    assert_eq!(Fuel::from_value(&json!(20000.0)), Some(Fuel::Level(20000)));
    assert_eq!(Fuel::from_value(&json!("unlimited")), Some(Fuel::Unlimited));
    assert_eq!(Fuel::from_value(&json!(-1)), None);
    assert_eq!(Fuel::from_value(&json!("lots")), None);
    assert_eq!(
        serde_json::to_value(Fuel::Unlimited).ok(),
        Some(json!("unlimited"))
    );
    assert_eq!(
        serde_json::from_value::<Fuel>(json!(7)).ok(),
        Some(Fuel::Level(7))
    );
    assert!(serde_json::from_value::<Fuel>(json!(true)).is_err());
}

#[test]
fn a_status_ping_is_read_and_an_old_one_is_none() {
    let with_types = json!({"status": {"peripherals": 2, "monitors": ["top"],
        "types": {"top": "monitor", "back": "modem", "odd": 3}}});
    let s = DeviceStatus::from_ping(&with_types).expect("status");
    assert_eq!(
        s.types.into_iter().collect::<Vec<_>>(),
        [
            ("back".into(), "modem".into()),
            ("top".into(), "monitor".into())
        ],
        "by name; a type that is not a string is left out"
    );
    let turtle = json!({"ok": true, "status": {"peripherals": 2, "monitors": ["top", "monitor_0"],
        "fuel": 80, "fuelLimit": "unlimited", "selected": 3}});
    let s = DeviceStatus::from_ping(&turtle).expect("status");
    assert_eq!(s.peripherals, 2);
    assert_eq!(s.monitors, vec!["monitor_0", "top"]);
    assert_eq!(
        (s.fuel, s.fuel_limit, s.selected),
        (Some(Fuel::Level(80)), Some(Fuel::Unlimited), Some(3))
    );
    let computer = json!({"status": {"peripherals": 0, "monitors": {}}});
    let c = DeviceStatus::from_ping(&computer).expect("status");
    assert!(c.monitors.is_empty() && c.fuel.is_none() && c.selected.is_none());
    assert_eq!(DeviceStatus::from_ping(&json!({"ok": true})), None);
    assert_eq!(
        DeviceStatus::from_ping(&json!({"status": {"monitors": []}})),
        None
    );
    assert_eq!(
        serde_json::to_value(&c).ok(),
        Some(json!({"peripherals": 0, "monitors": []}))
    );
}

#[test]
fn peripherals_are_sorted_and_cc_empty_tables_taken() {
    let v = json!({"peripherals": [
        {"name": "top", "types": ["monitor"], "methods": ["write", "clear"],
         "state": {"width": 7, "height": 5, "scale": 1, "colour": true}},
        {"name": "back", "types": ["modem"], "methods": {}, "state": {"wireless": false, "remote": ["monitor_0"]}},
        {"name": "monitor_0", "types": ["monitor"], "methods": [], "via": "back"}
    ]});
    let list = parse_peripherals(&v).expect("list");
    let names: Vec<&str> = list.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["back", "monitor_0", "top"]);
    assert_eq!(list[2].methods, vec!["clear", "write"]);
    assert_eq!(list[1].via.as_deref(), Some("back"));
    assert!(parse_peripherals(&json!({})).is_err());
    let e = parse_peripherals(&json!({"peripherals": [{"types": []}]})).expect_err("no name");
    assert!(e.to_string().starts_with("peripherals[0]:"), "{e}");
}

#[test]
fn a_turtle_answer_is_checked() {
    let v = json!({"fuel": 5, "fuelLimit": 20000, "selected": 2, "slots": [
        {"slot": 2, "count": 3, "name": "minecraft:coal"}, {"slot": 1, "count": 0}]});
    let t = parse_turtle(&v).expect("turtle");
    assert_eq!(
        (t.fuel, t.fuel_limit, t.selected),
        (Fuel::Level(5), Fuel::Level(20000), 2)
    );
    assert_eq!(t.slots[0].slot, 1);
    assert_eq!(t.slots[1].name.as_deref(), Some("minecraft:coal"));
    let no_slots =
        parse_turtle(&json!({"fuel": "unlimited", "fuelLimit": "unlimited", "selected": 1}))
            .expect("without slots");
    assert!(no_slots.slots.is_empty());
    let bad =
        parse_turtle(&json!({"fuel": 5, "fuelLimit": 9, "selected": 17})).expect_err("slot 17");
    assert!(bad.to_string().contains("selected"), "{bad}");
    assert!(parse_turtle(&json!({"fuelLimit": 9, "selected": 1})).is_err());
}

fn linked(
    session: &Session,
    device: &str,
    serves: &[&str],
) -> (
    super::super::Link,
    tokio::sync::mpsc::Receiver<crate::session::Outbound>,
) {
    let hello = trapdesk_proto::protocol::Hello {
        protocol: 1,
        computer_id: 3,
        label: Some("base".into()),
        secret: String::new(),
        serves: serves.iter().map(|s| (*s).to_owned()).collect(),
        client: None,
        host: None,
        max_message: None,
    };
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let link = session.link(&hello, tx);
    link.describe(trapdesk_proto::protocol::MachineInfo {
        device: Some(device.into()),
        ..Default::default()
    });
    (link, rx)
}

#[tokio::test]
async fn a_stored_status_is_announced_once() {
    let session = Session::new(crate::config::Settings::default(), false);
    let (_link, _rx) = linked(&session, "turtle", &["peripherals", "turtle"]);
    let mut events = session.subscribe();
    let answer = json!({"pong": true, "status": {"peripherals": 1, "monitors": ["top"],
        "fuel": 5, "fuelLimit": 100000, "selected": 2}});
    session.store_status("3:base", &answer);
    let status = session
        .computer("3:base")
        .and_then(|c| c.status)
        .expect("kept");
    assert_eq!((status.peripherals, status.selected), (1, Some(2)));
    let mut changed = 0;
    while let Ok(e) = events.try_recv() {
        if matches!(e, Event::ComputerChanged { ref trapos_id } if trapos_id == "3:base") {
            changed += 1;
        }
    }
    assert_eq!(changed, 1);
    // The same status again changes nothing; a plain pong keeps what was known.
    session.store_status("3:base", &answer);
    session.store_status("3:base", &json!({"pong": true}));
    assert!(events.try_recv().is_err());
    assert!(session.computer("3:base").and_then(|c| c.status).is_some());
}

#[tokio::test]
async fn turtle_info_on_a_computer_sends_nothing() {
    let session = Session::new(crate::config::Settings::default(), false);
    let (_link, mut rx) = linked(&session, "computer", &["peripherals"]);
    let e = session
        .turtle_info("base", Origin::Person)
        .await
        .expect_err("not a turtle");
    assert_eq!(e.code(), "not_a_turtle");
    assert_eq!(e.to_string(), "3:base is a computer, not a turtle");
    assert!(rx.try_recv().is_err(), "nothing was sent");
    // An older client on a turtle: the installer's advice, nothing sent either.
    let session = Session::new(crate::config::Settings::default(), false);
    let (_link, mut rx) = linked(&session, "turtle", &["exec-lua"]);
    let e = session
        .turtle_info("base", Origin::Person)
        .await
        .expect_err("not served");
    assert_eq!(e.code(), "unknown_type");
    assert!(e.to_string().contains("re-run the installer"), "{e}");
    let e = session
        .list_peripherals("base", Origin::Person)
        .await
        .expect_err("not served");
    assert_eq!(e.code(), "unknown_type");
    assert!(rx.try_recv().is_err(), "nothing was sent");
}

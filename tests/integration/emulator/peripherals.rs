//! `list-peripherals` and `probe-computers`' count through a real MCP client, against computers
//! running the real Lua client: peripherals created at run time with CraftOS-PC's own API
//! (`periphemu.create`), so one body runs on the emulator and on CraftOS-PC (its headless build
//! creates modems, drives and chests; not monitors, so the monitor's entry is the emulator's
//! alone, in `tests/integration/emulator/monitors.rs` and below). An older client that does not
//! serve the requests answers the installer's advice, and nothing is sent to it.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake, world};

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use serde_json::{Value, json};
use support::FakeComputer;
use world::{Runtime, World};

/// Runs a chunk on `label` and fails the test when it fails.
async fn lua(w: &World, label: &str, code: &str) -> Value {
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos(label), "code": code}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    data(&r)
}

fn entry<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["peripherals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

async fn peripherals_are_listed_with_their_methods(rt: Runtime) {
    let w = World::boot(rt, &["base"]).await;
    w.wait_serves("base", &["peripherals"]).await;
    let none = w
        .call("list-peripherals", json!({"traposId": "base"}))
        .await;
    assert_eq!(none.is_error, Some(false), "{}", text(&none));
    assert!(
        text(&none).starts_with(&format!("{} has no peripherals attached", w.trapos("base"))),
        "{}",
        text(&none)
    );
    assert_eq!(data(&none)["count"], 0);

    // A wired modem at the back with a chest on its network, and a drive on top. Both runtimes
    // name a peripheral created on a number side "<type>_<n>", behind the modem.
    lua(
        &w,
        "base",
        r#"assert(periphemu.create("back", "modem"))
           assert(periphemu.create("top", "drive"))
           assert(periphemu.create(0, "chest"))
           -- CraftOS-PC's chest takes items with setItem; the emulator's answers it too.
           peripheral.call("chest_0", "setItem", 1, { name = "minecraft:stone", count = 10 })
           return true"#,
    )
    .await;
    let r = w
        .call("list-peripherals", json!({"traposId": "base"}))
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&r);
    let names: Vec<&str> = d["peripherals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["back", "chest_0", "top"], "{d}");
    assert_eq!(d["count"], 3);

    // camelCase field names throughout, as every tool's (the state's too).
    for p in d["peripherals"].as_array().unwrap() {
        let keys = p.as_object().unwrap().keys();
        let state = p["state"].as_object().into_iter().flat_map(|s| s.keys());
        for k in keys.chain(state) {
            assert!(!k.contains('_'), "{k} in {p}");
        }
    }
    let modem = entry(&d, "back");
    assert_eq!(modem["types"][0], "modem", "{modem}");
    assert_eq!(modem["state"]["wireless"], false, "{modem}");
    assert_eq!(
        strings(&modem["state"]["remote"]),
        vec!["chest_0"],
        "{modem}"
    );
    assert!(modem.get("via").is_none(), "{modem}");
    assert!(
        strings(&modem["methods"]).contains(&"getNamesRemote"),
        "{modem}"
    );

    let chest = entry(&d, "chest_0");
    assert_eq!(
        chest["via"], "back",
        "on the network behind the modem: {chest}"
    );
    assert!(strings(&chest["types"]).contains(&"inventory"), "{chest}");
    assert_eq!(chest["state"]["size"], 27, "{chest}");
    assert_eq!(chest["state"]["used"], 1, "{chest}");
    let methods = strings(&chest["methods"]);
    for m in ["list", "size", "pushItems"] {
        assert!(methods.contains(&m), "{m} in {methods:?}");
    }
    let mut sorted = methods.clone();
    sorted.sort_unstable();
    assert_eq!(methods, sorted, "methods are sorted");

    let drive = entry(&d, "top");
    assert_eq!(drive["types"][0], "drive");
    assert_eq!(drive["state"]["disk"], false, "{drive}");
    assert!(strings(&drive["methods"]).contains(&"isDiskPresent"));

    // The text block an agent reads: the table, then the methods.
    let t = text(&r);
    assert!(t.contains("name\ttypes\tvia\tstate\tmethods\n"), "{t}");
    assert!(
        t.contains("\nchest_0\t") && t.contains("\tback\t") && t.contains("size=27 used=1"),
        "{t}"
    );
    assert!(t.contains("\n[methods]\n"), "{t}");
    assert!(t.contains("\ntop: ") && t.contains("isDiskPresent"), "{t}");
    assert!(!t.contains("\"peripherals\""), "not the JSON again: {t}");

    // probe-computers counts them (from its ping with status) and keeps the status for the
    // console.
    let p = w.call("probe-computers", json!({})).await;
    assert_eq!(p.is_error, Some(false), "{}", text(&p));
    let c = &data(&p)["computers"][0];
    assert_eq!(c["peripherals"], 3, "{c}");
    assert_eq!(c["monitors"], json!([]), "{c}");
    assert!(
        c.get("fuel").is_none() && c.get("selected").is_none(),
        "{c}"
    );
    assert!(text(&p).contains("\tperipherals\t"), "{}", text(&p));
    let status = w
        .session()
        .computer(&w.trapos("base"))
        .and_then(|c| c.status)
        .expect("the probe's status is kept");
    assert_eq!(status.peripherals, 3);
    let quiet = w.call("probe-computers", json!({"ping": false})).await;
    let c = &data(&quiet)["computers"][0];
    assert!(c.get("peripherals").is_none(), "no ping, no status: {c}");

    // Gone: the drive leaves the list.
    lua(&w, "base", r#"return periphemu.remove("top")"#).await;
    let after = data(
        &w.call("list-peripherals", json!({"traposId": "base"}))
            .await,
    );
    assert_eq!(after["count"], 2, "{after}");
}

on_both_runtimes!(peripherals_are_listed_with_their_methods);

/// A monitor and a wireless modem (the emulator only: CraftOS-PC headless refuses monitors)
/// with their states, and remote monitors over a wired modem, counted by probe-computers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitors_and_modems_have_their_state_on_the_emulator() {
    let w = World::boot(Runtime::Emulator, &["hall"]).await;
    w.wait_serves("hall", &["peripherals"]).await;
    lua(
        &w,
        "hall",
        r#"assert(periphemu.create("top", "monitor"))
           peripheral.call("top", "setTextScale", 2)
           assert(periphemu.create("right", "modem", { wireless = true }))
           assert(periphemu.create("monitor_0", "monitor", 20, 5))
           assert(periphemu.create("left", "modem"))
           return true"#,
    )
    .await;
    let d = data(
        &w.call("list-peripherals", json!({"traposId": "hall"}))
            .await,
    );
    let monitor = entry(&d, "top");
    assert_eq!(monitor["types"][0], "monitor");
    assert_eq!(
        (
            &monitor["state"]["width"],
            &monitor["state"]["height"],
            &monitor["state"]["scale"],
            &monitor["state"]["colour"]
        ),
        (&json!(26), &json!(10), &json!(2), &json!(true)),
        "{monitor}"
    );
    assert!(strings(&monitor["methods"]).contains(&"setTextScale"));
    let wireless = entry(&d, "right");
    assert_eq!(wireless["state"]["wireless"], true, "{wireless}");
    assert!(wireless["state"].get("remote").is_none(), "{wireless}");
    let remote = entry(&d, "monitor_0");
    assert_eq!(remote["via"], "left", "{remote}");
    assert_eq!(remote["state"]["width"], 20, "{remote}");

    let p = data(&w.call("probe-computers", json!({})).await);
    let c = &p["computers"][0];
    assert_eq!(c["peripherals"], 4, "{c}");
    assert_eq!(c["monitors"], json!(["monitor_0", "top"]), "{c}");
}

/// A client from before peripherals (it serves neither `peripherals` nor `turtle`, although it
/// says it is a turtle): the tools answer the installer's advice and send nothing; its probe
/// entry has no status fields (it answers a plain ping).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_client_answers_unknown_type_and_is_sent_nothing() {
    let w = World::boot(Runtime::Emulator, &["base"]).await;
    let mut hello = support::hello(9, Some("old"));
    hello["serves"] = json!(["exec-lua", "ping", "screen", "input"]);
    hello["device"] = json!("turtle");
    let (mut old, welcome) = FakeComputer::link_with(&w.host, hello).await;
    let id = welcome["trapos_id"].as_str().unwrap().to_owned();
    support::wait_until(|| w.session().computer(&id).is_some_and(|c| c.online)).await;

    for (tool, args, what) in [
        (
            "list-peripherals",
            json!({"traposId": "old"}),
            "peripherals",
        ),
        ("turtle-info", json!({"traposId": "old"}), "turtle"),
        (
            "read-screen",
            json!({"traposId": "old", "monitor": "top"}),
            "screen on a monitor",
        ),
        (
            "send-input",
            json!({"traposId": "old", "monitor": "top", "touch": {"x": 1, "y": 1}}),
            "input on a monitor",
        ),
    ] {
        let r = w.call(tool, args).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {}", text(&r));
        let d = data(&r);
        assert_eq!(d["error"]["code"], "unknown_type", "{tool}: {d}");
        let t = text(&r);
        assert!(
            t.contains(&format!("{id} does not serve {what}")),
            "{tool}: {t}"
        );
        assert!(t.contains("re-run the installer"), "{tool}: {t}");
    }

    // The probe pings it with status; it answers a plain pong, and the entry has no status.
    let (probe, ping) = tokio::join!(w.call("probe-computers", json!({})), async {
        let req = old.recv_request().await;
        old.respond(req["id"].as_str().unwrap(), json!({"pong": true}))
            .await;
        req
    });
    assert_eq!(
        ping["request"], "ping",
        "nothing else was sent before: {ping}"
    );
    assert_eq!(ping["payload"]["status"], true, "{ping}");
    let d = data(&probe);
    let entry = d["computers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["traposId"] == id.as_str())
        .unwrap();
    assert_eq!(entry["device"], "turtle");
    for f in ["peripherals", "monitors", "fuel", "fuelLimit", "selected"] {
        assert!(entry.get(f).is_none(), "{f} in {entry}");
    }
    let new = d["computers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["traposId"] == w.trapos("base").as_str())
        .unwrap();
    assert_eq!(new["peripherals"], 0, "the new client answers: {new}");
}

//! `probe-computers` says what each computer is, as its client reported it at `hello`: runtime
//! (`_HOST`), client and client version, `device`, `advanced`, `command`, screen size, and how
//! old each pending request is. One body on the emulator and on CraftOS-PC (its own `_HOST`),
//! through rmcp's client; and a client from before these fields still links, with them absent.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use std::time::Duration;

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use serde_json::{Value, json};
use world::{Runtime, Spec, World};

fn entry(probe: &Value, trapos_id: &str) -> Value {
    probe["computers"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["traposId"] == trapos_id))
        .cloned()
        .unwrap_or_else(|| panic!("{trapos_id} not in {probe}"))
}

async fn probe_says_what_each_computer_is(rt: Runtime) {
    let turtle_size = Spec {
        size: Some((39, 13)),
        ..Spec::default()
    };
    let w = World::boot_with(rt, &[("desk", Spec::default()), ("small", turtle_size)]).await;
    // What the runtime itself says, asked through a chunk: the probe must agree with it.
    let truth = w
        .call(
            "exec-lua",
            json!({"traposId": "desk", "code": "local w, h = term.native().getSize() return _HOST, w, h, term.native().isColour(), turtle ~= nil, pocket ~= nil, commands ~= nil"}),
        )
        .await;
    let r = data(&truth)["returns"].clone();
    let host = r[0]["value"].as_str().unwrap().to_owned();
    match rt {
        Runtime::Emulator => assert!(host.contains("trapdesk emulator"), "{host}"),
        Runtime::CraftOs => assert!(host.contains("CraftOS-PC"), "{host}"),
    }
    // A chunk that keeps one request pending, so that its age shows.
    let long = fake::start_call(
        &w.client,
        "exec-lua",
        json!({"traposId": "desk", "code": "sleep(3) return 1"}),
    )
    .await;
    // The time is the test: the request's age, which the probe must report, passes a second.
    tokio::time::sleep(Duration::from_millis(1200)).await;

    let p = w.call("probe-computers", json!({"ping": false})).await;
    assert_ne!(p.is_error, Some(true), "{}", text(&p));
    let probe = data(&p);
    let desk = entry(&probe, &w.trapos("desk"));
    assert_eq!(desk["runtime"], json!(host), "{desk}");
    assert!(
        desk["client"]
            .as_str()
            .unwrap()
            .starts_with("trapdesk-lua/"),
        "{desk}"
    );
    assert_eq!(
        desk["clientVersion"],
        json!(trapdesk::lua_files::version()),
        "{desk}"
    );
    assert_eq!(desk["device"], "computer", "{desk}");
    assert_eq!(desk["advanced"], r[3]["value"], "{desk}");
    assert_eq!(desk["command"], false, "{desk}");
    assert_eq!(
        desk["screen"],
        json!({"width": r[1]["value"], "height": r[2]["value"]})
    );
    assert_eq!(desk["screen"], json!({"width": 51, "height": 19}));
    // Neither runtime gives a computer the turtle, pocket or commands API here.
    assert_eq!(r[4]["value"], false);
    assert_eq!(r[5]["value"], false);
    assert_eq!(r[6]["value"], false);
    let pending = desk["pendingRequests"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{desk}");
    let age = pending[0]["ageMs"].as_u64().unwrap();
    assert!((1000..10_000).contains(&age), "{age}");
    // The text block's table says the same.
    let table = text(&p);
    assert!(
        table.contains("\tdevice\tperipherals\truntime\tclient"),
        "{table}"
    );
    // Without a ping the peripherals are not known: "-".
    assert!(
        table.contains("\tcomputer advanced 51x19\t-\t") || table.contains("\tcomputer 51x19\t-\t"),
        "{table}"
    );

    let small = entry(&probe, &w.trapos("small"));
    assert_eq!(
        small["screen"],
        json!({"width": 39, "height": 13}),
        "{small}"
    );
    drop(long);
}

on_both_runtimes!(probe_says_what_each_computer_is);

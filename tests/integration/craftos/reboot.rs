//! Rebooting through MCP, on the emulator and on CraftOS-PC (rmcp's client): `reboot-computer`
//! answers once the computer has linked again (with how long it took), or says it did not come
//! back; `exec-lua` of `os.reboot()` / `os.shutdown()` reads as a reboot or a shutdown, not as
//! a link that dropped before answering; and `reboot-computer` is `exec` under the policy.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use std::time::Duration;

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use serde_json::json;
use world::{Runtime, World};

async fn reboots_read_as_reboots(rt: Runtime) {
    let w = World::boot(rt, &["rig", "lamp"]).await;
    let rig = w.trapos("rig");

    // A chunk's own os.reboot(): a result that says so, with the output before it.
    let first = w.session().computer(&rig).unwrap().connected_at;
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "rig", "code": "print('going down') os.reboot() print('never')"}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let d = data(&r);
    assert_eq!(d["power"], "reboot", "{d}");
    assert_eq!(d["output"], "going down\n", "{d}");
    assert!(text(&r).contains("os.reboot()"), "{}", text(&r));
    // It does reboot, and links again by itself.
    let limit = rt.link_timeout();
    let relinked = || {
        w.session()
            .computer(&rig)
            .is_none_or(|c| c.connected_at != first)
            && w.linked("rig")
    };
    crate::support::wait_for(limit, relinked, || {
        String::from("never relinked after os.reboot()")
    })
    .await;

    // reboot-computer: answers after the relink, with the time it took.
    let before = w.session().computer(&rig).unwrap().connected_at;
    let r = w.call("reboot-computer", json!({"traposId": "rig"})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let d = data(&r);
    assert_eq!(d["rebooted"], true, "{d}");
    assert!(d["tookMs"].as_u64().unwrap() > 0, "{d}");
    let now = w.session().computer(&rig).unwrap();
    assert!(
        now.online && now.connected_at > before,
        "answered before the relink"
    );

    // exec under the policy: denied, the computer is left alone.
    w.session().set_policy(
        trapdesk::policy::Policy::from_toml("[policy.default]\nagent = { exec = \"deny\" }\n")
            .unwrap(),
    );
    let r = w.call("reboot-computer", json!({"traposId": "rig"})).await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(data(&r)["error"]["code"], "denied", "{}", text(&r));
    assert_eq!(
        w.session().computer(&rig).unwrap().connected_at,
        now.connected_at
    );
    w.session().set_policy(trapdesk::policy::Policy::default());

    // A computer that does not come back (nothing starts the client at boot): said plainly.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "rig", "code": "fs.delete('startup') fs.delete('startup.lua') return fs.exists('startup') or fs.exists('startup.lua')"}),
        )
        .await;
    assert_eq!(data(&r)["returns"][0]["value"], false, "{}", text(&r));
    let r = w
        .call(
            "reboot-computer",
            json!({"traposId": "rig", "timeoutMs": 4000}),
        )
        .await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    let d = data(&r);
    assert_eq!(d["error"]["code"], "timeout", "{d}");
    assert_eq!(d["rebooted"], true, "{d}");
    assert!(
        text(&r).contains("did not link again within 4000 ms"),
        "{}",
        text(&r)
    );

    // A chunk's own os.shutdown() reads as a shutdown.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "lamp", "code": "os.shutdown()"}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(data(&r)["power"], "shutdown", "{}", text(&r));
    assert!(text(&r).contains("os.shutdown()"), "{}", text(&r));
    w.wait_offline("lamp", Duration::from_secs(20)).await;
}

on_both_runtimes!(reboots_read_as_reboots);

/// A computer that answers `os.reboot()` like any chunk (the fake client of
/// tests/integration/support/mcp_fake.rs does: it never reboots) is not reported as rebooted; a
/// `timeoutMs` out of range is refused by name before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_a_reboot_is_not_a_reboot() {
    let h = fake::host().await;
    let (client, _) = fake::connect(&h.url, &h.token).await;
    let r = fake::call(&client, "reboot-computer", json!({"traposId": "miner"})).await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(data(&r)["error"]["code"], "not_rebooted", "{}", text(&r));
    let sent = h.seen.lock().unwrap().requests.len();
    for bad in [0u64, 600_001] {
        let r = fake::call(
            &client,
            "reboot-computer",
            json!({"traposId": "miner", "timeoutMs": bad}),
        )
        .await;
        assert_eq!(r.is_error, Some(true), "{}", text(&r));
        assert_eq!(
            data(&r)["error"]["code"],
            "invalid_arguments",
            "{}",
            text(&r)
        );
        assert_eq!(data(&r)["field"], "timeoutMs", "{}", text(&r));
    }
    assert_eq!(h.seen.lock().unwrap().requests.len(), sent, "nothing sent");
}

//! A computer's identity cannot be taken, on a real CC runtime (CraftOS-PC): the computer
//! installs the client with the player's one-liner and enrols; the shared secret under its id
//! is then refused, the computer stays linked on the same link, and after a restart it links
//! with its own secret. The emulator's version is `tests/identity.rs`.
//! Ignored (with the reason) without `CRAFTOS_PC`; see `tests/support/craftos.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "support/craftos.rs"]
mod craftos;
#[path = "support/mcp_fake.rs"]
mod fake;
mod support;

use std::time::{Duration, Instant};

use craftos::Fleet;
use serde_json::{Value, json};
use support::{FakeComputer, SECRET, hello};
use trapdesk::session::{Origin, RequestSpec};
use trapdesk::trust::secrets;

async fn exec(f: &Fleet, code: &str) -> Value {
    f.host
        .session
        .request(
            "1:miner",
            RequestSpec::new("exec-lua", json!({ "code": code })),
            Origin::Person,
        )
        .await
        .unwrap()
}

fn firm(f: &Fleet) -> Option<secrets::ComputerSecret> {
    secrets::list(f.host.dir.path())
        .unwrap()
        .into_iter()
        .find(|c| c.computer == "1" && !c.pending)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn the_shared_secret_cannot_take_an_enrolled_computers_id_on_craftos() {
    let mut f = Fleet::boot(&["miner"]).await;
    let start = Instant::now();
    while firm(&f).is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "never enrolled; screen:\n{}",
            f.computers[0].screen()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let b = firm(&f).unwrap();
    let v = exec(&f, "return settings.get('trapdesk.secret')").await;
    let own = v["returns"][0]["value"].as_str().unwrap().to_owned();
    assert_eq!(trapdesk::trust::hash(&own), b.secret_sha256);
    let linked_at = f.host.session.computer("1:miner").unwrap().connected_at;

    for h in [hello(1, Some("miner")), {
        let mut h = hello(1, Some("thief"));
        h["enrol"] = json!(true);
        h
    }] {
        let mut c = FakeComputer::connect_raw(&f.host).await;
        c.send(&h).await;
        let (code, seen) = c.recv_close().await;
        assert_eq!(code, Some(4001), "{h}");
        let msg = seen[0]["message"].as_str().unwrap();
        assert!(
            msg.contains("computer 1 is enrolled with its own secret"),
            "{msg}"
        );
    }
    let c = f.host.session.computer("1:miner").unwrap();
    assert!(
        c.online && c.connected_at == linked_at,
        "the real one was replaced"
    );
    assert_eq!(exec(&f, "return 6 * 7").await["returns"][0]["value"], 42);
    assert_eq!(
        exec(&f, "return settings.get('sandbox.password')").await["returns"][0]["value"],
        SECRET,
        "the shared secret stays (it enrols again if the host forgets the computer)"
    );

    // Restarted, it links with its own secret (the binding does not change).
    f.computers[0].restart();
    let start = Instant::now();
    while !f
        .host
        .session
        .computer("1:miner")
        .is_some_and(|c| c.online && c.connected_at != linked_at)
    {
        assert!(
            start.elapsed() < craftos::LINK_TIMEOUT,
            "did not relink; screen:\n{}",
            f.computers[0].screen()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let c = &f.computers[0];
    f.wait_linked(c, craftos::LINK_TIMEOUT).await;
    assert_eq!(firm(&f).unwrap(), b);
    let refusals = f
        .host
        .session
        .recent(1000)
        .into_iter()
        .filter(|e| e.event == "refused" && e.trapos_id.as_deref() == Some("1:miner"))
        .count();
    assert_eq!(refusals, 1, "only the one attempt under its label");
}

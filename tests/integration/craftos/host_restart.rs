//! After the host restarts, every CraftOS-PC computer (a real CC runtime; ignored without
//! `CRAFTOS_PC`, see `tests/integration/support/craftos.rs`) is back within 10 s of the host's
//! `/health` answering, however long the host was away: the client's reconnect schedule is
//! bounded (docs/lua-client.md, "The daemon").
//!
//! The host stays away until each computer has failed five attempts, which is where an
//! unbounded doubling back-off reaches waits longer than the bound; the clock starts when
//! `/health` answers, so the time the host takes to start does not count.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::support::{self, craftos};
use craftos::CraftComputer;

/// The bound docs/lua-client.md states.
const BACK_WITHIN: Duration = Duration::from_secs(10);

/// How many connection attempts the computer's daemon has logged as failed.
fn failed_attempts(files: &Path) -> usize {
    std::fs::read_to_string(files.join("trapdesk/daemon.log"))
        .unwrap_or_default()
        .matches("connect failed")
        .count()
}

fn back(host: &trapdesk::host::Host, c: &CraftComputer, after: SystemTime) -> bool {
    host.session.computer(&c.trapos_id).is_some_and(|s| {
        s.online && s.connected_at > after && s.serves.iter().any(|x| x == "exec-lua")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn after_a_host_restart_every_computer_is_back_within_ten_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let settings = support::settings(dir.path());
    let host = trapdesk::host::Host::start(settings.clone(), true)
        .await
        .unwrap();
    let launcher = craftos::launcher();
    let port = host.gateway_addr.port();
    let computers: Vec<CraftComputer> = ["north", "south", "west"]
        .iter()
        .zip(1u64..)
        .map(|(label, id)| CraftComputer::spawn(&launcher, id, label, port))
        .collect();
    for c in &computers {
        support::wait_for(
            craftos::LINK_TIMEOUT,
            || back(&host, c, SystemTime::UNIX_EPOCH),
            || format!("{} never linked:\n{}", c.trapos_id, c.screen()),
        )
        .await;
    }

    let gateway_bind = host.gateway_addr;
    let failed_before: Vec<usize> = computers
        .iter()
        .map(|c| failed_attempts(&c.files()))
        .collect();
    host.stop().await;
    let stopped = SystemTime::now();
    // Away long enough for five failed attempts on every computer.
    support::wait_for(
        Duration::from_secs(120),
        || {
            computers
                .iter()
                .zip(&failed_before)
                .all(|(c, before)| failed_attempts(&c.files()) >= before + 5)
        },
        || "the computers did not try five times while the host was away".to_owned(),
    )
    .await;

    // The same address and data dir, as a restarted process has them.
    let mut again = settings;
    again.gateway_bind = gateway_bind;
    let host = trapdesk::host::Host::start(again, true).await.unwrap();
    let health = format!("http://{gateway_bind}/health");
    let http = reqwest::Client::new();
    support::wait_ok(Duration::from_secs(30), async || {
        match http.get(&health).send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            other => Err(format!("/health does not answer: {other:?}")),
        }
    })
    .await;
    let answered = Instant::now();

    // One computer after the other: a computer found back while an earlier one was waited for
    // is counted as back when that wait ended, which only makes its time longer.
    for c in &computers {
        let limit = (3 * BACK_WITHIN).saturating_sub(answered.elapsed());
        let came = support::holds_within(limit, || back(&host, c, stopped)).await;
        let took = answered.elapsed();
        println!("{} back after {took:?} (/health answering)", c.trapos_id);
        assert!(
            came && took <= BACK_WITHIN,
            "{} {} {took:?} after /health answered (bound {BACK_WITHIN:?}); daemon.log:\n{}",
            c.trapos_id,
            if came { "back only" } else { "not back" },
            std::fs::read_to_string(c.files().join("trapdesk/daemon.log")).unwrap_or_default()
        );
    }
    drop(computers);
    host.stop().await;
}

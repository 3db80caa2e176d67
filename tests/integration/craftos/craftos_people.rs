//! What a person sees on a real CC runtime (CraftOS-PC): the installer with a wrong secret says
//! the host refused it and what to do, and the host logs the refusal. Ignored (with the
//! reason) unless built with `CRAFTOS_PC` naming a CraftOS-PC launcher; see
//! `tests/integration/support/craftos.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, craftos};

use std::time::Duration;

use craftos::{CraftComputer, LINK_TIMEOUT};
use support::{start_host, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn the_installer_says_a_wrong_secret_was_refused() {
    let launcher = craftos::launcher();
    let host = start_host().await;
    let c = CraftComputer::spawn_with_secret(
        &launcher,
        3,
        "wrong",
        host.gateway_addr.port(),
        "not-the-secret",
    );
    c.wait_screen(LINK_TIMEOUT, |s| {
        s.contains("trapdesk refused this computer")
    })
    .await;
    c.wait_screen(Duration::from_secs(5), |s| {
        s.contains("set sandbox.password")
    })
    .await;
    assert!(!c.screen().contains("Linked to trapdesk"));
    wait_until(|| {
        host.session
            .recent(100)
            .iter()
            .any(|e| e.event.as_str() == "refused" && e.who.as_deref() == Some("3:wrong"))
    })
    .await;
    assert!(host.session.computers().is_empty());
    drop(c);
}

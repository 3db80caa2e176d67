//! After the installer one-liner typed at the prompt of a CraftOS-PC computer (a real CC
//! runtime with CC's own shell; ignored without `CRAFTOS_PC`, see
//! `tests/integration/support/craftos.rs`), the player's shell behaves as it would without
//! trapdesk: the banner shows once (after the install and at every boot), and `exit` shuts the
//! computer down instead of dropping to a second prompt.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use crate::support::{self, world};
use serde_json::json;
use world::{Machine, Runtime, World};

/// CC's banner, `os.version()` on CC: Tweaked 1.110.2's ROM.
const BANNER: &str = "CraftOS 1.9";

/// The rows the screen ended up with, in drawing order: headless CraftOS-PC writes a row each
/// time it changes, so a row that the next one extends (a line printed word by word, a blink)
/// is the same row, drawn again.
fn rows(screen: &str) -> Vec<&str> {
    let all: Vec<&str> = screen.lines().collect();
    all.iter()
        .enumerate()
        .filter(|(i, r)| all.get(i + 1).is_none_or(|next| !next.starts_with(**r)))
        .map(|(_, r)| *r)
        .collect()
}

fn banners(screen: &str) -> usize {
    rows(screen).iter().filter(|r| **r == BANNER).count()
}

/// Waits until the player's prompt is the last row drawn (after `first`, a line printed above
/// it).
async fn wait_prompt(w: &World, first: &str) {
    let c = w.computer("desk").craft();
    c.wait_screen(Duration::from_secs(60), |s| {
        let r = rows(s);
        r.iter().any(|l| l.contains(first)) && r.last().is_some_and(|l| l.starts_with('>'))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn after_an_install_at_the_prompt_exit_and_the_banner_are_ccs() {
    // The computer's first program types the one-liner, as a player does at the prompt.
    let mut w = World::boot(Runtime::CraftOs, &["desk"]).await;
    w.wait_serves("desk", &["screen", "input"]).await;
    wait_prompt(&w, "Linked to trapdesk as").await;
    let screen = w.computer("desk").craft().screen();
    assert_eq!(
        banners(&screen),
        1,
        "the banner again after the install:\n{}",
        rows(&screen).join("\n")
    );

    // `exit` at the player's prompt: CC shuts a computer down when its shell ends. The answer
    // may not come: the computer goes before it can send it.
    let r = w
        .call(
            "send-input",
            json!({"traposId": w.trapos("desk"), "text": "exit\n", "waitMs": 0}),
        )
        .await;
    assert!(
        r.is_error != Some(true) || format!("{r:?}").contains("disconnected"),
        "{r:?}"
    );
    let computer = w.computer_mut("desk");
    let off = support::holds_within(Duration::from_secs(30), || !computer.running()).await;
    assert!(
        off,
        "`exit` did not shut the computer down; screen:\n{}",
        rows(&w.computer("desk").craft().screen()).join("\n")
    );

    // The next boot: the banner once, then the client's line and the prompt.
    if let Machine::Craft(c) = &mut w.computer_mut("desk").machine {
        c.restart();
    }
    w.wait_linked("desk", Runtime::CraftOs.link_timeout()).await;
    wait_prompt(&w, "trapdesk: linked as").await;
    let screen = w.computer("desk").craft().screen();
    assert_eq!(
        banners(&screen),
        1,
        "the banner twice at boot:\n{}",
        rows(&screen).join("\n")
    );
}

//! A wrong secret, fixed the way the computer says: a CraftOS-PC computer (a real CC runtime;
//! ignored without `CRAFTOS_PC`, see `tests/integration/support/craftos.rs`) whose player kept
//! the installer one-liner, with a mistyped secret, at the top of a startup program that never
//! returns. The computer says the secret is wrong and to run the installer again with the right
//! one; the player stops their program (Ctrl+T), types that at the prompt, and the computer
//! links at once, stores the secret and rewrites the kept line, so that the next boot links and
//! the installer line says there is nothing to do.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::{Duration, SystemTime};

use crate::support::{self, SECRET, TestHost, craftos, start_host};
use craftos::{CraftComputer, Options};

const WRONG: &str = "mistyped-secret-4711";

/// A farm that never returns (`sleep`, so that Ctrl+T ends it, as it ends most programs).
const FARM: &str = "while true do sleep(1) end\n";

fn linked_after(host: &TestHost, c: &CraftComputer, after: SystemTime) -> bool {
    host.session.computer(&c.trapos_id).is_some_and(|s| {
        s.online && s.connected_at > after && s.serves.iter().any(|x| x == "exec-lua")
    })
}

/// The screen's rows as one text, a space between rows: CC wraps a long line at a space, which
/// the row keeps as its trailing blank.
fn text(rows: &[String]) -> String {
    rows.join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Waits until the screen shows every one of `lines` (each may wrap over rows).
async fn wait_rows(c: &CraftComputer, lines: &[&str]) -> Vec<String> {
    support::wait_some(
        Duration::from_secs(60),
        || {
            let rows = c.raw_rows();
            let all = text(&rows);
            lines.iter().all(|l| all.contains(l)).then_some(rows)
        },
        || {
            format!(
                "the screen never showed {lines:?}:\n{}",
                c.raw_rows().join("\n")
            )
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn the_computers_advice_for_a_wrong_secret_works_and_survives_a_reboot() {
    let host = start_host().await;
    let port = host.gateway_addr.port();
    let line = |secret: &str| format!("wget run http://127.0.0.1:{port}/install.lua {secret}");
    let startup = format!("shell.run(\"{}\")\n{FARM}", line(WRONG));
    // Raw mode (a size) is what lets the test type at a computer that is not linked.
    let opts = Options {
        size: Some((51, 19)),
        ..Options::default()
    };
    let mut c = CraftComputer::spawn_program_with(&craftos::launcher(), 1, "farm", &startup, opts);

    // What the computer says about the wrong secret, and what to type.
    let advice = line("<secret>");
    let rows = wait_rows(
        &c,
        &["The secret is wrong", "run the installer again", &advice],
    )
    .await;
    println!("the screen, refused:\n{}", rows.join("\n"));
    assert!(!linked_after(&host, &c, SystemTime::UNIX_EPOCH));

    // The player stops the farm (Ctrl+T) and gets the prompt, then follows the advice.
    let before = SystemTime::now();
    c.queue_event("terminate", &[]);
    support::wait_for(
        Duration::from_secs(30),
        || c.raw_rows().iter().any(|r| r.starts_with('>')),
        || format!("no prompt after Ctrl+T:\n{}", c.raw_rows().join("\n")),
    )
    .await;
    c.type_line(&line(SECRET));
    // The last line the installer prints is waited for too: it comes a moment after
    // "stored", and a loaded machine showed the screen between the two.
    let rows = wait_rows(
        &c,
        &[
            "Linked to trapdesk as 1:farm",
            "The secret given is stored",
            "carries it now.",
        ],
    )
    .await;
    println!(
        "the screen, after the installer again:\n{}",
        rows.join("\n")
    );
    assert!(
        text(&rows).contains("The install line in /startup.player.lua carries it now."),
        "{}",
        rows.join("\n")
    );
    support::wait_for(
        Duration::from_secs(20),
        || linked_after(&host, &c, before),
        || "not linked after the installer again".to_owned(),
    )
    .await;
    let kept = std::fs::read_to_string(c.files().join("startup.player.lua")).unwrap();
    assert!(
        kept.contains(&line(SECRET)) && !kept.contains(WRONG),
        "the kept line: {kept}"
    );

    // The next boot: the client links with the stored secret, and the kept line, run again
    // inside the wrapper, finds nothing to do (and undoes nothing).
    let reboot = SystemTime::now();
    c.restart();
    support::wait_for(
        craftos::LINK_TIMEOUT,
        || linked_after(&host, &c, reboot),
        || format!("not linked after the reboot:\n{}", c.raw_rows().join("\n")),
    )
    .await;
    let rows = wait_rows(&c, &["nothing to do"]).await;
    println!("the screen, next boot:\n{}", rows.join("\n"));
    let since = before
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let (log, _) = host.session.log_and_calls();
    let refused_after_fix = log
        .iter()
        .filter(|e| u128::from(e.time_ms) > since && format!("{e:?}").contains("wrong secret"))
        .count();
    assert_eq!(
        refused_after_fix, 0,
        "the host refused a secret after the fix"
    );
}

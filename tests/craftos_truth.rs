//! The client-side truths on a real CC runtime (CraftOS-PC, headless), through the MCP
//! endpoint with a real rmcp client: output kept head and tail with true totals, programs run
//! inside a chunk (`shell.run`, `os.run`, `dofile`) captured by the chunk's own terminal with
//! `printError` on the err stream, errors shown as the console shows values with tracebacks cut
//! at the chunk, and returned values larger than a result keeping their descriptor. The same
//! cases run on the emulator in `tests/e2e_truth.rs`. Skipped (with one line) without
//! `CRAFTOS_PC`; see `tests/support/craftos.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod support;

#[path = "support/mcp_fake.rs"]
mod fake;

#[path = "support/craftos.rs"]
mod craftos;

#[path = "support/truth_cases.rs"]
mod cases;

use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn client_side_truths_on_craftos_pc() {
    let f = craftos::Fleet::boot(&["truth"]).await;
    // The runtime is CraftOS-PC, not the emulator.
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "truth", "code": "return _HOST"}),
        )
        .await;
    let host = fake::data(&r)["returns"][0]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    eprintln!("client_side_truths_on_craftos_pc: _HOST = {host}");
    assert!(host.contains("CraftOS-PC"), "{host}");
    cases::large_output_keeps_head_and_tail(&f.client, "truth").await;
    cases::programs_run_inside_a_chunk_are_captured(&f.client, "truth").await;
    cases::errors_read_true(&f.client, "truth").await;
    cases::big_returns_keep_their_descriptor(&f.client, "truth").await;
    // What the chunk drew did not reach the player's screen.
    let screen = f.computer("truth").screen();
    assert!(!screen.contains("p complains"), "{screen}");
    // The player's terminal is the player's again: the prompt still answers.
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "truth", "code": "return term.current() == term.native()"}),
        )
        .await;
    assert_eq!(
        fake::data(&r)["returns"][0]["value"],
        false,
        "a chunk sees its own terminal"
    );
}

//! Agents read the truth, end to end: rmcp's client over Streamable HTTP → the host's MCP
//! endpoint → session → gateway → emulated computers running the real Lua client. Every count,
//! cursor and failure an agent reads is checked against what really happened: paging that
//! returns every line once, output kept head and tail with true totals, the output so far on
//! every failure, who cancelled, `shutting_down` at once, an honest session log, programs run
//! inside a chunk captured, and the smaller truths (end of file, ranges, unknown ids, plurals).
//! The client-side cases run on CraftOS-PC too (ignored without `CRAFTOS_PC`, see
//! `tests/integration/support/craftos.rs`).
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake, truth_cases as cases, world};

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::support::world::on_both_runtimes;
use fake::{Client, call, connect, data, start_call, text};
use rmcp::model::{CallToolResult, ServerResult};
use serde_json::{Value, json};
use support::{emulated, start_host, wait_until};
use trapdesk::session::Origin;
use world::{Runtime, Spec, World};

fn tool_result(r: ServerResult) -> CallToolResult {
    match r {
        ServerResult::CallToolResult(r) => r,
        other => panic!("not a tool result: {other:?}"),
    }
}

async fn agent(host: &trapdesk::host::Host) -> Client {
    connect(&host.mcp_url(), &host.local_token).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computer_output_pages_every_line_exactly_once() {
    let host = start_host().await;
    let _c = emulated(&host, 1, Some("miner")).await;
    let client = agent(&host).await;
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": "for i=1,3000 do print('L'..i..' '..string.rep('z',40)) end"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let rid = data(&r)["requestId"].as_str().unwrap().to_owned();
    let mut seen: Vec<String> = Vec::new();
    let mut before: Option<u64> = None;
    for _ in 0..100 {
        let mut args = json!({"traposId": "miner", "requestId": rid, "lines": 2000});
        if let Some(b) = before {
            args["before"] = json!(b);
        }
        let r = call(&client, "computer-output", args).await;
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
        let size = fake::largest_block(&r);
        assert!(size <= 24 * 1024, "a page is {size} bytes");
        let d = data(&r);
        assert!(
            d.get("linesTruncated").is_none(),
            "the page was cut after paging: {d}"
        );
        let lines = fake::page_lines(&d);
        let first = text(&r).lines().next().unwrap().to_owned();
        assert!(
            first.starts_with(&format!("{} lines of 1:miner", lines.len())),
            "the count says what is returned: {first} ({} lines)",
            lines.len()
        );
        let page: Vec<String> = lines
            .iter()
            .map(|l| l["text"].as_str().unwrap().to_owned())
            .collect();
        seen.splice(0..0, page);
        match d["before"].as_u64() {
            Some(b) => {
                assert!(first.contains(&format!("before={b}")), "{first}");
                before = Some(b);
            }
            None => break,
        }
    }
    let want: Vec<String> = (1..=3000)
        .map(|i| format!("L{i} {}", "z".repeat(40)))
        .collect();
    assert_eq!(seen.len(), 3000);
    assert_eq!(seen, want, "every line, once, in order");

    // An id the host does not know is said to be unknown.
    let r = call(
        &client,
        "computer-output",
        json!({"traposId": "miner", "requestId": "h-999999"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(data(&r)["error"]["code"], "unknown_request");
    assert!(text(&r).contains("h-999999"), "{}", text(&r));
}

/// The client-side cases of `tests/integration/support/truth_cases.rs`, then what only a whole
/// computer shows: the chunk's drawing kept off the player's screen and its terminal its own, and
/// the whole of a large output readable page by page.
async fn client_side_truths(rt: Runtime) {
    // Scrollback for every line of every case (the default keeps the newest 10,000 entries).
    let w = World::boot_adjusted(
        rt,
        |s| s.scrollback_lines = 50_000,
        &[("miner", Spec::default())],
    )
    .await;
    let client = &w.client;
    // The runtime is the one named, not the other answering alike.
    let r = call(
        client,
        "exec-lua",
        json!({"traposId": "miner", "code": "return _HOST"}),
    )
    .await;
    let host = data(&r)["returns"][0]["value"].as_str().unwrap().to_owned();
    eprintln!("client_side_truths on {}: _HOST = {host}", rt.name());
    let want = match rt {
        Runtime::Emulator => "trapdesk emulator",
        Runtime::CraftOs => "CraftOS-PC",
    };
    assert!(host.contains(want), "{host}");
    cases::large_output_keeps_head_and_tail(client, "miner").await;
    cases::programs_run_inside_a_chunk_are_captured(client, "miner").await;
    cases::errors_read_true(client, "miner").await;
    cases::big_returns_keep_their_descriptor(client, "miner").await;
    // What the chunk drew did not reach the player's screen.
    let screen = w.computer("miner").screen();
    assert!(!screen.contains("p complains"), "{screen}");
    // The player's terminal is the player's again: a chunk sees its own terminal.
    let r = call(
        client,
        "exec-lua",
        json!({"traposId": "miner", "code": "return term.current() == term.native()"}),
    )
    .await;
    assert_eq!(
        data(&r)["returns"][0]["value"],
        false,
        "a chunk sees its own terminal"
    );
    // The whole of the large output is readable with computer-output.
    let r = call(
        client,
        "exec-lua",
        json!({"traposId": "miner", "code": "for i=1,10000 do print('line '..i) end return 'done'"}),
    )
    .await;
    let rid = data(&r)["requestId"].as_str().unwrap().to_owned();
    let mut all: Vec<String> = Vec::new();
    let mut before: Option<u64> = None;
    loop {
        let mut args = json!({"traposId": "miner", "requestId": rid, "lines": 2000});
        if let Some(b) = before {
            args["before"] = json!(b);
        }
        let d = data(&call(client, "computer-output", args).await);
        let page: Vec<String> = fake::page_lines(&d)
            .iter()
            .map(|l| l["text"].as_str().unwrap().to_owned())
            .collect();
        all.splice(0..0, page);
        match d["before"].as_u64() {
            Some(b) => before = Some(b),
            None => break,
        }
    }
    let want: Vec<String> = (1..=10_000).map(|i| format!("line {i}")).collect();
    assert_eq!((all.len(), all.first()), (10_000, want.first()));
    assert!(all == want, "every line, once, in order");
}

on_both_runtimes!(client_side_truths);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failure_carries_the_output_so_far() {
    let host = start_host().await;
    let c = emulated(&host, 1, Some("miner")).await;
    let client = agent(&host).await;

    // Timeout.
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "timeoutMs": 2000,
            "code": "print('start') sleep(0.3) print('mid') sleep(5)"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let d = data(&r);
    assert_eq!(d["error"]["code"], "timeout", "{d}");
    assert_eq!(d["output"], "start\nmid\n", "{d}");
    assert_eq!(d["outputLines"], 2);

    // Cancelled by the person: who, and after how long.
    let slow = "print('working') sleep(10)";
    let h = start_call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": slow}),
    )
    .await;
    let rid = running(&host, "working").await;
    host.session.cancel_by(&rid, &Origin::Person).unwrap();
    let r = tool_result(h.await_response().await.unwrap());
    let d = data(&r);
    assert_eq!(d["error"]["code"], "cancelled", "{d}");
    assert_eq!(d["cancelledBy"], "person");
    assert_eq!(d["output"], "working\n");
    let first = text(&r).lines().next().unwrap().to_owned();
    assert!(
        first.starts_with("cancelled: cancelled by person after "),
        "{first}"
    );
    assert!(first.ends_with(" s") || first.ends_with(" ms"), "{first}");
    assert!(d["elapsedMs"].as_u64().unwrap() > 0);

    // Cancelled by another agent, with cancel-request: named by its client name.
    let other = agent(&host).await;
    let h = start_call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": slow}),
    )
    .await;
    let rid = running(&host, "working").await;
    let cr = call(&other, "cancel-request", json!({"requestId": rid})).await;
    assert_eq!(cr.is_error, Some(false), "{}", text(&cr));
    let r = tool_result(h.await_response().await.unwrap());
    let by = data(&r)["cancelledBy"].as_str().unwrap().to_owned();
    assert_eq!(by, "test-agent", "{}", text(&r));
    assert!(
        text(&r).contains(&format!("cancelled by {by} after")),
        "{}",
        text(&r)
    );
    // The log says it too.
    let log = data(&call(&client, "session-log", json!({"limit": 1000})).await);
    assert!(
        log["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event"] == "call"
                && e["requestId"] == rid.as_str()
                && e["detail"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("cancelled by {by} after"))),
        "{log}"
    );

    // Disconnected: the computer goes away mid-run.
    let h = start_call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": slow}),
    )
    .await;
    running(&host, "working").await;
    c.shutdown();
    let r = tool_result(h.await_response().await.unwrap());
    let d = data(&r);
    assert_eq!(d["error"]["code"], "disconnected", "{d}");
    assert_eq!(d["output"], "working\n", "{d}");
}

/// Waits until a pending request of the session has printed `marker`; returns its id.
async fn running(host: &support::TestHost, marker: &str) -> String {
    let mut rid = None;
    wait_until(|| {
        rid = host.session.pending().into_iter().find_map(|p| {
            let out = host.session.output_since(&p.trapos_id, 0);
            out.iter()
                .any(|i| {
                    matches!(&i.entry, trapdesk::session::OutputEntry::Line { request_id, text, .. }
                        if request_id.as_deref() == Some(p.request_id.as_str()) && text == marker)
                })
                .then_some(p.request_id)
        });
        rid.is_some()
    })
    .await;
    rid.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_a_pending_call_at_once() {
    let support::TestHost { host, dir } = start_host().await;
    let th = support::TestHost { host, dir };
    let _c = emulated(&th, 1, Some("miner")).await;
    let client = agent(&th).await;
    let h = start_call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": "print('so far') sleep(30)"}),
    )
    .await;
    running(&th, "so far").await;
    let support::TestHost { host, dir: _dir } = th;
    let started = Instant::now();
    let stop = tokio::spawn(host.stop());
    let r = tool_result(h.await_response().await.unwrap());
    let took = started.elapsed();
    let d = data(&r);
    assert_eq!(r.is_error, Some(true));
    assert_eq!(d["error"]["code"], "shutting_down", "{d}");
    assert_eq!(d["output"], "so far\n", "{d}");
    assert!(took < Duration::from_secs(2), "the result took {took:?}");
    stop.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_log_counts_honestly_and_pages_back() {
    let host = start_host().await;
    let _c = emulated(&host, 1, Some("miner")).await;
    let client = agent(&host).await;
    // Enough long entries (one per call) that one answer cannot hold them all.
    let calls = 150;
    for i in 0..calls {
        let code = format!("return '{i}' -- {}", "x".repeat(300));
        call(
            &client,
            "exec-lua",
            json!({"traposId": "miner", "code": code}),
        )
        .await;
    }
    let mut seqs: Vec<u64> = Vec::new();
    let mut runs = 0;
    let mut before: Option<u64> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"limit": 1000});
        if let Some(b) = before {
            args["before"] = json!(b);
        }
        let r = call(&client, "session-log", args).await;
        pages += 1;
        let d = data(&r);
        let events = d["events"].as_array().unwrap();
        let first = text(&r).lines().next().unwrap().to_owned();
        assert!(
            first.starts_with(&format!("{} event", events.len())),
            "{first} vs {}",
            events.len()
        );
        assert!(d.get("eventsTruncated").is_none(), "{first}");
        let page: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        runs += events.iter().filter(|e| e["what"] == "exec-lua").count();
        if pages > 1 {
            // Events logged since the first page are newer, never in an older page.
            assert!(page.iter().all(|s| *s < seqs[0]));
        }
        seqs.splice(0..0, page);
        match d["before"].as_u64() {
            Some(b) => {
                assert_eq!(b, events[0]["seq"].as_u64().unwrap());
                before = Some(b);
            }
            None => break,
        }
    }
    assert!(
        pages > 1,
        "the log fit in one page; the test proves nothing"
    );
    let unique: HashSet<u64> = seqs.iter().copied().collect();
    assert_eq!(unique.len(), seqs.len(), "no event twice");
    assert_eq!(seqs[0], 1, "paged back to the first event");
    // One entry per call, each call once: none skipped.
    assert!(seqs.windows(2).all(|w| w[1] > w[0]), "oldest first");
    assert_eq!(runs, calls, "every call, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smaller_truths() {
    let host = start_host().await;
    let _c = emulated(&host, 1, Some("miner")).await;
    let client = agent(&host).await;
    call(
        &client,
        "write-file",
        json!({"traposId": "miner", "path": "d/eighteen.txt", "content": "eighteen bytes..\n\n"}),
    )
    .await;
    // End of file: no invitation to read on.
    let r = call(
        &client,
        "read-file",
        json!({"traposId": "miner", "path": "d/eighteen.txt", "offset": 10}),
    )
    .await;
    let d = data(&r);
    assert_eq!(
        (d["bytes"].clone(), d["nextOffset"].clone()),
        (json!(8), Value::Null)
    );
    assert!(!text(&r).contains("read on"), "{}", text(&r));
    assert!(text(&r).contains("the end of the file"), "{}", text(&r));
    let r = call(
        &client,
        "read-file",
        json!({"traposId": "miner", "path": "d/eighteen.txt", "offset": 18}),
    )
    .await;
    assert_eq!(data(&r)["nextOffset"], Value::Null);
    assert!(!text(&r).contains("read on"), "{}", text(&r));
    // length 0 would never move on: refused, naming the field.
    let r = call(
        &client,
        "read-file",
        json!({"traposId": "miner", "path": "d/eighteen.txt", "length": 0}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["field"], "length", "{}", text(&r));
    // timeoutMs outside 1..=600000.
    for ms in [0u64, 99_999_999] {
        let r = call(
            &client,
            "exec-lua",
            json!({"traposId": "miner", "code": "return 1", "timeoutMs": ms}),
        )
        .await;
        assert_eq!(r.is_error, Some(true), "{ms}");
        assert_eq!(data(&r)["field"], "timeoutMs");
    }
    // Plurals.
    let r = call(
        &client,
        "list-files",
        json!({"traposId": "miner", "path": "d"}),
    )
    .await;
    assert!(text(&r).starts_with("1 entry in d"), "{}", text(&r));
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": "print('one')"}),
    )
    .await;
    assert!(text(&r).starts_with("ok, 1 line of output"), "{}", text(&r));
    // Nothing printed: output is not called cut.
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "miner", "code": "return 1"}),
    )
    .await;
    assert_eq!(data(&r)["outputTruncated"], false);
}

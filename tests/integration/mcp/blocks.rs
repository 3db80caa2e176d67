//! What a client receives costs about what it carries, once (docs/mcp.md, "Sizing"): bulk
//! (a file's content, output pages) is in `structuredContent` alone on success; whether a
//! result was cut, whether more follows and the cursor are in both blocks; an `isError` text
//! is complete on its own. Measured through a real MCP client (rmcp) as a client receives it:
//! every content block plus the JSON of `structuredContent`.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use base64::Engine;
use fake::{data, text};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use world::{Runtime, World};

/// Characters a client receives for a result: every text block and the structured content.
fn cost(r: &CallToolResult) -> usize {
    let texts: usize = r
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.len())
        .sum();
    texts
        + r.structured_content
            .as_ref()
            .map_or(0, |v| v.to_string().len())
}

/// Reading 300 KB of bytes back costs at most 1.5 times their base64, and no piece says it is
/// shorter than asked when no length was asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_300_kb_back_costs_about_its_size_once() {
    let w = World::boot(Runtime::Emulator, &["store"]).await;
    let bytes: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let wrote = w
        .call(
            "write-file",
            json!({"traposId": "store", "path": "blob.bin", "content": b64, "encoding": "base64"}),
        )
        .await;
    assert_ne!(wrote.is_error, Some(true), "{}", text(&wrote));
    let (mut got, mut spent, mut calls, mut offset) = (Vec::new(), 0, 0, 0u64);
    loop {
        let r = w
            .call(
                "read-file",
                json!({"traposId": "store", "path": "blob.bin", "offset": offset}),
            )
            .await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        spent += cost(&r);
        calls += 1;
        let d = data(&r);
        let first = text(&r);
        assert!(!first.contains("fewer than asked"), "{first}");
        let piece = d["content"].as_str().unwrap_or_default();
        got.extend(
            base64::engine::general_purpose::STANDARD
                .decode(piece)
                .unwrap(),
        );
        match d["nextOffset"].as_u64() {
            Some(next) => {
                // The cursor and the next step are in the text's first line too.
                assert!(first.contains(&format!("offset {next}")), "{first}");
                offset = next;
            }
            None => break,
        }
        assert!(calls < 100, "no end after {calls} calls");
    }
    assert_eq!(got.len(), bytes.len());
    assert!(got == bytes, "the bytes read back differ");
    let limit = b64.len() * 3 / 2;
    println!("read 300,000 bytes back: {calls} calls, {spent} characters (limit {limit})");
    assert!(
        spent <= limit,
        "reading {} bytes back took {calls} calls and {spent} characters (limit {limit})",
        bytes.len()
    );
}

/// The lines of an output page (the compact shape: the text once, a time per line).
fn page_lines(d: &Value) -> Vec<String> {
    let out = d["output"].as_str().unwrap_or_default();
    let out = out.strip_suffix('\n').unwrap_or(out);
    if out.is_empty() {
        return Vec::new();
    }
    out.split('\n').map(str::to_owned).collect()
}

/// Following a run of 5,000 lines to its end with `wait-request` and `after` gets every line
/// once and then its result without the output again: at most 1.2 times (its output plus
/// 20,000) characters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_a_run_to_its_end_sends_its_output_once() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    let code = "for i = 1, 5000 do print('line ' .. i) if i % 500 == 0 then sleep(0.1) end end return 'done'";
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": code, "detach": true}),
        )
        .await;
    let id = data(&r)["requestId"].as_str().unwrap().to_owned();
    let (mut lines, mut spent, mut calls, mut cursor) = (Vec::new(), cost(&r), 0, 0u64);
    let end = loop {
        let r = w
            .call(
                "wait-request",
                json!({"requestId": id, "after": cursor, "timeoutMs": 300}),
            )
            .await;
        spent += cost(&r);
        calls += 1;
        let d = data(&r);
        lines.extend(page_lines(&d));
        if let Some(times) = d["times"].as_array() {
            assert_eq!(times.len(), page_lines(&d).len(), "a time per line: {d}");
        }
        cursor = d["cursor"].as_u64().unwrap_or(cursor);
        if d["status"] != "running" && d["more"] != true {
            break d;
        }
        assert!(calls < 200, "no end after {calls} calls");
    };
    assert_eq!(end["status"], "ok", "{end}");
    assert_eq!(end["returns"][0]["value"], "done", "{end}");
    let want: Vec<String> = (1..=5000).map(|i| format!("line {i}")).collect();
    assert_eq!(
        lines.len(),
        want.len(),
        "followed {} of 5000 lines in {calls} calls",
        lines.len()
    );
    assert!(
        lines == want,
        "the lines followed differ from those printed"
    );
    let output: usize = want.iter().map(|l| l.len() + 1).sum();
    let limit = (output + 20_000) * 6 / 5;
    println!(
        "followed {output} characters of output: {calls} calls, {spent} characters (limit {limit})"
    );
    assert!(
        spent <= limit,
        "following {output} characters of output took {calls} calls and {spent} characters (limit {limit})"
    );
}

/// On success the bulk is in `structuredContent` alone; the text's first line says what
/// came, whether more follows and the cursor. An `isError` text is complete on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_goes_once_and_an_error_text_is_whole() {
    let w = World::boot(Runtime::Emulator, &["box"]).await;
    let body = "-- a program of some length\n".repeat(40);
    w.call(
        "write-file",
        json!({"traposId": "box", "path": "p.lua", "content": body}),
    )
    .await;
    let r = w
        .call("read-file", json!({"traposId": "box", "path": "p.lua"}))
        .await;
    assert_eq!(data(&r)["content"], body.as_str());
    assert!(
        !text(&r).contains("a program of some length"),
        "{}",
        text(&r)
    );

    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "box", "code": "for i = 1, 50 do print('row ' .. i) end"}),
        )
        .await;
    assert!(data(&r)["output"].as_str().unwrap().contains("row 50"));
    assert!(!text(&r).contains("row 50"), "{}", text(&r));

    // A failure's text says everything: the output before the error, the error, the traceback.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "box", "code": "print('before the fall') error('boom')"}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(t.contains("before the fall") && t.contains("boom"), "{t}");

    // A returned table cut at the client's entry limit says so in the text too.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "box", "code": "local t = {} for i = 1, 1500 do t[i] = i end return t"}),
        )
        .await;
    assert_eq!(data(&r)["returns"][0]["truncated"], true, "{}", data(&r));
    let first = text(&r);
    let first = first.lines().next().unwrap_or_default();
    assert!(first.contains("truncated"), "{first}");
}

/// Output pages are compact: the shared fields once, the lines' text once, a time per line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_pages_are_compact() {
    let w = World::boot(Runtime::Emulator, &["box"]).await;
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "box", "code": "for i = 1, 20 do print('n' .. i) end printError('bad')"}),
        )
        .await;
    let id = data(&r)["requestId"].as_str().unwrap().to_owned();
    let r = w
        .call(
            "computer-output",
            json!({"traposId": "box", "requestId": id}),
        )
        .await;
    let d = data(&r);
    assert_eq!(d["requestId"], id.as_str(), "{d}");
    let lines = page_lines(&d);
    assert_eq!(lines.len(), 21, "{d}");
    assert_eq!(lines[0], "n1", "{d}");
    assert_eq!(d["times"].as_array().map(Vec::len), Some(21), "{d}");
    assert!(d["at"].as_u64().is_some(), "{d}");
    assert_eq!(d["err"], json!([20]), "{d}");
    assert!(d.get("lines").is_none(), "{d}");
    // About the text once, a few characters a line beside it.
    let size = d.to_string().len();
    assert!(size < 400, "{size}: {d}");
    assert!(!text(&r).contains("n20"), "{}", text(&r));
}

/// `probe-computers` says the kinds served once, when they are the same for all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_rows_share_one_serves_list() {
    let w = World::boot(Runtime::Emulator, &["a", "b"]).await;
    let r = w.call("probe-computers", json!({})).await;
    let d = data(&r);
    assert!(d["serves"].as_array().is_some_and(|s| !s.is_empty()), "{d}");
    let rows = d["computers"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{d}");
    for row in rows {
        assert!(row.get("serves").is_none(), "{row}");
    }
}

//! The client-side truth cases (what an agent reads is what happened), written once and run
//! through a real MCP client against any computer running the real Lua client: the emulator
//! and CraftOS-PC (`tests/integration/lua/e2e_truth.rs`, `client_side_truths`).
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use serde_json::{Value, json};

use crate::support::mcp_fake::{Client, call, data, text};

/// Runs `code` on `target` and returns the result's text and structured content.
async fn exec(client: &Client, target: &str, code: &str) -> (String, Value, bool) {
    let r = call(
        client,
        "exec-lua",
        json!({"traposId": target, "code": code}),
    )
    .await;
    (text(&r), data(&r), r.is_error == Some(true))
}

/// 10,000 printed lines then a return: the result keeps the head and the tail of the output,
/// states the true totals, and points to computer-output, which has every line.
pub async fn large_output_keeps_head_and_tail(client: &Client, target: &str) {
    let (t, d, err) = exec(
        client,
        target,
        "for i=1,10000 do print('line '..i) end return 'done'",
    )
    .await;
    assert!(!err, "{t}");
    let total: usize = (1..=10_000).map(|i| format!("line {i}\n").len()).sum();
    assert!(
        t.starts_with("returned \"done\"; 10000 lines of output"),
        "{}",
        t.lines().next().unwrap()
    );
    assert!(t.lines().next().unwrap().contains("computer-output"), "{t}");
    assert_eq!(d["outputLines"], 10_000, "{d}");
    assert_eq!(d["outputBytes"], total);
    assert_eq!(d["outputTruncated"], true);
    let out = d["output"].as_str().unwrap();
    assert!(out.starts_with("line 1\nline 2\n"), "{}", &out[..40]);
    assert!(
        out.ends_with("line 9999\nline 10000\n"),
        "{}",
        &out[out.len() - 40..]
    );
    assert!(
        out.contains("computer-output"),
        "marker says how to read the rest"
    );
    let kept = d["outputKeptBytes"].as_u64().unwrap() as usize;
    assert!(
        out.contains(&format!("[… {} bytes of output cut here", total - kept)),
        "the marker states the bytes left out: {total} - {kept}: {}",
        &out[out.find("[…").unwrap()..out.find("[…").unwrap() + 80]
    );
}

/// `shell.run`, `os.run` and `dofile` inside a chunk draw on the chunk's own terminal, which
/// is captured; `printError` there is the err stream.
pub async fn programs_run_inside_a_chunk_are_captured(client: &Client, target: &str) {
    let r = call(
        client,
        "write-file",
        json!({"traposId": target, "path": "p.lua",
            "content": "print('from p', ...)\nprintError('p complains')\nwrite('tail')\n"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let (t, d, err) = exec(
        client,
        target,
        "print('chunk') shell.run('p.lua', 'x') os.run({}, 'p.lua', 'y') dofile('p.lua') return 1",
    )
    .await;
    assert!(!err, "{t}");
    let out = d["output"].as_str().unwrap();
    assert_eq!(out.matches("from p").count(), 3, "{out:?}");
    assert!(
        out.contains("from p\tx") && out.contains("from p\ty"),
        "{out:?}"
    );
    assert_eq!(out.matches("p complains").count(), 3, "{out:?}");
    assert!(out.starts_with("chunk\n"), "{out:?}");
    // printError's lines are on the err stream, the rest on out.
    let rid = d["requestId"].as_str().unwrap();
    let r = call(
        client,
        "computer-output",
        json!({"traposId": target, "requestId": rid}),
    )
    .await;
    let lines = super::mcp_fake::page_lines(&data(&r));
    let errs: Vec<&Value> = lines.iter().filter(|l| l["stream"] == "err").collect();
    assert_eq!(errs.len(), 3, "{lines:?}");
    assert!(errs.iter().all(|l| l["text"] == "p complains"), "{errs:?}");
    assert!(
        lines
            .iter()
            .any(|l| l["stream"] == "out" && l["text"] == "from p\tx")
    );
}

/// Errors read as the console shows values; tracebacks stop at the chunk.
pub async fn errors_read_true(client: &Client, target: &str) {
    let (t, d, err) = exec(client, target, "error({code=5})").await;
    assert!(err, "{t}");
    assert_eq!(d["error"], "{code=5}", "{d}");
    assert_eq!(d["errorValue"]["value"]["code"], 5, "{d}");
    assert!(t.lines().next().unwrap().contains("{code=5}"), "{t}");
    let (_, d, _) = exec(
        client,
        target,
        "local function inner() error('deep') end\nlocal function outer() inner() end\nouter()",
    )
    .await;
    let tb = d["traceback"].as_str().unwrap();
    assert!(tb.contains("exec:1:") && tb.contains("exec:3:"), "{tb}");
    for foreign in [
        "libmcpcomputer",
        "libsandbox",
        "mcp-computer-server",
        "xpcall",
    ] {
        assert!(!tb.contains(foreign), "{foreign} in {tb}");
    }
}

/// A value larger than the result keeps its descriptor; nothing printed is not "cut".
pub async fn big_returns_keep_their_descriptor(client: &Client, target: &str) {
    let (t, d, err) = exec(client, target, "return string.rep('x', 100000), 7").await;
    assert!(!err, "{t}");
    let r0 = &d["returns"][0];
    assert_eq!(r0["type"], "string", "{d}");
    assert_eq!(r0["cut"], true);
    assert_eq!(r0["length"], 100_000);
    assert!(r0["value"].as_str().unwrap().starts_with("xxxx"));
    assert_eq!(d["returns"][1], json!({"type": "number", "value": 7}));
    assert_eq!(d["n"], 2);
    assert_eq!(d["outputTruncated"], false, "nothing was printed");
    assert!(d.get("returnsTruncated").is_none(), "{d}");
    let (_, d, _) = exec(
        client,
        target,
        "local t = {} for i = 1, 900 do t[i] = string.rep('y', 100) end return t",
    )
    .await;
    let r0 = &d["returns"][0];
    assert_eq!(
        (r0["type"].clone(), r0["cut"].clone()),
        (json!("table"), json!(true)),
        "{d}"
    );
    assert!(r0["value"].as_str().unwrap().starts_with("[\"yyy"), "{r0}");
    assert!(r0["length"].as_u64().unwrap() > 90_000);
}

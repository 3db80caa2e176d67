//! End to end through the whole stack: rmcp's client over Streamable HTTP → the host's MCP
//! endpoint → session → gateway → emulated computers running the real Lua client. Every tool
//! of docs/mcp.md, both error kinds of Lua, files byte-exact, timeouts, live progress, both ways of
//! cancelling, paging, the session log naming each agent, and every traposId form.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake};

use std::time::{Duration, Instant};

use base64::Engine as _;
use fake::{Agent, Client, call, data, start_call, text};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParam, ProgressNotificationParam,
    ServerResult,
};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use support::{TestHost, emulated, start_host, wait_until};
use tokio::sync::mpsc;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// An `initialize`-era client with the given clientInfo name.
async fn agent(
    host: &TestHost,
    name: &str,
) -> (Client, mpsc::UnboundedReceiver<ProgressNotificationParam>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let a = Agent {
        name: name.into(),
        progress: tx,
    };
    let transport = StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            host.mcp_url(),
        )
        .auth_header(host.local_token.clone()),
    );
    (a.serve(transport).await.unwrap(), rx)
}

fn params(tool: &'static str, args: Value) -> CallToolRequestParams {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(tool).with_arguments(args)
}

fn tool_result(r: ServerResult) -> CallToolResult {
    match r {
        ServerResult::CallToolResult(r) => r,
        other => panic!("not a tool result: {other:?}"),
    }
}

/// Waits until the host has a request of `kind` sent to the computer; returns its id.
async fn sent_request(host: &TestHost, kind: &str) -> String {
    let mut rid = None;
    wait_until(|| {
        rid = host
            .session
            .pending()
            .into_iter()
            .find(|p| p.sent && p.kind.as_str() == kind)
            .map(|p| p.request_id);
        rid.is_some()
    })
    .await;
    rid.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_computers_probe_exec_errors_and_trapos_id_forms() {
    let host = start_host().await;
    let (_a, _b) = tokio::join!(
        emulated(&host, 1, Some("miner")),
        emulated(&host, 2, Some("farm"))
    );
    let (client, _) = agent(&host, "e2e-agent").await;

    let r = call(&client, "probe-computers", json!({"ping": true})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let probed = data(&r);
    let list = probed["computers"].as_array().unwrap().clone();
    let ids: Vec<&str> = list
        .iter()
        .map(|c| c["traposId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1:miner", "2:farm"]);
    for c in &list {
        assert_eq!(c["ping"]["ok"], true, "{c}");
        assert!(
            c["ping"]["rttMs"].is_u64() && c["lastRttMs"].is_u64(),
            "{c}"
        );
        // The page's serves, said once; a row has its own only when it differs.
        let serves = c.get("serves").unwrap_or(&probed["serves"]);
        assert!(serves.as_array().unwrap().contains(&json!("exec-lua")));
    }

    // Both computers at once, each answering with its own id.
    let code = "print('hi from', os.getComputerID()) write('x') return os.getComputerID(), os.getComputerLabel(), {a = 1}";
    let (r1, r2) = tokio::join!(
        call(
            &client,
            "exec-lua",
            json!({"traposId": "1:miner", "code": code})
        ),
        call(
            &client,
            "exec-lua",
            json!({"traposId": "2:farm", "code": code})
        )
    );
    for (r, id, label) in [(&r1, 1, "miner"), (&r2, 2, "farm")] {
        assert_eq!(r.is_error, Some(false), "{}", text(r));
        let d = data(r);
        assert_eq!(d["ok"], true);
        assert_eq!(d["output"], format!("hi from\t{id}\nx"));
        assert_eq!(d["n"], 3);
        assert_eq!(
            d["returns"],
            json!([{"type": "number", "value": id}, {"type": "string", "value": label},
                   {"type": "table", "value": {"a": 1}, "truncated": false}])
        );
        assert_eq!(d["traposId"], format!("{id}:{label}"));
        assert!(d["requestId"].as_str().unwrap().starts_with("h-"), "{d}");
    }
    assert_ne!(data(&r1)["requestId"], data(&r2)["requestId"]);

    // Every traposId form reaches the same computer.
    for form in ["1:miner", "1", "miner"] {
        let r = call(
            &client,
            "exec-lua",
            json!({"traposId": form, "code": "return os.getComputerID()"}),
        )
        .await;
        assert_eq!(r.is_error, Some(false), "{form}: {}", text(&r));
        assert_eq!(data(&r)["traposId"], "1:miner", "{form}");
        assert_eq!(data(&r)["returns"][0]["value"], 1, "{form}");
    }
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "quarry", "code": "return 1"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "unknown_computer");
    assert!(
        text(&r).contains("1:miner") && text(&r).contains("2:farm"),
        "{}",
        text(&r)
    );

    // A runtime error keeps the output printed before it.
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "farm", "code": "print('before') error('boom')"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let d = data(&r);
    assert_eq!(d["ok"], false);
    assert_eq!(d["output"], "before\n");
    assert!(d["error"].as_str().unwrap().contains("exec:1: boom"), "{d}");
    assert!(
        text(&r).lines().next().unwrap().contains("boom"),
        "{}",
        text(&r)
    );
    assert!(d["requestId"].is_string() && d["traposId"] == "2:farm");

    // A syntax error is an error result too, naming the chunk.
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "farm", "code": "return +"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(data(&r)["ok"], false);
    assert!(
        data(&r)["error"].as_str().unwrap().contains("exec:1"),
        "{}",
        text(&r)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_and_run_file_through_the_real_client() {
    let host = start_host().await;
    let _c = emulated(&host, 1, Some("miner")).await;
    let (client, _) = agent(&host, "e2e-files").await;

    // Binary, every byte value, byte-exact both ways.
    let all: Vec<u8> = (0..=255u8).rev().collect();
    let r = call(
        &client,
        "write-file",
        json!({"traposId": "miner", "path": "data/all.bin", "content": B64.encode(&all), "encoding": "base64"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["bytes"], 256);
    let r = call(
        &client,
        "read-file",
        json!({"traposId": "miner", "path": "data/all.bin"}),
    )
    .await;
    let d = data(&r);
    assert_eq!(
        (d["encoding"].as_str(), d["total"].as_u64()),
        (Some("base64"), Some(256)),
        "{d}"
    );
    assert_eq!(B64.decode(d["content"].as_str().unwrap()).unwrap(), all);
    assert_eq!(d["nextOffset"], Value::Null);

    // UTF-8 text comes back as text, exactly.
    let txt = "héllo ☃ — ünïcode\nline two\r\n\ttabbed\n";
    call(
        &client,
        "write-file",
        json!({"traposId": "1", "path": "notes.txt", "content": txt}),
    )
    .await;
    let r = call(
        &client,
        "write-file",
        json!({"traposId": "1", "path": "notes.txt", "content": "more", "append": true}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let r = call(
        &client,
        "read-file",
        json!({"traposId": "1:miner", "path": "notes.txt"}),
    )
    .await;
    let d = data(&r);
    assert_eq!(d["encoding"], "utf8");
    assert_eq!(d["content"], format!("{txt}more"));
    assert_eq!(d["total"], format!("{txt}more").len());

    let r = call(&client, "list-files", json!({"traposId": "miner"})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let entries = data(&r)["entries"].as_array().unwrap().clone();
    let find = |n: &str| entries.iter().find(|e| e["name"] == n).cloned();
    assert_eq!(find("data").unwrap()["dir"], true, "{entries:?}");
    assert_eq!(
        find("notes.txt").unwrap()["size"],
        format!("{txt}more").len()
    );
    let r = call(
        &client,
        "list-files",
        json!({"traposId": "miner", "path": "data"}),
    )
    .await;
    assert_eq!(
        data(&r)["entries"],
        json!([{"name": "all.bin", "dir": false, "size": 256}])
    );

    let r = call(
        &client,
        "read-file",
        json!({"traposId": "miner", "path": "nope.txt"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));

    // run-file: args as varargs and `arg`, errors name path:line.
    let prog = "print(...)\nprint(arg[0], #arg)\nif arg[1] == 'fail' then error('bad arg') end\nreturn select('#', ...)\n";
    call(
        &client,
        "write-file",
        json!({"traposId": "miner", "path": "programs/p.lua", "content": prog}),
    )
    .await;
    let r = call(
        &client,
        "run-file",
        json!({"traposId": "miner", "path": "programs/p.lua", "args": ["a b", "2"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["output"], "a b\t2\nprograms/p.lua\t2\n");
    assert_eq!(data(&r)["returns"][0]["value"], 2);
    let r = call(
        &client,
        "run-file",
        json!({"traposId": "miner", "path": "programs/p.lua", "args": ["fail"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        data(&r)["error"]
            .as_str()
            .unwrap()
            .contains("programs/p.lua:3: bad arg"),
        "{}",
        text(&r)
    );
    assert!(text(&r).contains("programs/p.lua:3"), "{}", text(&r));
    assert_eq!(data(&r)["output"], "fail\nprograms/p.lua\t1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_progress_and_both_kinds_of_cancel() {
    let host = start_host().await;
    let _c = emulated(&host, 1, Some("miner")).await;
    let (first, mut progress) = agent(&host, "first-agent").await;
    let (second, _) = agent(&host, "second-agent").await;

    // A short deadline on a sleeping chunk: timeout, output so far kept, and the computer
    // answers the next call at once.
    let started = Instant::now();
    let r = call(
        &first,
        "exec-lua",
        json!({"traposId": "miner", "code": "print('zz') sleep(30)", "timeoutMs": 400}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "timeout", "{}", text(&r));
    assert!(
        text(&r).starts_with("timeout") || text(&r).contains("timed out"),
        "{}",
        text(&r)
    );
    let started = Instant::now();
    let r = call(
        &first,
        "exec-lua",
        json!({"traposId": "miner", "code": "return 'awake'"}),
    )
    .await;
    assert_eq!(data(&r)["returns"][0]["value"], "awake");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    wait_until(|| host.session.pending().is_empty()).await;

    // Live output as progress while the chunk runs.
    // rmcp's client puts a progressToken in `_meta` of every request it sends, so the calls
    // above sent progress too: start from an empty queue.
    while progress.try_recv().is_ok() {}
    let handle = start_call(
        &first,
        "exec-lua",
        json!({"traposId": "miner", "code": "for i=1,3 do print(i) sleep(0.3) end return 'done'"}),
    )
    .await;
    let one = tokio::time::timeout(Duration::from_secs(5), progress.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(one.message.as_deref(), Some("1\n"));
    // It arrived while the chunk still runs.
    assert_eq!(host.session.pending().len(), 1);
    let r = tool_result(handle.await_response().await.unwrap());
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["output"], "1\n2\n3\n");
    let mut all = vec![one];
    while let Ok(n) = progress.try_recv() {
        all.push(n);
    }
    let msgs: String = all.iter().filter_map(|n| n.message.clone()).collect();
    assert_eq!(msgs, "1\n2\n3\n");
    assert!(all.windows(2).all(|w| w[1].progress > w[0].progress));

    // The client cancels its own call: the chunk is cancelled on the computer.
    let handle = start_call(
        &first,
        "exec-lua",
        json!({"traposId": "miner", "code": "print('waiting') sleep(30)"}),
    )
    .await;
    let rid = sent_request(&host, "exec-lua").await;
    first
        .notify_cancelled(CancelledNotificationParam::new(
            Some(handle.id.clone()),
            Some("stop".into()),
        ))
        .await
        .unwrap();
    let started = Instant::now();
    wait_until(|| host.session.pending().is_empty()).await;
    assert!(started.elapsed() < Duration::from_secs(3));
    drop(handle);
    // The call's one entry in the log says how it ended (once its end is recorded: the
    // host records it just after the request ends).
    let ended = |events: &[Value]| {
        events.iter().any(|e| {
            e["event"] == "call" && e["requestId"] == rid.as_str() && e["status"] == "cancelled"
        })
    };
    let events = crate::support::wait_ok(Duration::from_secs(5), async || {
        let r = call(&second, "session-log", json!({"limit": 500})).await;
        let events = data(&r)["events"].as_array().unwrap().clone();
        if ended(&events) {
            Ok(events)
        } else {
            Err(format!("{events:#?}"))
        }
    })
    .await;
    assert!(ended(&events), "{events:#?}");

    // cancel-request from a second client stops a call the first one started.
    let busy = tokio::spawn({
        let first = first.peer().clone();
        async move {
            first
                .call_tool(params(
                    "exec-lua",
                    json!({"traposId": "miner", "code": "print('long job') sleep(30)"}),
                ))
                .await
                .unwrap()
        }
    });
    let rid = sent_request(&host, "exec-lua").await;
    wait_until(|| {
        host.session.output_since("1:miner", 0).iter().any(|i| {
            matches!(&i.entry, trapdesk::session::OutputEntry::Line { text, .. } if text == "long job")
        })
    })
    .await;
    let r = call(&second, "probe-computers", json!({"ping": false})).await;
    let pending = &data(&r)["computers"][0]["pendingRequests"];
    assert_eq!(pending[0]["requestId"], rid.as_str(), "{pending}");
    assert_eq!(pending[0]["origin"], "first-agent", "{pending}");
    let r = call(&second, "cancel-request", json!({"requestId": rid})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["traposId"], "1:miner");
    let other = tokio::time::timeout(Duration::from_secs(5), busy)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.is_error, Some(true));
    assert_eq!(
        data(&other)["error"]["code"],
        "cancelled",
        "{}",
        text(&other)
    );
    assert_eq!(data(&other)["output"], "long job\n");
    let r = call(&second, "cancel-request", json!({"requestId": rid})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "not_pending");

    // The log names both agents by their clientInfo names.
    let r = call(&second, "session-log", json!({"limit": 1000})).await;
    let events = data(&r)["events"].as_array().unwrap().clone();
    let by = |who: &str, what: &str| events.iter().any(|e| e["who"] == who && e["what"] == what);
    assert!(by("first-agent", "exec-lua"), "{events:#?}");
    assert!(by("second-agent", "cancel-request"), "{events:#?}");
    assert!(by("second-agent", "probe-computers"), "{events:#?}");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "linked" && e["traposId"] == "1:miner")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computer_output_pages_backwards() {
    let host = start_host().await;
    let _c = emulated(&host, 3, Some("turtle")).await;
    let (client, _) = agent(&host, "pager").await;
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "turtle", "code": "for i = 1, 30 do print('row ' .. i) end"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let rid = data(&r)["requestId"].as_str().unwrap().to_owned();
    call(
        &client,
        "exec-lua",
        json!({"traposId": "turtle", "code": "print('other')"}),
    )
    .await;

    let mut seen: Vec<String> = Vec::new();
    let mut before: Option<u64> = None;
    for _ in 0..10 {
        let mut args = json!({"traposId": "3:turtle", "requestId": rid, "lines": 8});
        if let Some(b) = before {
            args["before"] = json!(b);
        }
        let r = call(&client, "computer-output", args).await;
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
        let d = data(&r);
        assert_eq!(d["requestId"], rid.as_str(), "{d}");
        assert!(d.get("requests").is_none(), "{d}");
        let page: Vec<String> = fake::page_lines(&d)
            .iter()
            .map(|l| l["text"].as_str().unwrap().to_owned())
            .collect();
        assert!(page.len() <= 8);
        seen.splice(0..0, page);
        match d["before"].as_u64() {
            Some(b) => before = Some(b),
            None => break,
        }
    }
    let want: Vec<String> = (1..=30).map(|i| format!("row {i}")).collect();
    assert_eq!(seen, want);

    // Unfiltered: newest first page ends with the other request's line.
    let r = call(
        &client,
        "computer-output",
        json!({"traposId": "3", "lines": 2}),
    )
    .await;
    let lines = fake::page_lines(&data(&r));
    assert_eq!(lines.last().unwrap()["text"], "other", "{lines:?}");
    assert!(data(&r)["before"].is_u64());
}

/// `trapdesk mcp-stdio` as a child process, spoken to line by line (JSON-RPC over stdio).
struct StdioProxy {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl StdioProxy {
    /// `mcp-stdio` as an agent starts it: no token given, found in the host's data dir.
    fn spawn(url: &str, data_dir: &std::path::Path) -> StdioProxy {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"))
            .args(["mcp-stdio", "--connect", url])
            .env("TRAPDESK_DATA_DIR", data_dir)
            .env_remove("TRAPDESK_MCP_TOKEN")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        use tokio::io::AsyncBufReadExt;
        let lines = tokio::io::BufReader::new(stdout).lines();
        StdioProxy {
            child,
            stdin,
            lines,
        }
    }

    async fn send(&mut self, v: Value) {
        use tokio::io::AsyncWriteExt;
        self.stdin
            .write_all(format!("{v}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The response to request `id`, skipping notifications.
    async fn response(&mut self, id: u64) -> Value {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
                .await
                .expect("no answer from mcp-stdio in time")
                .unwrap()
                .expect("mcp-stdio closed stdout");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_proxy_serves_both_eras_under_the_agents_name() {
    let host = start_host().await;
    let _c = emulated(&host, 1, Some("miner")).await;

    // The stateless 2026-07-28 revision: results must say `resultType: "complete"` (the
    // upstream hop is handshake-era, whose results do not carry it).
    let mut p = StdioProxy::spawn(&host.mcp_url(), &host.settings.data_dir);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-modern", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    p.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
    )
    .await;
    let r = p.response(1).await;
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "trapdesk",
        "{r}"
    );
    p.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}))
        .await;
    let r = p.response(2).await;
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 20, "{r}");
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    p.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "exec-lua", "arguments": {"traposId": "miner", "code": "print('via stdio') return 1"},
        "_meta": meta}}))
    .await;
    let r = p.response(3).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(
        r["result"]["structuredContent"]["output"], "via stdio\n",
        "{r}"
    );
    drop(p.stdin);
    let _ = tokio::time::timeout(Duration::from_secs(5), p.child.wait()).await;

    // The initialize handshake: no `resultType` for these older revisions.
    let mut p = StdioProxy::spawn(&host.mcp_url(), &host.settings.data_dir);
    p.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "stdio-legacy", "version": "1"}}}),
    )
    .await;
    let r = p.response(1).await;
    assert_eq!(r["result"]["serverInfo"]["name"], "trapdesk", "{r}");
    p.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    p.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "exec-lua", "arguments": {"traposId": "1", "code": "return 2"}}}),
    )
    .await;
    let r = p.response(2).await;
    assert_eq!(
        r["result"]["structuredContent"]["returns"][0]["value"], 2,
        "{r}"
    );
    assert!(r["result"].get("resultType").is_none(), "{r}");
    drop(p.stdin);
    let _ = tokio::time::timeout(Duration::from_secs(5), p.child.wait()).await;

    // The console sees each agent by its own name, not the proxy's.
    let calls = host.session.tool_calls();
    for name in ["stdio-modern", "stdio-legacy"] {
        assert!(
            calls
                .iter()
                .any(|c| c.client == name && c.tool == "exec-lua"),
            "{name}: {calls:?}"
        );
    }
}

//! The transport's promises: a result that ends while its stream is down comes on resume;
//! `DELETE` ends a session's running calls (never its detached runs), and is a 404 for a session
//! the host does not know; bad bodies get JSON-RPC errors with the spec's HTTP statuses;
//! cursors the host never issued are `-32602`; `mcp-stdio` sends `initialize` with a revision
//! that has it.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use crate::support::mcp_fake::{self as fake, host, host_with, raw_post};
use crate::support::{PROMPT, wait_for};
use serde_json::{Value, json};
use trapdesk::config::Settings;
use trapdesk::session::Status;

/// A handshake-era session spoken to by hand with reqwest.
struct Raw {
    http: reqwest::Client,
    url: String,
    auth: String,
    session: String,
}

impl Raw {
    async fn open(h: &fake::Host) -> Raw {
        let http = reqwest::Client::new();
        let auth = format!("Bearer {}", h.token);
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-session", "version": "1"}}});
        let r = http
            .post(&h.url)
            .header("Authorization", &auth)
            .header("Accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await
            .unwrap();
        let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let raw = Raw {
            http,
            url: h.url.clone(),
            auth,
            session,
        };
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(raw.post(&done).send().await.unwrap().status(), 202);
        raw
    }

    fn with(&self, b: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        b.header("Authorization", &self.auth)
            .header("Accept", "application/json, text/event-stream")
            .header("Mcp-Session-Id", &self.session)
            .header("MCP-Protocol-Version", "2025-06-18")
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.with(self.http.post(&self.url)).json(body)
    }

    fn get(&self) -> reqwest::RequestBuilder {
        self.with(self.http.get(&self.url))
    }

    fn delete(&self) -> reqwest::RequestBuilder {
        self.with(self.http.delete(&self.url))
    }
}

fn exec(id: u64, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "exec-lua", "arguments": args}})
}

/// The `id:` of the first SSE event in `text`, once it has one.
fn first_event_id(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
}

/// A call whose stream is cut right after it opened ends while nobody reads it; a `GET` with
/// the `Last-Event-ID` the client had gets its result.
#[tokio::test]
async fn a_result_that_ends_while_the_stream_is_down_comes_on_resume() {
    let h = host().await;
    let raw = Raw::open(&h).await;
    let call = exec(7, json!({"traposId": "miner", "code": "slow"}));
    let mut stream = raw.post(&call).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    let mut seen = String::new();
    let last = loop {
        let chunk = stream
            .chunk()
            .await
            .unwrap()
            .expect("the stream ended first");
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(id) = first_event_id(&seen) {
            break id;
        }
    };
    assert!(
        !seen.contains("\"result\""),
        "the call ended already: {seen}"
    );
    drop(stream);
    let ended = || {
        h.session
            .tool_calls()
            .iter()
            .any(|c| c.tool == "exec-lua" && c.status != Status::Running)
    };
    wait_for(PROMPT, ended, || "the call did not end".into()).await;

    let resumed = raw
        .get()
        .header("Last-Event-ID", &last)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let text = tokio::time::timeout(PROMPT, resumed.text())
        .await
        .expect("the resumed stream of an ended call ends after its replay")
        .unwrap();
    assert!(
        text.contains("\"id\":7") && text.contains("\"result\"") && text.contains("chunk 2"),
        "resume after {last}: {text:?}"
    );
}

/// A stream resumed while its call still runs replays what the client missed and then follows
/// the call to its result.
#[tokio::test]
async fn a_stream_resumed_while_its_call_runs_follows_it_to_the_end() {
    let h = host().await;
    let raw = Raw::open(&h).await;
    let mut stream = raw
        .post(&exec(5, json!({"traposId": "miner", "code": "hang"})))
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    let last = loop {
        let chunk = stream
            .chunk()
            .await
            .unwrap()
            .expect("the stream ended first");
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(id) = first_event_id(&seen) {
            break id;
        }
    };
    drop(stream);
    let resumed = raw
        .get()
        .header("Last-Event-ID", &last)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let reading = tokio::spawn(resumed.text());
    let request_id = || {
        h.session
            .tool_calls()
            .into_iter()
            .find_map(|c| c.request_id)
    };
    let request = crate::support::wait::wait_some(PROMPT, request_id, || "no request".into()).await;
    let cancel = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "cancel-request", "arguments": {"requestId": request}}});
    raw.post(&cancel)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let text = tokio::time::timeout(PROMPT, reading)
        .await
        .expect("the resumed stream did not end with its call")
        .unwrap()
        .unwrap();
    assert!(
        text.contains("\"id\":5") && text.contains("cancelled"),
        "resume after {last}: {text:?}"
    );
}

/// `DELETE` cancels the session's blocking call on its computer at once and ends its row
/// cancelled; the detached run it started goes on. A session that is gone, or never was, is a
/// 404.
#[tokio::test]
async fn delete_cancels_the_sessions_calls_never_its_detached_runs() {
    let h = host().await;
    let raw = Raw::open(&h).await;
    let detach = exec(
        1,
        json!({"traposId": "miner", "code": "hang", "detach": true}),
    );
    let detached = raw
        .post(&detach)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(detached.contains("running"), "{detached}");
    let blocking = raw.post(&exec(2, json!({"traposId": "8:farm", "code": "hang"})));
    let held = tokio::spawn(async move { blocking.send().await.unwrap().text().await });
    let request_of = |detach: bool| {
        h.session
            .tool_calls()
            .into_iter()
            .find(|c| (c.args["detach"] == true) == detach && c.request_id.is_some())
            .and_then(|c| c.request_id)
    };
    let rows = || format!("{:?}", h.session.tool_calls());
    wait_for(PROMPT, || request_of(false).is_some(), rows).await;
    let (run, call) = (request_of(true).unwrap(), request_of(false).unwrap());

    let del = raw.delete().send().await.unwrap();
    assert!(del.status().is_success(), "{}", del.status());
    // At once: rmcp alone would cancel it only after its 5 s drain of a closed session.
    let cancelled = || h.seen.lock().unwrap().cancels.contains(&call);
    let why = || format!("not cancelled: {:?}", h.seen.lock().unwrap().cancels);
    wait_for(Duration::from_secs(2), cancelled, why).await;
    let row_cancelled = || {
        h.session
            .tool_calls()
            .iter()
            .any(|c| c.request_id.as_ref() == Some(&call) && c.status == Status::Cancelled)
    };
    wait_for(PROMPT, row_cancelled, || "row not cancelled".into()).await;
    assert!(
        !h.seen.lock().unwrap().cancels.contains(&run),
        "the detached run was cancelled"
    );
    drop(held);

    assert_eq!(raw.delete().send().await.unwrap().status(), 404);
    let never = Raw {
        session: "never-issued".into(),
        ..raw
    };
    let gone = never.delete().send().await.unwrap();
    assert_eq!(gone.status(), 404);
}

fn error_of(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body.trim()).unwrap_or(Value::Null)
}

/// JSON-RPC 2.0 section 5.1 and MCP's Streamable HTTP: a body that is no JSON is 400 with
/// `-32700`; a batch is 400 with `-32600` (not served); a body over the limit is 413 with a
/// JSON-RPC error, `id` null, that names the limit.
#[tokio::test]
async fn bad_bodies_get_json_rpc_errors() {
    let settings = Settings {
        max_body_bytes: 64 << 10,
        ..Default::default()
    };
    let h = host_with(settings).await;
    let auth = format!("Bearer {}", h.token);
    let headers = [("Authorization", auth.as_str())];

    let (status, answer) = raw_post(h.addr, &headers, "{\"jsonrpc\": \"2.0\", \"id\": ").await;
    assert_eq!(status, 400, "{answer}");
    let e = error_of(&answer);
    assert_eq!(e["error"]["code"], -32700, "{answer}");
    assert!(e["id"].is_null(), "{answer}");

    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let (status, answer) = raw_post(h.addr, &headers, &json!([ping]).to_string()).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(error_of(&answer)["error"]["code"], -32600, "{answer}");

    let (status, answer) = raw_post(h.addr, &headers, "{\"hello\": 1}").await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(error_of(&answer)["error"]["code"], -32600, "{answer}");

    let big = exec(
        3,
        json!({"traposId": "miner", "code": "x".repeat(100 << 10)}),
    );
    let (status, answer) = raw_post(h.addr, &headers, &big.to_string()).await;
    assert_eq!(status, 413, "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{answer}"
    );
    let e = error_of(&answer);
    assert!(e["id"].is_null(), "{answer}");
    let message = e["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&(64 << 10).to_string()), "{answer}");
}

/// An oversized call through rmcp's client (as `mcp-stdio` and the CLI make it) is answered
/// with the 413's error, naming the limit, instead of waiting forever on an error without id.
#[tokio::test]
async fn an_oversized_call_through_the_rmcp_client_is_refused_with_the_limit() {
    use rmcp::ServiceExt;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let settings = Settings {
        max_body_bytes: 64 << 10,
        ..Default::default()
    };
    let h = host_with(settings).await;
    let config =
        StreamableHttpClientTransportConfig::with_uri(h.url.clone()).auth_header(h.token.clone());
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let agent = fake::Agent {
        name: "big-agent".into(),
        progress: tx,
    };
    let client = agent
        .serve(trapdesk::mcp::upstream::transport(config))
        .await
        .unwrap();
    let args = json!({"traposId": "miner", "code": "x".repeat(100 << 10)});
    let Value::Object(args) = args else { panic!() };
    let params = rmcp::model::CallToolRequestParams::new("exec-lua").with_arguments(args);
    let answer = tokio::time::timeout(PROMPT, client.call_tool(params))
        .await
        .expect("no answer to an oversized call");
    let Err(rmcp::ServiceError::McpError(e)) = answer else {
        panic!("{answer:?}")
    };
    assert!(e.message.contains(&(64 << 10).to_string()), "{e:?}");
}

/// Cursors are the host's own tokens: one it never issued is `-32602` on every list.
#[tokio::test]
async fn cursors_the_host_never_issued_are_invalid_params() {
    let h = host().await;
    let (client, _) = fake::connect(&h.url, &h.token).await;
    let garbage = || -> Option<rmcp::model::PaginatedRequestParams> {
        Some(serde_json::from_value(json!({"cursor": "garbage"})).unwrap())
    };
    let code = |e: rmcp::ServiceError| match e {
        rmcp::ServiceError::McpError(d) => d.code.0,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        code(client.list_tools(garbage()).await.unwrap_err()),
        -32602
    );
    let resources = client.list_resources(garbage()).await.unwrap_err();
    assert_eq!(code(resources), -32602);
    let templates = client.list_resource_templates(garbage()).await.unwrap_err();
    assert_eq!(code(templates), -32602);
    // The pages the host issues still work.
    assert!(!client.list_tools(None).await.unwrap().tools.is_empty());
    client.list_resources(None).await.unwrap();
}

/// `mcp-stdio` opens its upstream with `initialize` naming a revision that has that handshake
/// (2026-07-28 has none): here, a server of the suite's kind that records what it was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_stdio_initializes_with_a_handshake_era_revision() {
    use axum::{Json, Router, routing::post};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (tx, mut versions) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let upstream = Router::new().route(
        "/mcp",
        post(move |Json(m): Json<Value>| {
            let tx = tx.clone();
            async move {
                use axum::response::IntoResponse;
                let Some(id) = m.get("id").cloned() else {
                    return axum::http::StatusCode::ACCEPTED.into_response();
                };
                let result = if m["method"] == "initialize" {
                    let v = m["params"]["protocolVersion"].clone();
                    let _ = tx.send(v.clone());
                    json!({"protocolVersion": v, "capabilities": {"tools": {}},
                        "serverInfo": {"name": "recorder", "version": "1"}})
                } else {
                    json!({"tools": []})
                };
                Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, upstream).await });
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args(["mcp-stdio", "--connect", &format!("http://{addr}/mcp")])
        .env("TRAPDESK_DATA_DIR", dir.path())
        .env("TRAPDESK_AGENT_TOKEN", "td_recorder_token")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "suite-like", "version": "1"}}});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    for m in [init, done, list] {
        stdin.write_all(format!("{m}\n").as_bytes()).await.unwrap();
    }
    let version = tokio::time::timeout(Duration::from_secs(10), versions.recv())
        .await
        .expect("mcp-stdio sent no initialize upstream")
        .unwrap();
    assert_eq!(version, "2025-11-25");
    // And the agent's list came back through it.
    let answer = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("\"id\":2") {
                return line;
            }
        }
        String::new()
    })
    .await
    .unwrap();
    assert!(answer.contains("\"tools\""), "{answer}");
}

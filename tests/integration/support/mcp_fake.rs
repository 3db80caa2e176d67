//! Test helpers for the MCP tests: a session with scripted fake computers linked straight into
//! it (no gateway), the MCP endpoint on a real listener on port 0, and an rmcp client.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use trapdesk::config::Settings;
use trapdesk::gateway::protocol::{Hello, Response};
use trapdesk::session::{Outbound, Session, Stream};

/// What the fake computers saw, for assertions.
#[derive(Default)]
pub struct Seen {
    pub cancels: Vec<String>,
    pub requests: Vec<(String, Value)>,
}

pub type Shared = Arc<Mutex<Seen>>;

/// Links a fake computer that answers per docs/protocol.md. Behaviour of `exec-lua` by code:
/// `hang` never answers (answers `cancelled` with output on cancel), `drop` disconnects,
/// `error` is a Lua error, `slow` prints three chunks 100 ms apart, `big:N` prints N bytes.
pub fn link_fake(session: &Session, id: u64, label: Option<&str>, seen: Shared) {
    let hello = Hello {
        protocol: 1,
        computer_id: id,
        label: label.map(str::to_owned),
        secret: "s".into(),
        serves: vec![
            "exec-lua".into(),
            "run-file".into(),
            "write-file".into(),
            "read-file".into(),
            "list-files".into(),
        ],
        client: Some("fake/1".into()),
        host: Some("test".into()),
        max_message: None,
    };
    let (tx, mut rx) = mpsc::channel(1024);
    let link = Arc::new(session.link(&hello, tx));
    tokio::spawn(async move {
        let mut files: HashMap<String, Vec<u8>> = HashMap::new();
        let mut hanging: Vec<String> = Vec::new();
        while let Some(msg) = rx.recv().await {
            match msg {
                Outbound::Request(req) => {
                    // Seen as the computer sees it: its JSON frame.
                    let req = req.to_wire();
                    seen.lock()
                        .unwrap()
                        .requests
                        .push((req.request.to_string(), req.payload.clone()));
                    let respond = |payload: Value| {
                        link.response(Response {
                            id: req.id.clone(),
                            ok: true,
                            payload: Some(payload),
                            error: None,
                        })
                    };
                    let s = |k: &str| {
                        req.payload
                            .get(k)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    match req.request.as_str() {
                        "ping" => respond(json!({"pong": true, "epoch_ms": 1, "uptime_s": 1})),
                        "exec-lua" => {
                            let code = s("code");
                            if code == "hang" {
                                link.output(&req.id, Stream::Out, "partial\n");
                                hanging.push(req.id.clone());
                            } else if code == "drop" {
                                break;
                            } else if code == "error" {
                                respond(json!({"ok": false, "error": "exec:1: boom",
                                    "traceback": "stack", "output": "before\n", "returns": [], "n": 0}));
                            } else if code == "slow" {
                                let (link, id) = (link.clone(), req.id.clone());
                                tokio::spawn(async move {
                                    for i in 0..3 {
                                        link.output(&id, Stream::Out, &format!("chunk {i}\n"));
                                        // What "slow" stands for: a chunk whose output comes
                                        // over time, which the test watches arrive.
                                        tokio::time::sleep(Duration::from_millis(100)).await;
                                    }
                                    link.response(Response {
                                        id,
                                        ok: true,
                                        payload: Some(json!({"ok": true, "returns": [], "n": 0,
                                            "output": "chunk 0\nchunk 1\nchunk 2\n"})),
                                        error: None,
                                    });
                                });
                            } else if let Some(n) = code.strip_prefix("big:") {
                                let n: usize = n.parse().unwrap();
                                let out: String = (0..)
                                    .map(|i| format!("line {i:06}\n"))
                                    .take(n / 12)
                                    .collect();
                                link.output(&req.id, Stream::Out, &out);
                                respond(json!({"ok": true, "returns": [], "n": 0, "output": out}));
                            } else {
                                respond(
                                    json!({"ok": true, "returns": [{"type": "number", "value": 3}],
                                    "n": 1, "output": "hi\n", "output_truncated": false, "duration_ms": 1}),
                                );
                            }
                        }
                        "run-file" => {
                            let args = req.payload.get("args").cloned().unwrap_or(json!([]));
                            respond(
                                json!({"ok": true, "returns": [{"type": "table", "value": args}],
                                "n": 1, "output": ""}),
                            )
                        }
                        "write-file" => {
                            let bytes = base64::engine::general_purpose::STANDARD
                                .decode(s("content"))
                                .unwrap();
                            let n = bytes.len();
                            let path = s("path");
                            if path.starts_with("/rom/") {
                                respond(
                                    json!({"ok": false, "bytes": 0, "error": "/rom: Access denied"}),
                                );
                            } else {
                                let f = files.entry(path).or_default();
                                if req.payload.get("append") != Some(&json!(true)) {
                                    f.clear();
                                }
                                f.extend(bytes);
                                respond(json!({"ok": true, "bytes": n}));
                            }
                        }
                        "read-file" => match files.get(&s("path")) {
                            Some(b) => {
                                respond(json!({"ok": true, "encoding": "base64", "bytes": b.len(),
                                "content": base64::engine::general_purpose::STANDARD.encode(b)}))
                            }
                            None => respond(json!({"ok": false, "error": "No such file"})),
                        },
                        "list-files" => {
                            let entries: Vec<Value> = files
                                .iter()
                                .map(|(k, v)| json!({"name": k.trim_start_matches('/'), "dir": false, "size": v.len()}))
                                .collect();
                            respond(json!({"ok": true, "entries": entries}))
                        }
                        _ => link.response(Response {
                            id: req.id.clone(),
                            ok: false,
                            payload: None,
                            error: Some(trapdesk::gateway::protocol::ErrorBody {
                                code: "unknown_type".into(),
                                message: "not served".into(),
                                output: None,
                            }),
                        }),
                    }
                }
                Outbound::Cancel { id } => {
                    seen.lock().unwrap().cancels.push(id.clone());
                    if hanging.contains(&id) {
                        link.response(Response {
                            id,
                            ok: false,
                            payload: None,
                            error: Some(trapdesk::gateway::protocol::ErrorBody {
                                code: "cancelled".into(),
                                message: "cancelled".into(),
                                output: Some("partial\n".into()),
                            }),
                        });
                    }
                }
                Outbound::Close { .. } => break,
            }
        }
    });
}

/// A running MCP endpoint over a fresh session.
pub struct Host {
    pub session: Session,
    pub url: String,
    /// The local token every request needs (`<data dir>/mcp-token`).
    pub token: String,
    /// The data dir when the test gave none of its own.
    _dir: Option<tempfile::TempDir>,
    pub addr: std::net::SocketAddr,
    pub seen: Shared,
    pub shutdown: CancellationToken,
}

impl Drop for Host {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub async fn host_with(mut settings: Settings) -> Host {
    // `Settings::default()` keeps its data in "."; a test must not leave a token in the tree.
    let dir =
        (settings.data_dir == std::path::Path::new(".")).then(|| tempfile::tempdir().unwrap());
    if let Some(d) = &dir {
        settings.data_dir = d.path().to_owned();
    }
    let token = trapdesk::trust::agents::local_token(&settings.data_dir).unwrap();
    let session = Session::new(settings, false);
    let seen = Shared::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    tokio::spawn(trapdesk::mcp::serve_http(
        session.clone(),
        listener,
        shutdown.clone(),
    ));
    Host {
        session,
        url: format!("http://{addr}/mcp"),
        token,
        _dir: dir,
        addr,
        seen,
        shutdown,
    }
}

/// A host with three computers: `7:miner`, `8:farm`, `9:farm`.
pub async fn host() -> Host {
    let h = host_with(Settings::default()).await;
    link_fake(&h.session, 7, Some("miner"), h.seen.clone());
    link_fake(&h.session, 8, Some("farm"), h.seen.clone());
    link_fake(&h.session, 9, Some("farm"), h.seen.clone());
    h
}

/// The test agent: records progress notifications.
pub struct Agent {
    pub name: String,
    pub progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(self.name.clone(), "1.0"),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

pub type Client = RunningService<RoleClient, Agent>;

/// An `initialize`-era client named `test-agent`.
/// A transport to `url` that presents `token`.
pub fn transport(url: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned()),
    )
}

pub async fn connect(
    url: &str,
    token: &str,
) -> (Client, mpsc::UnboundedReceiver<ProgressNotificationParam>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let agent = Agent {
        name: "test-agent".into(),
        progress: tx,
    };
    (agent.serve(transport(url, token)).await.unwrap(), rx)
}

/// A stateless 2026-07-28 client (`server/discover`, no session) named `stateless-agent`.
pub async fn connect_stateless(
    url: &str,
    token: &str,
) -> (Client, mpsc::UnboundedReceiver<ProgressNotificationParam>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let agent = Agent {
        name: "stateless-agent".into(),
        progress: tx,
    };
    let transport = transport(url, token);
    let client = agent
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    (client, rx)
}

/// Calls a tool with JSON arguments.
pub async fn call(client: &Client, tool: &'static str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .unwrap()
}

/// Starts a tool call the test can cancel or await later.
pub async fn start_call(
    client: &Client,
    tool: &'static str,
    args: Value,
) -> rmcp::service::RequestHandle<RoleClient> {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let params = CallToolRequestParams::new(tool).with_arguments(args);
    client
        .send_cancellable_request(
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(params)),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .unwrap()
}

/// Starts `exec-lua` of a chunk that never ends on `miner` and waits until the host has sent
/// it: the call's handle (to cancel or await) and the request's id.
pub async fn start_hanging(
    h: &Host,
    client: &Client,
    patience: Duration,
) -> (rmcp::service::RequestHandle<RoleClient>, String) {
    let handle = start_call(
        client,
        "exec-lua",
        json!({"traposId": "miner", "code": "hang"}),
    )
    .await;
    let rid = crate::support::wait_some(
        patience,
        || {
            h.session
                .pending()
                .into_iter()
                .find(|p| p.sent)
                .map(|p| p.request_id)
        },
        || String::from("the request was never sent"),
    )
    .await;
    (handle, rid)
}

/// The structured content of a result.
pub fn data(r: &CallToolResult) -> Value {
    r.structured_content.clone().unwrap_or(Value::Null)
}

/// An output page's lines (`computer-output`, `wait-request`) as `{text, stream, at}`, from
/// the page's text said once (`output`), its `times` (each after the line before, the first
/// after `at`) and its `err` indices.
pub fn page_lines(d: &Value) -> Vec<Value> {
    let out = d["output"].as_str().unwrap_or_default();
    let times = d["times"].as_array().cloned().unwrap_or_default();
    let at = d["at"].as_u64().unwrap_or(0);
    let err: Vec<u64> = d["err"]
        .as_array()
        .map(|e| e.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let body = out.strip_suffix('\n').unwrap_or(out);
    let texts: Vec<&str> = if times.is_empty() {
        Vec::new()
    } else {
        body.split('\n').collect()
    };
    assert_eq!(texts.len(), times.len(), "a time per line: {d}");
    let mut when = at;
    texts
        .iter()
        .zip(&times)
        .enumerate()
        .map(|(i, (t, dt))| {
            when += dt.as_u64().unwrap_or(0);
            let stream = if err.contains(&(i as u64)) {
                "err"
            } else {
                "out"
            };
            json!({"text": t, "stream": stream, "at": when})
        })
        .collect()
}

/// The text of a result's first block.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// What the result budget bounds: the larger of the text block and the structured content
/// (docs/mcp.md, "Sizing"), measured here as sent.
pub fn largest_block(r: &CallToolResult) -> usize {
    let text: usize = r
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.len())
        .sum();
    let data = r
        .structured_content
        .as_ref()
        .map_or(0, |d| serde_json::to_string(d).unwrap().len());
    text.max(data)
}

/// Sends a raw HTTP/1.1 POST to `addr` and returns the status code and the body.
pub async fn raw_post(
    addr: std::net::SocketAddr,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    raw_request(addr, "POST", "/mcp", headers, body).await
}

/// One HTTP/1.1 request written by hand (no client library's defaults), and the whole answer.
pub async fn raw_request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

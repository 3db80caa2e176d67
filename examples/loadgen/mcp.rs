//! Driving `exec-lua` through the MCP endpoint with rmcp's own client, in either era.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, Implementation,
    PingRequest, ProtocolVersion,
};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::floor::take;
use crate::report::Series;

/// The load generator as an MCP client.
pub struct Agent;

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("loadgen", "1"),
        )
    }
}

pub type Client = RunningService<RoleClient, Agent>;

/// Which MCP era the client speaks.
#[derive(Debug, Clone, Copy)]
pub enum Era {
    /// `initialize`, sessions (up to 2025-11-25).
    Initialize,
    /// 2026-07-28: `server/discover`, every request stands alone.
    Stateless,
}

impl Era {
    pub fn name(self) -> &'static str {
        match self {
            Era::Initialize => "initialize era",
            Era::Stateless => "stateless era",
        }
    }
}

/// Connects an rmcp client in `era`.
pub async fn connect(url: &str, token: &str, era: Era) -> Result<Client, String> {
    let transport = StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.to_owned(),
        )
        .auth_header(token.to_owned()),
    );
    match era {
        Era::Initialize => Agent.serve(transport).await.map_err(|e| e.to_string()),
        Era::Stateless => Agent
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .map_err(|e| e.to_string()),
    }
}

/// Calls a tool; `Ok` with the structured content when the call was not an error.
pub async fn call(
    peer: &Peer<RoleClient>,
    tool: &'static str,
    args: Value,
) -> Result<Value, String> {
    let Value::Object(args) = args else {
        return Err("arguments must be an object".into());
    };
    let r = peer
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .map_err(|e| e.to_string())?;
    let data = r.structured_content.unwrap_or(Value::Null);
    if r.is_error == Some(true) {
        Err(data.to_string())
    } else {
        Ok(data)
    }
}

fn exec(target: &str) -> Value {
    json!({"traposId": target, "code": "return 1"})
}

/// Sequential MCP `ping`s: the SDK's own round trip through the same endpoint (HTTP, the
/// bearer check, rmcp's client and server), with no tool and no computer behind it. What an
/// `exec-lua` costs beyond this is the host's own share. The 2026-07-28 revision has no `ping`
/// (rmcp answers it with a JSON-RPC "method not found"): that answer is the same round trip,
/// so it counts as one.
pub async fn ping(client: &Client, era: Era, n: usize) -> Series {
    let peer = client.peer().clone();
    let mut s = Series::new(&format!(
        "MCP HTTP ping (no tool), {}, sequential",
        era.name()
    ));
    let t = Instant::now();
    for _ in 0..n {
        let st = Instant::now();
        let ok = answered(
            peer.send_request(ClientRequest::PingRequest(PingRequest::default()))
                .await,
        );
        s.push(st.elapsed(), ok);
    }
    s.wall = t.elapsed();
    s
}

/// Whether a ping came back: a result, or the server's JSON-RPC error (see [`ping`]).
fn answered<T>(r: Result<T, rmcp::ServiceError>) -> bool {
    matches!(r, Ok(_) | Err(rmcp::ServiceError::McpError(_)))
}

/// `calls` MCP `ping`s, `in_flight` at a time: the most calls a second the SDK itself carries
/// through this endpoint in `era`, the ceiling under any tool's throughput.
pub async fn ping_concurrent(client: &Client, era: Era, calls: usize, in_flight: usize) -> Series {
    let left = Arc::new(AtomicUsize::new(calls));
    let t = Instant::now();
    let workers: Vec<_> = (0..in_flight)
        .map(|_| {
            let (peer, left) = (client.peer().clone(), left.clone());
            tokio::spawn(async move {
                let mut out = Vec::new();
                while take(&left) {
                    let st = Instant::now();
                    let ok = answered(
                        peer.send_request(ClientRequest::PingRequest(PingRequest::default()))
                            .await,
                    );
                    out.push((st.elapsed(), ok));
                }
                out
            })
        })
        .collect();
    let mut s = Series::new(&format!(
        "MCP HTTP ping (no tool), {}, {in_flight} in flight",
        era.name()
    ));
    for w in workers {
        for (d, ok) in w.await.unwrap_or_default() {
            s.push(d, ok);
        }
    }
    s.wall = t.elapsed();
    s
}

/// Sequential exec-lua calls on `target`.
pub async fn sequential(client: &Client, era: Era, target: &str, n: usize) -> Series {
    let peer = client.peer().clone();
    let mut s = Series::new(&format!(
        "MCP HTTP exec-lua, {}, 1 computer, sequential",
        era.name()
    ));
    let t = Instant::now();
    for _ in 0..n {
        let st = Instant::now();
        let ok = call(&peer, "exec-lua", exec(target)).await.is_ok();
        s.push(st.elapsed(), ok);
    }
    s.wall = t.elapsed();
    s
}

/// `calls` exec-lua calls, `in_flight` at a time, spread over `targets`.
pub async fn concurrent(
    client: &Client,
    era: Era,
    targets: &[String],
    calls: usize,
    in_flight: usize,
) -> Series {
    let left = Arc::new(AtomicUsize::new(calls));
    let targets = Arc::new(targets.to_vec());
    let t = Instant::now();
    let workers: Vec<_> = (0..in_flight)
        .map(|w| {
            let (peer, left, targets) = (client.peer().clone(), left.clone(), targets.clone());
            tokio::spawn(async move {
                let mut out = Vec::new();
                let mut i = w;
                while take(&left) {
                    let target = &targets[i % targets.len().max(1)];
                    i += in_flight;
                    let st = Instant::now();
                    let r = call(&peer, "exec-lua", exec(target)).await;
                    if let Err(e) = &r {
                        eprintln!("exec-lua on {target}: {e}");
                    }
                    out.push((st.elapsed(), r.is_ok()));
                }
                out
            })
        })
        .collect();
    let mut s = Series::new(&format!(
        "MCP HTTP exec-lua, {}, {} computers, {in_flight} in flight",
        era.name(),
        targets.len()
    ));
    for w in workers {
        for (d, ok) in w.await.unwrap_or_default() {
            s.push(d, ok);
        }
    }
    s.wall = t.elapsed();
    s
}

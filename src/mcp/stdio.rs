//! `trapdesk mcp-stdio`: MCP on stdin/stdout for agents that launch servers as child processes.
//!
//! It joins the running trapdesk's session instead of starting its own: every `tools/list`,
//! `tools/call`, resource and completion request is forwarded to that process's HTTP endpoint with rmcp's client, so the
//! person at the console and the agent still share one session. The upstream client is
//! opened on the first forwarded request, under the downstream agent's clientInfo name, so
//! the console shows the right agent. Progress and cancellation are forwarded too.
//!
//! stdout carries MCP only: logs go to stderr.
//!
//! **Where it goes** ([`Target`]): the URL the person gives (`--connect`, env
//! `TRAPDESK_CONNECT`), else the live host recorded in the data dir's `host.json`, found by the
//! function every front uses (`commands::control_client::find`). Never a default address: a
//! process that bound the well-known port first would collect the token. With no host named
//! or recorded, or none answering, [`run_stdio`] says so on stderr (the address it tried and
//! the file it looked in) and returns [`StdioError::Unreachable`] or
//! [`StdioError::NotRunning`] (exit non-zero); with `standalone` it returns
//! [`StdioError::NoHost`] instead, and the caller (`commands/modes.rs`) starts a headless host
//! of its own and serves that session with [`serve_stdio_session`].
//!
//! **Its credential** is an agent's: `TRAPDESK_AGENT_TOKEN` (a named agent's token), else the
//! install's local token. Never the person token (the CLI's), so whatever clientInfo the agent
//! sends, the host sees an agent, and the person's stop for all agents holds. The host's own
//! `TRAPDESK_MCP_TOKEN` is not read as the agent's: set alone, it is reported on stderr.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, CompleteRequestParams, CompleteResult, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, Request, ResultType, ServerConfig, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient, RoleServer, ServerHandler, ServiceExt};
use tokio::sync::OnceCell;

use trapdesk_core::session::Session;

mod probe;
use probe::{Reach, reachable, refuses};

/// The environment variable that holds an agent's token for `mcp-stdio`.
pub const AGENT_TOKEN_VAR: &str = "TRAPDESK_AGENT_TOKEN";

/// The host's own `--mcp-token` variable: never read as an agent's token here.
pub const HOST_TOKEN_VAR: &str = "TRAPDESK_MCP_TOKEN";

/// Where `mcp-stdio` forwards to, as the caller found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A URL the person gave (`--connect`, or the `--mcp-bind` they typed).
    Named(String),
    /// The live host recorded in this `host.json`.
    Recorded {
        url: String,
        file: std::path::PathBuf,
    },
    /// Nothing named and no live host in this `host.json` (`None`: no data dir to look in).
    Nowhere {
        file: Option<std::path::PathBuf>,
        /// Neither `--data-dir` nor `TRAPDESK_DATA_DIR` reached this process, so the default
        /// data dir was looked in.
        dir_unset: bool,
    },
}

impl Target {
    fn url(&self) -> Option<&str> {
        match self {
            Target::Named(u) | Target::Recorded { url: u, .. } => Some(u),
            Target::Nowhere { .. } => None,
        }
    }

    /// Where the address came from, for an error a person reads.
    fn source(&self) -> String {
        match self {
            Target::Named(_) => "given with --connect".to_owned(),
            Target::Recorded { file, .. } => format!("recorded in {}", file.display()),
            // Agents start their servers with an environment of their choosing (the MCP
            // Inspector and Codex pass on little more than HOME and PATH): a person who exported
            // TRAPDESK_DATA_DIR must learn it never arrived, and what reaches the server anyway.
            Target::Nowhere {
                file: Some(f),
                dir_unset: true,
            } => format!(
                "no live host in {}; TRAPDESK_DATA_DIR is not set in this process: for a host with another data dir, put --data-dir DIR in the command the agent starts",
                f.display()
            ),
            Target::Nowhere { file: Some(f), .. } => format!("no live host in {}", f.display()),
            Target::Nowhere { file: None, .. } => "no data dir to look in".to_owned(),
        }
    }
}

/// Why `mcp-stdio` stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// Nothing answers at the URL; the message is the one printed on stderr.
    #[error(
        "no trapdesk answers at {url} ({source_of}: {reason}); start `trapdesk` or `trapdesk --mcp-only` first, or pass --standalone"
    )]
    Unreachable {
        url: String,
        /// Where the URL came from (`--connect`, or the `host.json` it was read from).
        source_of: String,
        reason: String,
    },
    /// No URL given and no live host recorded: nothing was sent anywhere.
    #[error(
        "no trapdesk is running ({looked}): start `trapdesk` or `trapdesk --mcp-only` first (or pass its --data-dir), name it with --connect URL, or pass --standalone"
    )]
    NotRunning { looked: String },
    /// No host found and `--standalone` was given: the caller should start a headless host and
    /// serve its session with [`serve_stdio_session`].
    #[error("no trapdesk is running ({looked}); starting a headless one")]
    NoHost { looked: String },
    #[error("the --connect URL {0:?} is not an http:// or https:// URL")]
    BadUrl(String),
    /// The host refused the token (already reported on stderr).
    #[error("{0}")]
    Refused(String),
    #[error("MCP on stdio failed: {0}")]
    Serve(String),
}

/// The agent's credential for `mcp-stdio`: `TRAPDESK_AGENT_TOKEN`, else the local token of
/// `data_dir` (or the default data dir). `TRAPDESK_MCP_TOKEN` set without it is said on stderr
/// and left aside: it is the host's `--mcp-token`, and read as an agent's it would turn a named
/// token into an anonymous one `agent remove` cannot revoke.
pub fn agent_credential(
    data_dir: Option<&std::path::Path>,
) -> trapdesk_core::trust::agents::Credential {
    let set = |v: &str| std::env::var(v).is_ok_and(|t| !t.trim().is_empty());
    if set(HOST_TOKEN_VAR) && !set(AGENT_TOKEN_VAR) {
        eprintln!(
            "trapdesk mcp-stdio: WARNING: {HOST_TOKEN_VAR} is set but not used as the agent's token (it is a host's own --mcp-token); an agent's token goes in {AGENT_TOKEN_VAR} (`trapdesk agent add NAME` prints one). Using this install's local token."
        );
    }
    trapdesk_core::trust::agents::Credential::find(&[AGENT_TOKEN_VAR], data_dir)
}

/// Serves MCP on stdio, forwarding to the trapdesk at `target` (see the module docs).
///
/// # Errors
/// [`StdioError::Unreachable`] or [`StdioError::NotRunning`] (already reported on stderr), or
/// [`StdioError::NoHost`] with `standalone`, when no host is found or none answers;
/// [`StdioError::Serve`] when stdio itself fails.
pub async fn run_stdio(
    target: &Target,
    standalone: bool,
    data_dir: Option<&std::path::Path>,
) -> Result<(), StdioError> {
    let credential = agent_credential(data_dir);
    run_stdio_with(target, credential, standalone).await
}

/// [`run_stdio`] with an explicit bearer token for the upstream endpoint.
///
/// # Errors
/// As [`run_stdio`].
pub async fn run_stdio_with(
    target: &Target,
    credential: trapdesk_core::trust::agents::Credential,
    standalone: bool,
) -> Result<(), StdioError> {
    let Some(connect) = target.url() else {
        // Nothing named, nothing recorded: no address gets the token.
        if standalone {
            return Err(StdioError::NoHost {
                looked: target.source(),
            });
        }
        let err = StdioError::NotRunning {
            looked: target.source(),
        };
        eprintln!("trapdesk mcp-stdio: {err}");
        return Err(err);
    };
    if let Err(reason) = reachable(connect).await {
        if standalone && !matches!(reason, Reach::BadUrl) {
            return Err(StdioError::NoHost {
                looked: format!("nothing answers at {connect}, {}", target.source()),
            });
        }
        let err = match reason {
            Reach::BadUrl => StdioError::BadUrl(connect.to_owned()),
            Reach::Down(reason) => StdioError::Unreachable {
                url: connect.to_owned(),
                source_of: target.source(),
                reason,
            },
        };
        eprintln!("trapdesk mcp-stdio: {err}");
        return Err(err);
    }
    // Said at once, in one line, so that the agent's server list shows a failed server and its
    // log says what to set, rather than every tool call failing later.
    if refuses(connect, credential.token()).await {
        let why = credential.refused(connect);
        eprintln!("trapdesk mcp-stdio: {why}");
        return Err(StdioError::Refused(why));
    }
    let proxy = Proxy {
        url: connect.to_owned(),
        credential,
        upstream: Arc::new(OnceCell::new()),
        routes: Arc::default(),
    };
    serve_on_stdio(proxy).await
}

/// Serves MCP on stdio directly over an in-process session (the `--standalone` fallback).
///
/// # Errors
/// [`StdioError::Serve`] when stdio fails.
pub async fn serve_stdio_session(session: Session) -> Result<(), StdioError> {
    serve_on_stdio(super::TrapdeskMcp::new(session)).await
}

/// Serves one MCP server on stdin/stdout until the agent closes it.
async fn serve_on_stdio(server: impl ServerHandler) -> Result<(), StdioError> {
    let service = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| StdioError::Serve(e.to_string()))?;
    service
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| StdioError::Serve(e.to_string()))
}

/// Upstream progress token → the downstream token and peer it belongs to.
type Routes = Arc<Mutex<HashMap<ProgressToken, (ProgressToken, Peer<RoleServer>)>>>;

/// The upstream side: identifies as the downstream agent and routes progress back to it.
struct Upstream {
    name: String,
    routes: Routes,
}

impl ClientHandler for Upstream {
    fn get_info(&self) -> ClientConfig {
        // Sent in `initialize`: the newest revision that has that handshake (2026-07-28 has
        // none, and a server may refuse `initialize` naming it).
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(self.name.clone(), env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        let route = self
            .routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&params.progress_token)
            .cloned();
        if let Some((token, peer)) = route {
            let mut note = params;
            note.progress_token = token;
            // The agent may have gone; progress is best effort.
            let _ = peer.notify_progress(note).await;
        }
    }
}

/// The downstream side: an MCP server on stdio whose tools are the upstream's.
#[derive(Clone)]
struct Proxy {
    url: String,
    credential: trapdesk_core::trust::agents::Credential,
    upstream: Arc<OnceCell<RunningService<RoleClient, Upstream>>>,
    routes: Routes,
}

impl Proxy {
    async fn upstream(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Peer<RoleClient>, ErrorData> {
        let name = super::client_name(ctx);
        let service = self
            .upstream
            .get_or_try_init(|| async {
                let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.clone());
                if let Some(t) = self.credential.token() {
                    config = config.auth_header(t.to_owned());
                }
                let transport = super::upstream::transport(config);
                let handler = Upstream {
                    name,
                    routes: self.routes.clone(),
                };
                handler.serve(transport).await.map_err(|e| {
                    let text = e.to_string();
                    let lower = text.to_ascii_lowercase();
                    // A person reads this line in the agent's log: what to do, no type names.
                    let message = if lower.contains("401") || lower.contains("auth") {
                        self.credential.refused(&self.url)
                    } else {
                        format!("cannot reach trapdesk at {}: {text}", self.url)
                    };
                    eprintln!("trapdesk mcp-stdio: {message}");
                    ErrorData::internal_error(message, None)
                })
            })
            .await?;
        Ok(service.peer().clone())
    }
}

/// The upstream connection is handshake-era, whose results carry no `resultType`; a
/// downstream agent on the 2026-07-28 revision needs `resultType: "complete"` (the Python SDK
/// refuses results without it), and rmcp fills only the cache hints. Legacy peers have it
/// stripped again by rmcp, so setting it is right for both eras.
fn complete(t: Option<ResultType>) -> Option<ResultType> {
    Some(t.unwrap_or(ResultType::COMPLETE))
}

fn upstream_error(e: rmcp::ServiceError) -> ErrorData {
    match e {
        rmcp::ServiceError::McpError(data) => data,
        other => ErrorData::internal_error(format!("trapdesk did not answer: {other}"), None),
    }
}

impl ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        super::TrapdeskMcp::server_config()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let peer = self.upstream(&ctx).await?;
        let mut result = peer.list_tools(request).await.map_err(upstream_error)?;
        result.result_type = complete(result.result_type);
        Ok(result)
    }

    // Resources and completions are forwarded as they are, so that the capabilities this
    // front advertises (the host's own) hold here too.
    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let peer = self.upstream(&ctx).await?;
        let mut result = peer.list_resources(request).await.map_err(upstream_error)?;
        result.result_type = complete(result.result_type);
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let peer = self.upstream(&ctx).await?;
        let mut result = peer
            .list_resource_templates(request)
            .await
            .map_err(upstream_error)?;
        result.result_type = complete(result.result_type);
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let peer = self.upstream(&ctx).await?;
        let mut result = peer.read_resource(request).await.map_err(upstream_error)?;
        result.result_type = complete(result.result_type);
        Ok(ReadResourceResponse::Complete(result))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let peer = self.upstream(&ctx).await?;
        let mut result = peer.complete(request).await.map_err(upstream_error)?;
        result.result_type = complete(result.result_type);
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let peer = self.upstream(&ctx).await?;
        let handle = peer
            .send_cancellable_request(
                ClientRequest::CallToolRequest(Request::new(request)),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(upstream_error)?;
        let up_token = handle.progress_token.clone();
        let up_id = handle.id.clone();
        if let Some(token) = ctx.meta.get_progress_token() {
            self.routes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(up_token.clone(), (token, ctx.peer.clone()));
        }
        let result = tokio::select! {
            r = handle.await_response() => r.map_err(upstream_error),
            () = ctx.ct.cancelled() => {
                let note = CancelledNotificationParam::new(Some(up_id), Some("cancelled by the agent".into()));
                // The upstream may be gone already; then nothing is running there.
                let _ = peer.notify_cancelled(note).await;
                Err(ErrorData::internal_error("cancelled", None))
            }
        };
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&up_token);
        match result? {
            ServerResult::CallToolResult(mut r) => {
                r.result_type = complete(r.result_type);
                Ok(CallToolResponse::Complete(r))
            }
            other => Err(ErrorData::internal_error(
                format!("unexpected answer from trapdesk: {other:?}"),
                None,
            )),
        }
    }
}

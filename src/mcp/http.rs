//! Streamable HTTP at `/mcp`, both eras from one rmcp service.
//!
//! rmcp's `StreamableHttpService` keeps legacy sessions (`initialize`, `Mcp-Session-Id`) for
//! clients up to 2025-11-25 and serves every 2026-07-28 request statelessly, whatever the
//! session setting; so the default config with `legacy_session_mode` on serves both eras.
//!
//! DNS-rebinding protection (a MUST of the specification): rmcp checks `Host` against
//! loopback names by default, but leaves `Origin` unchecked unless configured, so the
//! loopback origins are configured here: a request with any other `Origin` gets 403. Bearer
//! tokens (the host's `--mcp-token`, and named agents' tokens once any exist) are checked
//! before rmcp sees the request (401 otherwise).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::TrapdeskMcp;
use crate::session::Session;

/// Why the MCP endpoint could not be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    #[error("MCP endpoint: cannot read the listener's address: {0}")]
    Address(#[source] std::io::Error),
    #[error("MCP endpoint stopped: {0}")]
    Serve(#[source] std::io::Error),
}

/// How long a finished call's stream stays resumable (see [`router`]).
pub const RESUME_WINDOW: std::time::Duration = std::time::Duration::from_secs(10);

/// Origins a browser on this machine sends; any other present `Origin` is refused.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// The `/mcp` router for `session`, with the token from its settings. `local` is the address
/// the listener is bound to: when it is not loopback (allowed only with a token), its IP is
/// also an acceptable `Host`, or remote agents could not reach it by address.
pub fn router(session: Session, local: SocketAddr, shutdown: CancellationToken) -> Router {
    let settings = session.settings();
    let guard = Arc::new(Guard {
        token: settings.mcp_token.clone(),
        agents: crate::agents::Verifier::new(&settings.data_dir),
    });
    let server = TrapdeskMcp::new(session);
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    let ip = local.ip();
    if !ip.is_loopback() {
        hosts.push(ip.to_string());
    }
    // A stateless (2026-07-28) request whose first message is its result is answered as plain
    // `application/json` rather than as an event stream of one event: fewer bytes, no SSE
    // framing to write and parse, and the request's task ends with the response (issue 10's
    // latency, BENCHMARKS.md). A call that sends progress first still gets a stream, so no
    // message is lost; the legacy sessions of the `initialize` era are not affected.
    // The body limit is enforced by rmcp while the body streams in (413 past it), so a huge
    // tool argument costs at most this much memory per request in flight.
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(LOOPBACK_ORIGINS)
        .with_json_response(true)
        .with_max_request_body_bytes(settings.max_body_bytes)
        .with_cancellation_token(shutdown);
    // Bound to every interface (with a token, see `config`): any Host, the token decides.
    config = if ip.is_unspecified() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(hosts)
    };
    // rmcp keeps each finished call's stream (its result and progress messages) so that a
    // client can resume it after a dropped connection; for 60 s by default, which at a high
    // call rate is most of the host's memory. 10 s covers a reconnect.
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.completed_cache_ttl = RESUME_WINDOW;
    let service: StreamableHttpService<TrapdeskMcp, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(sessions), config);
    Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(guard, bearer))
}

/// Serves MCP on `listener` until `shutdown` is cancelled.
///
/// # Errors
/// When the listener fails; requests that fail are answered, never fatal.
pub async fn serve_http(
    session: Session,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
) -> Result<(), McpError> {
    let local = listener.local_addr().map_err(McpError::Address)?;
    if !is_loopback(local.ip()) {
        tracing::warn!(%local, "MCP endpoint is reachable from other machines; bearer token required");
    }
    let app = router(session, local, shutdown.child_token());
    tracing::info!(%local, "MCP endpoint at http://{local}/mcp");
    // Progress notifications are small writes in a row: keep Nagle from batching them.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set: {e}");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await
        .map_err(McpError::Serve)
}

fn is_loopback(ip: IpAddr) -> bool {
    ip.is_loopback()
}

/// What the bearer check needs: the host's own token, and where the named agents are.
struct Guard {
    token: Option<String>,
    agents: crate::agents::Verifier,
}

/// The name a named agent's token proved, for the tools (see [`super::client_name`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentName(pub String);

/// Checks `Authorization: Bearer <token>` on every request: a named agent's token (then the
/// request carries its [`AgentName`]), or the host's `--mcp-token`. Neither is needed while no
/// named agent exists and no `--mcp-token` is set. The agents file is checked each time (and
/// read again when it changed), so a removed agent is refused at its next request.
async fn bearer(State(guard): State<Arc<Guard>>, mut req: Request, next: Next) -> Response {
    let given = presented(req.headers());
    let host_token = match (&guard.token, given.as_deref()) {
        (Some(t), Some(g)) => {
            use subtle::ConstantTimeEq;
            bool::from(g.as_bytes().ct_eq(t.as_bytes()))
        }
        _ => false,
    };
    // On a blocking thread although it is only a `stat` now (and a read when the file
    // changed): run inline on the async worker, the check cut the calls a second with 64 in
    // flight by half in A/B runs (BENCHMARKS.md, issue 10). rmcp serves each legacy session
    // from one worker task; the hop seems to change how tokio schedules it.
    let (agents, token) = (guard.clone(), given.clone());
    let verdict = tokio::task::spawn_blocking(move || agents.agents.verify(token.as_deref()))
        .await
        .unwrap_or(crate::agents::Verdict::Refused);
    let allowed = match verdict {
        crate::agents::Verdict::Agent(name) => {
            req.extensions_mut().insert(AgentName(name));
            true
        }
        crate::agents::Verdict::Open => guard.token.is_none() || host_token,
        crate::agents::Verdict::Refused => host_token,
    };
    if allowed {
        next.run(req).await
    } else {
        let why = if given.is_none() {
            "missing bearer token: send Authorization: Bearer <token> (trapdesk agent add NAME makes one)\n"
        } else {
            "wrong or removed bearer token (trapdesk agent list shows the named agents)\n"
        };
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            why,
        )
            .into_response()
    }
}

/// The bearer token of a request, if it has one.
fn presented(headers: &HeaderMap) -> Option<String> {
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())?;
    let given = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?;
    Some(given.trim().to_owned())
}

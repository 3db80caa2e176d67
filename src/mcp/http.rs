//! Streamable HTTP at `/mcp`, both eras from one rmcp service.
//!
//! rmcp's `StreamableHttpService` keeps legacy sessions (`initialize`, `Mcp-Session-Id`) for
//! clients up to 2025-11-25 and serves every 2026-07-28 request statelessly, whatever the
//! session setting; so the default config with `legacy_session_mode` on serves both eras.
//!
//! DNS-rebinding protection (a MUST of the specification): rmcp checks `Host` against
//! loopback names by default, but leaves `Origin` unchecked unless configured, so the
//! loopback origins are configured here: a request with any other `Origin` gets 403. A
//! bearer token, when set, is checked before rmcp sees the request (401 otherwise).

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
    let token = session.settings().mcp_token;
    let server = TrapdeskMcp::new(session);
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    let ip = local.ip();
    if !ip.is_loopback() {
        hosts.push(ip.to_string());
    }
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(LOOPBACK_ORIGINS)
        .with_cancellation_token(shutdown);
    // Bound to every interface (with a token, see config.rs): any Host, the token decides.
    config = if ip.is_unspecified() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(hosts)
    };
    let service: StreamableHttpService<TrapdeskMcp, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    let router = Router::new().nest_service("/mcp", service);
    match token {
        Some(t) => router.layer(middleware::from_fn_with_state(Arc::new(t), bearer)),
        None => router,
    }
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

/// Requires `Authorization: Bearer <token>`, compared in constant time.
async fn bearer(State(token): State<Arc<String>>, req: Request, next: Next) -> Response {
    if authorized(req.headers(), &token) {
        next.run(req).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token\n",
        )
            .into_response()
    }
}

fn authorized(headers: &HeaderMap, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some(given) = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
    else {
        return false;
    };
    bool::from(given.trim().as_bytes().ct_eq(token.as_bytes()))
}

//! Streamable HTTP at `/mcp`, both eras from one rmcp service.
//!
//! rmcp's `StreamableHttpService` keeps legacy sessions (`initialize`, `Mcp-Session-Id`) for
//! clients up to 2025-11-25 and serves every 2026-07-28 request statelessly, whatever the
//! session setting; so the default config with `legacy_session_mode` on serves both eras.
//!
//! DNS-rebinding protection (a MUST of the specification): rmcp checks `Host` against
//! loopback names by default, but leaves `Origin` unchecked unless configured, so the
//! loopback origins are configured here: a request with any other `Origin` gets 403.
//!
//! Loopback is no proof of anything here: every computer of a Minecraft server on this machine
//! makes its HTTP requests from loopback, with no `Origin` and a loopback `Host`. So every
//! request needs a bearer token, checked before rmcp sees it: the install's local token (which
//! its own tools read from the data dir), a named agent's, or the host's `--mcp-token`
//! (`trapdesk_core::trust::agents`). A refusal is an RFC 6750 401 with a JSON body a client can show, and the
//! OAuth discovery paths that clients probe after a 401 answer 404, so that a client says it
//! needs a token instead of failing an OAuth flow this server does not offer.
//!
//! Before rmcp, `edge` answers bad bodies as JSON-RPC errors (400 `-32700`, 400 `-32600` for
//! batches, 413 naming the limit) and `DELETE` of an unknown session with 404; `streams` keeps
//! a session's request streams so that a result sent while its connection was down comes on a
//! `Last-Event-ID` resume, and makes `DELETE` cancel the session's running calls.
//!
//! The listener is served through [`trapdesk_core::door`], as the gateway is: a request's headers must
//! arrive within [`trapdesk_core::door::HEADER_DEADLINE`], and at most [`MAX_UNPROVEN`] connections
//! that have not shown a right token yet are held (the oldest is dropped for a newer one).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::TrapdeskMcp;

mod edge;
mod streams;
use trapdesk_core::session::Session;

/// Why the MCP endpoint could not be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    #[error("MCP endpoint: cannot read the listener's address: {0}")]
    Address(#[source] std::io::Error),
    #[error("MCP endpoint stopped: {0}")]
    Serve(#[source] std::io::Error),
}

/// Connections to the MCP listener held at once before a request on them showed a right token
/// (for `/mcp`, or the local token for the control channel). Local clients show theirs in
/// their first request, within milliseconds; a flood of half-sent requests is bounded by this
/// many sockets, each for at most [`trapdesk_core::door::HEADER_DEADLINE`].
pub const MAX_UNPROVEN: usize = 256;

/// How long a finished call's stream stays resumable when its connection dropped before the
/// result was handed to it (`streams`).
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
    // Made here when the host did not make it already (a library user's router): no router
    // is ever open. Unreadable, it refuses its holders rather than letting anyone in.
    let local_token = trapdesk_core::trust::agents::local_token(&settings.data_dir)
        .map_err(|e| tracing::error!("the local MCP token cannot be used: {e}"))
        .ok();
    let person_token = trapdesk_core::trust::agents::person_token(&settings.data_dir)
        .map_err(|e| tracing::error!("the person token cannot be used: {e}"))
        .ok();
    let guard = Arc::new(Guard {
        token: settings.mcp_token.clone(),
        local: local_token,
        person: person_token,
        agents: trapdesk_core::trust::agents::Verifier::new(&settings.data_dir),
        refusals: Refusals::default(),
    });
    let server = TrapdeskMcp::new(session);
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    let ip = local.ip();
    if !ip.is_loopback() {
        hosts.push(ip.to_string());
    }
    // A stateless (2026-07-28) request whose first message is its result is answered as plain
    // `application/json` rather than as an event stream of one event: fewer bytes, no SSE
    // framing to write and parse, and the request's task ends with the response (the round
    // trips of BENCHMARKS.md). A call that sends progress first still gets a stream, so no
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
    // A finished call's stream is kept for a resume only when its connection did not take it
    // all (`streams`); rmcp's own cache of finished streams is not used, so its window is ours.
    let mut local = LocalSessionManager::default();
    local.session_config.completed_cache_ttl = RESUME_WINDOW;
    let sessions = Arc::new(streams::Sessions::new(local));
    let edge = Arc::new(edge::Edge {
        max_body_bytes: settings.max_body_bytes,
        sessions: sessions.clone(),
    });
    let service: StreamableHttpService<TrapdeskMcp, streams::Sessions> =
        StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
    // The guard is layered over `/mcp` alone, outermost, so that no body is read before the
    // token is checked; everything else, the discovery paths among it, is a plain 404 with or
    // without a token.
    Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(edge, edge::edge))
        .layer(middleware::from_fn_with_state(guard, bearer))
        .fallback(not_found)
}

/// The OAuth discovery paths MCP clients probe after a 401 (RFC 9728 protected-resource
/// metadata, RFC 8414 and OpenID Connect server metadata, RFC 7591 registration). This server
/// offers no OAuth: each is a 404, so that the client gives up on OAuth and reports the 401.
pub const OAUTH_PATHS: [&str; 5] = [
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
    "/register",
];

async fn not_found(req: Request) -> Response {
    let path = req.uri().path();
    let oauth = path.contains("/.well-known/") || OAUTH_PATHS.iter().any(|p| path.starts_with(p));
    let why = if oauth {
        "this server offers no OAuth: send Authorization: Bearer <token> (trapdesk agent add NAME prints one)"
    } else {
        "no such path: the MCP endpoint is /mcp"
    };
    (
        StatusCode::NOT_FOUND,
        axum::Json(serde_json::json!({ "error": "not_found", "error_description": why })),
    )
        .into_response()
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
    serve_http_with(session, listener, shutdown, Router::new()).await
}

/// [`serve_http`] with `beside` merged in: routes of another front on the same listener
/// (the host's control channel), which keep their own guard, not the MCP bearer check.
///
/// # Errors
/// As [`serve_http`].
pub async fn serve_http_with(
    session: Session,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
    beside: Router,
) -> Result<(), McpError> {
    let local = listener.local_addr().map_err(McpError::Address)?;
    if !is_loopback(local.ip()) {
        tracing::warn!(%local, "MCP endpoint is reachable from other machines; bearer token required");
    }
    let app = router(session, local, shutdown.child_token()).merge(beside);
    tracing::info!(%local, "MCP endpoint at http://{local}/mcp");
    // The door sets TCP_NODELAY too: progress notifications are small writes in a row.
    let door = trapdesk_core::door::Door {
        listener,
        waiting: Arc::new(trapdesk_core::door::Waiting::with_cap(MAX_UNPROVEN)),
    };
    trapdesk_core::door::serve(door, app, shutdown)
        .await
        .map_err(McpError::Serve)
}

fn is_loopback(ip: IpAddr) -> bool {
    ip.is_loopback()
}

/// What the bearer check needs: the host's own token, the local token, the person token, and
/// where the named agents are.
struct Guard {
    token: Option<String>,
    local: Option<String>,
    /// The person's one-shot tools' token (`trapdesk_core::trust::agents::person_token`).
    person: Option<String>,
    agents: trapdesk_core::trust::agents::Verifier,
    refusals: Refusals,
}

/// The name a named agent's token proved, for the tools (see [`super::client_name`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentName(pub String);

/// The request carried the person token: it comes from the person's own CLI or `sync`, and
/// only such a request may have the origin `cli` or `sync` (see [`super::caller_origin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersonTool;

/// Whether `given` is `expected`, in constant time.
fn same(given: Option<&str>, expected: Option<&str>) -> bool {
    use subtle::ConstantTimeEq;
    match (given, expected) {
        (Some(g), Some(t)) => bool::from(g.as_bytes().ct_eq(t.as_bytes())),
        _ => false,
    }
}

/// Checks `Authorization: Bearer <token>` on every request: the person token (then the
/// request carries [`PersonTool`]), a named agent's token (then it carries its
/// [`AgentName`]), the install's local token, or the host's `--mcp-token`; anything else is a
/// 401. The agents file is checked each time (and read again
/// when it changed), so a removed agent is refused at its next request.
async fn bearer(State(guard): State<Arc<Guard>>, mut req: Request, next: Next) -> Response {
    // Codex probes discovery under the endpoint's own path too (`/mcp/.well-known/…`): the
    // same 404 as at the root, token or not, rather than a 401 that invites OAuth again.
    let path = req.uri().path();
    if path.starts_with("/.well-known/") || path.starts_with("/mcp/.well-known/") {
        return not_found(req).await;
    }
    let given = presented(req.headers());
    // Set here and nowhere else, so no header or clientInfo can claim it.
    req.extensions_mut().remove::<PersonTool>();
    if same(given.as_deref(), guard.person.as_deref()) {
        req.extensions_mut().insert(PersonTool);
        return next.run(req).await;
    }
    if same(given.as_deref(), guard.local.as_deref())
        || same(given.as_deref(), guard.token.as_deref())
    {
        trapdesk_core::door::proven(req.extensions());
        return next.run(req).await;
    }
    // On a blocking thread although it is only a `stat` now (and a read when the file
    // changed): run inline on the async worker, the check cut the calls a second with 64 in
    // flight by half in A/B runs (BENCHMARKS.md, "Fleets and the floor"). rmcp serves each legacy session
    // from one worker task; the hop seems to change how tokio schedules it.
    let (agents, token) = (guard.clone(), given.clone());
    let verdict = tokio::task::spawn_blocking(move || agents.agents.verify(token.as_deref()))
        .await
        .unwrap_or(trapdesk_core::trust::agents::Verdict::Refused);
    match verdict {
        trapdesk_core::trust::agents::Verdict::Agent(name) => {
            trapdesk_core::door::proven(req.extensions());
            req.extensions_mut().insert(AgentName(name));
            next.run(req).await
        }
        trapdesk_core::trust::agents::Verdict::Refused => {
            guard.refusals.note(given.is_some());
            unauthorized(given.is_some())
        }
    }
}

/// Counts refused requests for the log: each at DEBUG, and at most one WARN a minute with the
/// count since the last, so that a person sees that something on this machine (another
/// player's computer, a misconfigured client) knocks, and a flood cannot fill the log. The
/// same mechanism as refused links (`trapdesk_core::session::throttle`), with one line a minute.
struct Refusals(trapdesk_core::session::throttle::Throttle);

impl Default for Refusals {
    fn default() -> Self {
        Refusals(trapdesk_core::session::throttle::Throttle::new(1))
    }
}

impl Refusals {
    fn note(&self, sent_token: bool) {
        tracing::debug!(sent_token, "MCP request refused (401)");
        let note = self.0.note();
        if note.write {
            tracing::warn!(
                refused = note.left_out + 1,
                "MCP requests without a valid token refused (401); `trapdesk agent add NAME` gives a client a token"
            );
        }
    }
}

/// The 401 of RFC 6750 section 3: `WWW-Authenticate: Bearer` with `error="invalid_token"`
/// when a token was sent (none when none was, as section 3.1 says), and a JSON body in the
/// shape of an OAuth error response, which MCP clients parse and show.
fn unauthorized(sent: bool) -> Response {
    let (challenge, error, why) = if sent {
        (
            r#"Bearer realm="trapdesk", error="invalid_token", error_description="wrong or removed token""#,
            "invalid_token",
            "wrong or removed bearer token: `trapdesk agent list` shows the named agents, `trapdesk agent add NAME` prints a new token",
        )
    } else {
        (
            r#"Bearer realm="trapdesk""#,
            "unauthorized",
            "this MCP endpoint needs a bearer token: send Authorization: Bearer <token>; `trapdesk agent add NAME` prints one, and `trapdesk mcp-stdio` needs none",
        )
    };
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        axum::Json(serde_json::json!({ "error": error, "error_description": why })),
    )
        .into_response()
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

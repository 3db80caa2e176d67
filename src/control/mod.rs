//! The local control channel: what only the person's own tools ask of the running host
//! (`trapdesk doctor`, `trapdesk secret show`, `trapdesk pause` / `resume`, and the whole
//! console with `trapdesk attach`: [`attach`]), never offered to agents as a tool.
//!
//! **Transport**: plain HTTP routes under [`PREFIX`] on the MCP listener, beside `/mcp`. One
//! listener means one address to find (the data dir's `host.json` names it) and nothing more
//! to bind or clean up; a Unix socket would not exist on Windows. The routes take **only** the
//! install's local token (`<data dir>/mcp-token`, 0600): not a named agent's token, not
//! `--mcp-token`, so holding a token for MCP gives no way in here. Reading that file is what
//! proves a caller is the person's own tool (any program of the same user can, as with the
//! data dir itself). A request with an `Origin` header (a browser page) is refused whatever
//! its token.
//!
//! This is a front on the session like `mcp/`: it imports the session, never another front.
//! The tools' side (finding the host, asking it) is `crate::commands::control_client`.

pub mod attach;

pub use attach::host_name;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use trapdesk_core::config::{SecretSource, Settings};
use trapdesk_core::session::Session;

/// Where the control routes live on the MCP listener.
pub const PREFIX: &str = "/control";

/// How many refused links `status` reports, newest last.
pub const REFUSALS_SHOWN: usize = 10;

/// What the running host says about itself (`GET /control/status`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub pid: u32,
    pub version: String,
    /// The data dir this host uses (its secrets, tokens, transcript).
    pub data_dir: PathBuf,
    /// Where the gateway listens (the real port, also when 0 was asked).
    pub gateway: SocketAddr,
    /// Where the MCP endpoint (and this channel) listens.
    pub mcp: SocketAddr,
    pub secret: SecretInfo,
    /// The linked computers' traposIds.
    pub linked: Vec<String>,
    /// The last refused links (wrong secret, bad hello), newest last.
    pub refused: Vec<Refusal>,
    /// The stop for all agents, while it holds.
    pub paused: Option<PausedInfo>,
}

/// The stop for all agents as `status` and `pause` report it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PausedInfo {
    pub since_ms: u64,
    /// Where it was set: `console`, `cli`.
    pub by: String,
}

/// What `POST /control/pause` and `POST /control/resume` did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PauseAnswer {
    /// Whether agents are stopped now.
    pub paused: bool,
    /// Nothing changed: it was already so.
    pub already: bool,
    /// Agent calls ended by this pause (0 for a resume).
    pub stopped: usize,
}

/// The shared secret as the host checks it now, and the line a person types on a computer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretInfo {
    pub secret: String,
    /// Where it comes from, in words ("stored in /path", "from --secret").
    pub source: String,
    pub installer: String,
}

/// One refused link from the session log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    pub time_ms: u64,
    pub who: Option<String>,
    pub detail: String,
}

/// The state behind the routes.
struct Control {
    session: Session,
    /// The local token, read once at start (the host made it before it listened). `None`
    /// when it cannot be read: then every request is refused.
    token: Option<String>,
    /// The consoles attached now, by name.
    names: Arc<attach::Names>,
    /// The host stopping.
    stop: tokio_util::sync::CancellationToken,
}

/// The control routes for `session`, to be merged into the MCP listener's router. `stop` is
/// the host's: attached consoles are told it is stopping when it fires.
pub fn router(session: Session, stop: tokio_util::sync::CancellationToken) -> Router {
    let settings = session.settings();
    let token = trapdesk_core::trust::agents::read_local(&settings.data_dir)
        .map_err(|e| tracing::error!("the control channel cannot read the local token: {e}"))
        .ok()
        .flatten();
    let state = Arc::new(Control {
        session,
        token,
        names: Arc::default(),
        stop,
    });
    Router::new()
        .route(&format!("{PREFIX}/status"), get(status))
        .route(&format!("{PREFIX}/secret"), get(secret))
        .route(&format!("{PREFIX}/pause"), post(pause))
        .route(&format!("{PREFIX}/resume"), post(resume))
        .route(
            &format!("{PREFIX}/{}", attach::wire::ROUTE),
            get(attach::attach),
        )
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Only the local token, and never from a browser page.
async fn guard(State(c): State<Arc<Control>>, req: Request, next: Next) -> Response {
    if req.headers().contains_key(header::ORIGIN) {
        return refuse(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the control channel does not answer web pages",
        );
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let ok = match (given, c.token.as_deref()) {
        (Some(g), Some(t)) => {
            use subtle::ConstantTimeEq;
            bool::from(g.as_bytes().ct_eq(t.as_bytes()))
        }
        _ => false,
    };
    if !ok {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the control channel takes only the install's local token (<data dir>/mcp-token); agents' tokens are not enough",
        );
    }
    trapdesk_core::door::proven(req.extensions());
    next.run(req).await
}

fn refuse(code: StatusCode, error: &str, why: &str) -> Response {
    (
        code,
        axum::Json(serde_json::json!({ "error": error, "error_description": why })),
    )
        .into_response()
}

async fn status(State(c): State<Arc<Control>>) -> axum::Json<Status> {
    axum::Json(status_of(&c.session))
}

async fn secret(State(c): State<Arc<Control>>) -> axum::Json<SecretInfo> {
    axum::Json(secret_of(&c.session.settings()))
}

/// `trapdesk pause`: the stop for all agents, set from the command line (origin `cli`).
async fn pause(State(c): State<Arc<Control>>) -> axum::Json<PauseAnswer> {
    let r = c.session.pause("cli");
    axum::Json(PauseAnswer {
        paused: true,
        already: r.already,
        stopped: r.stopped,
    })
}

/// `trapdesk resume`.
async fn resume(State(c): State<Arc<Control>>) -> axum::Json<PauseAnswer> {
    let changed = c.session.resume("cli");
    axum::Json(PauseAnswer {
        paused: false,
        already: !changed,
        stopped: 0,
    })
}

/// The host's status as `GET /control/status` answers it.
pub fn status_of(session: &Session) -> Status {
    let settings = session.settings();
    let mut refused: Vec<Refusal> = session
        .recent(usize::MAX)
        .into_iter()
        // A link turned away, not the policy refusing a request, is what doctor looks for.
        .filter(|e| e.is_turned_away())
        .map(|e| Refusal {
            time_ms: e.time_ms,
            who: e.who,
            detail: e.detail,
        })
        .collect();
    let skip = refused.len().saturating_sub(REFUSALS_SHOWN);
    refused.drain(..skip);
    Status {
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        data_dir: settings.data_dir.clone(),
        gateway: settings.gateway_bind,
        mcp: settings.mcp_bind,
        secret: secret_of(&settings),
        linked: session
            .computers()
            .into_iter()
            .filter(|c| c.online)
            .map(|c| c.trapos_id)
            .collect(),
        refused,
        paused: session.paused().map(|p| PausedInfo {
            since_ms: p
                .since
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            by: p.by,
        }),
    }
}

/// The shared secret the gateway checks now: a stored one is read again, so that after
/// `trapdesk secret rotate` this says the new one (as the gateway's check does).
fn secret_of(settings: &Settings) -> SecretInfo {
    let (secret, source) = match &settings.secret_source {
        SecretSource::Generated(p) | SecretSource::Stored(p) => {
            let now = std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty());
            (
                now.unwrap_or_else(|| settings.secret.clone()),
                format!("stored in {}", p.display()),
            )
        }
        SecretSource::Flag => (settings.secret.clone(), "given with --secret".into()),
        SecretSource::File(p) => (
            settings.secret.clone(),
            format!("read from {} (--secret-file)", p.display()),
        ),
        SecretSource::Env => (
            settings.secret.clone(),
            "from the environment variable SANDBOX_PASSWORD".into(),
        ),
        SecretSource::ConfigFile => (
            settings.secret.clone(),
            match &settings.config_file {
                Some(p) => format!("from {}", p.display()),
                None => "from the config file".into(),
            },
        ),
    };
    let installer = trapdesk_core::config::install_line(settings.gateway_bind, &secret);
    SecretInfo {
        secret,
        source,
        installer,
    }
}

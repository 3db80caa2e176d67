//! The gateway: the one HTTP/WebSocket listener computers link to.
//!
//! `/gateway` upgrades to the WebSocket of `docs/protocol.md` (one task per computer, in
//! [`connection`]: its handshake, its sending side and its loop); `/`, `/install.lua`, `/lua/<path>` and `/health` are plain HTTP on the same
//! port (in [`install`]). Every `hello`'s secret is checked against [`trapdesk_core::trust::secrets`] and a
//! right one links at once; the connections that have not linked yet are bounded by the
//! listeners' [`door`], and an upgrade from a web page (any `Origin`) is refused with 403.
//! The gateway knows nothing of who asked for a request: it moves frames between a socket and
//! the [`Session`].

pub mod binary;
pub mod connection;
/// The listeners' door, shared with the MCP listener (`trapdesk_core::door`).
pub use trapdesk_core::door;
pub mod fragment;
mod handshake;
pub mod install;
mod sender;
mod socket;
pub mod stats;
mod upgrade;
/// The wire types live beneath the session (`trapdesk_proto::protocol`), which both sides use; this
/// name stays so the gateway reads as it always has.
pub use trapdesk_proto::protocol;

use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, State, WebSocketUpgrade};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use trapdesk_core::config::Settings;
use trapdesk_core::session::Session;

/// What every handler needs.
#[derive(Clone)]
pub struct GatewayState {
    pub session: Session,
    pub settings: Arc<Settings>,
    pub shutdown: CancellationToken,
    /// Link counts for the periodic INFO summary.
    pub stats: Arc<stats::LinkStats>,
    /// The computers' secrets, kept parsed between hellos.
    pub secrets: Arc<trapdesk_core::trust::secrets::Secrets>,
    /// The connections that have not linked yet.
    pub waiting: Arc<door::Waiting>,
}

/// The gateway's routes.
pub fn router(state: GatewayState) -> Router {
    Router::new()
        .route("/", get(install::index))
        .route("/gateway", get(upgrade))
        .route("/install.lua", get(install::installer))
        .route("/lua/{*path}", get(install::lua_file))
        .route("/health", get(install::health))
        .with_state(state)
}

/// Bytes each computer's socket reads into at first (it grows for a larger frame, which is
/// then read in steps of this size). Every idle link holds it: 2 KiB takes a `hello`, a
/// heartbeat and most answers in one read, and was a third of an idle link's 12.6 KiB at
/// 4 KiB (BENCHMARKS.md, "Fleets and the floor").
const READ_BUFFER: usize = 2048;

async fn upgrade(
    State(state): State<GatewayState>,
    headers: axum::http::HeaderMap,
    extensions: axum::http::Extensions,
    ws: WebSocketUpgrade,
) -> Response {
    // A browser always sends `Origin` with a WebSocket upgrade, and a web page may open one to
    // any address, loopback included; ComputerCraft's clients send none (docs/protocol.md,
    // "One port, four routes", cites their sources). So a page the person visits can neither
    // try secrets nor hold sockets here.
    if headers.contains_key(axum::http::header::ORIGIN) {
        tracing::debug!("gateway upgrade with an Origin refused (403)");
        return (
            axum::http::StatusCode::FORBIDDEN,
            "the gateway does not answer web pages: an upgrade with an Origin header is refused (ComputerCraft sends none)\n",
        )
            .into_response();
    }
    // Where the computer connects from (for the log of refused links) and its place among the
    // connections waiting to link. Present when served by [`serve`]; a router mounted
    // elsewhere without connect info simply does not know.
    let peer = extensions
        .get::<ConnectInfo<door::Peer>>()
        .map(|ConnectInfo(peer)| peer.clone());
    // Let frames a little over our limit through the WebSocket layer so that we can answer
    // them with the protocol's close code 1009 ourselves; far larger ones are cut off there.
    let limit = (state.settings.max_message as usize).saturating_add(1);
    // Small buffers: tungstenite's defaults reserve 128 KiB to read into per socket, which
    // made an idle link cost ~138 KiB (BENCHMARKS.md). Frames larger than the buffer still
    // arrive whole: the buffer grows for them. Writes go out at once (each send is flushed
    // anyway), so no write buffer is kept either.
    ws.max_message_size(limit)
        .max_frame_size(limit)
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .on_upgrade(move |socket| connection::run(socket, state, peer))
}

/// Serves the gateway on `listener` until `shutdown` is cancelled; open connections are closed
/// with 1001 (going away).
///
/// # Errors
/// When the listener fails.
pub async fn serve(
    listener: TcpListener,
    session: Session,
    settings: Arc<Settings>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let stats = Arc::new(stats::LinkStats::default());
    tokio::spawn(stats::report(
        stats.clone(),
        session.clone(),
        stats::INTERVAL,
        shutdown.clone(),
    ));
    let waiting = Arc::new(door::Waiting::default());
    let state = GatewayState {
        secrets: Arc::new(trapdesk_core::trust::secrets::Secrets::new(&settings)),
        session,
        settings,
        shutdown: shutdown.clone(),
        stats,
        waiting: waiting.clone(),
    };
    let door = door::Door { listener, waiting };
    door::serve(door, router(state), shutdown).await
}

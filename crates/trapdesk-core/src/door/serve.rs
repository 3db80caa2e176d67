//! Serving a router through a [`Door`]: HTTP/1.1 (with upgrades) on every accepted
//! connection, under a deadline for each request's headers.
//!
//! This is what `axum::serve` does, with the one thing it does not offer: axum's serve gives
//! hyper no timer, so hyper's `header_read_timeout` never fires and a connection that sends
//! half a request head is held for ever (axum's docs: "intentionally simple and doesn't
//! support any configuration"). Here hyper gets tokio's timer and [`HEADER_DEADLINE`].
//! HTTP/2 is not offered (it was not before either: axum is built without it here), so there
//! is no protocol sniffing to wait on before the deadline applies.

use std::io;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Door, Peer};

/// How long a connection has to send a whole request head: from its first byte on a new
/// connection, and from the end of the last response on a kept-alive one. A computer, an MCP
/// client or a browser sends its head in one write, within milliseconds; a connection that
/// has not within this is closed (no response: there is no request to answer).
pub const HEADER_DEADLINE: Duration = Duration::from_secs(10);

/// Serves `app` on `door` until `shutdown` is cancelled; then stops accepting, lets each open
/// connection finish its response (hyper's graceful shutdown) and waits for them. Each request
/// carries `ConnectInfo<`[`Peer`]`>` among its extensions.
///
/// # Errors
/// None today (accept errors are waited out in [`Door::accept`]); the result is kept so that a
/// caller's error path stays when one is added.
pub async fn serve(mut door: Door, app: Router, shutdown: CancellationToken) -> io::Result<()> {
    let connections = TaskTracker::new();
    loop {
        let (io, addr) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = door.accept() => accepted,
        };
        let peer = Peer {
            addr,
            place: io.place.clone(),
        };
        let router = TowerToHyperService::new(app.clone());
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer.clone()));
            hyper::service::Service::call(&router, req)
        });
        let stop = shutdown.clone();
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_DEADLINE);
            let conn = builder
                .serve_connection(TokioIo::new(io), service)
                .with_upgrades();
            tokio::pin!(conn);
            tokio::select! {
                done = conn.as_mut() => {
                    // A deadline passed, a peer went away or sent garbage: its business.
                    if let Err(e) = done {
                        tracing::trace!("connection from {addr} ended: {e}");
                    }
                    return;
                }
                () = stop.cancelled() => {}
            }
            conn.as_mut().graceful_shutdown();
            if let Err(e) = conn.await {
                tracing::trace!("connection from {addr} ended while stopping: {e}");
            }
        });
    }
    connections.close();
    connections.wait().await;
    Ok(())
}

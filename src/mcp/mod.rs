//! Placeholder until the MCP endpoint lands (branch `mcp`).
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::session::Session;

pub async fn serve_http(
    _session: Session,
    _listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), std::io::Error> {
    shutdown.cancelled().await;
    Ok(())
}

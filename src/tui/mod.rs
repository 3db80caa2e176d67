//! See the crate docs.
use crate::config::Settings;
use crate::session::Session;
use tokio_util::sync::CancellationToken;

pub async fn run(
    _session: Session,
    _settings: Settings,
    shutdown: CancellationToken,
) -> Result<(), std::io::Error> {
    shutdown.cancelled().await;
    Ok(())
}

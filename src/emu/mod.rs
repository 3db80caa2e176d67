//! Placeholder until the emulator lands (branch `emu`).
use std::path::Path;
use tokio_util::sync::CancellationToken;

pub async fn run_demo(
    _n: u32,
    _url: &str,
    _secret: &str,
    _data_dir: &Path,
    shutdown: CancellationToken,
) -> Result<(), std::io::Error> {
    shutdown.cancelled().await;
    Ok(())
}

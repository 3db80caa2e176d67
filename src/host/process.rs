//! What every run mode of the process shares: logging to the data dir's log file (and
//! stderr when no console owns the terminal) and the signals that stop it or reload the
//! policy.

use std::io::IsTerminal;
use std::path::Path;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The log filter without `RUST_LOG`.
pub const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn";

/// Sends logs to `<data_dir>/trapdesk.log` (rotated by size, mode 0600: [`super::log_file`]),
/// and also to stderr when `to_stderr` (never while the console owns the terminal).
/// `RUST_LOG` sets the filter; the default is [`DEFAULT_LOG_FILTER`].
///
/// # Errors
/// When the log file cannot be opened.
pub fn init_logging(data_dir: &Path, to_stderr: bool) -> anyhow::Result<()> {
    trapdesk_core::config::private::create_dir(data_dir)
        .map_err(|e| anyhow::anyhow!("cannot create data dir {}: {e}", data_dir.display()))?;
    let path = data_dir.join(super::log_file::LOG_FILE);
    let file = super::log_file::LogFile::open(&path, super::log_file::LOG_MAX_BYTES)
        .map_err(|e| anyhow::anyhow!("cannot open log file {}: {e}", path.display()))?;
    // rmcp logs a debug dump of every session's structs at INFO; that is noise to a person.
    let filter =
        || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    let file_layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .with_filter(filter());
    let stderr_layer = to_stderr.then(|| {
        tracing_subscriber::fmt::layer()
            // Colour codes only for a person's terminal, never into a file or a pipe.
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .with_filter(filter())
    });
    // A second init (tests) keeps the first subscriber; that is fine.
    let _ = tracing_subscriber::registry()
        .with(file_layer)
        .with(stderr_layer)
        .try_init();
    Ok(())
}

use tracing_subscriber::Layer as _;

/// Resolves on SIGINT (Ctrl-C) or SIGTERM. The handlers are installed when this is called,
/// not when it is first polled, so a caller that calls it before announcing itself cannot be
/// killed by a signal that arrives in between (a supervisor that reads the start line and stops
/// the process at once).
pub fn termination() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let (int, term) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            async fn recv(s: Option<tokio::signal::unix::Signal>) {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                _ = recv(int) => {}
                _ = recv(term) => {}
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Reloads the policy from the config file on every SIGHUP, until the process ends. A file
/// that fails to parse leaves the running policy in place (the session logs why).
pub fn reload_on_hangup(session: trapdesk_core::session::Session) {
    // Registered before returning, not in the task: SIGHUP's default action ends the process,
    // so a signal between the start line and the task's first poll would kill it.
    #[cfg(unix)]
    {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            tracing::warn!("cannot listen for SIGHUP; reload the policy from the console");
            return;
        };
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                match session.reload_policy() {
                    Ok(()) => tracing::info!("SIGHUP: policy reloaded"),
                    Err(e) => tracing::warn!("SIGHUP: policy not reloaded: {e}"),
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = session;
}

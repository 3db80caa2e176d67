//! The command line: its flags and subcommands, the run modes other than the host itself, and
//! what every mode shares (logging, signals).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config;
/// The host's flags live in [`config`] (beneath the hub), so that settings do not depend on the
/// command line; re-exported here where clap assembles them.
pub use crate::config::HostArgs;

/// Command line of the `trapdesk` binary.
#[derive(Debug, Parser)]
#[command(
    name = "trapdesk",
    version,
    about = "Operate ComputerCraft computers from a terminal and from AI agents"
)]
pub struct Cli {
    #[command(flatten)]
    pub host: HostArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Modes other than the host.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP on stdio, forwarding to a running trapdesk so the agent joins its session.
    McpStdio {
        /// MCP endpoint of the running trapdesk [default: http://127.0.0.1:4445/mcp].
        #[arg(long, value_name = "URL")]
        connect: Option<String>,
        /// With no trapdesk running, run a headless gateway of our own instead of failing
        /// (the host flags below then apply to it).
        #[arg(long)]
        standalone: bool,
        #[command(flatten)]
        host: HostArgs,
    },
    /// Named agents: bearer tokens that name MCP clients (docs/security.md).
    Agent {
        #[command(subcommand)]
        action: crate::admin::AgentCmd,
        /// Data directory [default: the platform's].
        #[arg(long, value_name = "DIR", global = true)]
        data_dir: Option<PathBuf>,
    },
    /// The computers' secrets: rotate the shared one, or give one computer its own.
    Secret {
        #[command(subcommand)]
        action: crate::admin::SecretCmd,
        /// Data directory [default: the platform's].
        #[arg(long, value_name = "DIR", global = true)]
        data_dir: Option<PathBuf>,
    },
    /// Print (or follow) the audit trail: every request, who made it, how it ended.
    Transcript {
        #[command(flatten)]
        filter: crate::admin::TranscriptArgs,
        /// Data directory [default: the platform's].
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Run one emulated computer against any gateway.
    Emulate {
        /// Gateway WebSocket URL, for example ws://127.0.0.1:4444/gateway.
        #[arg(long)]
        url: String,
        /// Computer id.
        #[arg(long, default_value_t = 0)]
        id: u64,
        /// Computer label.
        #[arg(long)]
        label: Option<String>,
        /// Secret [default: env SANDBOX_PASSWORD].
        #[arg(long, value_name = "S")]
        secret: Option<String>,
        /// Directory for the log, and for the disk unless --disk is given.
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Directory that is the computer's disk [default: computers/<id> in the data dir].
        #[arg(long, value_name = "DIR")]
        disk: Option<PathBuf>,
    },
}

/// The log filter without `RUST_LOG`.
pub const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn";

/// Sends logs to `<data_dir>/trapdesk.log`, and also to stderr when `to_stderr` (never while
/// the console owns the terminal). `RUST_LOG` sets the filter; the default is
/// [`DEFAULT_LOG_FILTER`].
///
/// # Errors
/// When the log file cannot be opened.
pub fn init_logging(data_dir: &Path, to_stderr: bool) -> anyhow::Result<()> {
    std::fs::create_dir_all(data_dir)
        .map_err(|e| anyhow::anyhow!("cannot create data dir {}: {e}", data_dir.display()))?;
    let path = data_dir.join("trapdesk.log");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
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

/// The one line `main` prints for an error: the error and each cause that adds something.
/// (`{:#}` would repeat an OS error whose text the outer message already quotes.)
pub fn report(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        let core = c.find(" (os error").map_or(c.as_str(), |i| &c[..i]);
        if !text.contains(core) {
            text.push_str(": ");
            text.push_str(&c);
        }
    }
    text
}

/// Reloads the policy from the config file on every SIGHUP, until the process ends. A file
/// that fails to parse leaves the running policy in place (the session logs why).
pub fn reload_on_hangup(session: crate::session::Session) {
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

/// An error already explained on stderr; `main` only sets the exit code.
#[derive(Debug, thiserror::Error)]
#[error("already reported")]
pub struct AlreadyReported;

/// `trapdesk mcp-stdio`: MCP on stdin/stdout, forwarded to the running trapdesk so the agent
/// joins its session. With `--standalone` and no trapdesk running, runs a headless host of its
/// own (gateway + HTTP MCP, plus `--demo` computers if asked) and serves its session.
///
/// # Errors
/// When no trapdesk answers at the URL (and `--standalone` was not given), or serving fails.
pub async fn mcp_stdio(
    args: HostArgs,
    connect: Option<String>,
    standalone: bool,
) -> anyhow::Result<()> {
    let url = connect.unwrap_or_else(|| match args.mcp_bind {
        Some(addr) => format!("http://{addr}/mcp"),
        None => crate::mcp::stdio::DEFAULT_CONNECT.to_owned(),
    });
    match crate::mcp::run_stdio(&url, standalone).await {
        Ok(()) => Ok(()),
        Err(crate::mcp::stdio::StdioError::NoHost { .. }) => {
            let settings = config::resolve(&args)?;
            // stdout is the MCP channel: logs go to stderr and the file only.
            init_logging(&settings.data_dir, true)?;
            let mut host = crate::app::Host::start(settings, true).await?;
            eprintln!(
                "trapdesk: no console running at {url}; serving a headless host (gateway ws://{}/gateway)",
                host.gateway_addr
            );
            if let Some(n) = args.demo {
                host.start_demo(n);
            }
            let served = crate::mcp::serve_stdio_session(host.session.clone()).await;
            host.stop().await;
            served.map_err(Into::into)
        }
        Err(crate::mcp::stdio::StdioError::Unreachable { .. }) => Err(AlreadyReported.into()),
        Err(e) => Err(e.into()),
    }
}

/// `trapdesk emulate`: one emulated computer against any gateway, until Ctrl-C.
///
/// # Errors
/// When no secret is given, the data directory cannot be used or the computer fails to boot.
pub async fn emulate(
    url: String,
    id: u64,
    label: Option<String>,
    secret: Option<String>,
    data_dir: Option<PathBuf>,
    root: Option<PathBuf>,
) -> anyhow::Result<()> {
    let secret = secret
        .or_else(|| {
            std::env::var("SANDBOX_PASSWORD")
                .ok()
                .filter(|s| !s.is_empty())
        })
        .ok_or_else(|| anyhow::anyhow!("emulate needs --secret (or env SANDBOX_PASSWORD)"))?;
    let data_dir = match data_dir.or_else(config::default_data_dir) {
        Some(d) => d,
        None => anyhow::bail!("no home directory to keep data in; pass --data-dir"),
    };
    let root = root.unwrap_or_else(|| data_dir.join("computers").join(id.to_string()));
    std::fs::create_dir_all(&root)
        .map_err(|e| anyhow::anyhow!("cannot use {}: {e}", root.display()))?;
    init_logging(&data_dir, true)?;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        termination().await;
        stop.cancel();
    });
    eprintln!(
        "emulated computer {id} linking to {url} (disk: {})",
        root.display()
    );
    crate::emu::run_emulate(&url, id, label, &secret, &root, shutdown).await?;
    Ok(())
}

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
    about = "Operate ComputerCraft computers from a terminal and from AI agents",
    after_help = "Example: trapdesk --demo 3   (console with three emulated computers)\nA computer will not link? Run `trapdesk doctor`."
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
    /// Run Lua on a linked computer: output streams as it comes, returned values follow.
    #[command(
        after_help = "Example: trapdesk exec miner 'print(turtle.getFuelLevel()) return os.time()'\nExit codes: 0 ok, 1 Lua error, 2 usage, 3 unreachable/not linked/timed out/refused, 130 Ctrl-C (cancelled on the computer)."
    )]
    Exec(crate::client::ExecArgs),
    /// Run a program on a linked computer with arguments.
    #[command(
        after_help = "Example: trapdesk run miner dig.lua 3 north\nExit codes: 0 ok, 1 the program failed, 2 usage, 3 unreachable/not linked/timed out/refused, 130 Ctrl-C."
    )]
    Run(crate::client::RunArgs),
    /// List the linked computers.
    #[command(after_help = "Example: trapdesk computers --match 'miner*'")]
    Computers(crate::client::ComputersArgs),
    /// List a directory on a computer.
    #[command(after_help = "Example: trapdesk ls miner:/programs")]
    Ls(crate::client::LsArgs),
    /// Copy a file from a computer (byte-exact).
    #[command(after_help = "Example: trapdesk get miner:/startup.lua ./startup.lua")]
    Get(crate::client::GetArgs),
    /// Copy a file to a computer (byte-exact, any size the host supports).
    #[command(after_help = "Example: trapdesk put ./dig.lua miner:/dig.lua")]
    Put(crate::client::PutArgs),
    /// Mirror a local folder onto a computer: push what differs, then each save (run-on-save).
    #[command(
        after_help = "Example: trapdesk sync ./src miner:/prog --run \"prog/main.lua --verbose\" --ignore '*.md'"
    )]
    Sync(crate::sync::SyncArgs),
    /// Check why a computer will not link: addresses, port, the server's http rules, secret, refusals.
    #[command(
        after_help = "Example: trapdesk doctor --minecraft ~/mc-server --gateway-bind 0.0.0.0:4444"
    )]
    Doctor(crate::doctor::DoctorArgs),
    /// Print shell completions (from these definitions) for bash, zsh or fish.
    #[command(
        after_help = "Example: trapdesk completions bash > ~/.local/share/bash-completion/completions/trapdesk"
    )]
    Completions {
        /// bash, zsh, fish (also elvish, powershell).
        shell: clap_complete::Shell,
    },
    /// Serve MCP on stdio, forwarding to a running trapdesk so the agent joins its session.
    #[command(after_help = "Example: claude mcp add trapdesk -- trapdesk mcp-stdio")]
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
    #[command(after_help = "Example: trapdesk agent add claude")]
    Agent {
        #[command(subcommand)]
        action: crate::admin::AgentCmd,
        /// Data directory [default: env TRAPDESK_DATA_DIR, else the platform's].
        #[arg(long, value_name = "DIR", global = true, env = "TRAPDESK_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The computers' secrets: show or rotate the shared one, list, add or forget computers' own, open or close enrolment.
    #[command(after_help = "Example: trapdesk secret show")]
    Secret {
        #[command(subcommand)]
        action: crate::admin::SecretCmd,
        /// Data directory [default: env TRAPDESK_DATA_DIR, else the platform's].
        #[arg(long, value_name = "DIR", global = true, env = "TRAPDESK_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Print (or follow) the audit trail: every request, who made it, how it ended.
    #[command(after_help = "Example: trapdesk transcript --origin cli --outcome error --follow")]
    Transcript {
        #[command(flatten)]
        filter: crate::admin::TranscriptArgs,
        /// Data directory [default: env TRAPDESK_DATA_DIR, else the platform's].
        #[arg(long, value_name = "DIR", env = "TRAPDESK_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Run one emulated computer against any gateway.
    #[command(
        after_help = "Example: trapdesk emulate --url ws://127.0.0.1:4444/gateway --id 7 --label miner --secret S"
    )]
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

/// `trapdesk completions SHELL`: the completion script, generated from the clap definitions.
pub fn completions(shell: clap_complete::Shell) {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "trapdesk", &mut script);
    // A closed pipe (`| head`) is the reader's choice, not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
}

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
    match crate::mcp::run_stdio(&url, standalone, args.data_dir.as_deref()).await {
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
        Err(
            crate::mcp::stdio::StdioError::Unreachable { .. }
            | crate::mcp::stdio::StdioError::Refused(_),
        ) => Err(AlreadyReported.into()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every command, parents and leaves, as `trapdesk a b` with its definition.
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        out.push((path.to_owned(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_command_help_shows_an_example() {
        let mut root = Cli::command();
        root.build();
        let mut all = Vec::new();
        walk(&root, "trapdesk", &mut all);
        // clap's generated `help` subcommands are not ours to document.
        all.retain(|(path, _)| !path.split(' ').any(|w| w == "help"));
        assert!(
            all.len() > 15,
            "the tree walk found too little: {}",
            all.len()
        );
        let mut missing = Vec::new();
        for (path, mut cmd) in all {
            let help = cmd.render_long_help().to_string();
            // The example must run this very command, not some other one.
            let ok = help.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with("Example:") && l.contains(path.as_str())
            });
            if !ok {
                missing.push(path);
            }
        }
        assert!(
            missing.is_empty(),
            "no example line in --help of: {missing:?}"
        );
    }
}

//! The host's wiring, in one place: binds the listeners, starts the gateway, the MCP endpoint,
//! the watch on the trust stores and the emulated demo computers around one session, and stops
//! them together ([`Host`]); runs it with the console or headless ([`run`]). The `trapdesk`
//! command, `mcp-stdio --standalone` and the integration tests all start a host through
//! [`Host::start`]. Logging and signals, which every run mode shares, are in [`process`].

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::gateway;
use trapdesk_core::config::{self, SecretSource, Settings};
use trapdesk_core::session::Session;

pub mod log_file;
pub mod process;
mod running;

pub use running::{RUNNING_FILE, Running};

/// Why the host could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "cannot listen for computers on {addr}: {}{}",
        os_text(source),
        bind_hint(source, "--gateway-bind")
    )]
    GatewayBind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "cannot listen for MCP clients on {addr}: {}{}",
        os_text(source),
        bind_hint(source, "--mcp-bind")
    )]
    McpBind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot keep the MCP endpoint's local token: {0}")]
    LocalToken(#[source] trapdesk_core::trust::agents::AgentError),
}

/// Connections the kernel may hold finished but not yet accepted. tokio's `bind` asks for
/// 1,024; a base whose computers all relink at once (a server restart) fills that faster than
/// one accept loop empties it, and every connection past it loses its SYN and waits a whole
/// second to retry (BENCHMARKS.md, "10,000 computers linking at once"). The kernel caps it at
/// `net.core.somaxconn` (4,096 on current Linux).
const LISTEN_BACKLOG: u32 = 4096;

/// Binds a listener with [`LISTEN_BACKLOG`].
///
/// # Errors
/// When the address cannot be bound.
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As std and tokio do: a restarted host can rebind while old connections sit in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// The OS's reason once, without the "(os error 98)" suffix people do not need.
fn os_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// What to do about a failed bind, naming the flag that moves it.
fn bind_hint(e: &std::io::Error, flag: &str) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::AddrInUse => format!(
            " (another program, perhaps another trapdesk, listens there: stop it, or pick another port with {flag})"
        ),
        ErrorKind::PermissionDenied => {
            format!(" (ports below 1024 need privileges: pick a higher port with {flag})")
        }
        ErrorKind::AddrNotAvailable => {
            format!(" (that address is not on this machine: pick another with {flag})")
        }
        _ => String::new(),
    }
}

/// A running host: gateway + MCP endpoint around one session.
pub struct Host {
    pub session: Session,
    pub settings: Arc<Settings>,
    /// Where the gateway actually listens (the port is real even when 0 was asked).
    pub gateway_addr: SocketAddr,
    /// Where the MCP endpoint actually listens.
    pub mcp_addr: SocketAddr,
    /// The install's local MCP token (`<data dir>/mcp-token`), which every MCP request needs
    /// unless it carries a named agent's or the `--mcp-token`.
    pub local_token: String,
    pub shutdown: CancellationToken,
    /// Stops the gateway, the MCP endpoint and the demo: cancelled only after the session has
    /// failed its pending requests with `shutting_down` and agents have had their results.
    parts: CancellationToken,
    tasks: JoinSet<()>,
}

/// How long a stopping host waits for agents' tool calls to deliver their results.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(3);

/// Binds the gateway's and the MCP endpoint's listeners; with the addresses they got.
fn bind(
    settings: &Settings,
) -> Result<(TcpListener, TcpListener, SocketAddr, SocketAddr), StartError> {
    let gw = listen(settings.gateway_bind).map_err(|source| StartError::GatewayBind {
        addr: settings.gateway_bind,
        source,
    })?;
    let mcp = listen(settings.mcp_bind).map_err(|source| StartError::McpBind {
        addr: settings.mcp_bind,
        source,
    })?;
    let gateway_addr = gw.local_addr().map_err(|source| StartError::GatewayBind {
        addr: settings.gateway_bind,
        source,
    })?;
    let mcp_addr = mcp.local_addr().map_err(|source| StartError::McpBind {
        addr: settings.mcp_bind,
        source,
    })?;
    Ok((gw, mcp, gateway_addr, mcp_addr))
}

/// However the host is asked to stop (the console quits, a signal, `stop`), pending requests
/// end at once with `shutting_down` and the output so far, and the MCP endpoint stays up until
/// agents got those results; only then do the parts stop.
async fn stop_when_asked(session: Session, shutdown: CancellationToken, parts: CancellationToken) {
    shutdown.cancelled().await;
    session.shutdown();
    let deadline = tokio::time::Instant::now() + DRAIN;
    while session.tool_calls_running() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // The last results are written after they are recorded.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    parts.cancel();
}

impl Host {
    /// Binds both listeners and starts serving. The settings' bind addresses are replaced by
    /// the real ones, so a port of 0 is reported as the port the system picked.
    ///
    /// # Errors
    /// When a listener cannot be bound, or the local token cannot be read or made.
    pub async fn start(mut settings: Settings, persist: bool) -> Result<Host, StartError> {
        // Before anything listens: the MCP endpoint is never open, and a client that finds the
        // host's port finds the token beside it.
        let local_token = trapdesk_core::trust::agents::local_token(&settings.data_dir)
            .map_err(StartError::LocalToken)?;
        // The person's CLI and `sync` present this one; made before a client can find the host.
        trapdesk_core::trust::agents::person_token(&settings.data_dir)
            .map_err(StartError::LocalToken)?;
        let (gw, mcp, gateway_addr, mcp_addr) = bind(&settings)?;
        settings.gateway_bind = gateway_addr;
        settings.mcp_bind = mcp_addr;
        let settings = Arc::new(settings);
        let session = Session::new((*settings).clone(), persist);
        let shutdown = CancellationToken::new();
        let parts = CancellationToken::new();
        let mut tasks = JoinSet::new();
        tasks.spawn(stop_when_asked(
            session.clone(),
            shutdown.clone(),
            parts.clone(),
        ));
        {
            let (session, settings, stop, shutdown) = (
                session.clone(),
                settings.clone(),
                parts.clone(),
                shutdown.clone(),
            );
            tasks.spawn(async move {
                if let Err(e) = gateway::serve(gw, session, settings, stop).await {
                    tracing::error!("gateway stopped: {e}");
                    shutdown.cancel();
                }
            });
        }
        {
            let (session, stop, shutdown) = (session.clone(), parts.clone(), shutdown.clone());
            tasks.spawn(async move {
                // The control channel shares the MCP listener (see `crate::control`).
                let control = crate::control::router(session.clone(), stop.clone());
                if let Err(e) = crate::mcp::serve_http_with(session, mcp, stop, control).await {
                    tracing::error!("MCP endpoint stopped: {e}");
                    shutdown.cancel();
                }
            });
        }
        tasks.spawn(watch_removals(
            session.clone(),
            settings.data_dir.clone(),
            shutdown.clone(),
        ));
        // Where this host runs, for the install's own tools (`doctor` checks the running
        // gateway's port, not the defaults). Best effort: a host that cannot write it runs.
        if let Err(e) = Running::write(&settings.data_dir, gateway_addr, mcp_addr) {
            tracing::warn!("cannot write {}: {e}", RUNNING_FILE);
        }
        Ok(Host {
            session,
            settings,
            gateway_addr,
            mcp_addr,
            local_token,
            shutdown,
            parts,
            tasks,
        })
    }

    /// `ws://…/gateway` of this host, for emulated computers.
    pub fn gateway_url(&self) -> String {
        format!("ws://{}/gateway", self.gateway_addr)
    }

    /// `http://…/mcp` of this host.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.mcp_addr)
    }

    /// Starts `n` emulated computers linked to this host.
    pub fn start_demo(&mut self, n: u32) {
        // Computers 1..=n and, with any, a turtle and a pocket computer (`run_demo`): they
        // live in this process, and their detached runs end with it.
        let last = u64::from(n) + if n >= 1 { 2 } else { 0 };
        self.session.mark_in_process(1..=last);
        let url = self.gateway_url();
        let secret = self.settings.secret.clone();
        let dir = self.settings.data_dir.clone();
        let shutdown = self.parts.clone();
        self.tasks.spawn(async move {
            if let Err(e) = trapdesk_emu::run_demo(n, &url, &secret, &dir, shutdown).await {
                tracing::error!("demo computers stopped: {e}");
            }
        });
    }

    /// Stops everything and waits for the parts to finish.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        // Every task ends on the cancel, but a graceful HTTP shutdown waits for its open
        // connections and an emulated computer for its Lua thread; on a loaded machine that
        // took over 15 s once. A person who quits should not wait for them: after a bound the
        // rest are aborted.
        let joined = tokio::time::timeout(STOP_PATIENCE, async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
        if joined.is_err() {
            tracing::warn!(
                "{} host tasks still running {STOP_PATIENCE:?} after the stop; aborting them",
                self.tasks.len()
            );
            self.tasks.abort_all();
        }
        // What the history was handed is committed before the process ends: a clean stop
        // loses nothing (a killed host loses only what was not committed yet).
        let session = self.session.clone();
        let flushed =
            tokio::task::spawn_blocking(move || session.flush_history(STOP_PATIENCE)).await;
        if !flushed.unwrap_or(false) {
            tracing::warn!("history: not everything was committed before the stop");
        }
        Running::remove(&self.settings.data_dir, std::process::id());
    }
}

/// How long [`Host::stop`] waits for the host's tasks before aborting them: the drain, then
/// as long again for the parts to close.
const STOP_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2 * DRAIN.as_secs());

/// The host as `trapdesk` runs it: the console on the terminal until it quits, or headless
/// (`--mcp-only`) until a signal; with `--demo N`, N emulated computers.
///
/// # Errors
/// When the settings are wrong, a listener cannot be bound, or the console fails.
pub async fn run(args: config::HostArgs) -> anyhow::Result<()> {
    // Before anything is created: what the host makes without an explicit mode is private too.
    config::private::private_umask();
    let settings = config::resolve(&args)?;
    let headless = args.mcp_only;
    process::init_logging(&settings.data_dir, headless)?;
    log_tightened(&settings);
    let mut host = Host::start(settings, true).await?;
    let stop_signal = process::termination();
    process::reload_on_hangup(host.session.clone());
    if headless {
        eprintln!(
            "trapdesk {}: gateway ws://{}/gateway, MCP {}",
            env!("CARGO_PKG_VERSION"),
            host.gateway_addr,
            host.mcp_url()
        );
        announce_secret(&host);
    }
    if let Some(n) = args.demo {
        host.start_demo(n);
    }
    if headless {
        let shutdown = host.shutdown.clone();
        tokio::select! {
            _ = stop_signal => tracing::info!("signal received, stopping"),
            _ = shutdown.cancelled() => {}
        }
    } else {
        let (session, settings, shutdown) = (
            host.session.clone(),
            (*host.settings).clone(),
            host.shutdown.clone(),
        );
        let tui = tokio::spawn(crate::tui::run(session, settings, shutdown.clone()));
        tokio::select! {
            r = tui => match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => { host.stop().await; return Err(e.into()); }
                Err(e) => { host.stop().await; anyhow::bail!("console failed: {e}"); }
            },
            _ = stop_signal => {}
        }
    }
    host.stop().await;
    Ok(())
}

/// Says once, in the log, that an earlier version's looser data dir was made private.
fn log_tightened(settings: &config::Settings) {
    let p = &settings.data_dir_prepared;
    if p.entries > 0 && (p.tightened_from.is_some() || p.entries_tightened > 0) {
        tracing::warn!(
            "data dir {} was readable by other users (mode {:04o}, {} entries inside): made it yours alone (0700, files 0600)",
            settings.data_dir.display(),
            p.tightened_from.unwrap_or(0o700),
            p.entries_tightened
        );
    }
}

/// What `--mcp-only` says about the secret. On a terminal, the line a person types on a
/// computer, secret included; anywhere else (systemd's journal, `2>>host.log`) only where the
/// secret is and how to show it, so that it never lands in a log file.
fn announce_secret(host: &Host) {
    use std::io::IsTerminal as _;
    let settings = &host.settings;
    let source = match &settings.secret_source {
        SecretSource::Generated(p) => format!("new, stored in {} with mode 0600", p.display()),
        SecretSource::Stored(p) => format!("stored in {}", p.display()),
        SecretSource::Flag => "from --secret".to_owned(),
        SecretSource::File(p) => format!("from --secret-file {}", p.display()),
        SecretSource::Env => "from SANDBOX_PASSWORD".to_owned(),
        SecretSource::ConfigFile => "from the config file".to_owned(),
    };
    if std::io::stderr().is_terminal() {
        eprintln!(
            "link a computer by typing on it: {}",
            config::install_line(host.gateway_addr, &settings.secret)
        );
        eprintln!(
            "secret: {source}\n  `trapdesk secret rotate` makes a new one; `trapdesk secret add COMPUTER` gives one computer its own"
        );
    } else {
        let dir = if config::default_data_dir().as_ref() == Some(&settings.data_dir) {
            String::new()
        } else {
            format!(" --data-dir {}", settings.data_dir.display())
        };
        eprintln!(
            "link a computer: `trapdesk secret show{dir}` prints the line to type on it (the secret is {source}; not written here, since this is no terminal)"
        );
    }
}

/// Cancels the pending calls of every named agent that is removed while the host runs, so a
/// removed agent's calls stop at once, not only its next request. Polls the file twice a
/// second until `shutdown`.
pub async fn watch_removals(
    session: Session,
    dir: std::path::PathBuf,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let names = |dir: &std::path::Path| -> Vec<String> {
        trapdesk_core::trust::agents::list(dir)
            .map(|l| l.into_iter().map(|a| a.name).collect())
            .unwrap_or_default()
    };
    let mut known = names(&dir);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(std::time::Duration::from_millis(500)) => {}
        }
        let dir2 = dir.clone();
        let now = tokio::task::spawn_blocking(move || names(&dir2))
            .await
            .unwrap_or_default();
        for gone in known.iter().filter(|n| !now.contains(n)) {
            let origin = trapdesk_core::session::Origin::Agent(gone.clone());
            let n = session.cancel_all_of_by(&origin, &format!("the removal of agent {gone}"));
            tracing::info!(agent = %gone, cancelled = n, "named agent removed");
        }
        known = now;
    }
}

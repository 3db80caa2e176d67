//! Wiring of the run modes: binds the listeners, starts the gateway, the MCP endpoint and the
//! emulated demo computers around one session, and stops them together. `main` and the
//! integration tests both start the host through [`Host::start`].

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::gateway;
use crate::session::Session;

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
    LocalToken(#[source] crate::agents::AgentError),
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

impl Host {
    /// Binds both listeners and starts serving. The settings' bind addresses are replaced by
    /// the real ones, so a port of 0 is reported as the port the system picked.
    ///
    /// # Errors
    /// When a listener cannot be bound, or the local token cannot be read or made.
    pub async fn start(mut settings: Settings, persist: bool) -> Result<Host, StartError> {
        // Before anything listens: the MCP endpoint is never open, and a client that finds the
        // host's port finds the token beside it.
        let local_token =
            crate::agents::local_token(&settings.data_dir).map_err(StartError::LocalToken)?;
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
        settings.gateway_bind = gateway_addr;
        settings.mcp_bind = mcp_addr;
        let settings = Arc::new(settings);
        let session = Session::new((*settings).clone(), persist);
        let shutdown = CancellationToken::new();
        let parts = CancellationToken::new();
        let mut tasks = JoinSet::new();
        {
            // However the host is asked to stop (the console quits, a signal, `stop`), pending
            // requests end at once with `shutting_down` and the output so far, and the MCP
            // endpoint stays up until agents got those results; only then do the parts stop.
            let (session, shutdown, parts) = (session.clone(), shutdown.clone(), parts.clone());
            tasks.spawn(async move {
                shutdown.cancelled().await;
                session.shutdown();
                let deadline = tokio::time::Instant::now() + DRAIN;
                while session.tool_calls_running() > 0 && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                // The last results are written after they are recorded.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                parts.cancel();
            });
        }
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
                if let Err(e) = crate::mcp::serve_http(session, mcp, stop).await {
                    tracing::error!("MCP endpoint stopped: {e}");
                    shutdown.cancel();
                }
            });
        }
        tasks.spawn(crate::agents::watch_removals(
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
        let url = self.gateway_url();
        let secret = self.settings.secret.clone();
        let dir = self.settings.data_dir.clone();
        let shutdown = self.parts.clone();
        self.tasks.spawn(async move {
            if let Err(e) = crate::emu::run_demo(n, &url, &secret, &dir, shutdown).await {
                tracing::error!("demo computers stopped: {e}");
            }
        });
    }

    /// Stops everything and waits for the parts to finish.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        while self.tasks.join_next().await.is_some() {}
        Running::remove(&self.settings.data_dir, std::process::id());
    }
}

/// The file in the data dir that says where the host using it listens.
pub const RUNNING_FILE: &str = "host.json";

/// `<data dir>/host.json`: the running host's process and addresses. Written at start,
/// removed at a clean stop; a host that died leaves it behind, so a reader checks that the
/// process still exists.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Running {
    pub pid: u32,
    pub gateway: SocketAddr,
    pub mcp: SocketAddr,
}

impl Running {
    fn write(dir: &std::path::Path, gateway: SocketAddr, mcp: SocketAddr) -> std::io::Result<()> {
        let me = Running {
            pid: std::process::id(),
            gateway,
            mcp,
        };
        let text = serde_json::to_string(&me).unwrap_or_default();
        std::fs::create_dir_all(dir)?;
        // Beside and renamed over: a reader never sees half of it.
        let tmp = dir.join(format!("{RUNNING_FILE}.{}", std::process::id()));
        crate::config::write_private(&tmp, text.as_bytes())?;
        std::fs::rename(&tmp, dir.join(RUNNING_FILE))
    }

    /// Removes the file if it is still this process's (another host may have taken the dir).
    fn remove(dir: &std::path::Path, pid: u32) {
        if Running::read_any(dir).is_some_and(|r| r.pid == pid) {
            let _ = std::fs::remove_file(dir.join(RUNNING_FILE));
        }
    }

    fn read_any(dir: &std::path::Path) -> Option<Running> {
        let text = std::fs::read_to_string(dir.join(RUNNING_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The host running on the data dir `dir`, if its process is alive (on Linux, by
    /// `/proc`; elsewhere the file is taken as it is).
    pub fn read(dir: &std::path::Path) -> Option<Running> {
        let r = Running::read_any(dir)?;
        let proc = std::path::Path::new("/proc");
        if proc.exists() && !proc.join(r.pid.to_string()).exists() {
            return None;
        }
        Some(r)
    }
}

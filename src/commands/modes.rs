//! The run modes other than the host itself: `mcp-stdio` (an agent's stdio joined to the
//! running host, or a headless host of its own) and `emulate` (one emulated computer against
//! any gateway).

use std::path::PathBuf;

use crate::host::process::{init_logging, termination};
use trapdesk_core::config::{self, HostArgs};

use super::AlreadyReported;

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
    let target = stdio_target(&args, connect);
    match crate::mcp::run_stdio(&target, standalone, args.data_dir.as_deref()).await {
        Ok(()) => Ok(()),
        Err(crate::mcp::stdio::StdioError::NoHost { looked }) => {
            config::private::private_umask();
            let settings = config::resolve(&args)?;
            // stdout is the MCP channel: logs go to stderr and the file only.
            init_logging(&settings.data_dir, true)?;
            let mut host = crate::host::Host::start(settings, true).await?;
            eprintln!(
                "trapdesk: no trapdesk running ({looked}); serving a headless host (gateway ws://{}/gateway)",
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
            | crate::mcp::stdio::StdioError::NotRunning { .. }
            | crate::mcp::stdio::StdioError::Refused(_),
        ) => Err(AlreadyReported.into()),
        Err(e) => Err(e.into()),
    }
}

/// Where `mcp-stdio` forwards to.
fn stdio_target(args: &HostArgs, connect: Option<String>) -> crate::mcp::stdio::Target {
    use super::control_client::{self, Found};
    use crate::mcp::stdio::Target;
    // Found as every other front finds it (`control_client::find`): a URL the person gave
    // (`--connect`, env TRAPDESK_CONNECT, or the `--mcp-bind` typed here), else the live host in
    // the data dir's host.json; never a default address (a process on the well-known port
    // would get the token).
    let named = connect.or_else(|| args.mcp_bind.map(|a| format!("http://{a}/mcp")));
    // Neither --data-dir nor TRAPDESK_DATA_DIR reached this process: an agent that starts it
    // with a trimmed environment may have dropped the variable the person exported.
    let dir_unset = args.data_dir.is_none();
    let dir = args.data_dir.clone().or_else(config::default_data_dir);
    match (dir.as_deref(), named) {
        (Some(d), named) => match control_client::find(named.as_deref(), d) {
            Ok(Found::Named(url)) => Target::Named(url),
            Ok(Found::Recorded { url, file }) => Target::Recorded { url, file },
            Err(e) => Target::Nowhere {
                file: Some(e.file()),
                dir_unset,
            },
        },
        (None, Some(url)) => Target::Named(url),
        (None, None) => Target::Nowhere {
            file: None,
            dir_unset,
        },
    }
}

/// `trapdesk emulate --kind`: what the emulated computer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EmulateKind {
    /// A computer.
    Computer,
    /// A turtle.
    Turtle,
    /// A pocket computer.
    Pocket,
}

/// `trapdesk emulate`'s flags that say what the computer is.
#[derive(Debug, Clone, Copy)]
pub struct EmulateDevice {
    /// `--kind`.
    pub kind: EmulateKind,
    /// `--fuel`: a turtle's fuel at its first boot.
    pub fuel: Option<u32>,
    /// `--normal`: not advanced.
    pub normal: bool,
}

impl EmulateDevice {
    /// The spec shaped as the flags say.
    ///
    /// # Errors
    /// `--fuel` for anything but a turtle.
    pub fn shape(
        self,
    ) -> anyhow::Result<impl FnOnce(trapdesk_emu::ComputerSpec) -> trapdesk_emu::ComputerSpec> {
        if self.fuel.is_some() && self.kind != EmulateKind::Turtle {
            anyhow::bail!("--fuel is for a turtle: add --kind turtle");
        }
        Ok(move |spec: trapdesk_emu::ComputerSpec| {
            let spec = match self.kind {
                EmulateKind::Computer => spec,
                EmulateKind::Turtle => spec.turtle().with_fuel(self.fuel.unwrap_or(0)),
                EmulateKind::Pocket => spec.pocket(),
            };
            spec.with_advanced(!self.normal)
        })
    }
}

/// `trapdesk emulate`: one emulated computer against any gateway, until Ctrl-C.
///
/// # Errors
/// When no secret is given, a flag does not fit the kind, the data directory cannot be used or
/// the computer fails to boot.
#[allow(clippy::too_many_arguments)]
pub async fn emulate(
    url: String,
    id: u64,
    label: Option<String>,
    secret: Option<String>,
    data_dir: Option<PathBuf>,
    root: Option<PathBuf>,
    limits: trapdesk_emu::Limits,
    device: EmulateDevice,
) -> anyhow::Result<()> {
    let shape = device.shape()?;
    let secret = secret
        .or_else(|| {
            std::env::var("SANDBOX_PASSWORD")
                .ok()
                .filter(|s| !s.is_empty())
        })
        .ok_or_else(|| {
            anyhow::anyhow!("emulate needs --secret-file FILE, env SANDBOX_PASSWORD or --secret")
        })?;
    let data_dir = match data_dir.or_else(config::default_data_dir) {
        Some(d) => d,
        None => anyhow::bail!("no home directory to keep data in; pass --data-dir"),
    };
    // The disk holds the computer's secrets (`.settings`): the user's alone, like the data dir.
    config::private::private_umask();
    config::private::ensure_dir(&data_dir)
        .map_err(|e| anyhow::anyhow!("cannot use data dir {}: {e}", data_dir.display()))?;
    let root = root.unwrap_or_else(|| data_dir.join("computers").join(id.to_string()));
    config::private::create_dir(&root)
        .map_err(|e| anyhow::anyhow!("cannot use {}: {e}", root.display()))?;
    init_logging(&data_dir, true)?;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        termination().await;
        stop.cancel();
    });
    let what = match device.kind {
        EmulateKind::Computer => "computer",
        EmulateKind::Turtle => "turtle",
        EmulateKind::Pocket => "pocket computer",
    };
    eprintln!(
        "emulated {what} {id} linking to {url} (disk: {})",
        root.display()
    );
    trapdesk_emu::run_emulate(&url, id, label, &secret, &root, limits, shape, shutdown).await?;
    Ok(())
}

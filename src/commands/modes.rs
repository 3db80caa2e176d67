//! The run modes other than the host itself: `mcp-stdio` (an agent's stdio joined to the
//! running host, or a headless host of its own) and `emulate` (one emulated computer against
//! any gateway).

use std::path::PathBuf;

use crate::config::{self, HostArgs};
use crate::host::process::{init_logging, termination};

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
            let mut host = crate::host::Host::start(settings, true).await?;
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
    limits: crate::emu::Limits,
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
    crate::emu::run_emulate(&url, id, label, &secret, &root, limits, shutdown).await?;
    Ok(())
}

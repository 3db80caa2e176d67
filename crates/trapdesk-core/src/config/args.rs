//! The host's flags (`HostArgs`) and how a person writes an address.
//!
//! They live beneath `cli` so that `config` (beneath the hub) depends on nothing above it;
//! `cli` flattens `HostArgs` into its parser and re-exports it.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

/// Flags of the host itself (console, headless, demo): the top layer of the settings.
///
/// It lives here rather than in `cli` so that `config` (beneath the hub) depends on nothing
/// above it; `commands` flattens it into its parser.
#[derive(Debug, Args, Default, Clone)]
pub struct HostArgs {
    /// Run the gateway and the MCP endpoint without the console (logs go to stderr).
    #[arg(long)]
    pub mcp_only: bool,
    /// Also link N emulated computers that run the real Lua client.
    #[arg(long, num_args = 0..=1, default_missing_value = "3", value_name = "N")]
    pub demo: Option<u32>,
    /// Address of the gateway computers link to [default: 127.0.0.1:4444].
    #[arg(long, env = "TRAPDESK_GATEWAY_BIND", value_name = "ADDR", value_parser = parse_bind)]
    pub gateway_bind: Option<SocketAddr>,
    /// Address of the MCP endpoint [default: 127.0.0.1:4445].
    #[arg(long, value_name = "ADDR", value_parser = parse_bind)]
    pub mcp_bind: Option<SocketAddr>,
    /// Bearer token the MCP endpoint requires; needed to bind it to a non-loopback address.
    /// Shows in `ps`: prefer --mcp-token-file or the environment.
    // A plain string, never parsed by clap: a clap error would echo the value.
    #[arg(
        long,
        env = "TRAPDESK_MCP_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub mcp_token: Option<String>,
    /// A file holding the MCP token (one trailing newline ignored; 0600, yours), kept out of `ps`.
    #[arg(long, value_name = "FILE", conflicts_with = "mcp_token")]
    pub mcp_token_file: Option<PathBuf>,
    /// Secret computers present in hello [default: env SANDBOX_PASSWORD, else generated].
    /// Shows in `ps`: prefer --secret-file or the environment.
    #[arg(long, value_name = "S")]
    pub secret: Option<String>,
    /// A file holding the secret (one trailing newline ignored; 0600, yours), kept out of `ps`.
    #[arg(long, value_name = "FILE", conflicts_with = "secret")]
    pub secret_file: Option<PathBuf>,
    /// Directory for everything trapdesk writes (secret, tokens, transcript, history, logs).
    #[arg(long, value_name = "DIR", env = "TRAPDESK_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Configuration file [default: config.toml in the data dir, else the platform config dir].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Largest frame the gateway accepts, in bytes [default: 1048576].
    #[arg(long, value_name = "BYTES")]
    pub max_message: Option<u64>,
    /// Largest MCP tool result: the larger of its text block and its structured content
    /// [default: 24576].
    #[arg(long, value_name = "BYTES")]
    pub max_result_bytes: Option<usize>,
}

/// A listen address as a person types it: `127.0.0.1:4444`, `[::1]:4444`, or a host name with
/// a port (`localhost:4444`), resolved now. IPv4 is preferred when a name has both, because
/// computers are told the address in the installer line and IPv4 is what CC users type.
///
/// # Errors
/// A sentence saying what is wrong with `text`, for clap and for the config file.
pub fn parse_bind(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = text.parse::<SocketAddr>() {
        return Ok(a);
    }
    if !text.contains(':') {
        return Err(format!(
            "{text:?} has no port: write host:port, for example 127.0.0.1:4444"
        ));
    }
    let addrs: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {text:?}: {e}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| format!("{text:?} resolves to no address"))
}

/// The line a person types on a computer to install the client and link it to this gateway.
/// A wildcard bind address is no address a computer can reach, so it becomes this machine's
/// loopback address, which a computer on the same machine (CraftOS-PC, a local world) can.
pub fn install_line(gateway: SocketAddr, secret: &str) -> String {
    let mut addr = gateway;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    format!("wget run http://{addr}/install.lua {secret}")
}

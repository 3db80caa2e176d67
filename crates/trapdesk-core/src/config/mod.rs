//! Settings: built-in defaults, then `config.toml`, then environment, then flags.
//!
//! Everything the process writes lives under one data directory (`--data-dir`, else the
//! platform's data directory from `directories`), so tests and demos never touch a home directory.
//!
//! - `args`: the host's flags and addresses as a person types them.
//! - `file`: `config.toml`.
//! - `limits`: the ranges of the knobs that only the file sets.
//! - `secret`: the generated secret kept in the data directory.
//! - [`private`]: the data dir's modes (0700/0600), and refusing one others can write.

mod args;
mod file;
mod limits;
pub mod private;
mod secret;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use args::{HostArgs, install_line, parse_bind};
pub use file::FileConfig;
pub use limits::{
    HEARTBEAT_MS, HISTORY_DAYS, HISTORY_MAX_MB, HISTORY_QUEUE, MAX_BODY_BYTES, MAX_DETACHED,
    MAX_IN_FLIGHT, MAX_QUEUED, OUTBOUND_QUEUE, REQUEST_TIMEOUT_MS, SCROLLBACK_LINES, STREAM_BUFFER,
    TRANSCRIPT_QUEUE,
};
pub use secret::{
    MIN_SECRET_CHARS, MIN_SECRET_DISTINCT, SecretSource, generate_secret, strong_enough,
    write_private,
};

use file::{default_config_file, read_file_config};
use limits::in_range;
use secret::stored_secret;

/// Why the settings could not be built. Each is one line for stderr.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bad config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("bad environment variable {name}: {message}")]
    Env { name: &'static str, message: String },
    #[error("no home directory to keep data in; pass --data-dir")]
    NoHome,
    #[error("cannot use data dir {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "refusing to serve MCP on non-loopback {0} without --mcp-token (anyone who reaches it could run code on your computers)"
    )]
    McpWithoutToken(SocketAddr),
    #[error("{0}")]
    Invalid(String),
}

/// Every knob of the running host, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    pub gateway_bind: SocketAddr,
    pub mcp_bind: SocketAddr,
    pub mcp_token: Option<String>,
    pub secret: String,
    pub secret_source: SecretSource,
    pub data_dir: PathBuf,
    /// Largest frame accepted from a computer.
    pub max_message: u64,
    /// Largest MCP tool result.
    pub max_result_bytes: usize,
    pub heartbeat: Duration,
    pub hello_timeout: Duration,
    /// Default per-request timeout.
    pub request_timeout: Duration,
    /// Longest timeout a caller may ask for.
    pub max_request_timeout: Duration,
    pub max_in_flight: usize,
    pub max_queued: usize,
    /// Detached runs per computer (`max_detached`), apart from `max_in_flight`.
    pub max_detached: usize,
    /// Output lines kept per computer.
    pub scrollback_lines: usize,
    /// Events kept in the recent log.
    pub recent_events: usize,
    /// The config file that was read, if any: the console and SIGHUP reload the policy from it.
    pub config_file: Option<PathBuf>,
    /// Where the config file is looked for, whether or not it existed at start: a file made
    /// there later is what the console's reload key and SIGHUP read.
    pub config_path: Option<PathBuf>,
    pub policy: crate::policy::Policy,
    /// `transcript.jsonl` is rotated past this many bytes.
    pub transcript_max_bytes: u64,
    /// Rotated transcripts kept.
    pub transcript_keep: usize,
    /// Messages waiting for one computer's socket before it is unlinked as not reading.
    pub outbound_queue: usize,
    /// Live-output chunks waiting for a streaming request's reader before chunks are dropped.
    pub stream_buffer: usize,
    /// Transcript lines waiting for the disk before lines are dropped (and counted).
    pub transcript_queue: usize,
    /// Largest MCP HTTP request body (413 above it).
    pub max_body_bytes: usize,
    /// Keep output, the log and the transcript in `history.db` (docs/console.md, "History").
    pub history: bool,
    /// `history.db` is pruned, oldest first, past this many bytes of data.
    pub history_max_bytes: u64,
    /// Entries older than this are pruned from `history.db`.
    pub history_max_age: Duration,
    /// Records waiting for the history writer; more are dropped and counted, never waited for.
    pub history_queue: usize,
    /// The transcript keeps file contents and big chunks whole instead of their size, SHA-256
    /// and head (docs/security.md, "The transcript").
    pub transcript_full_text: bool,
    /// What the start did to the data dir's modes (tightened from an earlier version's), for
    /// the log's one line about it.
    pub data_dir_prepared: private::Prepared,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gateway_bind: SocketAddr::from(([127, 0, 0, 1], 4444)),
            mcp_bind: SocketAddr::from(([127, 0, 0, 1], 4445)),
            mcp_token: None,
            secret: String::new(),
            secret_source: SecretSource::Flag,
            data_dir: PathBuf::from("."),
            max_message: 1 << 20,
            max_result_bytes: 24 * 1024,
            heartbeat: Duration::from_secs(15),
            hello_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            max_request_timeout: Duration::from_secs(600),
            max_in_flight: 8,
            max_queued: 64,
            max_detached: 4,
            scrollback_lines: 10_000,
            recent_events: 1_000,
            config_file: None,
            config_path: None,
            policy: crate::policy::Policy::default(),
            transcript_max_bytes: 16 << 20,
            transcript_keep: 5,
            outbound_queue: 1_024,
            stream_buffer: 1_024,
            transcript_queue: 16_384,
            max_body_bytes: 4 << 20,
            history: true,
            history_max_bytes: 256 << 20,
            history_max_age: Duration::from_secs(30 * 24 * 3600),
            history_queue: 65_536,
            transcript_full_text: false,
            data_dir_prepared: private::Prepared::default(),
        }
    }
}

/// The platform's data directory for trapdesk, if there is a home.
pub fn default_data_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "trapdesk").map(|d| d.data_dir().to_path_buf())
}

/// Reads the policy again from the file the settings came from (the console's reload key and
/// SIGHUP), or from where one would be looked for when none existed at start (so a file made
/// after the start is taken). With no file, the policy is the default.
///
/// # Errors
/// When the file cannot be read or is not valid; the running policy is then kept.
pub fn reload_policy(settings: &Settings) -> Result<crate::policy::Policy, ConfigError> {
    let (file, _) = match (&settings.config_file, &settings.config_path) {
        // A file read at start that is gone now is an error, not a silent return to defaults.
        (Some(path), _) => read_file_config(path, true)?,
        (None, Some(path)) => read_file_config(path, false)?,
        (None, None) => return Ok(crate::policy::Policy::default()),
    };
    Ok(file.policy.unwrap_or_default().build())
}

/// Builds the settings from flags, environment and file, creating the data dir and, when no
/// secret was given anywhere, generating and storing one.
///
/// # Errors
/// A [`ConfigError`] that names the flag, variable, file or directory at fault.
pub fn resolve(args: &HostArgs) -> Result<Settings, ConfigError> {
    let env = |name: &'static str| std::env::var(name).ok().filter(|v| !v.is_empty());
    resolve_with_env(args, &env)
}

/// [`resolve`] with the environment passed in, so tests do not depend on the process's.
///
/// # Errors
/// As [`resolve`].
pub fn resolve_with_env(
    args: &HostArgs,
    env: &dyn Fn(&'static str) -> Option<String>,
) -> Result<Settings, ConfigError> {
    let data_dir = match &args.data_dir {
        Some(d) => d.clone(),
        None => default_data_dir().ok_or(ConfigError::NoHome)?,
    };
    // Checked (and tightened) before anything is read from it: a planted token or secret in a
    // directory others can write must never be used.
    let prepared = private::ensure_dir(&data_dir).map_err(|source| ConfigError::DataDir {
        path: data_dir.clone(),
        source,
    })?;
    let (file, config_file) = config_file_of(args, &data_dir)?;
    let mut s = Settings {
        config_path: config_path_of(args, &data_dir),
        data_dir,
        config_file,
        data_dir_prepared: prepared,
        ..Settings::default()
    };
    if let Some(p) = &file.policy {
        s.policy = p.build();
    }
    if let Some(n) = file.transcript_max_bytes {
        s.transcript_max_bytes = n.max(4096);
    }
    if let Some(n) = file.transcript_keep {
        s.transcript_keep = n;
    }
    binds(args, &file, env, &mut s)?;
    sizes(args, &file, &mut s)?;
    tunables(&file, &mut s)?;
    let (secret, source) = secret_of(args, env, file.secret, &s.data_dir)?;
    s.secret = secret;
    s.secret_source = source;
    Ok(s)
}

/// The config file (`--config`, else the data dir's, else the default place) and its path.
fn config_file_of(
    args: &HostArgs,
    data_dir: &std::path::Path,
) -> Result<(FileConfig, Option<PathBuf>), ConfigError> {
    Ok(match config_path_of(args, data_dir) {
        Some(p) => read_file_config(&p, args.config.is_some())?,
        None => (FileConfig::default(), None),
    })
}

/// Where the config file is looked for: `--config`, else the data dir's `config.toml` (when
/// `--data-dir` was given or the file is there), else the platform's config dir.
fn config_path_of(args: &HostArgs, data_dir: &std::path::Path) -> Option<PathBuf> {
    match &args.config {
        Some(p) => Some(p.clone()),
        None => {
            let in_data = data_dir.join("config.toml");
            if args.data_dir.is_some() || in_data.exists() {
                Some(in_data)
            } else {
                default_config_file()
            }
        }
    }
}

/// The two listeners' addresses, and the MCP token a listener off loopback needs.
fn binds(
    args: &HostArgs,
    file: &FileConfig,
    env: &dyn Fn(&'static str) -> Option<String>,
    s: &mut Settings,
) -> Result<(), ConfigError> {
    // gateway_bind: the env var is read by clap into the flag already.
    let file_bind = |key: &str,
                     value: &Option<String>|
     -> Result<Option<SocketAddr>, ConfigError> {
        value
            .as_deref()
            .map(|v| {
                parse_bind(v).map_err(|message| ConfigError::Invalid(format!("{key}: {message}")))
            })
            .transpose()
    };
    s.gateway_bind = match args.gateway_bind {
        Some(a) => a,
        None => file_bind("gateway_bind", &file.gateway_bind)?.unwrap_or(s.gateway_bind),
    };
    s.mcp_bind = match args.mcp_bind {
        Some(a) => a,
        None => {
            let mut a = file_bind("mcp_bind", &file.mcp_bind)?.unwrap_or(s.mcp_bind);
            if let Some(port) = env("MCP_PORT") {
                let port: u16 = port.parse().map_err(|_| ConfigError::Env {
                    name: "MCP_PORT",
                    message: format!("{port:?} is not a port number"),
                })?;
                a.set_port(port);
            }
            a
        }
    };
    s.mcp_token = match &args.mcp_token_file {
        Some(path) => {
            Some(private::read_credential("--mcp-token-file", path).map_err(ConfigError::Invalid)?)
        }
        None => args.mcp_token.clone(),
    }
    .or(file.mcp_token.clone());
    if !s.mcp_bind.ip().is_loopback() && s.mcp_token.is_none() {
        return Err(ConfigError::McpWithoutToken(s.mcp_bind));
    }
    Ok(())
}

/// The size limits that flags and the file both set, with their floors.
fn sizes(args: &HostArgs, file: &FileConfig, s: &mut Settings) -> Result<(), ConfigError> {
    s.max_message = args
        .max_message
        .or(file.max_message)
        .unwrap_or(s.max_message);
    if s.max_message < 4096 {
        return Err(ConfigError::Invalid(format!(
            "--max-message {} is too small (at least 4096 bytes)",
            s.max_message
        )));
    }
    s.max_result_bytes = args
        .max_result_bytes
        .or(file.max_result_bytes)
        .unwrap_or(s.max_result_bytes);
    if s.max_result_bytes < 2048 {
        return Err(ConfigError::Invalid(format!(
            "--max-result-bytes {} is too small (at least 2048)",
            s.max_result_bytes
        )));
    }
    Ok(())
}

/// The file-only tunables, each within its range (`limits`).
fn tunables(file: &FileConfig, s: &mut Settings) -> Result<(), ConfigError> {
    // Out-of-range values are refused, not bent (see `limits`).
    if let Some(ms) = in_range("heartbeat_ms", file.heartbeat_ms, HEARTBEAT_MS)? {
        s.heartbeat = Duration::from_millis(ms);
    }
    if let Some(ms) = in_range(
        "request_timeout_ms",
        file.request_timeout_ms,
        REQUEST_TIMEOUT_MS,
    )? {
        s.request_timeout = Duration::from_millis(ms);
    }
    if let Some(n) = in_range("max_in_flight", file.max_in_flight, MAX_IN_FLIGHT)? {
        s.max_in_flight = n;
    }
    if let Some(n) = in_range("max_queued", file.max_queued, MAX_QUEUED)? {
        s.max_queued = n;
    }
    if let Some(n) = in_range("max_detached", file.max_detached, MAX_DETACHED)? {
        s.max_detached = n;
    }
    if let Some(n) = in_range("scrollback_lines", file.scrollback_lines, SCROLLBACK_LINES)? {
        s.scrollback_lines = n;
    }
    if let Some(n) = in_range("outbound_queue", file.outbound_queue, OUTBOUND_QUEUE)? {
        s.outbound_queue = n;
    }
    if let Some(n) = in_range("stream_buffer", file.stream_buffer, STREAM_BUFFER)? {
        s.stream_buffer = n;
    }
    if let Some(n) = in_range("transcript_queue", file.transcript_queue, TRANSCRIPT_QUEUE)? {
        s.transcript_queue = n;
    }
    if let Some(n) = in_range("max_body_bytes", file.max_body_bytes, MAX_BODY_BYTES)? {
        s.max_body_bytes = n;
    }
    if let Some(on) = file.history {
        s.history = on;
    }
    if let Some(n) = in_range("history_max_mb", file.history_max_mb, HISTORY_MAX_MB)? {
        s.history_max_bytes = n << 20;
    }
    if let Some(d) = in_range("history_days", file.history_days, HISTORY_DAYS)? {
        s.history_max_age = Duration::from_secs(d * 24 * 3600);
    }
    if let Some(n) = in_range("history_queue", file.history_queue, HISTORY_QUEUE)? {
        s.history_queue = n;
    }
    if let Some(on) = file.transcript_full_text {
        s.transcript_full_text = on;
    }

    Ok(())
}

/// The computers' shared secret and where it came from: a flag, the environment or the file
/// (refused when weak), else the data dir's stored one (generated at first start).
fn secret_of(
    args: &HostArgs,
    env: &dyn Fn(&'static str) -> Option<String>,
    file_secret: Option<String>,
    data_dir: &std::path::Path,
) -> Result<(String, SecretSource), ConfigError> {
    let (secret, source) = if let Some(path) = &args.secret_file {
        (
            private::read_credential("--secret-file", path).map_err(ConfigError::Invalid)?,
            SecretSource::File(path.clone()),
        )
    } else if let Some(sec) = args.secret.clone() {
        (sec, SecretSource::Flag)
    } else if let Some(sec) = env("SANDBOX_PASSWORD") {
        (sec, SecretSource::Env)
    } else if let Some(sec) = file_secret {
        (sec, SecretSource::ConfigFile)
    } else {
        stored_secret(data_dir)?
    };
    if secret.is_empty() {
        return Err(ConfigError::Invalid("the secret must not be empty".into()));
    }
    let given = match &source {
        SecretSource::Flag => Some("--secret"),
        SecretSource::File(_) => Some("--secret-file's secret"),
        SecretSource::Env => Some("SANDBOX_PASSWORD"),
        SecretSource::ConfigFile => Some("the config file's secret"),
        // Generated by us (strong by construction), or written by `secret rotate`.
        SecretSource::Generated(_) | SecretSource::Stored(_) => None,
    };
    if let Some(given) = given
        && let Err(why) = strong_enough(&secret)
    {
        return Err(ConfigError::Invalid(format!(
            "{given} is too weak: {why}. Leave it out and trapdesk generates one (`trapdesk secret show` prints it)"
        )));
    }
    Ok((secret, source))
}

#[cfg(test)]
mod tests;

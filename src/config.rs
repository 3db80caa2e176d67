//! Settings: built-in defaults, then `config.toml`, then environment, then flags.
//!
//! Everything the process writes lives under one data directory (`--data-dir`, else the
//! platform's data directory from `directories`), so tests and demos never touch a home directory.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use serde::Deserialize;

/// Flags of the host itself (console, headless, demo): the top layer of the settings.
///
/// It lives here rather than in `cli` so that `config` (beneath the hub) depends on nothing
/// above it; `cli` flattens it into its parser and re-exports it as `cli::HostArgs`.
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
    #[arg(long, env = "TRAPDESK_MCP_TOKEN", value_name = "TOKEN")]
    pub mcp_token: Option<String>,
    /// Secret computers present in hello [default: env SANDBOX_PASSWORD, else generated].
    #[arg(long, value_name = "S")]
    pub secret: Option<String>,
    /// Directory for everything trapdesk writes (secret, transcript, history, logs).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Configuration file [default: config.toml in the data dir, else the platform config dir].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Largest frame the gateway accepts, in bytes [default: 1048576].
    #[arg(long, value_name = "BYTES")]
    pub max_message: Option<u64>,
    /// Largest MCP tool result, text and structured content together [default: 24576].
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

/// `config.toml`: every key optional; flags and environment beat it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `host:port`; a host name is resolved, as for the flag.
    pub gateway_bind: Option<String>,
    pub mcp_bind: Option<String>,
    pub mcp_token: Option<String>,
    pub secret: Option<String>,
    pub max_message: Option<u64>,
    pub max_result_bytes: Option<usize>,
    pub heartbeat_ms: Option<u64>,
    pub request_timeout_ms: Option<u64>,
    pub max_in_flight: Option<usize>,
    pub max_queued: Option<usize>,
    pub scrollback_lines: Option<usize>,
    /// Messages waiting for one computer's socket; a computer that lets more pile up (it
    /// stopped reading) is unlinked.
    pub outbound_queue: Option<usize>,
    /// Live-output chunks waiting for a streaming request's reader; more are dropped and
    /// counted (the ring and the result still have the output).
    pub stream_buffer: Option<usize>,
    /// Transcript lines waiting for the disk; more are dropped, counted, and the count written.
    pub transcript_queue: Option<usize>,
    /// Largest MCP HTTP request body; larger ones get 413.
    pub max_body_bytes: Option<usize>,
    /// Who may do what where (docs/security.md).
    pub policy: Option<crate::policy::PolicyConfig>,
    /// `transcript.jsonl` is rotated past this many bytes.
    pub transcript_max_bytes: Option<u64>,
    /// Rotated transcripts kept (`transcript.1.jsonl` …).
    pub transcript_keep: Option<usize>,
}

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

/// Where the secret came from, so the console can say how to change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    Flag,
    Env,
    ConfigFile,
    /// Generated and stored at this path (mode 0600).
    Generated(PathBuf),
    /// Read back from this path, generated on an earlier start.
    Stored(PathBuf),
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
    /// Output lines kept per computer.
    pub scrollback_lines: usize,
    /// Events kept in the recent log.
    pub recent_events: usize,
    /// The config file that was read, if any: the console and SIGHUP reload the policy from it.
    pub config_file: Option<PathBuf>,
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
            scrollback_lines: 10_000,
            recent_events: 1_000,
            config_file: None,
            policy: crate::policy::Policy::default(),
            transcript_max_bytes: 16 << 20,
            transcript_keep: 5,
            outbound_queue: 1_024,
            stream_buffer: 1_024,
            transcript_queue: 16_384,
            max_body_bytes: 4 << 20,
        }
    }
}

/// The platform's data directory for trapdesk, if there is a home.
pub fn default_data_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "trapdesk").map(|d| d.data_dir().to_path_buf())
}

fn default_config_file() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "trapdesk").map(|d| d.config_dir().join("config.toml"))
}

/// Reads the config file; a missing file at the default place is simply empty.
fn read_file_config(
    path: &Path,
    explicit: bool,
) -> Result<(FileConfig, Option<PathBuf>), ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_file_config(&text)
            .map(|f| (f, Some(path.to_owned())))
            .map_err(|message| ConfigError::Parse {
                path: path.to_owned(),
                message,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            Ok((FileConfig::default(), None))
        }
        Err(source) => Err(ConfigError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Parses `config.toml` text; an error names its line and what is allowed there.
fn parse_file_config(text: &str) -> Result<FileConfig, String> {
    toml::from_str(text).map_err(|e| match e.span() {
        Some(span) => {
            let before = text.get(..span.start).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}: {}", e.message().trim_end())
        }
        None => e.message().trim_end().to_owned(),
    })
}

/// Reads the policy again from the file the settings came from (the console's reload key and
/// SIGHUP). With no file, the policy is the default.
///
/// # Errors
/// When the file cannot be read or is not valid; the running policy is then kept.
pub fn reload_policy(settings: &Settings) -> Result<crate::policy::Policy, ConfigError> {
    let Some(path) = &settings.config_file else {
        return Ok(crate::policy::Policy::default());
    };
    let (file, _) = read_file_config(path, true)?;
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
    std::fs::create_dir_all(&data_dir).map_err(|source| ConfigError::DataDir {
        path: data_dir.clone(),
        source,
    })?;
    let (file, config_file) = match &args.config {
        Some(p) => read_file_config(p, true)?,
        None => {
            let in_data = data_dir.join("config.toml");
            if args.data_dir.is_some() || in_data.exists() {
                read_file_config(&in_data, false)?
            } else if let Some(p) = default_config_file() {
                read_file_config(&p, false)?
            } else {
                (FileConfig::default(), None)
            }
        }
    };
    let mut s = Settings {
        data_dir,
        config_file,
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
    s.mcp_token = args.mcp_token.clone().or(file.mcp_token);
    if !s.mcp_bind.ip().is_loopback() && s.mcp_token.is_none() {
        return Err(ConfigError::McpWithoutToken(s.mcp_bind));
    }
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
    // Values outside these ranges are refused rather than quietly bent: a heartbeat of 1 ms
    // was almost certainly meant as 1 s, and saying so beats a host that floods its computers.
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

    let (secret, source) = if let Some(sec) = args.secret.clone() {
        (sec, SecretSource::Flag)
    } else if let Some(sec) = env("SANDBOX_PASSWORD") {
        (sec, SecretSource::Env)
    } else if let Some(sec) = file.secret {
        (sec, SecretSource::ConfigFile)
    } else {
        stored_secret(&s.data_dir)?
    };
    if secret.is_empty() {
        return Err(ConfigError::Invalid("the secret must not be empty".into()));
    }
    s.secret = secret;
    s.secret_source = source;
    Ok(s)
}

/// Allowed values of the `config.toml` knobs that have no flag.
pub const HEARTBEAT_MS: std::ops::RangeInclusive<u64> = 1_000..=300_000;
pub const REQUEST_TIMEOUT_MS: std::ops::RangeInclusive<u64> = 100..=600_000;
pub const MAX_IN_FLIGHT: std::ops::RangeInclusive<usize> = 1..=1_024;
pub const MAX_QUEUED: std::ops::RangeInclusive<usize> = 0..=100_000;
pub const SCROLLBACK_LINES: std::ops::RangeInclusive<usize> = 100..=10_000_000;
/// At least what `max_in_flight` requests and their cancels need.
pub const OUTBOUND_QUEUE: std::ops::RangeInclusive<usize> = 64..=1_000_000;
pub const STREAM_BUFFER: std::ops::RangeInclusive<usize> = 16..=1_000_000;
pub const TRANSCRIPT_QUEUE: std::ops::RangeInclusive<usize> = 64..=10_000_000;
/// A tool call with a few KiB of code must fit; 1 GiB is surely a mistake.
pub const MAX_BODY_BYTES: std::ops::RangeInclusive<usize> = 65_536..=1 << 30;

/// `value` when it lies in `range`, else an error naming the key and the allowed range.
fn in_range<T>(
    key: &str,
    value: Option<T>,
    range: std::ops::RangeInclusive<T>,
) -> Result<Option<T>, ConfigError>
where
    T: PartialOrd + std::fmt::Display + Copy,
{
    match value {
        Some(v) if !range.contains(&v) => Err(ConfigError::Invalid(format!(
            "config {key} = {v} is out of range: allowed {}..={}",
            range.start(),
            range.end()
        ))),
        other => Ok(other),
    }
}

/// Reads `<data_dir>/secret`, or generates a fresh one there with mode 0600.
fn stored_secret(data_dir: &Path) -> Result<(String, SecretSource), ConfigError> {
    let path = data_dir.join("secret");
    let err = |source| ConfigError::DataDir {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => {
            return Ok((s.trim().to_owned(), SecretSource::Stored(path)));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(e)),
    }
    let secret = generate_secret();
    write_private(&path, secret.as_bytes()).map_err(err)?;
    Ok((secret, SecretSource::Generated(path)))
}

/// 20 characters from an alphabet that survives typing into a Minecraft chat-like prompt.
pub fn generate_secret() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut rng = rand::rng();
    (0..20)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// Writes a file readable by its owner only.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    // `mode` applies only to a new file; an existing one is made private before it is written.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &Path) -> HostArgs {
        HostArgs {
            data_dir: Some(dir.to_owned()),
            ..HostArgs::default()
        }
    }

    #[test]
    fn generated_secret_is_stored_private_and_reused() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let none = |_: &'static str| None;
        let a = resolve_with_env(&args(dir.path()), &none)?;
        assert!(matches!(a.secret_source, SecretSource::Generated(_)));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("secret"))?
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let b = resolve_with_env(&args(dir.path()), &none)?;
        assert_eq!(a.secret, b.secret);
        assert!(matches!(b.secret_source, SecretSource::Stored(_)));
        Ok(())
    }

    #[test]
    fn policy_is_read_and_reloaded_from_the_same_file() -> Result<(), Box<dyn std::error::Error>> {
        use crate::policy::{Action, Decision, Party, Target};
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "[policy.default]\nagent = { write = \"deny\" }\n")?;
        let none = |_: &'static str| None;
        let s = resolve_with_env(&args(dir.path()), &none)?;
        assert_eq!(s.config_file.as_deref(), Some(file.as_path()));
        let t = Target {
            trapos_id: "1:",
            id: 1,
            label: None,
        };
        assert_eq!(
            s.policy
                .decide(Party::Agent("a"), t, Action::Write)
                .decision,
            Decision::Deny
        );
        std::fs::write(&file, "[policy.default]\nagent = { write = \"ask\" }\n")?;
        let p = reload_policy(&s)?;
        assert_eq!(
            p.decide(Party::Agent("a"), t, Action::Write).decision,
            Decision::Ask
        );
        std::fs::write(&file, "[policy.default]\nagent = { write = \"perhaps\" }\n")?;
        let e = reload_policy(&s)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("line 2") && e.contains("perhaps"), "{e}");
        Ok(())
    }

    #[test]
    fn flags_beat_env_beat_file() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join("config.toml"),
            "secret = \"from-file\"\nmcp_bind = \"127.0.0.1:5000\"\nmax_message = 9000\n",
        )?;
        let env = |n: &'static str| match n {
            "SANDBOX_PASSWORD" => Some("from-env".to_owned()),
            "MCP_PORT" => Some("6000".to_owned()),
            _ => None,
        };
        let s = resolve_with_env(&args(dir.path()), &env)?;
        assert_eq!(s.secret, "from-env");
        assert_eq!(s.mcp_bind.port(), 6000);
        assert_eq!(s.max_message, 9000);
        let mut a = args(dir.path());
        a.secret = Some("from-flag".into());
        a.mcp_bind = Some("127.0.0.1:7000".parse()?);
        let s = resolve_with_env(&a, &env)?;
        assert_eq!(s.secret, "from-flag");
        assert_eq!(s.mcp_bind.port(), 7000);
        let no_env = |_: &'static str| None;
        assert_eq!(
            resolve_with_env(&args(dir.path()), &no_env)?.secret,
            "from-file"
        );
        Ok(())
    }

    #[test]
    fn bad_inputs_are_clear_errors() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("config.toml"), "nonsense = 1\n")?;
        let none = |_: &'static str| None;
        let e = resolve_with_env(&args(dir.path()), &none)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("nonsense"), "{e}");

        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join("config.toml"),
            "max_queued = 3\n\n[policy.default]\nagent = { exec = \"allow\" }\n\n[[policy.rule]]\ncomputer = \"reactor*\"\nagent = { exec = \"nope\" }\n",
        )?;
        let e = resolve_with_env(&args(dir.path()), &none)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("line 8"), "{e}");
        assert!(
            e.contains("nope") && e.contains("`allow`, `ask`, `deny`"),
            "{e}"
        );

        let dir = tempfile::tempdir()?;
        let mut a = args(dir.path());
        a.mcp_bind = Some("0.0.0.0:4445".parse()?);
        assert!(matches!(
            resolve_with_env(&a, &none),
            Err(ConfigError::McpWithoutToken(_))
        ));
        Ok(())
    }

    fn error_for(toml: &str) -> Result<String, Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("config.toml"), toml)?;
        let none = |_: &'static str| None;
        Ok(resolve_with_env(&args(dir.path()), &none)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default())
    }

    #[test]
    fn toml_syntax_errors_name_the_line() -> Result<(), Box<dyn std::error::Error>> {
        let e = error_for("secret = \"a\"\nmax_message = = 3\n")?;
        assert!(e.contains("line 2, column"), "{e}");
        Ok(())
    }

    #[test]
    fn nonsense_values_are_refused_with_the_range() -> Result<(), Box<dyn std::error::Error>> {
        let e = error_for("heartbeat_ms = 1\n")?;
        assert!(e.contains("heartbeat_ms = 1"), "{e}");
        assert!(e.contains("allowed 1000..=300000"), "{e}");
        let e = error_for("max_in_flight = 0\n")?;
        assert!(e.contains("allowed 1..=1024"), "{e}");
        assert_eq!(error_for("heartbeat_ms = 5000\nsecret = \"x\"\n")?, "");
        Ok(())
    }

    #[test]
    fn bind_addresses_take_host_names() -> Result<(), Box<dyn std::error::Error>> {
        assert_eq!(parse_bind("localhost:4444")?, "127.0.0.1:4444".parse()?);
        assert_eq!(parse_bind("[::1]:9")?, "[::1]:9".parse()?);
        assert!(parse_bind("localhost").is_err_and(|e| e.contains("no port")));
        let e = error_for("gateway_bind = \"localhost\"\n")?;
        assert!(e.contains("gateway_bind"), "{e}");
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join("config.toml"),
            "gateway_bind = \"localhost:4999\"\nsecret = \"x\"\n",
        )?;
        let s = resolve_with_env(&args(dir.path()), &|_| None)?;
        assert_eq!(s.gateway_bind, "127.0.0.1:4999".parse()?);
        Ok(())
    }
}

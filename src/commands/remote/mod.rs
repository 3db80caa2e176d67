//! The one-shot commands (`trapdesk exec/run/computers/ls/get/put`): clients of the running
//! trapdesk's MCP endpoint, like `mcp-stdio`, so what they do is part of the shared session.
//!
//! They connect with rmcp's Streamable HTTP client with the person token of the data dir
//! (`<data dir>/person-token`, which the host makes and `mcp-stdio` never reads), under the
//! clientInfo name [`Origin::CLI_CLIENT`](trapdesk_core::session::Origin::CLI_CLIENT) (`sync` uses
//! [`Origin::SYNC_CLIENT`](trapdesk_core::session::Origin::SYNC_CLIENT)). The token is what makes the
//! host see the origin `cli` (`sync`) rather than an agent; the name only picks between the
//! two. That is the only door into the session: nothing here touches [`trapdesk_core::session`]
//! directly.
//!
//! They go only where the person pointed them: `--connect` (env `TRAPDESK_CONNECT`) or the
//! live host in the data dir's `host.json`; with neither they say so and send nothing.
//!
//! # Layout
//!
//! - `conn`: the connection, tool calls with live output, Ctrl-C, exit codes of failures.
//! - `commands`: `exec`, `run`, `computers` and how they print.
//! - `files`: `ls`, `get`, `put`.
//! - [`transfer`]: files in pieces both ways (shared with `sync`).

mod commands;
pub mod conn;
mod files;
pub mod transfer;

use std::time::Duration;

use clap::Args;

pub use commands::{ComputersArgs, ExecArgs, RunArgs, computers, exec, run};
pub use conn::{Conn, Interrupt, Reply};
pub use files::{GetArgs, LsArgs, PutArgs, get, ls, put, write_atomically};

/// Exit codes scripts can rely on.
pub mod exit {
    /// The Lua code or the file operation failed.
    pub const FAILED: u8 = 1;
    /// The command line is wrong.
    pub const USAGE: u8 = 2;
    /// No trapdesk reachable, computer not linked, timed out, or refused.
    pub const UNREACHABLE: u8 = 3;
    /// Ctrl-C (SIGINT): the request was cancelled on the computer.
    pub const INTERRUPTED: u8 = 130;
    /// stdout's reader went away (SIGPIPE's code): the request was cancelled on the computer.
    pub const PIPE_CLOSED: u8 = 141;
    /// SIGTERM: the request was cancelled on the computer.
    pub const TERMINATED: u8 = 143;
}

/// A command that did not succeed: its exit code and the one line for stderr (empty when
/// there is nothing left to say).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// Whether it ended by Ctrl-C, SIGTERM or a closed output pipe rather than by a failure.
    pub fn interrupted(&self) -> bool {
        matches!(
            self.code,
            exit::INTERRUPTED | exit::PIPE_CLOSED | exit::TERMINATED
        )
    }
}

/// Flags every client command shares.
#[derive(Debug, Args, Clone, Default)]
pub struct ClientArgs {
    /// MCP endpoint of the running trapdesk [default: the live host in the data dir's
    /// host.json] (its token: env TRAPDESK_TOKEN, else the data dir's person-token).
    // The env lets one export point every editor recipe and Makefile at a host on other ports.
    // No default address: a token is sent only where the person or a live host.json points.
    #[arg(long, value_name = "URL", env = "TRAPDESK_CONNECT")]
    pub connect: Option<String>,
    /// Give up after this long: 30, 30s, 500ms or 2m [default: the host's, 30 s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Print the structured result as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Data directory of the host, where its local token is [default: the platform's].
    #[arg(long, value_name = "DIR", env = "TRAPDESK_DATA_DIR")]
    pub data_dir: Option<std::path::PathBuf>,
}

impl ClientArgs {
    /// The bearer token: `TRAPDESK_TOKEN` (a named agent's, or a host's `--mcp-token`: then
    /// the command is that agent, and a pause stops it), else the data dir's person token.
    /// `TRAPDESK_MCP_TOKEN` is not read: it is the host's own flag's variable.
    pub fn credential(&self) -> trapdesk_core::trust::agents::Credential {
        trapdesk_core::trust::agents::Credential::person(
            &["TRAPDESK_TOKEN"],
            self.data_dir.as_deref(),
        )
    }

    /// Where the connection goes: `--connect` when the person gave one, else the live host
    /// recorded in the data dir's `host.json` (so a host started with other ports is found as
    /// `doctor` finds it).
    ///
    /// # Errors
    /// Exit code 3 when neither names a host (nothing is sent anywhere), 2 with no home
    /// directory to find the data dir in.
    pub fn endpoint(&self) -> Result<String, Failure> {
        let dir = self
            .data_dir
            .clone()
            .or_else(trapdesk_core::config::default_data_dir);
        match (&self.connect, dir) {
            (Some(c), _) => Ok(c.clone()),
            (None, Some(dir)) => crate::commands::control_client::target(None, &dir)
                .map_err(|e| Failure::new(exit::UNREACHABLE, e.to_string())),
            (None, None) => Err(Failure::new(
                exit::USAGE,
                "no home directory to find the data dir in: pass --data-dir or --connect URL",
            )),
        }
    }

    /// Opens the connection as `name`.
    ///
    /// # Errors
    /// Exit code 3 when no host is named or none answers.
    pub async fn open(&self, name: &'static str) -> Result<Conn, Failure> {
        Conn::open(&self.endpoint()?, &self.credential(), name).await
    }

    /// `timeoutMs` for the host, when one was given.
    pub fn timeout_ms(&self) -> Option<u64> {
        self.timeout.map(|t| t.as_millis() as u64)
    }

    /// How long to wait for the host's answer: a little past the host's own deadline, so
    /// the host's timeout (with the output so far) normally wins.
    pub fn deadline(&self) -> Option<Duration> {
        self.timeout.map(|t| t + Duration::from_secs(5))
    }
}

/// Parses `30`, `30s`, `500ms`, `2m`.
///
/// # Errors
/// When it is none of those.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Duration::from_secs_f64(v * scale)),
        // A number, but none a wait can be: say what is allowed, not that it is no duration.
        Ok(v) if v.is_finite() => Err(format!(
            "{s:?} is too short: a timeout is more than 0 (for example 30, 30s, 500ms or 2m; the host allows up to 10m)"
        )),
        _ => Err(format!(
            "{s:?} is not a duration; write for example 30, 30s, 500ms or 2m"
        )),
    }
}

/// Splits `COMPUTER:PATH`. The computer is everything before the last `:` when there are
/// two or more (so a full traposId works: `7:miner:/startup.lua`), else before the only
/// one (`miner:/startup.lua`, `7:startup.lua`). Without a `:` there is no path.
pub fn split_target(s: &str) -> (&str, Option<&str>) {
    match s.matches(':').count() {
        0 => (s, None),
        1 => s.split_once(':').map_or((s, None), |(c, p)| (c, Some(p))),
        _ => s.rsplit_once(':').map_or((s, None), |(c, p)| (c, Some(p))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_people_write_them() {
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("soon").is_err());
        let zero = parse_duration("0").err().unwrap_or_default();
        assert!(
            zero.contains("more than 0") && !zero.contains("not a duration"),
            "{zero}"
        );
    }

    #[test]
    fn targets_split_at_the_path_colon() {
        assert_eq!(split_target("miner"), ("miner", None));
        assert_eq!(split_target("miner:/a.lua"), ("miner", Some("/a.lua")));
        assert_eq!(split_target("7:miner:/a.lua"), ("7:miner", Some("/a.lua")));
        assert_eq!(split_target("7:"), ("7", Some("")));
    }
}

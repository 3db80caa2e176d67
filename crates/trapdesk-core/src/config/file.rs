//! `config.toml`: its keys, where it is looked for, and errors that name the line.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;

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
    /// Detached runs per computer (docs/mcp.md, "Detached runs").
    pub max_detached: Option<usize>,
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
    /// Keep output, the log and the transcript in `history.db` (default true).
    pub history: Option<bool>,
    /// `history.db` is pruned, oldest first, past this many MiB of data (default 256).
    pub history_max_mb: Option<u64>,
    /// Entries older than this many days are pruned from `history.db` (default 30).
    pub history_days: Option<u64>,
    /// Records waiting for the history writer; more are dropped and counted.
    pub history_queue: Option<usize>,
    /// The transcript keeps file contents and big chunks whole (default false: size, SHA-256
    /// and a head).
    pub transcript_full_text: Option<bool>,
}

pub(super) fn default_config_file() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "trapdesk").map(|d| d.config_dir().join("config.toml"))
}

/// Reads the config file; a missing file at the default place is simply empty.
pub(super) fn read_file_config(
    path: &Path,
    explicit: bool,
) -> Result<(FileConfig, Option<PathBuf>), ConfigError> {
    // It may hold the secret, the MCP token and the policy: one others can write is refused.
    match super::private::read_checked(path) {
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

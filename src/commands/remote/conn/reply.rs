//! What a tool call returned ([`Reply`]), and a failed one as an exit code and a message a
//! person reads.

use serde_json::Value;

use super::super::{Failure, exit};

/// What a tool call returned.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The tool's `isError`.
    pub is_error: bool,
    /// `structuredContent` (an empty object when there was none).
    pub data: Value,
    /// The first text block: a one-line summary first.
    pub text: String,
}

impl Reply {
    /// The computer the host actually reached (the result's `traposId`), else the name the
    /// person typed: what the CLI prints is the computer it reached, never only the query.
    pub fn reached<'a>(&'a self, query: &'a str) -> &'a str {
        self.data
            .get("traposId")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .unwrap_or(query)
    }

    /// Exit code and one-line message for a failed reply: 3 when the host could not get the
    /// work done (not linked, timed out, refused, busy, cancelled), 1 when the work itself
    /// failed (a Lua error, a failed file operation).
    pub fn failure(&self, what: &str) -> Failure {
        let (code, message) = match self.data.get("error") {
            Some(Value::Object(e)) => (
                e.get("code").and_then(Value::as_str).unwrap_or_default(),
                e.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or(self.text.as_str()),
            ),
            Some(Value::String(s)) => ("", s.as_str()),
            _ => ("", self.text.as_str()),
        };
        // The whole message: a Lua error can span lines (`require`'s lists every file it
        // tried), and its first line alone does not say what went wrong.
        let message = message.trim_end();
        // The host refused the arguments the command line built: a usage error (2), named by
        // the flag a person typed rather than the tool's field.
        if code == "invalid_arguments" {
            let field = self.data.get("field").and_then(Value::as_str);
            let message = match (field, max_millis(message)) {
                (Some("timeoutMs"), Some(max)) => format!(
                    "--timeout is out of range: this host takes more than 0 and at most {}",
                    human_millis(max)
                ),
                _ => message.to_owned(),
            };
            return Failure::new(exit::USAGE, format!("{what}: {message}"));
        }
        let unreachable = matches!(
            code,
            "timeout"
                | "disconnected"
                | "unknown_computer"
                | "ambiguous_computer"
                | "busy"
                | "shutting_down"
                | "cancelled"
                | "unknown_type"
        ) || code.contains("refus")
            || code.contains("denied")
            || code.contains("policy");
        if unreachable {
            let hint = match code {
                "unknown_computer" | "ambiguous_computer" => {
                    "; `trapdesk computers` lists the linked ones"
                }
                "timeout" => "; pass a longer --timeout",
                "disconnected" => "; it unlinked, run it again once it is back",
                "unknown_type" => {
                    "; the computer does not serve that request (its client may be older than this trapdesk: re-run the installer there)"
                }
                _ => "",
            };
            Failure::new(exit::UNREACHABLE, format!("{what}: {message}{hint}"))
        } else {
            Failure::new(exit::FAILED, format!("{what}: {message}"))
        }
    }
}

/// `N` of the host's "expected 1 to N milliseconds".
fn max_millis(message: &str) -> Option<u64> {
    let rest = message.split("expected 1 to ").nth(1)?;
    rest.split(' ').next()?.parse().ok()
}

/// Milliseconds as a person writes a `--timeout`: `10m`, `90s`, `1500ms`.
pub fn human_millis(ms: u64) -> String {
    if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

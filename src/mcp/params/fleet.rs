//! Arguments of the fleet tools: `probe-computers` and `exec-lua-many`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::computers;

/// Arguments of `probe-computers`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProbeComputers {
    /// Ping each computer of the page for its round trip (default true).
    #[serde(default)]
    pub ping: Option<bool>,
    /// Only computers matching this glob ("miner-*", "1?:*").
    #[serde(default, rename = "match")]
    pub pattern: Option<String>,
    /// Most computers in one page (default 50, at most 500).
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u64>,
    /// The previous page's nextCursor, to read the next page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Arguments of `exec-lua-many`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecLuaMany {
    /// Run on every computer matching this glob ("*" for all); or give computers.
    #[serde(default, rename = "match")]
    pub pattern: Option<String>,
    /// Run on these computers (each named as a traposId); or give match.
    #[serde(default, deserialize_with = "computers")]
    #[schemars(with = "Option<Vec<String>>")]
    pub computers: Option<Vec<String>>,
    /// Lua source to run as one chunk on each computer.
    pub code: String,
    /// Per computer, as exec-lua's timeoutMs.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
    /// Most computers running it at once (default 4, at most 256): CC runs all of a server's
    /// computers on one Lua thread, so more is no faster and slows every player's.
    #[serde(default)]
    #[schemars(range(min = 1, max = 256))]
    pub concurrency: Option<u64>,
}

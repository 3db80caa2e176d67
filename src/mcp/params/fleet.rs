//! Arguments of the fleet tools: `probe-computers` and `exec-lua-many`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::computers;

/// Arguments of `probe-computers`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProbeComputers {
    /// Send a `ping` to each computer of the page and report its round trip (default true).
    #[serde(default)]
    pub ping: Option<bool>,
    /// Only computers whose traposId, label or id matches this glob (`*` any run, `?` one
    /// character, case-insensitive), for example "miner-*" or "1?:*".
    #[serde(default, rename = "match")]
    pub pattern: Option<String>,
    /// Most computers in one page (default 50, at most 500; fewer when they would not fit in
    /// one result, and then nextCursor says where to go on).
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
    /// Run on every linked computer whose traposId, label or id matches this glob ("*" for
    /// all). Give this or `computers`.
    #[serde(default, rename = "match")]
    pub pattern: Option<String>,
    /// Run on these computers (traposId, bare id or unique label each). Give this or `match`.
    #[serde(default, deserialize_with = "computers")]
    #[schemars(with = "Option<Vec<String>>")]
    pub computers: Option<Vec<String>>,
    /// Lua source to run as one chunk on each computer.
    pub code: String,
    /// Stop the chunk on a computer that has not finished after this many milliseconds
    /// (default 30000, at most 600000): it is cancelled there, and its result is a timeout.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
    /// Most computers running the chunk at once (default 4, at most 256). CC: Tweaked runs every
    /// computer of a server on one Lua thread by default: more at once is no faster and makes
    /// every player's computer wait longer.
    #[serde(default)]
    #[schemars(range(min = 1, max = 256))]
    pub concurrency: Option<u64>,
}

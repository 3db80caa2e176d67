//! Arguments of the tools that run code on one computer: `exec-lua` and `run-file`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::computer;

/// Arguments of `exec-lua`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecLua {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Lua source to run as one chunk; its returned values come back as descriptors.
    pub code: String,
    /// Stop the chunk after this many milliseconds (default 30000; at least 1, at most
    /// 600000): it is cancelled on the computer and the result is a timeout with the output
    /// so far.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
    /// Answer at once with the requestId and status "running" and let the run go on: no
    /// deadline unless timeoutMs is given; only its end or cancel-request ends it (not this
    /// call going away, nor a dropped link). Follow it with wait-request or computer-output.
    #[serde(default)]
    pub detach: Option<bool>,
}

/// Arguments of `run-file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunFile {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Path of an existing Lua program on the computer.
    pub path: String,
    /// Arguments passed to the program (as varargs and as the global `arg`).
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Stop the chunk after this many milliseconds (default 30000; at least 1, at most
    /// 600000): it is cancelled on the computer and the result is a timeout with the output
    /// so far.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
    /// Answer at once with the requestId and status "running" and let the run go on: no
    /// deadline unless timeoutMs is given; only its end or cancel-request ends it (not this
    /// call going away, nor a dropped link). Follow it with wait-request or computer-output.
    #[serde(default)]
    pub detach: Option<bool>,
}

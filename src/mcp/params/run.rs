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
    /// Lua source, run as one chunk.
    pub code: String,
    /// Stop the chunk after this many milliseconds (default 30000; 1 to 600000): the result is
    /// then a timeout.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
    /// Answer at once (status "running") and let the run go on, without a deadline unless
    /// timeoutMs, until it ends or cancel-request (not when this call goes away). Follow it
    /// with wait-request.
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
    /// As exec-lua's timeoutMs.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
    /// As exec-lua's detach.
    #[serde(default)]
    pub detach: Option<bool>,
}

//! Arguments of the tools that act on a computer as a whole: `reboot-computer`, and the ones
//! that name it and nothing else (`list-peripherals`, `turtle-info`).

use schemars::JsonSchema;
use serde::Deserialize;

use super::computer;

/// Arguments of `reboot-computer`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RebootComputer {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Wait this many milliseconds for the computer to link again (default 60000; at least 1,
    /// at most 600000). The reboot is not undone when the wait ends.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
}

/// Arguments of a tool that names one computer and nothing else (`list-peripherals`,
/// `turtle-info`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OneComputer {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
}

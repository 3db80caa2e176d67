//! Arguments of the tools about requests and the session: `computer-output`, `wait-request`,
//! `session-log` and `cancel-request`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{computer, some_computer};

/// Arguments of `computer-output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComputerOutput {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    /// A computer that unlinked recently can still be read by its full traposId.
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Most lines in the page (default 200, at most 2000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 2000))]
    pub lines: Option<u64>,
    /// Cursor from a previous page's `before`: returns the lines older than it.
    #[serde(default)]
    pub before: Option<u64>,
    /// Only the output of this request (its `requestId`), with the request's status.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Cursor from a previous answer's `cursor`: only newer lines, oldest first. Not with
    /// `before`.
    #[serde(default)]
    pub after: Option<u64>,
}

/// Arguments of `wait-request`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitRequest {
    /// The request to wait on.
    pub request_id: String,
    /// Answer as soon as a line of the request's output after the cursor contains this text.
    #[serde(default)]
    pub until: Option<String>,
    /// Cursor from a previous wait-request's or computer-output's `cursor`: only output after
    /// it counts (default: from the run's start).
    #[serde(default)]
    pub after: Option<u64>,
    /// Answer with status "running" after this many milliseconds (default 30000, at most
    /// 600000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
}

/// Arguments of `session-log`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionLog {
    /// Most events to return, the newest (default 100, at most 1000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u64>,
    /// Cursor from a previous answer's `before`: returns the entries older than it.
    #[serde(default)]
    pub before: Option<u64>,
    /// Only entries that began or changed after this: a previous answer's `latest`, an RFC
    /// 3339 time or an age ("90s", "5m", "2h", "1d").
    #[serde(default)]
    pub since: Option<LogSince>,
    /// Only entries on this computer, or a glob of them.
    #[serde(default, deserialize_with = "some_computer")]
    pub computer: Option<String>,
    /// Only entries by this party: "person", "cli", or an agent's client name (a glob).
    #[serde(default)]
    pub who: Option<String>,
    /// Only entries of this tool or request type ("exec-lua") or event ("call", "request",
    /// "linked", "unlinked", "refused"); a glob.
    #[serde(default)]
    pub kind: Option<String>,
}

/// `session-log`'s `since`: a log cursor or a time.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(untagged)]
pub enum LogSince {
    /// A previous answer's `latest`.
    Cursor(u64),
    /// RFC 3339 time or an age such as "5m".
    Time(String),
}

/// Arguments of `cancel-request`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelRequest {
    /// Id of a pending request (as reported by `exec-lua`, `probe-computers`, `session-log`).
    pub request_id: String,
}

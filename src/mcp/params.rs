//! Tool arguments. Each struct's `///` docs become the `inputSchema` descriptions an agent
//! reads, so they say what the argument means to the caller, not how it is implemented.
//!
//! Arguments are camelCase (MCP.md). Unknown fields are ignored rather than refused: a client
//! that adds a field it knows about should not lose the call.

use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `probe-computers`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeComputers {
    /// Send a `ping` to each linked computer and report its round trip (default true).
    #[serde(default)]
    pub ping: Option<bool>,
}

/// Arguments of `exec-lua`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecLua {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    pub trapos_id: String,
    /// Lua source to run as one chunk; its returned values come back as descriptors.
    pub code: String,
    /// Give up after this many milliseconds (default 30000, at most 600000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Arguments of `run-file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunFile {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    pub trapos_id: String,
    /// Path of an existing Lua program on the computer.
    pub path: String,
    /// Arguments passed to the program (as varargs and as the global `arg`).
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Give up after this many milliseconds (default 30000, at most 600000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// How `write-file` content is encoded.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// The content is the file's text, written as its UTF-8 bytes.
    #[default]
    Utf8,
    /// The content is base64 of the file's exact bytes.
    Base64,
}

/// Arguments of `write-file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteFile {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    pub trapos_id: String,
    /// Path of the file on the computer; missing parent directories are created.
    pub path: String,
    /// The file's content, as text (`encoding: "utf8"`, the default) or base64.
    pub content: String,
    /// `utf8` (default) or `base64`.
    #[serde(default)]
    pub encoding: Option<Encoding>,
    /// Append to the file instead of replacing it.
    #[serde(default)]
    pub append: Option<bool>,
}

/// Arguments of `read-file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadFile {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    pub trapos_id: String,
    /// Path of the file on the computer.
    pub path: String,
    /// First byte to return (default 0); use it to read a large file in pieces.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most bytes to return (default: as many as fit in one result).
    #[serde(default)]
    pub length: Option<u64>,
}

/// Arguments of `list-files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListFiles {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    pub trapos_id: String,
    /// Directory to list (default "/").
    #[serde(default)]
    pub path: Option<String>,
}

/// Arguments of `computer-output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComputerOutput {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    /// A computer that unlinked recently can still be read by its full traposId.
    pub trapos_id: String,
    /// Most lines in the page (default 200).
    #[serde(default)]
    pub lines: Option<u64>,
    /// Cursor from a previous page's `before`: returns the lines older than it.
    #[serde(default)]
    pub before: Option<u64>,
    /// Only the output of this request (its `requestId`, for example `h-42`).
    #[serde(default)]
    pub request_id: Option<String>,
}

/// Arguments of `session-log`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionLog {
    /// Most events to return, newest last (default 100).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Arguments of `cancel-request`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelRequest {
    /// Id of a pending request (as reported by `exec-lua`, `probe-computers`, `session-log`).
    pub request_id: String,
}

/// Arguments of `read-screen`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadScreen {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    pub trapos_id: String,
    /// Also return the colours: fg and bg rows in blit form (one hex digit per cell) and the
    /// palette (default false).
    #[serde(default)]
    pub colors: Option<bool>,
}

/// Arguments of `send-input`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendInput {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    pub trapos_id: String,
    /// Text typed as char events (a newline presses enter); at most 4096 characters.
    #[serde(default)]
    pub text: Option<String>,
    /// CC key names pressed in order after the text: "enter", "backspace", "up", "f5",
    /// "ctrl+s", "shift+tab", ...; "terminate", "reboot", "shutdown" hold ctrl+T/R/S.
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// Text sent as one paste event (at most 512 characters), after the text.
    #[serde(default)]
    pub paste: Option<String>,
    /// Milliseconds to wait before reading the screen back (default 300, at most 10000).
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

//! Tool arguments. Each struct's `///` docs become the `inputSchema` descriptions an agent
//! reads, so they say what the argument means to the caller, not how it is implemented.
//!
//! Arguments are camelCase (docs/mcp.md). An argument a tool does not take is refused by name
//! (`deny_unknown_fields`): ignored, a misspelt `timeOut` ran with the default timeout.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

/// A computer as a caller names it: a string, or a bare id as a JSON number (the MCP
/// Inspector sends `traposId=7` as `7`), which means the same as `"7"`.
fn computer<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Named {
        Text(String),
        Id(u64),
    }
    Ok(match Named::deserialize(d) {
        Ok(Named::Text(s)) => s,
        Ok(Named::Id(n)) => n.to_string(),
        Err(_) => {
            return Err(serde::de::Error::custom(
                "a traposId (\"7:miner\"), a computer id (7) or a label (\"miner\")",
            ));
        }
    })
}

/// A list of computers as a caller names them: each a string or a bare id as a JSON number.
fn computers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    struct One(#[serde(deserialize_with = "computer")] String);
    let list: Option<Vec<One>> = Option::deserialize(d)?;
    Ok(list.map(|l| l.into_iter().map(|One(s)| s).collect()))
}

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
    pub timeout_ms: Option<u64>,
    /// Most computers running the chunk at once (default 4, at most 256). CC: Tweaked runs every
    /// computer of a server on one Lua thread by default: more at once is no faster and makes
    /// every player's computer wait longer.
    #[serde(default)]
    pub concurrency: Option<u64>,
}

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
    pub timeout_ms: Option<u64>,
    /// Answer at once with the requestId and status "running" and let the run go on: no
    /// deadline unless timeoutMs is given; only its end or cancel-request ends it (not this
    /// call going away, nor a dropped link). Follow it with wait-request or computer-output.
    #[serde(default)]
    pub detach: Option<bool>,
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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteFile {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
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
    /// When the old file and the new one cannot both fit on the computer's disk, write over
    /// the old one instead of refusing: not atomic (an interrupted write leaves the file torn).
    #[serde(default)]
    pub in_place: Option<bool>,
}

/// Arguments of `read-file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadFile {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Path of the file on the computer.
    pub path: String,
    /// First byte to return (default 0); use it to read a large file in pieces.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most bytes to return, at least 1 (default: as many as fit in one result).
    #[serde(default)]
    pub length: Option<u64>,
}

/// Arguments of `list-files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListFiles {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Directory to list (default "/").
    #[serde(default)]
    pub path: Option<String>,
}

/// Arguments of `move-file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MoveFile {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// The file or directory to move.
    pub from: String,
    /// Where to; missing parent directories are created.
    pub to: String,
    /// Replace a file already at `to` (never a directory).
    #[serde(default)]
    pub overwrite: Option<bool>,
}

/// Arguments of `delete-file`, `file-info` and `make-dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OnePath {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Path on the computer.
    pub path: String,
}

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
    pub timeout_ms: Option<u64>,
}

/// Arguments of `computer-output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComputerOutput {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    /// A computer that unlinked recently can still be read by its full traposId.
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Most lines in the page (default 200, at most 2000); fewer when they would not fit in
    /// one result, and then the first line of the answer says how many did not.
    #[serde(default)]
    pub lines: Option<u64>,
    /// Cursor from a previous page's `before`: returns the lines older than it.
    #[serde(default)]
    pub before: Option<u64>,
    /// Only the output of this request (its `requestId`), with the request's status.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Cursor from a previous answer's `cursor`: returns only lines newer than it, oldest
    /// first (up to `lines`; `cursor` then says where to go on). Not with `before`.
    #[serde(default)]
    pub after: Option<u64>,
}

/// Arguments of `wait-request`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitRequest {
    /// The request to wait on (a pending one, or one that ended in the last 15 minutes).
    pub request_id: String,
    /// Answer as soon as a line of the request's output after the cursor contains this text.
    #[serde(default)]
    pub until: Option<String>,
    /// Cursor from a previous wait-request's or computer-output's `cursor`: only output after
    /// it counts (default: from the run's start).
    #[serde(default)]
    pub after: Option<u64>,
    /// Answer with status "running" and the output so far after this many milliseconds
    /// (default 30000, at most 600000). Never cancels the request.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Arguments of `session-log`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionLog {
    /// Most events to return, newest last (default 100, at most 1000); fewer when they would
    /// not fit in one result, and then the first line of the answer says how many did not.
    #[serde(default)]
    pub limit: Option<u64>,
    /// Cursor from a previous answer's `before`: returns the entries older than it.
    #[serde(default)]
    pub before: Option<u64>,
    /// Only entries that began or changed after this: a previous answer's `latest` (a
    /// number), or a time as RFC 3339 text ("2026-12-02T05:00:00Z") or an age ("90s", "5m",
    /// "2h", "1d").
    #[serde(default)]
    pub since: Option<LogSince>,
    /// Only entries on this computer: a traposId ("7:miner"), id or label, or a glob
    /// ("miner-*", case ignored).
    #[serde(default, deserialize_with = "some_computer")]
    pub computer: Option<String>,
    /// Only entries by this party: "person", "cli", or an agent's client name (a glob).
    #[serde(default)]
    pub who: Option<String>,
    /// Only entries of this tool or request type ("exec-lua", "resources/read") or event
    /// ("call", "request", "linked", "unlinked", "refused"); a glob.
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

/// An optional computer, named as [`computer`] takes it.
fn some_computer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    computer(d).map(Some)
}

/// Arguments of `cancel-request`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelRequest {
    /// Id of a pending request (as reported by `exec-lua`, `probe-computers`, `session-log`).
    pub request_id: String,
}

/// Arguments of `read-screen`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadScreen {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Also return the colours: fg and bg rows in blit form (one hex digit per cell) and the
    /// palette (default false).
    #[serde(default)]
    pub colors: Option<bool>,
    /// A monitor attached to the computer, by its peripheral name ("top", "monitor_0"; see
    /// list-peripherals): read what this computer drew on it instead of its own terminal.
    #[serde(default)]
    pub monitor: Option<String>,
}

/// A cell of a monitor, 1-based (`send-input`'s `touch`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Touch {
    /// Column, from 1 at the left. (A number here, checked to be a whole one from 1, so that
    /// a fraction is refused by name rather than by the schema's parser.)
    #[schemars(with = "u32")]
    pub x: f64,
    /// Row, from 1 at the top.
    #[schemars(with = "u32")]
    pub y: f64,
}

/// Arguments of `send-input`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendInput {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
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
    /// A running exec-lua or run-file request (its requestId): the input goes to that chunk
    /// alone (one waiting in read() or os.pullEvent("char")), not to the shell, and the answer
    /// is its newest output instead of the screen. Without it, input goes to the computer as
    /// typed at its keyboard: the shell or whatever program has the screen (running chunks see
    /// it too).
    #[serde(default)]
    pub request_id: Option<String>,
    /// A monitor attached to the computer, by its peripheral name ("top", "monitor_0"): the
    /// input is a touch on it (give touch; text, keys and paste are refused with a monitor),
    /// and the answer is the monitor's screen.
    #[serde(default)]
    pub monitor: Option<String>,
    /// Touch the monitor at this cell ({x, y}, 1-based, the top left is 1,1): the computer
    /// gets a monitor_touch event with the monitor's name and the cell. Needs monitor.
    #[serde(default)]
    pub touch: Option<Touch>,
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

/// The result for arguments that fail a tool's input schema: an `isError` tool result (not a
/// JSON-RPC error) that names the field and what was expected, so an agent can correct its
/// call (docs/mcp.md, "Errors").
pub(crate) fn invalid_arguments(
    tool: &str,
    schema: Option<&serde_json::Map<String, serde_json::Value>>,
    args: &serde_json::Map<String, serde_json::Value>,
    detail: &str,
) -> super::Outcome {
    // An argument the tool does not take is named first, even beside a missing one: it is
    // most often the missing one misspelt (`timeOut` for `timeoutMs`).
    let unknown = detail
        .starts_with("unknown field `")
        .then(|| backticked(detail).map(|f| (f, String::new())))
        .flatten();
    let (field, expected) = unknown
        .or_else(|| schema.and_then(|s| schema_problem(s, args)))
        .or_else(|| backticked(detail).map(|f| (f, String::new())))
        .unwrap_or_default();
    let message = if field.is_empty() {
        format!("{tool}: invalid arguments: {detail}")
    } else if expected.is_empty() {
        format!("{tool}: invalid argument {field}: {detail}")
    } else {
        format!("{tool}: invalid argument {field}: {expected} ({detail})")
    };
    invalid_field(&field, &message)
}

/// An `invalid_arguments` failure naming `field`.
pub(crate) fn invalid_field(field: &str, message: &str) -> super::Outcome {
    let mut extra = serde_json::Map::new();
    if !field.is_empty() {
        extra.insert("field".into(), serde_json::Value::String(field.to_owned()));
    }
    super::Outcome::failure("invalid_arguments", message, extra)
}

/// serde names a missing or unknown field in backticks: "missing field `code`", "unknown
/// field `timeOut`, expected one of `traposId`, `code`, `timeoutMs`".
fn backticked(detail: &str) -> Option<String> {
    let rest = detail
        .strip_prefix("missing field `")
        .or_else(|| detail.strip_prefix("unknown field `"))?;
    rest.split('`').next().map(str::to_owned)
}

/// The first argument that does not match the schema: a missing required field, or a present
/// one of the wrong JSON type. Returns the field and what it should be.
fn schema_problem(
    schema: &serde_json::Map<String, serde_json::Value>,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Option<(String, String)> {
    use serde_json::Value;
    let props = schema.get("properties").and_then(Value::as_object)?;
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !args.contains_key(name) {
                return Some((name.to_owned(), "it is required".to_owned()));
            }
        }
    }
    for (name, value) in args {
        let Some(prop) = props.get(name) else {
            continue;
        };
        let types: Vec<&str> = match prop.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => match prop.get("enum").and_then(Value::as_array) {
                Some(options) if !options.contains(value) => {
                    let list: Vec<String> = options.iter().map(Value::to_string).collect();
                    return Some((name.clone(), format!("expected one of {}", list.join(", "))));
                }
                _ => continue,
            },
        };
        let matches = |t: &str| match t {
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            "null" => value.is_null(),
            _ => true,
        };
        if !types.iter().any(|t| matches(t)) {
            let want: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
            let mut expected = format!("expected {}", want.join(" or "));
            if types.contains(&"integer")
                && prop.get("minimum").and_then(Value::as_f64) == Some(0.0)
            {
                expected = "expected a non-negative integer".to_owned();
            }
            return Some((name.clone(), format!("{expected}, got {value}")));
        }
        if let (Some(min), Some(n)) = (prop.get("minimum").and_then(Value::as_f64), value.as_f64())
            && n < min
        {
            return Some((
                name.clone(),
                format!("expected at least {min}, got {value}"),
            ));
        }
    }
    None
}

//! Arguments of the file tools: `write-file` (and its content's encoding), `read-file`,
//! `list-files`, `move-file`, `delete-file`, `file-info` and `make-dir`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::computer;

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
    /// Path of the file on the computer.
    pub path: String,
    /// The content: text, or base64 with encoding base64.
    pub content: String,
    /// `utf8` (default) or `base64`.
    #[serde(default)]
    pub encoding: Option<Encoding>,
    /// Append to the file instead of replacing it.
    #[serde(default)]
    pub append: Option<bool>,
    /// If the old and the new file cannot both fit, write over the old one instead of
    /// refusing: not atomic (an interrupted write leaves it torn).
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
    #[schemars(range(min = 1))]
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
    /// Where to.
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

//! The file tools: `write-file`, `read-file`, `list-files`, `move-file`, `delete-file`,
//! `make-dir` and `file-info`.
#![allow(dead_code)]

use schemars::JsonSchema;
use serde::Serialize;

use super::super::schemas::Common;

/// `write-file`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Written {
    #[serde(flatten)]
    common: Common,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    /// bytes written
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<u64>,
    /// bytes of disk the refused write needs (each file and folder costs at least 500)
    #[serde(skip_serializing_if = "Option::is_none")]
    needed: Option<u64>,
    /// bytes free on the computer's disk when the write was refused
    #[serde(skip_serializing_if = "Option::is_none")]
    free: Option<u64>,
    /// bytes the write would need with inPlace
    #[serde(skip_serializing_if = "Option::is_none")]
    needed_in_place: Option<u64>,
}

/// `read-file`: one piece of a file.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadPiece {
    #[serde(flatten)]
    common: Common,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    /// UTF-8 text, or base64 when encoding is base64
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["utf8", "base64"]))]
    encoding: Option<String>,
    /// first byte of this piece
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<u64>,
    /// bytes in this piece
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<u64>,
    /// size of the whole file
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<u64>,
    /// offset of the next piece, null at the end
    next_offset: Option<u64>,
}

/// `list-files`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Listed {
    #[serde(flatten)]
    common: Common,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entries: Option<Vec<Entry>>,
}

/// One entry of a directory.
#[derive(Serialize, JsonSchema)]
struct Entry {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dir: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<f64>,
}

/// `move-file`, `delete-file` and `make-dir`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Changed {
    #[serde(flatten)]
    common: Common,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    /// delete-file: false when nothing was there
    #[serde(skip_serializing_if = "Option::is_none")]
    deleted: Option<bool>,
    /// make-dir: false when the directory was there
    #[serde(skip_serializing_if = "Option::is_none")]
    created: Option<bool>,
}

/// `file-info`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileInfo {
    #[serde(flatten)]
    common: Common,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exists: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_dir: Option<bool>,
    /// bytes; 0 for a directory
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    /// a file's CRC-32 (IEEE, as zlib's crc32)
    #[serde(skip_serializing_if = "Option::is_none")]
    crc32: Option<u64>,
    /// when it was last modified, ms since the epoch (absent from an older client)
    #[serde(skip_serializing_if = "Option::is_none")]
    modified: Option<u64>,
    /// on a read-only mount such as /rom
    #[serde(skip_serializing_if = "Option::is_none")]
    read_only: Option<bool>,
}

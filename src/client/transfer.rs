//! Files both ways through the MCP tools, byte-exact and of any size the host supports:
//! writes go as base64 pieces (the first replaces the file, the rest append), reads page
//! through `read-file` pieces with `offset` until `nextOffset` is absent.

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use super::{Conn, Failure, exit};

/// Bytes per `write-file` call: large enough that a program goes in one call, small enough
/// that a computer never holds much more than this in memory for one request.
pub const PUT_PIECE: usize = 64 * 1024;

/// One entry of a directory on the computer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub dir: bool,
    pub size: u64,
}

/// Writes `bytes` to `path` on `computer`.
///
/// # Errors
/// Exit code 1 when the computer could not write it, 3 when it is not reachable.
pub async fn put(
    conn: &Conn,
    computer: &str,
    path: &str,
    bytes: &[u8],
    deadline: Option<Duration>,
) -> Result<Reply, Failure> {
    let mut pieces = bytes.chunks(PUT_PIECE).peekable();
    let mut first = true;
    let mut last = None;
    // An empty file is still one write.
    if pieces.peek().is_none() {
        return write(conn, computer, path, &[], false, deadline).await;
    }
    for piece in pieces {
        last = Some(write(conn, computer, path, piece, !first, deadline).await?);
        first = false;
    }
    last.ok_or_else(|| Failure::new(exit::FAILED, "nothing written"))
}

use super::Reply;

async fn write(
    conn: &Conn,
    computer: &str,
    path: &str,
    piece: &[u8],
    append: bool,
    deadline: Option<Duration>,
) -> Result<Reply, Failure> {
    let content = base64::engine::general_purpose::STANDARD.encode(piece);
    let mut args =
        json!({"traposId": computer, "path": path, "content": content, "encoding": "base64"});
    if append && let Some(o) = args.as_object_mut() {
        o.insert("append".into(), Value::Bool(true));
    }
    let reply = conn
        .call_streaming("write-file", args, deadline, |_| {})
        .await?;
    if reply.is_error {
        return Err(reply.failure(&format!("cannot write {path} on {computer}")));
    }
    Ok(reply)
}

/// Reads all of `path` on `computer`.
///
/// # Errors
/// Exit code 1 when the file cannot be read, 3 when the computer is not reachable.
pub async fn get(
    conn: &Conn,
    computer: &str,
    path: &str,
    deadline: Option<Duration>,
) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    let mut offset: u64 = 0;
    loop {
        let args = json!({"traposId": computer, "path": path, "offset": offset});
        let reply = conn
            .call_streaming("read-file", args, deadline, |_| {})
            .await?;
        if reply.is_error {
            return Err(reply.failure(&format!("cannot read {path} on {computer}")));
        }
        let d = &reply.data;
        let content = d.get("content").and_then(Value::as_str).unwrap_or_default();
        match d.get("encoding").and_then(Value::as_str) {
            Some("base64") => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(content.trim())
                    .map_err(|e| {
                        Failure::new(
                            exit::FAILED,
                            format!("the host sent a piece of {path} that is not base64: {e}"),
                        )
                    })?;
                out.extend_from_slice(&bytes);
            }
            _ => out.extend_from_slice(content.as_bytes()),
        }
        match d.get("nextOffset").and_then(Value::as_u64) {
            Some(next) if next > offset => offset = next,
            _ => break,
        }
    }
    Ok(out)
}

/// Lists `path` on `computer`.
///
/// # Errors
/// Exit code 1 when it cannot be listed, 3 when the computer is not reachable.
pub async fn list(
    conn: &Conn,
    computer: &str,
    path: &str,
    deadline: Option<Duration>,
) -> Result<(Reply, Vec<Entry>), Failure> {
    let args = json!({"traposId": computer, "path": path});
    let reply = conn
        .call_streaming("list-files", args, deadline, |_| {})
        .await?;
    if reply.is_error {
        return Err(reply.failure(&format!("cannot list {path} on {computer}")));
    }
    let entries = reply
        .data
        .get("entries")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| Entry {
                    name: e
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    dir: e.get("dir").and_then(Value::as_bool).unwrap_or(false),
                    size: e.get("size").and_then(Value::as_u64).unwrap_or(0),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok((reply, entries))
}

/// Deletes `path` on `computer` (through `exec-lua`: there is no delete tool).
///
/// # Errors
/// Exit code 1 when it cannot be deleted, 3 when the computer is not reachable.
pub async fn delete(
    conn: &Conn,
    computer: &str,
    path: &str,
    deadline: Option<Duration>,
) -> Result<(), Failure> {
    let quoted = serde_json::to_string(path).unwrap_or_default();
    // JSON string syntax is valid Lua string syntax for the paths we send (no `\u` escapes
    // from ASCII paths; others are escaped byte-wise by Lua's own rules only partly, so
    // non-ASCII paths go through string.char).
    let literal = if path.is_ascii() {
        quoted
    } else {
        let bytes: Vec<String> = path.bytes().map(|b| b.to_string()).collect();
        format!("string.char({})", bytes.join(","))
    };
    let code = format!("local p = {literal} if fs.exists(p) then fs.delete(p) end return true");
    let reply = conn
        .call_streaming(
            "exec-lua",
            json!({"traposId": computer, "code": code}),
            deadline,
            |_| {},
        )
        .await?;
    if reply.is_error {
        return Err(reply.failure(&format!("cannot delete {path} on {computer}")));
    }
    Ok(())
}

/// Joins a directory and a relative path the way CC paths read (`/`-separated).
pub fn join(dir: &str, rel: &str) -> String {
    let dir = dir.trim_end_matches('/');
    if dir.is_empty() {
        rel.to_owned()
    } else {
        format!("{dir}/{rel}")
    }
}

//! Files both ways through the MCP tools, byte-exact and of any size the host supports:
//! writes go as base64 pieces (to a hidden sibling when there are several, moved over the
//! target at the end, so a put is all or nothing), reads page through `read-file` pieces with
//! `offset` until `nextOffset` is absent.

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

/// Writes `bytes` to `path` on `computer`, all or nothing (Ctrl-C cancels it).
///
/// One piece is one `write-file`, which the computer makes atomic itself. More pieces go to
/// a hidden sibling ([`part_name`]) and one `exec-lua` then moves it over the target, so a
/// put that is interrupted (Ctrl-C, the computer unlinking, the CLI killed) leaves the old
/// file as it was. On a failure the sibling is deleted when the computer can still be told.
///
/// # Errors
/// Exit code 1 when the computer could not write it, 3 when it is not reachable, 130 on
/// Ctrl-C.
pub async fn put(
    conn: &Conn,
    computer: &str,
    path: &str,
    bytes: &[u8],
    deadline: Option<Duration>,
) -> Result<Reply, Failure> {
    // One watcher for the whole put: a Ctrl-C between two pieces must not be lost.
    let stop = tokio_util::sync::CancellationToken::new();
    let watch = {
        let stop = stop.clone();
        tokio::spawn(async move {
            super::conn::ctrl_c().await;
            stop.cancel();
        })
    };
    let done = put_until(conn, computer, path, bytes, deadline, &stop).await;
    watch.abort();
    done
}

/// [`put`] that gives up (exit code 130) when `stop` is cancelled instead of on Ctrl-C.
///
/// # Errors
/// As [`put`].
pub async fn put_until(
    conn: &Conn,
    computer: &str,
    path: &str,
    bytes: &[u8],
    deadline: Option<Duration>,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<Reply, Failure> {
    if bytes.len() <= PUT_PIECE {
        return write(conn, computer, path, bytes, false, deadline, stop).await;
    }
    let part = part_name(path);
    let mut last = None;
    for (i, piece) in bytes.chunks(PUT_PIECE).enumerate() {
        match write(conn, computer, &part, piece, i > 0, deadline, stop).await {
            Ok(r) => last = Some(r),
            Err(f) => {
                discard(conn, computer, &part).await;
                return Err(f);
            }
        }
    }
    let size = bytes.len().to_string();
    let moved = run_lua(
        conn,
        computer,
        MOVE_LUA,
        &[&part, path, &size],
        deadline,
        stop,
    )
    .await;
    match moved {
        Ok(r) if !r.is_error => {}
        Ok(r) => {
            discard(conn, computer, &part).await;
            return Err(r.failure(&format!("cannot write {path} on {computer}")));
        }
        Err(f) => {
            discard(conn, computer, &part).await;
            return Err(f);
        }
    }
    let mut reply = last.ok_or_else(|| Failure::new(exit::FAILED, "nothing written"))?;
    // What the last piece's answer said was about the part file; the whole file is written.
    if let Some(o) = reply.data.as_object_mut() {
        o.insert("bytes".into(), json!(bytes.len()));
    }
    Ok(reply)
}

/// The hidden sibling a put of several pieces writes first: `dir/.NAME.XXXXXXXX.trapdesk-part`,
/// unique per put so that two puts of one file never append to each other's pieces.
pub fn part_name(path: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tag = std::process::id().rotate_left(16).wrapping_mul(0x9E37_79B1)
        ^ nanos
        ^ SEQ.fetch_add(1, Ordering::Relaxed);
    let (dir, name) = match path.rsplit_once('/') {
        Some((d, n)) => (format!("{d}/"), n),
        None => (String::new(), path),
    };
    format!("{dir}.{name}.{tag:08x}{PART_SUFFIX}")
}

/// How the names of [`part_name`] end (a sync leaves such files out of its comparison).
pub const PART_SUFFIX: &str = ".trapdesk-part";

/// Moves the finished part over the target in one step on the computer: nothing else runs
/// between the delete and the move (CC runs one coroutine at a time and these do not yield).
/// `fs.move` onto an existing file fails, hence the delete. The part must hold exactly the
/// put's size: the client writes part files in place (not journalled, so that an append costs
/// only its own bytes), and a piece torn or lost on the way must never reach the target.
// The client's own journalled move (`moveInto`, the same steps as its write-file) when it has
// one: with a plain delete-then-move, a computer killed between the two is left with neither
// file (tests/torn_files.rs found that window in write-file).
const MOVE_LUA: &str = r#"
local part, path, size = ...
part, path, size = fs.combine(part, ""), fs.combine(path, ""), tonumber(size)
if fs.isDir(path) then fs.delete(part) error("Is a directory: /" .. path, 0) end
if not fs.exists(part) then error("the pieces of /" .. path .. " are gone from the computer", 0) end
if fs.getSize(part) ~= size then
  local got = fs.getSize(part)
  pcall(fs.delete, part)
  error(("the pieces of /%s are incomplete on the computer (%d of %d bytes)"):format(path, got, size), 0)
end
local lok, lib = pcall(dofile, "/trapdesk/apis/libmcpcomputer.lua")
if lok and type(lib) == "table" and lib.moveInto then
  lib.JOURNAL = "/trapdesk/journal"
  local r = lib.moveInto(part, path)
  if not r.ok then pcall(fs.delete, part) error(r.error, 0) end
  return true
end
local ok, err = pcall(function()
  if fs.exists(path) then fs.delete(path) end
  fs.move(part, path)
end)
if not ok then pcall(fs.delete, part) error(err, 0) end
return true
"#;

/// Deletes a part file after a failed put, if the computer can still be told; a computer that
/// is gone keeps it (hidden, beside the target) and the old file stays intact either way.
async fn discard(conn: &Conn, computer: &str, part: &str) {
    let never = tokio_util::sync::CancellationToken::new();
    let _ = run_lua(
        conn,
        computer,
        "local p = fs.combine(..., '') if fs.exists(p) then fs.delete(p) end",
        &[part],
        Some(Duration::from_secs(5)),
        &never,
    )
    .await;
}

/// Runs `code` with `args` as its varargs (each passed as a Lua string literal).
async fn run_lua(
    conn: &Conn,
    computer: &str,
    code: &str,
    args: &[&str],
    deadline: Option<Duration>,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<Reply, Failure> {
    conn.call_until(
        "exec-lua",
        json!({"traposId": computer, "code": chunk(code, args)}),
        deadline,
        &mut |_: &str| {},
        stop.clone().cancelled_owned(),
    )
    .await
}

/// The `exec-lua` chunk that runs `code` with `args` as its varargs.
fn chunk(code: &str, args: &[&str]) -> String {
    let literals: Vec<String> = args.iter().map(|a| lua_string(a)).collect();
    format!("return (function(...) {code} end)({})", literals.join(", "))
}

/// A Lua string literal of any bytes.
pub fn lua_string(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out.push('"');
    out
}

use super::Reply;

async fn write(
    conn: &Conn,
    computer: &str,
    path: &str,
    piece: &[u8],
    append: bool,
    deadline: Option<Duration>,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<Reply, Failure> {
    let content = base64::engine::general_purpose::STANDARD.encode(piece);
    let mut args =
        json!({"traposId": computer, "path": path, "content": content, "encoding": "base64"});
    if append && let Some(o) = args.as_object_mut() {
        o.insert("append".into(), Value::Bool(true));
    }
    let reply = conn
        .call_until(
            "write-file",
            args,
            deadline,
            &mut |_: &str| {},
            stop.clone().cancelled_owned(),
        )
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;
    use crate::emu::{Computer, ComputerSpec};

    const PART: &str = ".t.bin.0a1b2c3d.trapdesk-part";

    /// The move that ends a put of several pieces, on an emulated computer running the real
    /// client files: a part of any other size than the put's is never moved over the target.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_move_takes_only_a_part_of_the_put_size() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, bytes) in crate::lua_files::FILES {
            let dest = root.join("trapdesk").join(path);
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            std::fs::write(dest, bytes).unwrap();
        }
        std::fs::write(root.join("t.bin"), b"old").unwrap();
        std::fs::write(root.join(PART), b"new content").unwrap();
        let computer = Computer::spawn(
            ComputerSpec::new(1, Some("move".into()), root.to_owned()),
            tokio::runtime::Handle::current(),
        )
        .unwrap();

        let short = computer
            .run_lua(&chunk(MOVE_LUA, &[PART, "t.bin", "12"]))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            short.contains("the pieces of /t.bin are incomplete on the computer (11 of 12 bytes)"),
            "{short}"
        );
        assert_eq!(std::fs::read(root.join("t.bin")).unwrap(), b"old");
        assert!(!root.join(PART).exists(), "the short part is deleted");

        std::fs::write(root.join(PART), b"new content").unwrap();
        computer
            .run_lua(&chunk(MOVE_LUA, &[PART, "t.bin", "11"]))
            .await
            .unwrap();
        assert_eq!(std::fs::read(root.join("t.bin")).unwrap(), b"new content");
        assert!(!root.join(PART).exists());
        computer.shutdown();
    }
}

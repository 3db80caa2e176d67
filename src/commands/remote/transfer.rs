//! Files both ways through the MCP tools, byte-exact and of any size the host supports:
//! writes go as base64 pieces (to a hidden sibling when there are several, moved over the
//! target at the end, so a put is all or nothing), reads page through `read-file` pieces with
//! `offset` until `nextOffset` is absent.

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use super::{Conn, Failure, exit};
use trapdesk_proto::protocol::kind::{FileInfoAnswer, crc32};

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
/// a hidden sibling ([`part_name`]), checked with `file-info` and moved over the target with
/// `move-file`, so a
/// put that is interrupted (Ctrl-C, the computer unlinking, the CLI killed) leaves the old
/// file as it was. On a failure the sibling is deleted when the computer can still be told.
///
/// With `in_place` every piece goes straight to `path` (the first replacing it, the rest
/// appended), and each `write-file` asks the computer to write in place: for a file whose old
/// and new content cannot both fit on the computer's disk. Nothing is atomic then: an
/// interrupted put leaves `path` holding only the pieces written so far.
///
/// # Errors
/// Exit code 1 when the computer could not write it, 3 when it is not reachable, 130 on
/// Ctrl-C, 143 on SIGTERM.
pub async fn put(
    conn: &Conn,
    computer: &str,
    path: &str,
    bytes: &[u8],
    deadline: Option<Duration>,
    in_place: bool,
) -> Result<Reply, Failure> {
    // One watcher for the whole put: a Ctrl-C between two pieces must not be lost.
    let stop = tokio_util::sync::CancellationToken::new();
    let which = std::sync::Arc::new(std::sync::OnceLock::new());
    let watch = {
        let (stop, which) = (stop.clone(), which.clone());
        tokio::spawn(async move {
            let _ = which.set(super::conn::signal().await);
            stop.cancel();
        })
    };
    let done = put_until(conn, computer, path, bytes, deadline, in_place, &stop).await;
    watch.abort();
    // Said as what it was: Ctrl-C (130) or SIGTERM (143).
    done.map_err(|f| match which.get() {
        Some(i) if f.code == exit::INTERRUPTED => i.failure(&format!("the put of {path}")),
        _ => f,
    })
}

/// What a put or a read gives up with when its `stop` token is cancelled.
fn stopped(
    stop: &tokio_util::sync::CancellationToken,
) -> impl std::future::Future<Output = Failure> + use<> {
    let stop = stop.clone();
    async move {
        stop.cancelled().await;
        Failure::new(exit::INTERRUPTED, "cancelled")
    }
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
    in_place: bool,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<Reply, Failure> {
    // Every piece after the first goes to the computer the first reached (its traposId), not
    // to whatever the typed name resolves to meanwhile.
    let mut computer = computer.to_owned();
    if bytes.len() <= PUT_PIECE || in_place {
        let mut last = None;
        // An empty file is still one write.
        let pieces = bytes
            .chunks(PUT_PIECE)
            .chain(bytes.is_empty().then_some(&[][..]));
        for (i, piece) in pieces.enumerate() {
            let how = Write {
                append: i > 0,
                in_place,
            };
            let r = write(conn, &computer, path, piece, how, deadline, stop).await?;
            computer = r.reached(&computer).to_owned();
            last = Some(r);
        }
        let mut reply = last.ok_or_else(|| Failure::new(exit::FAILED, "nothing written"))?;
        if let Some(o) = reply.data.as_object_mut() {
            o.insert("bytes".into(), json!(bytes.len()));
        }
        return Ok(reply);
    }
    let part = part_name(path);
    let mut last = None;
    for (i, piece) in bytes.chunks(PUT_PIECE).enumerate() {
        let how = Write {
            append: i > 0,
            in_place: false,
        };
        match write(conn, &computer, &part, piece, how, deadline, stop).await {
            Ok(r) => {
                computer = r.reached(&computer).to_owned();
                last = Some(r);
            }
            Err(f) => {
                discard(conn, &computer, &part).await;
                return Err(f);
            }
        }
    }
    if let Err(f) = finish(conn, &computer, &part, path, bytes, deadline, stop).await {
        discard(conn, &computer, &part).await;
        return Err(f);
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

/// Checks the finished part and moves it over the target. The part must hold exactly the
/// put's bytes: the client writes part files in place (not journalled, so that an append costs
/// only its own bytes), and a piece torn or lost on the way must never reach the target, so its
/// size and CRC-32 (computed on the computer) are compared with the put's first. The move
/// replaces the target with the client's journalled swap, the same steps as its write-file: a
/// computer killed at any point keeps the old file or the new one.
async fn finish(
    conn: &Conn,
    computer: &str,
    part: &str,
    path: &str,
    bytes: &[u8],
    deadline: Option<Duration>,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<(), Failure> {
    let info = call(
        conn,
        "file-info",
        json!({"traposId": computer, "path": part}),
        deadline,
        stop,
    )
    .await?;
    if info.is_error {
        return Err(info.failure(&format!(
            "cannot write {path} on {}",
            info.reached(computer)
        )));
    }
    if let Err(why) = check_part(&info.data, path, bytes) {
        return Err(Failure::new(
            exit::FAILED,
            format!("cannot write {path} on {computer}: {why}"),
        ));
    }
    let moved = call(
        conn,
        "move-file",
        json!({"traposId": computer, "from": part, "to": path, "overwrite": true}),
        deadline,
        stop,
    )
    .await?;
    if moved.is_error {
        return Err(moved.failure(&format!(
            "cannot write {path} on {}",
            moved.reached(computer)
        )));
    }
    Ok(())
}

/// Whether a `file-info` answer about a put's part file shows exactly the put's `bytes`.
fn check_part(info: &Value, path: &str, bytes: &[u8]) -> Result<(), String> {
    let info: FileInfoAnswer = serde_json::from_value(info.clone())
        .map_err(|e| format!("the computer's file-info answer is not one: {e}"))?;
    if !info.exists || info.is_dir {
        return Err(format!("the pieces of {path} are gone from the computer"));
    }
    if info.size != bytes.len() as u64 {
        return Err(format!(
            "the pieces of {path} are incomplete on the computer ({} of {} bytes)",
            info.size,
            bytes.len()
        ));
    }
    let want = crc32(bytes);
    match info.crc32 {
        Some(got) if got == want => Ok(()),
        Some(got) => Err(format!(
            "the pieces of {path} differ from what was sent on the computer (crc32 {got:08x}, sent {want:08x})"
        )),
        None => Err(format!(
            "the computer sent no crc32 for the pieces of {path}"
        )),
    }
}

/// Deletes a part file after a failed put, if the computer can still be told; a computer that
/// is gone keeps it (hidden, beside the target) and the old file stays intact either way.
async fn discard(conn: &Conn, computer: &str, part: &str) {
    let never = tokio_util::sync::CancellationToken::new();
    let _ = call(
        conn,
        "delete-file",
        json!({"traposId": computer, "path": part}),
        Some(Duration::from_secs(5)),
        &never,
    )
    .await;
}

/// One tool call that gives up when `stop` is cancelled.
async fn call(
    conn: &Conn,
    tool: &str,
    args: Value,
    deadline: Option<Duration>,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<Reply, Failure> {
    conn.call_until(tool, args, deadline, &mut |_: &str| {}, stopped(stop))
        .await
}

use super::Reply;

/// How one `write-file` of a put writes.
#[derive(Debug, Clone, Copy)]
struct Write {
    append: bool,
    in_place: bool,
}

async fn write(
    conn: &Conn,
    computer: &str,
    path: &str,
    piece: &[u8],
    how: Write,
    deadline: Option<Duration>,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<Reply, Failure> {
    let content = base64::engine::general_purpose::STANDARD.encode(piece);
    let mut args =
        json!({"traposId": computer, "path": path, "content": content, "encoding": "base64"});
    if let Some(o) = args.as_object_mut() {
        if how.append {
            o.insert("append".into(), Value::Bool(true));
        }
        if how.in_place {
            o.insert("inPlace".into(), Value::Bool(true));
        }
    }
    let reply = conn
        .call_until(
            "write-file",
            args,
            deadline,
            &mut |_: &str| {},
            stopped(stop),
        )
        .await?;
    if reply.is_error {
        return Err(reply.failure(&format!(
            "cannot write {path} on {}",
            reply.reached(computer)
        )));
    }
    Ok(reply)
}

/// Whether `path` on `computer` is a folder (`file-info`; a path that does not exist is not).
///
/// # Errors
/// Exit code 3 when the computer is not reachable; 1 when it cannot say.
pub async fn is_dir(
    conn: &Conn,
    computer: &str,
    path: &str,
    deadline: Option<Duration>,
) -> Result<bool, Failure> {
    let args = json!({"traposId": computer, "path": path});
    let reply = conn
        .call_streaming("file-info", args, deadline, |_| {})
        .await?;
    if reply.is_error {
        return Err(reply.failure(&format!(
            "cannot look at {path} on {}",
            reply.reached(computer)
        )));
    }
    let info: FileInfoAnswer = serde_json::from_value(reply.data).map_err(|e| {
        Failure::new(
            exit::FAILED,
            format!("the computer's file-info answer is not one: {e}"),
        )
    })?;
    Ok(info.exists && info.is_dir)
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
    Ok(get_from(conn, computer, path, deadline).await?.0)
}

/// [`get`], and the traposId of the computer the host reached (the name the person typed may
/// not spell it: `miner` for `7:miner`).
///
/// # Errors
/// As [`get`].
pub async fn get_from(
    conn: &Conn,
    computer: &str,
    path: &str,
    deadline: Option<Duration>,
) -> Result<(Vec<u8>, String), Failure> {
    let mut computer = computer.to_owned();
    let mut out = Vec::new();
    let mut offset: u64 = 0;
    loop {
        let args = json!({"traposId": computer, "path": path, "offset": offset});
        let reply = conn
            .call_streaming("read-file", args, deadline, |_| {})
            .await?;
        if reply.is_error {
            return Err(reply.failure(&format!(
                "cannot read {path} on {}",
                reply.reached(&computer)
            )));
        }
        // The rest from the computer the first piece came from, whatever the name resolves to
        // meanwhile.
        computer = reply.reached(&computer).to_owned();
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
    Ok((out, computer))
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
        return Err(reply.failure(&format!(
            "cannot list {path} on {}",
            reply.reached(computer)
        )));
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

/// Deletes `path` on `computer`; nothing there is not an error.
///
/// # Errors
/// Exit code 1 when it cannot be deleted, 3 when the computer is not reachable.
pub async fn delete(
    conn: &Conn,
    computer: &str,
    path: &str,
    deadline: Option<Duration>,
) -> Result<(), Failure> {
    let reply = conn
        .call_streaming(
            "delete-file",
            json!({"traposId": computer, "path": path}),
            deadline,
            |_| {},
        )
        .await?;
    if reply.is_error {
        return Err(reply.failure(&format!(
            "cannot delete {path} on {}",
            reply.reached(computer)
        )));
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
mod tests;

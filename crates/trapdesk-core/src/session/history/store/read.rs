//! The reads of `history.db`: output rows back as the entries they were, and transcript lines.

use std::time::{Duration, UNIX_EPOCH};

use rusqlite::{Connection, params};

use super::{END, START};
use crate::session::model::{Origin, OutputEntry, OutputItem, StartEntry, Status, Stream};
use trapdesk_proto::protocol::Kind;

const COLUMNS: &str =
    "seq, at_ms, kind, request_id, stream, complete, text, what, origin, duration_ms";

/// An output row back as the entry it was.
fn item_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<OutputItem> {
    let seq: i64 = r.get(0)?;
    let at_ms: i64 = r.get(1)?;
    let kind: i64 = r.get(2)?;
    let request_id: Option<String> = r.get(3)?;
    let text: String = r.get(6)?;
    let what: Option<String> = r.get(7)?;
    let entry = match kind {
        START => {
            let origin: Option<String> = r.get(8)?;
            let origin = origin
                .and_then(|o| serde_json::from_str::<Origin>(&o).ok())
                .unwrap_or(Origin::Host);
            let kind = what
                .and_then(|w| serde_json::from_value::<Kind>(serde_json::Value::String(w)).ok())
                .unwrap_or(Kind::ExecLua);
            OutputEntry::Start(Box::new(StartEntry {
                request_id: request_id.unwrap_or_default(),
                origin,
                kind,
                summary: text,
                at: UNIX_EPOCH + Duration::from_millis(at_ms.max(0) as u64),
            }))
        }
        END => {
            let duration: Option<i64> = r.get(9)?;
            OutputEntry::End {
                request_id: request_id.unwrap_or_default(),
                status: what.as_deref().map_or(Status::Failed, Status::parse),
                summary: text,
                duration_ms: duration.unwrap_or(0).max(0) as u64,
            }
        }
        _ => {
            let stream: i64 = r.get(4)?;
            OutputEntry::Line {
                request_id,
                stream: if stream == 1 {
                    Stream::Err
                } else {
                    Stream::Out
                },
                text,
                complete: r.get(5)?,
            }
        }
    };
    Ok(OutputItem {
        seq: seq.max(0) as u64,
        at_ms: at_ms.max(0) as u64,
        entry,
    })
}

/// Entries of `trapos_id` with `after < seq < until`, oldest first, at most `limit`.
pub fn output_between(
    conn: &Connection,
    trapos_id: &str,
    after: u64,
    until: u64,
    limit: usize,
) -> rusqlite::Result<Vec<OutputItem>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM output WHERE trapos_id = ?1 AND seq > ?2 AND seq < ?3
         ORDER BY seq LIMIT ?4"
    ))?;
    let rows = stmt.query_map(
        params![trapos_id, clamp(after), clamp(until), limit as i64],
        item_of,
    )?;
    rows.collect()
}

/// The newest `limit` entries of `trapos_id` before `before`, oldest first.
pub fn output_before(
    conn: &Connection,
    trapos_id: &str,
    before: u64,
    limit: usize,
) -> rusqlite::Result<Vec<OutputItem>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM output WHERE trapos_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3"
    ))?;
    let rows = stmt.query_map(params![trapos_id, clamp(before), limit as i64], item_of)?;
    let mut items = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    items.reverse();
    Ok(items)
}

/// Up to `limit` lines of `trapos_id` (of one request, with `request_id`) before `before`,
/// newest first.
pub fn lines_before(
    conn: &Connection,
    trapos_id: &str,
    before: u64,
    request_id: Option<&str>,
    limit: usize,
) -> rusqlite::Result<Vec<OutputItem>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM output WHERE trapos_id = ?1 AND seq < ?2 AND kind = 0
         AND (?3 IS NULL OR request_id = ?3) ORDER BY seq DESC LIMIT ?4"
    ))?;
    let rows = stmt.query_map(
        params![trapos_id, clamp(before), request_id, limit as i64],
        item_of,
    )?;
    rows.collect()
}

/// Whether any entry of `trapos_id` belongs to `request_id`.
pub fn has_request(conn: &Connection, trapos_id: &str, request_id: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM output WHERE trapos_id = ?1 AND request_id = ?2 LIMIT 1")?
        .exists(params![trapos_id, request_id])
}

/// Whether the database has ever held output of `trapos_id`.
pub fn knows_computer(conn: &Connection, trapos_id: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM computers WHERE trapos_id = ?1")?
        .exists([trapos_id])
}

/// Every computer the database has held output of.
pub fn computers(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached("SELECT trapos_id FROM computers")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    rows.collect()
}

/// The newest `limit` transcript lines, oldest first.
pub fn log_tail(conn: &Connection, limit: usize) -> rusqlite::Result<Vec<(u64, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, line FROM (SELECT seq, line FROM log ORDER BY seq DESC LIMIT ?1) ORDER BY seq",
    )?;
    let rows = stmt.query_map([limit as i64], |r| {
        Ok((r.get::<_, i64>(0)?.max(0) as u64, r.get(1)?))
    })?;
    rows.collect()
}

/// Transcript lines with `seq > after`, oldest first, at most `limit`.
pub fn log_after(
    conn: &Connection,
    after: u64,
    limit: usize,
) -> rusqlite::Result<Vec<(u64, String)>> {
    let mut stmt =
        conn.prepare_cached("SELECT seq, line FROM log WHERE seq > ?1 ORDER BY seq LIMIT ?2")?;
    let rows = stmt.query_map(params![clamp(after), limit as i64], |r| {
        Ok((r.get::<_, i64>(0)?.max(0) as u64, r.get(1)?))
    })?;
    rows.collect()
}

/// A cursor as SQLite's integer (they never come near `i64::MAX`; a larger one means "all").
fn clamp(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

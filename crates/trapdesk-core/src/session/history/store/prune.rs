//! What `history.db` keeps: the [`Bounds`] of age and size, and the pruning past them.

use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OptionalExtension, params};

use super::used_bytes;
use crate::session::model::epoch_ms;

/// Rows one pruning statement deletes, so a big prune does not hold one long transaction.
const PRUNE_CHUNK: i64 = 2000;

/// Bounds of what is kept.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub max_bytes: u64,
    pub max_age: Duration,
}

/// Deletes what is past the bounds: entries older than the age, then the oldest entries
/// (output or log, whichever is older) while the data is over the size; then gives the freed
/// pages back to the filesystem.
pub fn prune(conn: &Connection, bounds: Bounds) -> rusqlite::Result<()> {
    let cutoff = epoch_ms(SystemTime::now()).saturating_sub(bounds.max_age.as_millis() as u64);
    loop {
        let a = conn.execute(
            "DELETE FROM output WHERE rowid IN
             (SELECT rowid FROM output WHERE at_ms < ?1 ORDER BY rowid LIMIT ?2)",
            params![cutoff as i64, PRUNE_CHUNK],
        )?;
        let b = conn.execute(
            "DELETE FROM log WHERE seq IN
             (SELECT seq FROM log WHERE time_ms < ?1 ORDER BY seq LIMIT ?2)",
            params![cutoff as i64, PRUNE_CHUNK],
        )?;
        if a == 0 && b == 0 {
            break;
        }
    }
    loop {
        let used = used_bytes(conn)?;
        if used <= bounds.max_bytes {
            break;
        }
        // Rows of at most a line's 16 KiB each: never more than the excess goes at once.
        let chunk = ((used - bounds.max_bytes) / 16_384).clamp(50, PRUNE_CHUNK as u64) as i64;
        let oldest_output: Option<i64> = conn
            .query_row("SELECT at_ms FROM output ORDER BY rowid LIMIT 1", [], |r| {
                r.get(0)
            })
            .optional()?;
        let oldest_log: Option<i64> = conn
            .query_row("SELECT time_ms FROM log ORDER BY seq LIMIT 1", [], |r| {
                r.get(0)
            })
            .optional()?;
        let deleted = match (oldest_output, oldest_log) {
            (None, None) => break,
            (Some(o), Some(l)) if l < o => delete_oldest_log(conn, chunk)?,
            (Some(_), _) => conn.execute(
                "DELETE FROM output WHERE rowid IN (SELECT rowid FROM output ORDER BY rowid LIMIT ?1)",
                [chunk],
            )?,
            (None, Some(_)) => delete_oldest_log(conn, chunk)?,
        };
        if deleted == 0 {
            break;
        }
    }
    conn.execute_batch("PRAGMA incremental_vacuum;")?;
    Ok(())
}

fn delete_oldest_log(conn: &Connection, chunk: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "DELETE FROM log WHERE seq IN (SELECT seq FROM log ORDER BY seq LIMIT ?1)",
        [chunk],
    )
}

//! `history.db` itself: its schema, the writer thread that commits batches of records, the
//! pruning by age and size, and the reads.
//!
//! SQLite in WAL mode with `synchronous = NORMAL`: a commit is in the WAL file (the OS's page
//! cache) when `COMMIT` returns, so a host killed with SIGKILL loses nothing it had committed
//! (a power cut may lose the last commits; https://www.sqlite.org/wal.html, "Durability").
//! Readers never block the writer nor it them.
//!
//! This file: the schema; `write`: the writer thread; `prune`: what is kept; `read`: the reads.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

mod prune;
mod read;
mod write;

pub use prune::{Bounds, prune};
pub use read::{
    computers, has_request, knows_computer, lines_before, log_after, log_tail, output_before,
    output_between,
};
pub use write::{Stats, write_loop};

/// The database's file name in the data dir.
pub const FILE: &str = "history.db";

/// Kinds of output rows.
const LINE: i64 = 0;
const START: i64 = 1;
const END: i64 = 2;

/// Opens (creating) the database and its tables, in WAL mode.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    // It holds the code everyone ran and what computers printed: private like the transcript.
    // Made 0600 before SQLite opens it, since SQLite gives the `-wal` and `-shm` files the
    // database's mode. Best effort: the file is ours, so this only fails on odd filesystems.
    let _ = crate::config::private::create_file(path, true);
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    // Before any table exists, so that pruned pages can be given back to the filesystem.
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // The WAL is truncated back to this after a checkpoint, so it does not stay at its peak.
    conn.pragma_update(None, "journal_size_limit", 64i64 << 20)?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
         -- One row per output entry; rowid order is the order they were written (oldest first),
         -- which pruning follows.
         CREATE TABLE IF NOT EXISTS output (
             trapos_id TEXT NOT NULL,
             seq INTEGER NOT NULL,
             at_ms INTEGER NOT NULL,
             kind INTEGER NOT NULL,
             request_id TEXT,
             stream INTEGER NOT NULL DEFAULT 0,
             complete INTEGER NOT NULL DEFAULT 1,
             text TEXT NOT NULL DEFAULT '',
             what TEXT,
             origin TEXT,
             duration_ms INTEGER,
             UNIQUE (trapos_id, seq)
         );
         -- One row per log entry: its transcript line (the entry and what the transcript adds).
         CREATE TABLE IF NOT EXISTS log (
             seq INTEGER PRIMARY KEY,
             time_ms INTEGER NOT NULL,
             line TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS computers (trapos_id TEXT PRIMARY KEY);",
    )?;
    Ok(conn)
}

/// Counts this start in the database and returns how many starts came before it: the host's
/// epoch (see `super::History::first_seq`).
pub fn next_epoch(conn: &Connection) -> rusqlite::Result<u64> {
    let before: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'starts'", [], |r| {
            r.get(0)
        })
        .optional()?;
    let before = before.unwrap_or(0).max(0);
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('starts', ?1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![before + 1],
    )?;
    Ok(before as u64)
}

/// Bytes of pages in use (the file less its free pages).
pub fn used_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
    let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    Ok(((pages - free).max(0) * size) as u64)
}

//! `history.db` itself: its schema, the writer thread that commits batches of records, the
//! pruning by age and size, and the reads.
//!
//! SQLite in WAL mode with `synchronous = NORMAL`: a commit is in the WAL file (the OS's page
//! cache) when `COMMIT` returns, so a host killed with SIGKILL loses nothing it had committed
//! (a power cut may lose the last commits; https://www.sqlite.org/wal.html, "Durability").
//! Readers never block the writer nor it them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};

use super::{Change, Record};
use crate::session::model::{
    Origin, OutputEntry, OutputItem, StartEntry, Status, Stream, epoch_ms,
};
use trapdesk_proto::protocol::Kind;

/// The database's file name in the data dir.
pub const FILE: &str = "history.db";

/// Most records one transaction commits: big enough that a flood costs one commit per few
/// thousand lines, small enough that a commit takes milliseconds.
const BATCH: usize = 4096;
/// How long the writer sleeps when it found nothing to write: what a line waits at most
/// before its commit starts.
const POLL: Duration = Duration::from_millis(20);
/// How often the writer prunes by age and size.
const PRUNE_EVERY: Duration = Duration::from_secs(5);
/// Rows one pruning statement deletes, so a big prune does not hold one long transaction.
const PRUNE_CHUNK: i64 = 2000;

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

/// Bounds of what is kept.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub max_bytes: u64,
    pub max_age: Duration,
}

/// Counters the writer keeps, for the benchmark and the tests.
#[derive(Debug, Default)]
pub struct Stats {
    /// Records committed.
    pub committed: AtomicU64,
    /// Transactions committed.
    pub commits: AtomicU64,
    /// Bytes of records in the channel (see `super::QUEUE_BYTES`).
    pub queued_bytes: AtomicU64,
}

/// The writer thread: commits what arrives, a batch per transaction, and prunes now and then,
/// until every sender is gone. Returns why it stopped when a write failed.
pub fn write_loop(
    mut conn: Connection,
    rx: &mpsc::Receiver<Record>,
    bounds: Bounds,
    lost: &AtomicU64,
    stats: &Stats,
) -> Result<(), String> {
    let mut last_prune = Instant::now();
    let mut reported = 0;
    prune(&conn, bounds).map_err(|e| e.to_string())?;
    let mut open = true;
    while open {
        let mut batch = Vec::new();
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(r) => {
                    stats.queued_bytes.fetch_sub(r.weight(), Ordering::Relaxed);
                    batch.push(r);
                }
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        if batch.is_empty() {
            if open {
                // Polled rather than woken: a sender that finds the writer waiting in `recv`
                // must wake it (a futex call per record, 3 µs per output line in the
                // benchmark); one that finds it asleep only queues.
                std::thread::sleep(POLL);
            }
            continue;
        }
        let dropped = lost.load(Ordering::Relaxed);
        if dropped > reported {
            tracing::warn!(
                "history: {} records dropped (the disk fell behind; {dropped} in all)",
                dropped - reported
            );
            reported = dropped;
        }
        let mut acks = Vec::new();
        let n = commit(&mut conn, batch, &mut acks).map_err(|e| e.to_string())?;
        stats.committed.fetch_add(n, Ordering::Relaxed);
        stats.commits.fetch_add(1, Ordering::Relaxed);
        if last_prune.elapsed() >= PRUNE_EVERY {
            prune(&conn, bounds).map_err(|e| e.to_string())?;
            last_prune = Instant::now();
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
    Ok(())
}

/// One output row being written: a new entry, with the pieces appended to it in the same batch
/// joined in memory (a line written a character at a time is one insert, not thousands).
enum Op {
    Insert(Arc<str>, OutputItem),
    Append {
        trapos_id: Arc<str>,
        seq: u64,
        text: String,
        complete: bool,
    },
    Log {
        seq: u64,
        time_ms: u64,
        line: String,
    },
}

/// Writes one batch in one transaction; returns how many records it held.
fn commit(
    conn: &mut Connection,
    batch: Vec<Record>,
    acks: &mut Vec<mpsc::Sender<()>>,
) -> rusqlite::Result<u64> {
    let mut ops: Vec<Op> = Vec::with_capacity(batch.len());
    // (computer, seq) → index in `ops` of the row that piece belongs to.
    let mut at: HashMap<(Arc<str>, u64), usize> = HashMap::new();
    let mut n = 0;
    for record in batch {
        match record {
            Record::Output { trapos_id, changes } => {
                for change in changes {
                    n += 1;
                    match change {
                        Change::New(item) => {
                            at.insert((trapos_id.clone(), item.seq), ops.len());
                            ops.push(Op::Insert(trapos_id.clone(), item));
                        }
                        Change::Append {
                            seq,
                            text,
                            complete,
                        } => match at.get(&(trapos_id.clone(), seq)).copied() {
                            Some(i) => match &mut ops[i] {
                                Op::Insert(
                                    _,
                                    OutputItem {
                                        entry:
                                            OutputEntry::Line {
                                                text: line,
                                                complete: done,
                                                ..
                                            },
                                        ..
                                    },
                                )
                                | Op::Append {
                                    text: line,
                                    complete: done,
                                    ..
                                } => {
                                    line.push_str(&text);
                                    *done = complete;
                                }
                                _ => {}
                            },
                            None => {
                                at.insert((trapos_id.clone(), seq), ops.len());
                                ops.push(Op::Append {
                                    trapos_id: trapos_id.clone(),
                                    seq,
                                    text,
                                    complete,
                                });
                            }
                        },
                    }
                }
            }
            Record::Log { seq, time_ms, line } => {
                n += 1;
                ops.push(Op::Log { seq, time_ms, line });
            }
            Record::Flush(ack) => acks.push(ack),
        }
    }
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT OR REPLACE INTO output
             (trapos_id, seq, at_ms, kind, request_id, stream, complete, text, what, origin, duration_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?;
        let mut append = tx.prepare_cached(
            "UPDATE output SET text = text || ?3, complete = ?4 WHERE trapos_id = ?1 AND seq = ?2",
        )?;
        let mut log = tx.prepare_cached(
            "INSERT OR REPLACE INTO log (seq, time_ms, line) VALUES (?1, ?2, ?3)",
        )?;
        let mut known = tx.prepare_cached("INSERT OR IGNORE INTO computers VALUES (?1)")?;
        let mut seen: Option<Arc<str>> = None;
        for op in &ops {
            match op {
                Op::Insert(trapos_id, item) => {
                    if seen.as_deref() != Some(&**trapos_id) {
                        known.execute([&**trapos_id])?;
                        seen = Some(trapos_id.clone());
                    }
                    let row = Row::of(item);
                    insert.execute(params![
                        &**trapos_id,
                        item.seq as i64,
                        item.at_ms as i64,
                        row.kind,
                        row.request_id,
                        row.stream,
                        row.complete,
                        row.text,
                        row.what,
                        row.origin,
                        row.duration_ms,
                    ])?;
                }
                Op::Append {
                    trapos_id,
                    seq,
                    text,
                    complete,
                } => {
                    append.execute(params![&**trapos_id, *seq as i64, text, *complete])?;
                }
                Op::Log { seq, time_ms, line } => {
                    log.execute(params![*seq as i64, *time_ms as i64, line])?;
                }
            }
        }
    }
    tx.commit()?;
    Ok(n)
}

/// An output entry as the columns of its row.
struct Row<'a> {
    kind: i64,
    request_id: Option<&'a str>,
    stream: i64,
    complete: bool,
    text: &'a str,
    what: Option<&'a str>,
    origin: Option<String>,
    duration_ms: Option<i64>,
}

impl<'a> Row<'a> {
    fn of(item: &'a OutputItem) -> Row<'a> {
        match &item.entry {
            OutputEntry::Line {
                request_id,
                stream,
                text,
                complete,
            } => Row {
                kind: LINE,
                request_id: request_id.as_deref(),
                stream: i64::from(*stream == Stream::Err),
                complete: *complete,
                text,
                what: None,
                origin: None,
                duration_ms: None,
            },
            OutputEntry::Start(s) => Row {
                kind: START,
                request_id: Some(&s.request_id),
                stream: 0,
                complete: true,
                text: &s.summary,
                what: Some(s.kind.as_str()),
                origin: serde_json::to_string(&s.origin).ok(),
                duration_ms: None,
            },
            OutputEntry::End {
                request_id,
                status,
                summary,
                duration_ms,
            } => Row {
                kind: END,
                request_id: Some(request_id),
                stream: 0,
                complete: true,
                text: summary,
                what: Some(status.as_str()),
                origin: None,
                duration_ms: Some(*duration_ms as i64),
            },
        }
    }
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

/// Bytes of pages in use (the file less its free pages).
pub fn used_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
    let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    Ok(((pages - free).max(0) * size) as u64)
}

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

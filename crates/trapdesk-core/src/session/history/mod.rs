//! History that outlives the process: every computer's output, the log and the transcript in
//! `history.db` (SQLite, see `store.rs`), bounded by size and age (`history_max_mb`,
//! `history_days`).
//!
//! The session hands each record to a writer thread over a bounded channel and never waits for
//! the disk: a record is a clone of what the session keeps anyway (an output entry, a piece of
//! a line, a transcript line already serialized). When the channel is full the record is
//! dropped and counted (memory stays bounded, the caller never stalls); the writer warns with
//! the count. What the writer has committed is *stored*: it survives the host being killed.
//!
//! Cursors stay monotonic across restarts: each start of the host is counted in the database
//! (its *epoch*), and a start after the first numbers its output entries and log entries from
//! `epoch << 32`, above every number an earlier start can have given out, stored or not
//! (a start numbering from "the last stored one + 1" would give a number an agent already
//! holds, for a line that was never stored, to another line). A cursor from before a restart
//! still means the same place: the entries after it are the stored ones of the earlier start,
//! then the new start's.

pub mod runs;
mod store;
pub mod trim;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use rusqlite::Connection;
use serde_json::Value;

pub use store::{Bounds, FILE, Stats};

use super::model::{LogEntry, LogEvent, OutputItem, Status};
use crate::config::Settings;

/// What the session hands the writer.
pub enum Record {
    /// What one change to a computer's scrollback did to it.
    Output {
        trapos_id: Arc<str>,
        changes: Vec<Change>,
    },
    /// A log entry's transcript line.
    Log {
        seq: u64,
        time_ms: u64,
        line: String,
    },
    /// Answered once everything sent before it is committed.
    Flush(mpsc::Sender<()>),
}

/// One change to a computer's scrollback.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A new entry.
    New(OutputItem),
    /// Text added to the open line `seq` (see [`super::output::OutputRing::push_text`]).
    Append {
        seq: u64,
        text: String,
        complete: bool,
    },
}

/// Most bytes of text waiting for the writer, whatever `history_queue` allows in records: a
/// queue of 16 KiB lines is bounded by memory, not by count (beyond it records are dropped and
/// counted like those past `history_queue`).
pub const QUEUE_BYTES: u64 = 64 << 20;

impl Record {
    /// What the record holds in memory, near enough to bound the queue by.
    pub fn weight(&self) -> u64 {
        const ENTRY: u64 = 64;
        match self {
            Record::Output { changes, .. } => changes
                .iter()
                .map(|c| {
                    ENTRY
                        + match c {
                            Change::Append { text, .. } => text.len() as u64,
                            Change::New(item) => match &item.entry {
                                super::model::OutputEntry::Line { text, .. } => text.len() as u64,
                                super::model::OutputEntry::Start(s) => s.summary.len() as u64,
                                super::model::OutputEntry::End { summary, .. } => {
                                    summary.len() as u64
                                }
                            },
                        }
                })
                .sum(),
            Record::Log { line, .. } => ENTRY + line.len() as u64,
            // Sent apart from the count (see `flush`).
            Record::Flush(_) => 0,
        }
    }
}

/// The handle the session holds; reads go through its own connection, apart from the writer.
pub struct History {
    tx: mpsc::SyncSender<Record>,
    lost: Arc<AtomicU64>,
    path: PathBuf,
    reader: Mutex<Option<Connection>>,
    epoch: u64,
    stats: Arc<Stats>,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("path", &self.path)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl History {
    /// Opens `dir/history.db` and starts its writer.
    ///
    /// # Errors
    /// When the database cannot be opened or its writer cannot start.
    pub fn open(dir: &Path, settings: &Settings) -> Result<History, String> {
        let path = dir.join(FILE);
        let say = |e: rusqlite::Error| format!("{}: {e}", path.display());
        let conn = store::open(&path).map_err(say)?;
        let epoch = store::next_epoch(&conn).map_err(say)?;
        let bounds = Bounds {
            max_bytes: settings.history_max_bytes,
            max_age: settings.history_max_age,
        };
        let (tx, rx) = mpsc::sync_channel::<Record>(settings.history_queue.max(1));
        let lost = Arc::new(AtomicU64::new(0));
        let stats = Arc::new(Stats::default());
        let (lost_w, stats_w) = (lost.clone(), stats.clone());
        std::thread::Builder::new()
            .name("history".into())
            .spawn(move || {
                if let Err(e) = store::write_loop(conn, &rx, bounds, &lost_w, &stats_w) {
                    // The session goes on without it; what was committed stays readable.
                    tracing::error!("history off: write failed: {e}");
                }
            })
            .map_err(|e| format!("no history writer thread: {e}"))?;
        Ok(History {
            tx,
            lost,
            path,
            reader: Mutex::new(None),
            epoch,
            stats,
        })
    }

    /// The first number this start gives an output entry or a log entry (see the module docs).
    pub fn first_seq(&self) -> u64 {
        if self.epoch == 0 {
            1
        } else {
            (self.epoch << 32) | 1
        }
    }

    /// Where the database is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records committed and transactions so far.
    pub fn stats(&self) -> (u64, u64) {
        (
            self.stats.committed.load(Ordering::Relaxed),
            self.stats.commits.load(Ordering::Relaxed),
        )
    }

    /// Records dropped because the writer was behind, in all.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    fn send(&self, record: Record, count: u64) {
        let weight = record.weight();
        let queued = &self.stats.queued_bytes;
        if queued.load(Ordering::Relaxed) + weight > QUEUE_BYTES {
            self.lost.fetch_add(count, Ordering::Relaxed);
            return;
        }
        queued.fetch_add(weight, Ordering::Relaxed);
        match self.tx.try_send(record) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(_)) => {
                queued.fetch_sub(weight, Ordering::Relaxed);
                self.lost.fetch_add(count, Ordering::Relaxed);
            }
            // The writer stopped (it said why); nothing more is stored.
            Err(mpsc::TrySendError::Disconnected(_)) => {}
        }
    }

    /// Hands what a change to `trapos_id`'s scrollback did to the writer.
    pub fn output(&self, trapos_id: &str, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        let n = changes.len() as u64;
        self.send(
            Record::Output {
                trapos_id: Arc::from(trapos_id),
                changes,
            },
            n,
        );
    }

    /// Hands a log entry's transcript line to the writer.
    pub fn log(&self, seq: u64, time_ms: u64, line: String) {
        self.send(Record::Log { seq, time_ms, line }, 1);
    }

    /// Waits (at most `patience`) until everything handed over so far is committed; `false`
    /// when it was not in time or the writer has stopped.
    pub fn flush(&self, patience: Duration) -> bool {
        let (ack, done) = mpsc::channel();
        // Waiting here is the point (a stopping host), so a full channel is waited on too.
        let sent = self.tx.send(Record::Flush(ack)).is_ok();
        sent && done.recv_timeout(patience).is_ok()
    }

    /// Runs `f` on the reading connection (opened on first use); `None` when it fails.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Option<T> {
        let mut slot = self.reader.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            match Connection::open_with_flags(
                &self.path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            ) {
                Ok(c) => {
                    let _ = c.busy_timeout(Duration::from_secs(2));
                    *slot = Some(c);
                }
                Err(e) => {
                    tracing::warn!("history: cannot read {}: {e}", self.path.display());
                    return None;
                }
            }
        }
        let conn = slot.as_ref()?;
        match f(conn) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!("history: read failed: {e}");
                None
            }
        }
    }

    /// Stored entries of `trapos_id` with `after < seq < until`, oldest first, at most `limit`.
    pub fn output_between(
        &self,
        trapos_id: &str,
        after: u64,
        until: u64,
        limit: usize,
    ) -> Vec<OutputItem> {
        self.read(|c| store::output_between(c, trapos_id, after, until, limit))
            .unwrap_or_default()
    }

    /// The newest `limit` stored entries of `trapos_id` before `before`, oldest first.
    pub fn output_before(&self, trapos_id: &str, before: u64, limit: usize) -> Vec<OutputItem> {
        self.read(|c| store::output_before(c, trapos_id, before, limit))
            .unwrap_or_default()
    }

    /// Up to `limit` stored lines of `trapos_id` before `before`, newest first.
    pub fn lines_before(
        &self,
        trapos_id: &str,
        before: u64,
        request_id: Option<&str>,
        limit: usize,
    ) -> Vec<OutputItem> {
        self.read(|c| store::lines_before(c, trapos_id, before, request_id, limit))
            .unwrap_or_default()
    }

    /// Whether stored output of `trapos_id` belongs to `request_id`.
    pub fn has_request(&self, trapos_id: &str, request_id: &str) -> bool {
        self.read(|c| store::has_request(c, trapos_id, request_id))
            .unwrap_or(false)
    }

    /// Whether the database has held output of `trapos_id`.
    pub fn knows_computer(&self, trapos_id: &str) -> bool {
        self.read(|c| store::knows_computer(c, trapos_id))
            .unwrap_or(false)
    }

    /// Every computer the database has held output of.
    pub fn computers(&self) -> Vec<String> {
        self.read(store::computers).unwrap_or_default()
    }

    /// The newest `limit` stored log entries, oldest first: what the log shows after a restart.
    pub fn recent_log(&self, limit: usize) -> Vec<LogEntry> {
        self.read(|c| store::log_tail(c, limit))
            .unwrap_or_default()
            .iter()
            .filter_map(|(_, line)| entry_of(line))
            .collect()
    }
}

/// The stored transcript, for `trapdesk transcript`: lines with `seq > after`, oldest first, at
/// most `limit`; `None` when there is no database at `dir`.
///
/// # Errors
/// When the database is there but cannot be read.
pub fn transcript_after(
    dir: &Path,
    after: u64,
    limit: usize,
) -> Result<Option<Vec<(u64, String)>>, String> {
    let path = dir.join(FILE);
    if !path.exists() {
        return Ok(None);
    }
    let conn = Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let _ = conn.busy_timeout(Duration::from_secs(2));
    store::log_after(&conn, after, limit)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A transcript line back as the log entry it carries (what the transcript adds is left out).
fn entry_of(line: &str) -> Option<LogEntry> {
    let v: Value = serde_json::from_str(line).ok()?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let num = |k: &str| v.get(k).and_then(Value::as_u64);
    Some(LogEntry {
        seq: num("seq")?,
        time_ms: num("timeMs").unwrap_or(0),
        event: event_name(v.get("event").and_then(Value::as_str).unwrap_or("")),
        who: text("who"),
        trapos_id: text("traposId"),
        request_id: text("requestId"),
        what: text("what"),
        status: v.get("status").and_then(Value::as_str).map(Status::parse),
        detail: text("detail").unwrap_or_default(),
        duration_ms: num("durationMs"),
        call_id: num("callId"),
    })
}

/// An event read back by its name (an unknown one, written by a newer host, reads as `event`).
fn event_name(name: &str) -> LogEvent {
    LogEvent::parse(name).unwrap_or(LogEvent::Event)
}

#[cfg(test)]
mod tests;

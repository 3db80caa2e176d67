//! The writer thread of `history.db`: it commits what arrives, a batch of records per
//! transaction, and prunes now and then.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};

use super::super::{Change, Record};
use super::{Bounds, END, LINE, START, prune};
use crate::session::model::{OutputEntry, OutputItem, Stream};

/// Most records one transaction commits: big enough that a flood costs one commit per few
/// thousand lines, small enough that a commit takes milliseconds.
const BATCH: usize = 4096;
/// How long the writer sleeps when it found nothing to write: what a line waits at most
/// before its commit starts.
const POLL: Duration = Duration::from_millis(20);
/// How often the writer prunes by age and size.
const PRUNE_EVERY: Duration = Duration::from_secs(5);

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
    let (ops, n) = fold(batch, acks);
    write_ops(conn, &ops)?;
    Ok(n)
}

/// A batch as the rows to write, the pieces of one line folded into one row, with how many
/// records it held; the flushes waiting on it go to `acks`.
fn fold(batch: Vec<Record>, acks: &mut Vec<mpsc::Sender<()>>) -> (Vec<Op>, u64) {
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
    (ops, n)
}

/// Writes the rows in one transaction.
fn write_ops(conn: &mut Connection, ops: &[Op]) -> rusqlite::Result<()> {
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
        for op in ops {
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
    tx.commit()
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

//! `transcript.jsonl`: the audit trail. Every log entry becomes one JSON line, and a request's
//! lines carry what the log leaves out: its origin, its full code, path or arguments, and at
//! its end the output size and error.
//!
//! Records go to a writer thread over a bounded channel (`transcript_queue` lines), so the
//! request path never waits on the disk and never formats a line: the caller hands over the
//! entry and its extra as they are, and the thread serializes them. It writes what has come
//! as soon as it comes, a burst of lines in one `write` (a crash loses at most the lines still
//! in the channel, and those of the last 2 ms: after a write it lets lines gather that long
//! rather than be woken for each; a line and its newline were two writes each) and rotates the
//! file past a size,
//! keeping a set number of old files (`transcript.1.jsonl` is the newest of those). When the
//! disk falls so far behind that the channel is full, further lines are dropped and counted,
//! and the writer records the count in a `transcript_dropped` line once it catches up:
//! memory stays bounded and the file says exactly where it has a gap. Nothing that reaches the session holds
//! a secret or a token: the gateway checks secrets and the MCP endpoint checks tokens before
//! anything is logged.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::TryRecvError;
use std::sync::{Arc, Mutex, mpsc};

use serde::Serialize;
use serde_json::Value;

use super::history::History;
use super::model::{LogEntry, Origin};

/// The current file's name.
pub const FILE: &str = "transcript.jsonl";

/// What a transcript line adds to its log entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Extra {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// The full payload of a request, or the full arguments of a tool call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Serialize)]
struct Line<'a> {
    #[serde(flatten)]
    entry: &'a LogEntry,
    #[serde(flatten)]
    extra: &'a Extra,
}

/// Handle of the writer thread; dropping it lets the thread drain and stop.
#[derive(Debug)]
pub struct Transcript {
    tx: Option<mpsc::SyncSender<Queued>>,
    /// Lines dropped because the channel was full since the last line that got in.
    dropped: u64,
    /// Why the writer stopped, set by the writer thread so the session can say so once.
    failure: Arc<Mutex<Option<String>>>,
}

impl Transcript {
    /// Starts writing to `dir/transcript.jsonl`; `None` keeps no transcript. With `history`,
    /// the writer thread also hands each line it makes to `history.db`, so a line is
    /// serialized once, off the session's lock, for both. Unless `full_text`, the writer
    /// keeps big payloads as their size, hash and head (`history::trim`): hashing a file's
    /// contents is work for that thread, not for the request under the session's lock.
    pub fn open(
        dir: Option<&Path>,
        max_bytes: u64,
        keep: usize,
        queue: usize,
        history: Option<Arc<History>>,
        full_text: bool,
    ) -> Self {
        let Some(dir) = dir else {
            return Transcript::off();
        };
        let mut writer = match Writer::open(dir, max_bytes, keep) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(
                    "transcript off: cannot open {}: {e}",
                    dir.join(FILE).display()
                );
                return Transcript::off();
            }
        };
        let failure: Arc<Mutex<Option<String>>> = Arc::default();
        let failed = failure.clone();
        let (tx, rx) = mpsc::sync_channel::<Queued>(queue.max(1));
        let spawned = std::thread::Builder::new()
            .name("transcript".into())
            .spawn(move || write_lines(&mut writer, &rx, &failed, history.as_deref(), full_text));
        match spawned {
            Ok(_) => Transcript {
                tx: Some(tx),
                dropped: 0,
                failure,
            },
            Err(e) => {
                tracing::warn!("transcript off: no writer thread: {e}");
                Transcript::off()
            }
        }
    }

    fn off() -> Self {
        Transcript {
            tx: None,
            dropped: 0,
            failure: Arc::default(),
        }
    }

    /// Whether lines are still written: [`Transcript::append`] wants its record only then.
    pub fn is_on(&self) -> bool {
        self.tx.is_some()
    }

    /// Queues one line, made from `entry` and `extra` by the writer thread. Returns why, the
    /// one time it finds the writer stopped (a full disk, a file-size limit): the transcript
    /// is off after that, so the caller reports it once.
    pub fn append(&mut self, entry: LogEntry, extra: Extra) -> Option<String> {
        let tx = self.tx.as_ref()?;
        let line = Record { entry, extra };
        let stopped = self
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let sent = match tx.try_send(Queued {
            lost_before: self.dropped,
            line,
        }) {
            Ok(()) => {
                self.dropped = 0;
                true
            }
            Err(mpsc::TrySendError::Full(_)) => {
                // The disk is behind: drop and count rather than grow or stall the caller.
                self.dropped += 1;
                true
            }
            Err(mpsc::TrySendError::Disconnected(_)) => false,
        };
        if !sent || stopped.is_some() {
            // Keep the request path going without it.
            self.tx = None;
            return Some(stopped.unwrap_or_else(|| "the writer stopped".into()));
        }
        None
    }
}

/// The transcript line of a log entry, made on the caller's thread: for `history.db` when the
/// transcript file is off (the writer thread makes every other line).
pub fn line(entry: &LogEntry, extra: &Extra) -> Option<String> {
    serde_json::to_string(&Line { entry, extra }).ok()
}

/// One line's record as the session hands it over: the writer thread serializes it.
struct Record {
    entry: LogEntry,
    extra: Extra,
}

impl Record {
    /// What the transcript keeps of big payloads: their size, hash and head (docs/security.md).
    fn trim(&mut self) {
        if let Some(args) = &self.extra.args
            && super::history::trim::needs_trim(args)
        {
            self.extra.args = Some(super::history::trim::trim(args));
        }
    }

    /// The line's JSON, with no newline.
    fn line(&self) -> String {
        serde_json::to_string(&Line {
            entry: &self.entry,
            extra: &self.extra,
        })
        .unwrap_or_default()
    }
}

/// A line for the writer, with how many were dropped just before it.
struct Queued {
    lost_before: u64,
    line: Record,
}

/// The writer thread: what has come, as soon as it comes (every line queued by then in one
/// write), a gap line after any that were dropped, until the handle is gone or a write fails
/// (then `failed` says why).
fn write_lines(
    writer: &mut Writer,
    rx: &mpsc::Receiver<Queued>,
    failed: &Mutex<Option<String>>,
    history: Option<&History>,
    full_text: bool,
) {
    let mut burst: Vec<String> = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        let mut open = true;
        while let Some(q) = next.take() {
            if q.lost_before > 0 {
                let lost = q.lost_before;
                tracing::warn!("transcript: {lost} lines dropped (the disk fell behind)");
                burst.push(gap_line(lost));
            }
            let mut record = q.line;
            if !full_text {
                record.trim();
            }
            let line = record.line();
            // Nothing in a record fails to serialize; were it to, no line beats an empty one.
            if !line.is_empty() {
                if let Some(h) = history {
                    h.log(record.entry.seq, record.entry.time_ms, line.clone());
                }
                burst.push(line);
            }
            match rx.try_recv() {
                Ok(q) => next = Some(q),
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => open = false,
            }
        }
        if let Err(e) = writer.write_all(&burst) {
            tracing::error!("transcript off: write failed: {e}");
            *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            return;
        }
        burst.clear();
        if !open {
            return;
        }
        // Waking this thread is what a line cost most: a tool call makes four lines, and each
        // woke the parked writer (~12 of an exec-lua call's ~17 context switches, BENCHMARKS.md
        // "The host's own share"). A line that comes to an idle writer is still written at
        // once; the lines of the next `GATHER` wait for the writer instead of waking it, and go
        // in one write.
        std::thread::sleep(GATHER);
    }
}

/// How long the writer lets lines gather after a write before it takes them: at most this
/// much later on disk, and at most one wake-up of the writer per `GATHER` however many lines.
const GATHER: std::time::Duration = std::time::Duration::from_millis(2);

/// The line that marks a gap: `lost` lines were dropped just before it.
fn gap_line(lost: u64) -> String {
    serde_json::json!({
        "event": "transcript_dropped",
        "timeMs": super::model::epoch_ms(std::time::SystemTime::now()),
        "detail": format!("{lost} lines dropped here: the disk fell behind (transcript_queue is full)"),
        "count": lost,
    })
    .to_string()
}

struct Writer {
    dir: PathBuf,
    file: File,
    size: u64,
    max_bytes: u64,
    keep: usize,
}

impl Writer {
    fn open(dir: &Path, max_bytes: u64, keep: usize) -> std::io::Result<Writer> {
        let file = open_append(&dir.join(FILE))?;
        let size = file.metadata()?.len();
        Ok(Writer {
            dir: dir.to_owned(),
            file,
            size,
            max_bytes,
            keep,
        })
    }

    /// Writes `lines`, each with its newline, in as few writes as rotation allows (one, unless
    /// the file fills up on the way).
    fn write_all(&mut self, lines: &[String]) -> std::io::Result<()> {
        let mut buf: Vec<u8> = Vec::new();
        for line in lines {
            let len = line.len() as u64 + 1;
            // What the file will hold before this line: what it has plus the burst so far.
            let before = self.size + buf.len() as u64;
            if before > 0 && before + len > self.max_bytes {
                self.file.write_all(&buf)?;
                self.size += buf.len() as u64;
                buf.clear();
                self.rotate()?;
            }
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
        }
        self.file.write_all(&buf)?;
        self.size += buf.len() as u64;
        Ok(())
    }

    #[cfg(test)]
    fn write(&mut self, line: &str) -> std::io::Result<()> {
        self.write_all(&[line.to_owned()])
    }

    /// `transcript.jsonl` becomes `transcript.1.jsonl`, `.1` becomes `.2`, …; the oldest beyond
    /// `keep` goes.
    fn rotate(&mut self) -> std::io::Result<()> {
        let _ = std::fs::remove_file(rotated(&self.dir, self.keep.max(1)));
        for n in (1..self.keep).rev() {
            let from = rotated(&self.dir, n);
            if from.exists() {
                std::fs::rename(&from, rotated(&self.dir, n + 1))?;
            }
        }
        let current = self.dir.join(FILE);
        if self.keep == 0 {
            std::fs::remove_file(&current)?;
        } else {
            std::fs::rename(&current, rotated(&self.dir, 1))?;
        }
        self.file = open_append(&current)?;
        self.size = 0;
        Ok(())
    }
}

/// `transcript.N.jsonl`.
pub fn rotated(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("transcript.{n}.jsonl"))
}

/// The transcript files in `dir`, oldest first.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut list: Vec<PathBuf> = (1..1000)
        .map(|n| rotated(dir, n))
        .take_while(|p| p.exists())
        .collect();
    list.reverse();
    let current = dir.join(FILE);
    if current.exists() {
        list.push(current);
    }
    list
}

fn open_append(path: &Path) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // It holds the code everyone ran: private like the secret.
        opts.mode(0o600);
    }
    opts.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::model::LogEvent;
    use crate::session::state::State;

    #[test]
    fn the_writer_keeps_file_contents_as_their_hash_unless_full_text()
    -> Result<(), Box<dyn std::error::Error>> {
        let content = "A".repeat(10_000);
        for full_text in [false, true] {
            let dir = tempfile::tempdir()?;
            let mut t = Transcript::open(Some(dir.path()), 1 << 20, 1, 16, None, full_text);
            let extra = Extra {
                args: Some(serde_json::json!({"path": "a.txt", "content": content})),
                ..Extra::default()
            };
            t.append(
                State::entry(LogEvent::Request, "write-file".to_owned()),
                extra,
            );
            drop(t);
            let path = dir.path().join(FILE);
            let mut text = String::new();
            for _ in 0..200 {
                text = std::fs::read_to_string(&path).unwrap_or_default();
                if text.ends_with('\n') {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            assert_eq!(text.contains(&content), full_text, "{text}");
            assert_eq!(text.contains("sha256"), !full_text, "{text}");
        }
        Ok(())
    }

    #[test]
    fn rotates_by_size_and_keeps_the_set_number() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut t = Transcript::open(Some(dir.path()), 4096, 2, 1024, None, false);
        for i in 0..200 {
            let e = State::entry(
                LogEvent::Request,
                format!("entry {i:04} {}", "x".repeat(60)),
            );
            t.append(e, Extra::default());
        }
        drop(t);
        // The writer drains after the handle is gone; wait for the last line.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let all: String = files(dir.path())
                .iter()
                .map(|p| std::fs::read_to_string(p).unwrap_or_default())
                .collect();
            if all.contains("entry 0199") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "last line never written"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let list = files(dir.path());
        assert_eq!(list.len(), 3, "current + 2 kept: {list:?}");
        assert!(!rotated(dir.path(), 3).exists());
        for p in &list {
            assert!(std::fs::metadata(p)?.len() <= 4096);
        }
        let newest = std::fs::read_to_string(dir.path().join(FILE))?;
        assert!(newest.contains("entry 0199"));
        Ok(())
    }

    #[test]
    fn a_full_queue_drops_lines_counts_them_and_writes_the_count()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        // The writer is not running yet: as if the disk had stopped.
        let (tx, rx) = mpsc::sync_channel::<Queued>(8);
        let mut t = Transcript {
            tx: Some(tx),
            dropped: 0,
            failure: Arc::default(),
        };
        for i in 0..20 {
            let e = State::entry(LogEvent::Request, format!("entry {i:02}"));
            assert_eq!(t.append(e, Extra::default()), None);
        }
        assert_eq!(t.dropped, 12);
        // The disk catches up by one line; the next line gets in, carrying the count.
        let mut writer = Writer::open(dir.path(), 1 << 20, 1)?;
        let first = rx.recv()?;
        writer.write(&first.line.line())?;
        t.append(
            State::entry(LogEvent::Request, "entry 20"),
            Extra::default(),
        );
        assert_eq!(t.dropped, 0);
        drop(t);
        write_lines(&mut writer, &rx, &Mutex::new(None), None, false);
        let text = std::fs::read_to_string(dir.path().join(FILE))?;
        let lines: Vec<Value> = text
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        // entries 00-07, the gap where 08-19 were, entry 20.
        assert_eq!(lines.len(), 10, "{text}");
        assert_eq!(lines[7]["detail"], "entry 07");
        assert_eq!(lines[8]["event"], "transcript_dropped");
        assert_eq!(lines[8]["count"], 12);
        assert_eq!(lines[9]["detail"], "entry 20");
        Ok(())
    }
}

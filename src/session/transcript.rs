//! `transcript.jsonl`: the audit trail. Every log entry becomes one JSON line, and a request's
//! lines carry what the log leaves out: its origin, its full code, path or arguments, and at
//! its end the output size and error.
//!
//! Entries go to a writer thread over an unbounded channel, so the request path never waits on
//! the disk nor spends its time (under the session lock) turning them into JSON: the thread
//! does that, writes what has queued up in one go and flushes whenever the channel runs dry
//! (a crash loses at most the lines still in the channel or not yet flushed, the same few
//! milliseconds as before), and rotates the file past a size, keeping a set number of old
//! files (`transcript.1.jsonl` is the newest of those). One write per burst rather than one
//! per line: a tool call makes four lines, and writing them one by one cost four wakeups of
//! this thread and eight `write` calls (BENCHMARKS.md, issue 10). Nothing that reaches the session holds
//! a secret or a token: the gateway checks secrets and the MCP endpoint checks tokens before
//! anything is logged.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

use serde::Serialize;
use serde_json::Value;

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
struct Line {
    #[serde(flatten)]
    entry: LogEntry,
    #[serde(flatten)]
    extra: Extra,
}

/// Handle of the writer thread; dropping it lets the thread drain and stop.
#[derive(Debug)]
pub struct Transcript {
    tx: Option<mpsc::Sender<Line>>,
    /// Why the writer stopped, set by the writer thread so the session can say so once.
    failure: Arc<Mutex<Option<String>>>,
}

impl Transcript {
    /// Starts writing to `dir/transcript.jsonl`; `None` keeps no transcript.
    pub fn open(dir: Option<&Path>, max_bytes: u64, keep: usize) -> Self {
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
        let (tx, rx) = mpsc::channel::<Line>();
        let spawned = std::thread::Builder::new()
            .name("transcript".into())
            .spawn(move || {
                let mut text = String::new();
                while let Ok(first) = rx.recv() {
                    // Everything queued by now goes out in one write and one flush.
                    let mut next = Some(first);
                    let mut result = Ok(());
                    while let Some(line) = next {
                        text.clear();
                        if let Ok(json) = serde_json::to_string(&line) {
                            text.push_str(&json);
                            result = writer.write(&text);
                        }
                        if result.is_err() {
                            break;
                        }
                        next = rx.try_recv().ok();
                    }
                    if let Err(e) = result.and_then(|()| writer.flush()) {
                        tracing::error!("transcript off: write failed: {e}");
                        *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                        return;
                    }
                }
            });
        match spawned {
            Ok(_) => Transcript {
                tx: Some(tx),
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
            failure: Arc::default(),
        }
    }

    /// Queues one line. Returns why, the one time it finds the writer stopped (a full disk, a
    /// file-size limit): the transcript is off after that, so the caller reports it once.
    pub fn append(&mut self, entry: &LogEntry, extra: Extra) -> Option<String> {
        let tx = self.tx.as_ref()?;
        let line = Line {
            entry: entry.clone(),
            extra,
        };
        let stopped = self
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if tx.send(line).is_err() || stopped.is_some() {
            // Keep the request path going without it.
            self.tx = None;
            return Some(stopped.unwrap_or_else(|| "the writer stopped".into()));
        }
        None
    }
}

struct Writer {
    dir: PathBuf,
    file: BufWriter<File>,
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
            file: BufWriter::with_capacity(64 * 1024, file),
            size,
            max_bytes,
            keep,
        })
    }

    fn write(&mut self, line: &str) -> std::io::Result<()> {
        if self.size > 0 && self.size + line.len() as u64 + 1 > self.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(line.as_bytes())?;
        self.file.write_all(b"\n")?;
        self.size += line.len() as u64 + 1;
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }

    /// `transcript.jsonl` becomes `transcript.1.jsonl`, `.1` becomes `.2`, …; the oldest beyond
    /// `keep` goes.
    fn rotate(&mut self) -> std::io::Result<()> {
        // What is buffered belongs to the file being rotated away.
        self.file.flush()?;
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
        self.file = BufWriter::with_capacity(64 * 1024, open_append(&current)?);
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
    use crate::session::state::State;

    #[test]
    fn rotates_by_size_and_keeps_the_set_number() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut t = Transcript::open(Some(dir.path()), 4096, 2);
        for i in 0..200 {
            let e = State::entry("request", format!("entry {i:04} {}", "x".repeat(60)));
            t.append(&e, Extra::default());
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
}

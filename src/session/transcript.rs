//! `transcript.jsonl`: every log entry, one JSON line each, appended and flushed per event so a
//! crash loses at most the line being written.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::model::LogEntry;

/// Append-only writer; a failed write is logged once and then the transcript is switched off
/// rather than failing the request that produced the entry.
#[derive(Debug)]
pub struct Transcript {
    file: Option<File>,
}

impl Transcript {
    /// Opens (or creates) the transcript in `dir`; `None` disables it.
    pub fn open(dir: Option<&Path>) -> Self {
        let file = dir.and_then(|d| {
            let path = d.join("transcript.jsonl");
            match OpenOptions::new().create(true).append(true).open(&path) {
                Ok(f) => Some(f),
                Err(e) => {
                    tracing::warn!("transcript off: cannot open {}: {e}", path.display());
                    None
                }
            }
        });
        Transcript { file }
    }

    /// Appends one entry. Returns why, the one time a write fails (a full disk, a file-size
    /// limit): the transcript is off after that, so the caller reports it exactly once.
    pub fn append(&mut self, entry: &LogEntry) -> Option<String> {
        let file = self.file.as_mut()?;
        let line = serde_json::to_string(entry).ok()?;
        // One write per line, so a failure cannot leave half a line followed by more lines.
        let mut buf = line.into_bytes();
        buf.push(b'\n');
        if let Err(e) = file.write_all(&buf).and_then(|_| file.flush()) {
            tracing::error!("transcript off: write failed: {e}");
            self.file = None;
            return Some(e.to_string());
        }
        None
    }
}

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

    pub fn append(&mut self, entry: &LogEntry) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let line = match serde_json::to_string(entry) {
            Ok(l) => l,
            Err(_) => return,
        };
        if let Err(e) = writeln!(file, "{line}").and_then(|_| file.flush()) {
            tracing::warn!("transcript off: write failed: {e}");
            self.file = None;
        }
    }
}

//! `trapdesk.log`, bounded: rotated by size, private to the user.
//!
//! The log was appended to for ever, and what peers send reaches it (a refused link, a
//! computer's reported error): one attacker wrote 4.7 MB in 20 s. Now the file is renamed to
//! `trapdesk.log.1` (replacing the one before) when the next line would take it past
//! [`LOG_MAX_BYTES`], so the two together never exceed twice that (plus one line). A line is
//! never split between the files, and a single line is cut at [`LINE_MAX`]. Both files are
//! created mode 0600 (they name computers, addresses and agents), and a log left looser by an
//! earlier version is tightened when it is opened.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The log's name in the data dir.
pub const LOG_FILE: &str = "trapdesk.log";

/// Bytes `trapdesk.log` grows to before it is rotated (8 MiB; with `trapdesk.log.1`, 16 MiB
/// at most on disk). A busy host's INFO log (a summary line per 30 s, a line per agent's
/// change) takes weeks to fill it.
pub const LOG_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// Bytes of one line kept; the rest is cut (a line quoting a peer's text cannot be larger).
pub const LINE_MAX: usize = 16 * 1024;

/// The log file being written, with its size.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    file: File,
    size: u64,
    max: u64,
}

impl LogFile {
    /// Opens (or creates, 0600) `path` for appending; it is rotated past `max` bytes.
    ///
    /// # Errors
    /// When the file cannot be opened or created.
    pub fn open(path: &Path, max: u64) -> io::Result<LogFile> {
        let file = open_private(path)?;
        let size = file.metadata()?.len();
        Ok(LogFile {
            path: path.to_owned(),
            file,
            size,
            max: max.max(1),
        })
    }

    /// Where the previous log goes: `<path>.1`.
    pub fn previous(path: &Path) -> PathBuf {
        let mut p = path.as_os_str().to_owned();
        p.push(".1");
        PathBuf::from(p)
    }

    /// The current file becomes `<path>.1` and a new, empty one is started. When the rename
    /// fails, the current file is emptied instead: a log that cannot rotate stays bounded.
    fn rotate(&mut self) -> io::Result<()> {
        match std::fs::rename(&self.path, LogFile::previous(&self.path)) {
            Ok(()) => self.file = open_private(&self.path)?,
            Err(_) => self.file.set_len(0)?,
        }
        self.size = 0;
        Ok(())
    }
}

impl Write for LogFile {
    /// Writes one whole formatted event (tracing writes each in one call), rotating first
    /// when it would not fit.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut keep = buf.len().min(LINE_MAX);
        // Cut on a character boundary, so the file stays UTF-8.
        while keep < buf.len() && keep > 0 && (buf[keep] & 0xC0) == 0x80 {
            keep -= 1;
        }
        let cut = keep < buf.len();
        let len = keep as u64 + u64::from(cut) * 4;
        if self.size > 0 && self.size.saturating_add(len) > self.max {
            self.rotate()?;
        }
        self.file.write_all(&buf[..keep])?;
        if cut {
            self.file.write_all("…\n".as_bytes())?;
        }
        self.size = self.size.saturating_add(len);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Opens `path` for appending, created 0600; an existing one is made 0600 too (best effort:
/// the data dir's own check says when it belongs to someone else).
fn open_private(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Err(e) = file.set_permissions(std::fs::Permissions::from_mode(0o600)) {
            eprintln!("trapdesk: cannot make {} private: {e}", path.display());
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_line_longer_than_the_cut_is_cut_on_a_character() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let mut log = LogFile::open(&path, LOG_MAX_BYTES).unwrap();
        let line = "é".repeat(LINE_MAX);
        assert_eq!(log.write(line.as_bytes()).ok(), Some(line.len()));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.len() <= LINE_MAX + 4 && text.ends_with("…\n"));
    }
}

//! The bindings file on disk: read afresh, changed under a lock file, replaced by a rename, so
//! the host and the `trapdesk secret` commands (different processes) never lose each other's
//! changes and a reader never sees half a file.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{FILE, SecretError, Store};
use crate::config::write_private;

pub(super) fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

pub(super) fn load(dir: &Path) -> Result<Store, SecretError> {
    let path = path(dir);
    // Refused when another user owns it or others can write it: a planted binding is a key.
    match crate::config::private::read_checked(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| SecretError::Parse {
            path,
            message: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Store::default()),
        Err(source) => Err(SecretError::Io { path, source }),
    }
}

pub(super) fn save(dir: &Path, store: &Store) -> Result<(), SecretError> {
    let p = path(dir);
    let text = serde_json::to_string_pretty(store).unwrap_or_default();
    // Written beside and renamed over: a reader never sees half a file, and the new inode tells
    // every cached reader that it changed.
    let tmp = dir.join(format!("{FILE}.tmp"));
    write_private(&tmp, text.as_bytes())
        .and_then(|()| std::fs::rename(&tmp, &p))
        .map_err(|source| SecretError::Io { path: p, source })
}

/// A lock file older than this was left by a process that died while holding it.
const STALE_LOCK: Duration = Duration::from_secs(10);
/// How long a change waits for another one to finish.
const LOCK_WAIT: Duration = Duration::from_secs(3);

/// Held while a change reads, edits and replaces the file: the host (enrolment) and the
/// `trapdesk secret` commands are different processes, and a read-edit-rename by one in the
/// middle of another's would lose the other's change.
struct Lock(PathBuf);

impl Lock {
    fn take(dir: &Path) -> Result<Lock, SecretError> {
        let lock = dir.join(format!("{FILE}.lock"));
        let start = std::time::Instant::now();
        loop {
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                opts.mode(crate::config::private::FILE_MODE);
            }
            match opts.open(&lock) {
                Ok(_) => return Ok(Lock(lock)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&lock)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|age| age > STALE_LOCK);
                    if stale {
                        let _ = std::fs::remove_file(&lock);
                        continue;
                    }
                    if start.elapsed() > LOCK_WAIT {
                        return Err(SecretError::Locked {
                            path: path(dir),
                            lock,
                        });
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(source) => return Err(SecretError::Io { path: lock, source }),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Reads the file afresh, lets `edit` change it, and writes it back when `edit` says it
/// changed something (`Ok(true)`).
pub(super) fn change<T>(
    dir: &Path,
    edit: impl FnOnce(&mut Store) -> Result<(T, bool), SecretError>,
) -> Result<T, SecretError> {
    crate::config::private::create_dir(dir).map_err(|source| SecretError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let _lock = Lock::take(dir)?;
    let mut store = load(dir)?;
    let (out, changed) = edit(&mut store)?;
    if changed {
        save(dir, &store)?;
    }
    Ok(out)
}

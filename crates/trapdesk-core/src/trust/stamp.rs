//! A file's stamp: what tells one version of a file from another with one `stat`, so that a
//! file read on every request or hello (the agents file, the computers' secrets) is parsed
//! again only when it changed. Every writer of those files replaces them by a rename, which
//! always gives a new inode.

use std::path::Path;

/// What tells one version of a file from another without reading it: absent, or its device,
/// inode, size, and modification and change times to the nanosecond.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stamp {
    Absent,
    Present([i64; 7]),
}

impl Stamp {
    /// `None` when the file cannot be looked at, or the platform has no inodes: then it is read.
    pub fn of(path: &Path) -> Option<Stamp> {
        match std::fs::metadata(path) {
            Ok(m) => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::MetadataExt;
                    Some(Stamp::Present([
                        m.dev() as i64,
                        m.ino() as i64,
                        m.size() as i64,
                        m.mtime(),
                        m.mtime_nsec(),
                        m.ctime(),
                        m.ctime_nsec(),
                    ]))
                }
                #[cfg(not(unix))]
                {
                    let _ = m;
                    None
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Stamp::Absent),
            Err(_) => None,
        }
    }
}

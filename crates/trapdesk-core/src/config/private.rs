//! The data dir and everything trapdesk keeps in it are the user's alone: directories 0700,
//! files 0600, and a directory or credential file that another user owns or can write is
//! refused before anything is read from it (docs/security.md, "Files").
//!
//! One place for it, so every writer (the secret, tokens, bindings, `host.json`, the log, the
//! transcript, the history) makes its files the same way: [`create_file`], [`ensure_dir`],
//! [`read_credential`].
//!
//! Why refuse rather than fix a writable directory: whoever could write it may have planted a
//! token or a secret there already, and tightening the mode afterwards would not unplant it.
//! A directory that others could only *read* (0755 from an earlier version) is tightened
//! instead: nothing in it can have been changed by them, only seen.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Mode of every directory trapdesk makes in the data dir.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file trapdesk writes in the data dir.
pub const FILE_MODE: u32 = 0o600;

/// The data dir's files that hold a credential or the policy: one that others could write is
/// refused, not tightened (it may have been planted).
pub const CREDENTIAL_FILES: &[&str] = &[
    "secret",
    "mcp-token",
    "agents.json",
    "computer-secrets.json",
    "config.toml",
    "host.json",
];

/// Entries the start-up walk looks at at most: a data dir holds a few files and the emulated
/// computers' disks, so this is far above any real one and bounds a hostile one.
const MAX_WALK: usize = 100_000;

/// Why a directory or a credential file was refused. The text names the path, the reason and
/// the command that fixes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "refusing {path}: it belongs to user id {owner}, not to you (user id {me}), so it may hold anything they planted; use a directory of your own (--data-dir DIR) or a file of your own"
    )]
    Foreign { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "refusing {path}: {who} can write it (mode {mode:04o}), so what is in it may have been planted; make it yours alone with `chmod {fix:o} {path}`"
    )]
    Writable {
        path: PathBuf,
        who: &'static str,
        mode: u32,
        fix: u32,
    },
}

impl From<Refused> for std::io::Error {
    fn from(r: Refused) -> Self {
        std::io::Error::new(std::io::ErrorKind::PermissionDenied, r.to_string())
    }
}

/// What [`ensure_dir`] found and did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// The directory's mode before it was tightened to 0700, when it was looser.
    pub tightened_from: Option<u32>,
    /// Entries inside whose group or other bits were removed.
    pub entries_tightened: usize,
    /// Entries found inside (at most the walk's bound): an empty directory made by someone
    /// else's umask (a fresh temp dir) is tightened without a word, since no earlier version
    /// left anything in it.
    pub entries: usize,
}

/// This process's effective user id.
#[cfg(unix)]
pub fn my_uid() -> u32 {
    // SAFETY: geteuid has no preconditions, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}

/// Whether `meta` (of `path`) may be trusted: owned by us (or root, who can do anything
/// anyway) and writable by nobody else.
#[cfg(unix)]
fn judge(path: &Path, meta: &std::fs::Metadata, dir: bool) -> Result<(), Refused> {
    use std::os::unix::fs::MetadataExt;
    let me = my_uid();
    let owner = meta.uid();
    if owner != me && owner != 0 {
        return Err(Refused::Foreign {
            path: path.to_owned(),
            owner,
            me,
        });
    }
    let mode = meta.mode() & 0o7777;
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (_, true) => "every user",
        (true, false) => "its group",
        (false, false) => return Ok(()),
    };
    Err(Refused::Writable {
        path: path.to_owned(),
        who,
        mode,
        fix: if dir { DIR_MODE } else { FILE_MODE },
    })
}

#[cfg(not(unix))]
fn judge(_: &Path, _: &std::fs::Metadata, _: bool) -> Result<(), Refused> {
    Ok(())
}

/// Sets this process's umask to 077, so that whatever it creates without an explicit mode
/// (SQLite's `-wal` and `-shm`, an emulated computer's files) is private too. Called once at
/// the host's start, before any file is written; a belt beside [`create_file`]'s braces.
pub fn private_umask() {
    #[cfg(unix)]
    // SAFETY: umask has no preconditions and cannot fail; it changes only the mode mask.
    unsafe {
        libc::umask(0o077);
    }
}

/// Creates `dir` (and its parents) 0700 when absent; refuses it when another user owns it or
/// others can write it; tightens it to 0700 when others could read it, and every entry inside
/// to 0700/0600 (a credential file that others could write is refused instead).
///
/// # Errors
/// A [`Refused`] as an `io::Error` of kind `PermissionDenied`, or the OS's error.
pub fn ensure_dir(dir: &Path) -> std::io::Result<Prepared> {
    let existed = dir.exists();
    if !existed {
        create_dir(dir)?;
    }
    let meta = std::fs::symlink_metadata(dir)?;
    // A symlink is followed for the checks (a data dir on another disk is common).
    let meta = if meta.file_type().is_symlink() {
        std::fs::metadata(dir)?
    } else {
        meta
    };
    if !meta.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    judge(dir, &meta, true)?;
    for name in CREDENTIAL_FILES {
        let p = dir.join(name);
        if let Ok(m) = std::fs::symlink_metadata(&p) {
            judge(&p, &m, false)?;
        }
    }
    let mut prepared = Prepared::default();
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let mode = meta.mode() & 0o7777;
        if mode & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))?;
            prepared.tightened_from = Some(mode);
        }
        if existed {
            (prepared.entries, prepared.entries_tightened) = tighten_tree(dir);
        }
    }
    Ok(prepared)
}

/// Checks, without changing anything, that another user neither owns `dir` nor can write it:
/// what the install's own tools (the CLI, `doctor`) ask before they read a token or `host.json`
/// from a data dir.
///
/// # Errors
/// A [`Refused`] as `PermissionDenied`, or the OS's error (`NotFound` for no such dir).
pub fn check_dir(dir: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(dir)?;
    judge(dir, &meta, true)?;
    Ok(())
}

/// Removes group and other bits from every entry under `dir` (symlinks are not followed),
/// at most [`MAX_WALK`] entries. Returns how many it saw and how many it changed.
#[cfg(unix)]
fn tighten_tree(dir: &Path) -> (usize, usize) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mut changed = 0;
    let mut seen = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK {
                return (seen, changed);
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            let ft = meta.file_type();
            if ft.is_symlink() {
                continue;
            }
            let mode = meta.mode() & 0o7777;
            if ft.is_dir() {
                stack.push(entry.path());
            }
            if mode & 0o077 != 0 {
                let new = mode & 0o700;
                if std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(new))
                    .is_ok()
                {
                    changed += 1;
                }
            }
        }
    }
    (seen, changed)
}

/// Creates a directory (and its parents) with mode 0700.
///
/// # Errors
/// The OS's error.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(DIR_MODE);
    }
    b.create(dir)
}

/// Opens `path` for writing, created 0600 when absent; an existing file is made 0600 before
/// anything is written. `append` keeps what is there (a log); else it is truncated.
///
/// # Errors
/// The OS's error.
pub fn create_file(path: &Path, append: bool) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.create(true);
    if append {
        opts.append(true);
    } else {
        opts.write(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(FILE_MODE);
    }
    let f = opts.open(path)?;
    // `mode` applies only to a new file; an older one is made private before it is written.
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if f.metadata()?.mode() & 0o077 != 0 {
            f.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
        }
    }
    Ok(f)
}

/// Reads a file that holds a credential or the policy, after checking the open file itself
/// (no race between the check and the read): refused when another user owns it or others can
/// write it.
///
/// # Errors
/// `NotFound` and the OS's other errors as they are; a [`Refused`] as `PermissionDenied`.
pub fn read_checked(path: &Path) -> std::io::Result<String> {
    let mut f = File::open(path)?;
    judge(path, &f.metadata()?, false)?;
    let mut text = String::new();
    f.read_to_string(&mut text)?;
    Ok(text)
}

/// The secret or token a person keeps in a file (`--secret-file`, `--mcp-token-file`): the
/// file's content with one trailing newline (`\n` or `\r\n`) taken off, as `echo` and editors
/// leave one. Refused as [`read_checked`] refuses, and when empty.
///
/// # Errors
/// One line naming the flag, the file and the reason; never the content.
pub fn read_credential(flag: &str, path: &Path) -> Result<String, String> {
    let text =
        read_checked(path).map_err(|e| format!("{flag} {}: cannot use it: {e}", path.display()))?;
    let value = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    if value.is_empty() {
        return Err(format!("{flag} {}: the file is empty", path.display()));
    }
    Ok(value.to_owned())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).map(|m| m.mode() & 0o7777).unwrap_or(0)
    }

    #[test]
    fn a_fresh_dir_is_0700_and_files_0600() -> std::io::Result<()> {
        let t = tempfile::tempdir()?;
        let d = t.path().join("a/b");
        let p = ensure_dir(&d)?;
        assert_eq!(p, Prepared::default());
        assert_eq!(mode(&d), 0o700);
        drop(create_file(&d.join("log"), true)?);
        assert_eq!(mode(&d.join("log")), 0o600);
        Ok(())
    }

    #[test]
    fn a_readable_dir_is_tightened_a_writable_one_refused() -> std::io::Result<()> {
        let t = tempfile::tempdir()?;
        let d = t.path().join("d");
        std::fs::create_dir(&d)?;
        std::fs::write(d.join("trapdesk.log"), "x")?;
        std::fs::set_permissions(d.join("trapdesk.log"), PermissionsExt::from_mode(0o644))?;
        std::fs::set_permissions(&d, PermissionsExt::from_mode(0o755))?;
        let p = ensure_dir(&d)?;
        assert_eq!(p.tightened_from, Some(0o755));
        assert_eq!((p.entries, p.entries_tightened), (1, 1));
        assert_eq!(mode(&d.join("trapdesk.log")), 0o600);
        std::fs::set_permissions(&d, PermissionsExt::from_mode(0o770))?;
        let e = ensure_dir(&d)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("its group can write it"), "{e}");
        assert!(check_dir(&d).is_err());
        assert!(e.contains(&format!("chmod 700 {}", d.display())), "{e}");
        std::fs::set_permissions(&d, PermissionsExt::from_mode(0o700))?;
        std::fs::write(d.join("mcp-token"), "planted")?;
        std::fs::set_permissions(d.join("mcp-token"), PermissionsExt::from_mode(0o666))?;
        let e = ensure_dir(&d)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("every user can write it"), "{e}");
        Ok(())
    }

    #[test]
    fn a_credential_file_loses_one_newline_and_never_shows() -> std::io::Result<()> {
        let t = tempfile::tempdir()?;
        let f = t.path().join("s");
        std::fs::write(&f, "hunter2-very-secret\n\n")?;
        std::fs::set_permissions(&f, PermissionsExt::from_mode(0o600))?;
        assert_eq!(
            read_credential("--secret-file", &f).ok().as_deref(),
            Some("hunter2-very-secret\n")
        );
        std::fs::set_permissions(&f, PermissionsExt::from_mode(0o620))?;
        let e = read_credential("--secret-file", &f)
            .err()
            .unwrap_or_default();
        assert!(e.contains("chmod 600"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        Ok(())
    }
}

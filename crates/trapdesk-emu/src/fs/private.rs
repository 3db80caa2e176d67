//! A disk's folders and files on the host are the host user's alone: made 0700 and 0600, and
//! tightened when an older version left them open to others.

use std::fs;
use std::path::Path;

/// A disk's folders and files are the host user's alone (0700 and 0600): the `.settings` on
/// every emulated disk holds the computer's secrets, and other users of the host have no
/// business reading a computer's files. The mode is asked for at creation (the process's umask
/// can only take bits away).
pub(crate) fn private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

/// The folder that holds disks (`<data dir>/computers`): made, or made private if an older
/// version left it open to others.
pub(crate) fn private_folder(path: &Path) -> std::io::Result<()> {
    private_dir(path)?;
    restrict(path, &fs::symlink_metadata(path)?)
}

/// Options that create a file only its owner can read and write.
pub(crate) fn private_file() -> fs::OpenOptions {
    #[allow(unused_mut)]
    let mut options = fs::OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

/// Writes `bytes` to a new or existing file of a disk, leaving it the user's alone.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = private_file()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    std::io::Write::write_all(&mut file, bytes)?;
    restrict(path, &file.metadata()?)
}

/// At most this many entries are looked at when a disk is tightened (a disk's quota keeps it
/// far smaller: 1 MB of 500-byte minimum files is 2,000 entries).
const TIGHTEN_MAX: usize = 100_000;

/// Takes the group and other bits off every folder and file of a disk made looser by an older
/// version (0755 folders, 0644 files). Symbolic links are neither followed nor changed: a
/// link's target is not the disk's.
pub(crate) fn tighten(root: &Path) {
    let mut todo = vec![root.to_path_buf()];
    let mut seen = 0;
    while let Some(path) = todo.pop() {
        seen += 1;
        if seen > TIGHTEN_MAX {
            tracing::warn!(root = %root.display(), "disk not fully tightened: over {TIGHTEN_MAX} entries");
            return;
        }
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        if let Err(e) = restrict(&path, &meta) {
            tracing::warn!(path = %path.display(), "could not make private: {e}");
        }
        if meta.is_dir()
            && let Ok(entries) = fs::read_dir(&path)
        {
            todo.extend(entries.flatten().map(|e| e.path()));
        }
    }
}

#[cfg(unix)]
fn restrict(path: &Path, meta: &fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(mode & !0o077))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn restrict(_: &Path, _: &fs::Metadata) -> std::io::Result<()> {
    Ok(())
}

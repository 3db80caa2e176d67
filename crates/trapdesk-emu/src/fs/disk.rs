//! The computer's file system as mounts on the host: its own disk at the root, a floppy at
//! `/disk` while one is in the drive, `/rom` read-only, each CC path mapped to a host path
//! below its mount (never through a symlink), and folders and files made within each mount's
//! quota the way CC: Tweaked counts them.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::path::normalize;
use super::private::{private_dir, private_file};
use crate::quota::{MINIMUM_FILE_SIZE, OUT_OF_SPACE, Quota};
use crate::sync::lock;

/// Where a floppy in the drive is mounted (CC's `disk`, then `disk2`, ...; one drive here).
pub(super) const FLOPPY_MOUNT: &str = "disk";

/// The computer's file system: its own disk at the root, and a floppy at `/disk` while one is
/// in the drive, each with its own quota.
pub(super) struct Disk {
    pub(super) root: PathBuf,
    pub(super) quota: Arc<Quota>,
    pub(super) drive: Arc<std::sync::Mutex<Option<crate::peripherals::spec::DiskDrive>>>,
    /// The floppy's quota, measured when the floppy is first used and kept while it stays in.
    pub(super) floppy_quota: std::sync::Mutex<Option<(PathBuf, Arc<Quota>)>>,
}

impl Disk {
    /// The floppy in the drive: the drive's name, the floppy's directory and its quota.
    pub(super) fn floppy(&self) -> Option<(String, PathBuf, Arc<Quota>)> {
        let drive = lock(&self.drive);
        let drive = drive.as_ref()?;
        let f = drive.floppy.as_ref()?;
        let mut cache = lock(&self.floppy_quota);
        let quota = match cache.as_ref() {
            Some((root, q)) if *root == f.root => q.clone(),
            _ => {
                let q = Arc::new(Quota::measure(&f.root, f.space));
                *cache = Some((f.root.clone(), q.clone()));
                q
            }
        };
        Some((drive.side.clone(), f.root.clone(), quota))
    }

    /// The part of a normalised path below the floppy's mount point, if it is there.
    pub(super) fn below_mount(p: &str) -> Option<&str> {
        if p == FLOPPY_MOUNT {
            Some("")
        } else {
            p.strip_prefix(FLOPPY_MOUNT)?.strip_prefix('/')
        }
    }

    /// The floppy's mount point itself, while a floppy is in.
    pub(super) fn is_mount_root(&self, p: &str) -> bool {
        p == FLOPPY_MOUNT && self.floppy().is_some()
    }

    /// The quota that a path counts against: the floppy's below its mount point, else the
    /// computer's.
    pub(super) fn quota(&self, p: &str) -> Arc<Quota> {
        match (Self::below_mount(p), self.floppy()) {
            (Some(_), Some((_, _, q))) => q,
            _ => self.quota.clone(),
        }
    }

    /// The host path of a CC path, or the CC error text.
    pub(super) fn host(&self, path: &str) -> Result<(String, PathBuf), String> {
        let p = normalize(path, false)?;
        let (root, rest) = match (Self::below_mount(&p), self.floppy()) {
            (Some(rest), Some((_, root, _))) => (root, rest.to_owned()),
            _ => (self.root.clone(), p.clone()),
        };
        let host = if rest.is_empty() {
            root.clone()
        } else {
            root.join(&rest)
        };
        Self::no_symlinks(&root, &rest)?;
        Ok((p, host))
    }

    /// Refuses a path that passes through a symlink inside the computer's directory. CC has no
    /// symlinks, so one there was put by someone on the host, and following it (even a dangling
    /// one, which `File::create` would) could reach outside the directory.
    fn no_symlinks(root: &Path, p: &str) -> Result<(), String> {
        let mut at = root.to_path_buf();
        for part in p.split('/').filter(|s| !s.is_empty()) {
            at.push(part);
            match fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(format!("/{p}: Access denied"));
                }
                Ok(_) => {}
                // Nothing further exists, so nothing further can be a link.
                Err(_) => return Ok(()),
            }
        }
        Ok(())
    }

    pub(super) fn is_rom(p: &str) -> bool {
        p == "rom" || p.starts_with("rom/")
    }

    /// Makes a folder and the folders above it that are missing, each costing 500 bytes, as
    /// `WritableFileMount.makeDirectory` does: all of them or none, "/p: Out of space" when
    /// they do not fit.
    pub(super) fn make_dir(&self, p: &str, h: &Path) -> Result<(), String> {
        if h.is_dir() {
            return Ok(());
        }
        if h.exists() {
            return Err(format!("/{p}: File exists"));
        }
        // A disk whose folder is gone (its host removed the data dir while the computer still
        // ran) stays gone: making the folder again would leave a stray tree behind on the host.
        let mount = match (Self::below_mount(p), self.floppy()) {
            (Some(_), Some((_, root, _))) => root,
            _ => self.root.clone(),
        };
        if !mount.is_dir() {
            return Err(format!("/{p}: Access denied"));
        }
        let quota = self.quota(p);
        quota.refresh();
        let mut missing = 0;
        let mut at = Some(h);
        while let Some(dir) = at.filter(|d| !d.exists()) {
            missing += 1;
            at = dir.parent();
        }
        if !quota.take(missing * MINIMUM_FILE_SIZE) {
            return Err(format!("/{p}: {OUT_OF_SPACE}"));
        }
        private_dir(h).map_err(|_| {
            quota.give_back(missing * MINIMUM_FILE_SIZE);
            format!("/{p}: Access denied")
        })
    }

    /// Opens a file for writing with CC's accounting (`MountWrapper.openForWrite`,
    /// `WritableFileMount.openFile`): a missing parent folder is made first; a new file takes
    /// 500 bytes; emptying one (`truncate`) gives back all but 500.
    pub(super) fn open_write(
        &self,
        p: &str,
        h: &Path,
        options: &fs::OpenOptions,
        truncate: bool,
    ) -> Result<fs::File, String> {
        if let Some(((dir, _), parent)) = p.rsplit_once('/').zip(h.parent())
            && !h.exists()
        {
            self.make_dir(dir, parent)?;
        }
        let quota = self.quota(p);
        quota.refresh();
        let old = fs::metadata(h).ok().map(|m| m.len());
        match old {
            None if !quota.take(MINIMUM_FILE_SIZE) => {
                return Err(format!("/{p}: {OUT_OF_SPACE}"));
            }
            None => {}
            Some(size) if truncate => {
                quota.give_back(size.max(MINIMUM_FILE_SIZE) - MINIMUM_FILE_SIZE);
            }
            Some(_) => {}
        }
        options.open(h).map_err(|e| {
            if old.is_none() {
                quota.give_back(MINIMUM_FILE_SIZE);
            }
            format!("/{p}: {e}")
        })
    }

    /// Copies a file or a folder as `FileSystem.copyRecursive` does, through the same
    /// accounting: folders are made, files opened and written. A file that does not fit stays
    /// behind empty and the copy fails with "Out of space".
    pub(super) fn copy_tree(&self, p: &str, from: &Path, to: &Path) -> Result<(), String> {
        if from.is_dir() {
            self.make_dir(p, to)?;
            let mut names: Vec<_> = fs::read_dir(from)
                .map_err(|e| format!("/{p}: {e}"))?
                .flatten()
                .map(|e| e.file_name())
                .collect();
            names.sort();
            for name in names {
                let child = format!("{p}/{}", name.to_string_lossy());
                self.copy_tree(&child, &from.join(&name), &to.join(&name))?;
            }
            return Ok(());
        }
        let bytes = fs::read(from).map_err(|e| format!("/{p}: {e}"))?;
        let mut options = private_file();
        options.write(true).create(true).truncate(true);
        let mut file = self.open_write(p, to, &options, true)?;
        self.quota(p).write(0, bytes.len() as u64, 0)?;
        std::io::Write::write_all(&mut file, &bytes).map_err(|e| format!("/{p}: {e}"))
    }
}

//! A writable mount's space, counted as CC: Tweaked counts it (`WritableFileMount`,
//! `MountConstants`): the emulator's disk quota, apart from the file operations in `fs` that
//! charge it.

use std::fs;
use std::path::{Path, PathBuf};

/// What every file and folder costs at least, in bytes (CC: Tweaked's
/// `MountConstants.MINIMUM_FILE_SIZE`).
pub(crate) const MINIMUM_FILE_SIZE: u64 = 500;

/// One writable mount's space, counted as CC: Tweaked's `WritableFileMount` counts it: each
/// folder, the root too, 500 bytes; each file its size but at least 500; every write adds what
/// it grows a file by past that. The root's own 500 bytes come on top of the capacity, so an
/// empty disk has exactly its capacity free.
///
/// CC measures the disk once, when the mount is made, and counts its own changes from then on.
/// The emulator measures it again at each open for writing, `makeDir`, `copy`, `delete` and
/// `getFreeSpace` (and counts the writes of open handles in between), so that files a test puts
/// on or takes off the disk from the host count as well.
#[derive(Debug)]
pub(crate) struct Quota {
    root: PathBuf,
    capacity: u64,
    used: std::sync::Mutex<u64>,
}

impl Quota {
    pub(crate) fn measure(root: &Path, capacity: u64) -> Self {
        let q = Self {
            root: root.to_path_buf(),
            capacity,
            used: std::sync::Mutex::new(0),
        };
        q.refresh();
        q
    }

    /// Measures the disk again (see the type's notes).
    pub(super) fn refresh(&self) {
        let used = if self.root.exists() {
            Self::cost(&self.root)
        } else {
            MINIMUM_FILE_SIZE
        };
        *self.used() = used;
    }

    /// What a file or a folder with all it holds costs.
    fn cost(path: &Path) -> u64 {
        match fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => {
                MINIMUM_FILE_SIZE
                    + fs::read_dir(path)
                        .map(|rd| rd.flatten().map(|e| Self::cost(&e.path())).sum())
                        .unwrap_or(0)
            }
            Ok(m) => m.len().max(MINIMUM_FILE_SIZE),
            Err(_) => 0,
        }
    }

    fn used(&self) -> std::sync::MutexGuard<'_, u64> {
        crate::sync::lock(&self.used)
    }

    /// `fs.getCapacity`.
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// `fs.getFreeSpace`.
    pub(crate) fn remaining(&self) -> u64 {
        self.refresh();
        (self.capacity + MINIMUM_FILE_SIZE).saturating_sub(*self.used())
    }

    /// Takes `bytes` when at least that much is free.
    pub(super) fn take(&self, bytes: u64) -> bool {
        let mut used = self.used();
        if (self.capacity + MINIMUM_FILE_SIZE).saturating_sub(*used) < bytes {
            return false;
        }
        *used += bytes;
        true
    }

    pub(super) fn give_back(&self, bytes: u64) {
        let mut used = self.used();
        *used = used.saturating_sub(bytes);
    }

    /// A write of `len` bytes at `pos` into a file now `size` long: the bytes it adds past
    /// `max(500, size)` are taken, or nothing is written and the write fails with "Out of
    /// space" (`WritableFileMount.CountingChannel.write`).
    pub(crate) fn write(&self, pos: u64, len: u64, size: u64) -> Result<(), &'static str> {
        let new = (pos + len).saturating_sub(size.max(MINIMUM_FILE_SIZE));
        if new == 0 {
            return Ok(());
        }
        let mut used = self.used();
        if *used + new > self.capacity + MINIMUM_FILE_SIZE {
            return Err(OUT_OF_SPACE);
        }
        *used += new;
        Ok(())
    }
}

/// CC: Tweaked's `MountConstants.OUT_OF_SPACE`.
pub(crate) const OUT_OF_SPACE: &str = "Out of space";

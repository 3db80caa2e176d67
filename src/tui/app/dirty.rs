//! What the console must pull from the session before the next frame: [`App::note`] marks it
//! as events come, [`App::pull`] takes it.
//!
//! [`App::note`]: super::App::note
//! [`App::pull`]: super::App::pull

use std::collections::HashSet;

/// What must be pulled from the session before the next frame.
pub(super) struct Dirty {
    pub(super) computers: bool,
    pub(super) pending: bool,
    pub(super) calls: bool,
    pub(super) approvals: bool,
    /// The stop for all agents was set or lifted.
    pub(super) pause: bool,
    pub(super) output: HashSet<String>,
    /// Computers whose earlier output has been pulled once.
    pub(super) seen: HashSet<String>,
}

impl Dirty {
    /// Everything: the first frame pulls it all.
    pub(super) fn new() -> Dirty {
        Dirty {
            computers: true,
            pending: true,
            calls: true,
            approvals: true,
            pause: true,
            output: HashSet::new(),
            seen: HashSet::new(),
        }
    }

    /// Everything again, and the output of these computers (after a lagged broadcast).
    pub(super) fn all(&mut self, ids: impl Iterator<Item = String>) {
        self.pause = true;
        self.computers = true;
        self.pending = true;
        self.calls = true;
        self.approvals = true;
        self.output.extend(ids);
    }
}

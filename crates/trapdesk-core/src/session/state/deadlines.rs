//! Pending requests' deadlines, earliest first ([`Deadlines`]): the set one task (`reap` in
//! `session/mod.rs`) ends each of when it passes. It mirrors each pending request's `timer`:
//! the state sets and clears both together (`request.rs`), through these operations alone.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::DeadlineKey;

/// The deadlines set, by key: the request id and its timeout (for the error), and whether the
/// task that ends them was started (at the first deadline: a session is made outside a
/// runtime in places).
#[derive(Default)]
pub(crate) struct Deadlines {
    set: BTreeMap<DeadlineKey, (String, Duration)>,
    reaping: bool,
}

/// What the session's deadline task must be told of a new deadline.
pub(crate) enum Wake {
    /// It was never started: start it.
    Start,
    /// The new deadline is earlier than all others: wake it.
    Earlier,
    /// It wakes in time anyway.
    Later,
}

impl Deadlines {
    /// A free key at `at` for request number `n`: a nanosecond later for each other deadline
    /// at that same instant and number, so that keys stay unique.
    pub(super) fn free_key(&self, mut at: Instant, n: u64) -> DeadlineKey {
        while self.set.contains_key(&(at, n)) {
            at += Duration::from_nanos(1);
        }
        (at, n)
    }

    /// Sets request `id`'s deadline at `key`, and says what the deadline task must be told.
    pub(super) fn insert(&mut self, key: DeadlineKey, id: &str, timeout: Duration) -> Wake {
        let earliest = self.set.keys().next().is_none_or(|first| key < *first);
        self.set.insert(key, (id.to_owned(), timeout));
        if !self.reaping {
            self.reaping = true;
            Wake::Start
        } else if earliest {
            Wake::Earlier
        } else {
            Wake::Later
        }
    }

    pub(super) fn remove(&mut self, key: &DeadlineKey) {
        self.set.remove(key);
    }

    /// The earliest deadline if `now` has passed it, taken out (the request and its timeout);
    /// else when the earliest one is, if any.
    pub(super) fn take_due(&mut self, now: Instant) -> Result<(String, Duration), Option<Instant>> {
        match self.set.first_key_value() {
            Some((k, _)) if k.0 <= now => {}
            Some((k, _)) => return Err(Some(k.0)),
            None => return Err(None),
        }
        self.set.pop_first().map(|(_, due)| due).ok_or(None)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.set.len()
    }
}

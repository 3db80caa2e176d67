//! What a hello's claim of detached runs comes to: which named runs are taken back and why the
//! others are dropped ([`Claim`], [`Dropped`]), and whether a named id is one this host gave.

/// Why a named run was not taken back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dropped {
    /// Not an id this host's start tags could have given (`h-<tag>-<n>`, another start's tag).
    NotOurs,
    /// The computer already has `max_detached` detached runs.
    OverLimit,
    /// Recorded as another computer's run, or pending here as something else.
    NotItsOwn,
    /// A type this host does not know.
    UnknownKind,
    /// Named twice.
    Twice,
}

/// What one hello's claim came to.
#[derive(Debug, Default)]
pub(super) struct Claim {
    pub(super) taken: usize,
    dropped: [usize; 5],
}

impl Claim {
    pub(super) fn refuse(&mut self, why: Dropped) {
        self.dropped[why as usize] += 1;
    }

    pub(super) fn dropped(&self) -> usize {
        self.dropped.iter().sum()
    }

    /// What was dropped, by reason, for the log.
    pub(super) fn reasons(&self) -> String {
        const WHY: [&str; 5] = [
            "not an id this host's starts give",
            "over max_detached",
            "another computer's or not a detached run",
            "an unknown request type",
            "named twice",
        ];
        WHY.iter()
            .zip(self.dropped)
            .filter(|(_, n)| *n > 0)
            .map(|(why, n)| format!("{n} {why}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Whether `id` is one a start of this host, other than the current one, could have given:
/// `h-<tag>-<n>` (see `run_tag` in `state/mod.rs`). One of the current start that is not pending
/// ended here (or was never given): it is not taken back.
pub(super) fn issued_before(id: &str, current_tag: &str) -> bool {
    let Some(rest) = id.strip_prefix("h-") else {
        return false;
    };
    let Some((tag, n)) = rest.split_once('-') else {
        return false;
    };
    tag.len() == 6
        && tag
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        && tag != current_tag
        && (1..=20).contains(&n.len())
        && n.bytes().all(|b| b.is_ascii_digit())
}

/// The computer id a traposId starts with as a number (`7` of `7:miner`; 0 for none).
pub(crate) fn computer_number(trapos_id: &str) -> u64 {
    computer_of(trapos_id).parse().unwrap_or(0)
}

/// The computer id a traposId starts with (`7` of `7:miner`).
pub(super) fn computer_of(trapos_id: &str) -> &str {
    trapos_id.split(':').next().unwrap_or(trapos_id)
}

//! Link counts for the log. With thousands of computers a line per link and unlink would bury
//! everything else (20,000 lines for 10,000 computers relinking), so those lines are DEBUG and
//! the INFO log gets one summary per interval in which something happened.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use trapdesk_core::session::Session;

/// How often the summary is written (when anything changed).
pub const INTERVAL: Duration = Duration::from_secs(30);

/// Counters since the last summary.
#[derive(Debug, Default)]
pub struct LinkStats {
    joined: AtomicU64,
    left: AtomicU64,
    refused: AtomicU64,
}

/// One interval's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub joined: u64,
    pub left: u64,
    pub refused: u64,
}

impl LinkStats {
    pub fn joined(&self) {
        self.joined.fetch_add(1, Ordering::Relaxed);
    }

    pub fn left(&self) {
        self.left.fetch_add(1, Ordering::Relaxed);
    }

    pub fn refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts since the last call, reset to zero.
    pub fn take(&self) -> Counts {
        Counts {
            joined: self.joined.swap(0, Ordering::Relaxed),
            left: self.left.swap(0, Ordering::Relaxed),
            refused: self.refused.swap(0, Ordering::Relaxed),
        }
    }
}

/// The summary line's text, or `None` for a quiet interval.
pub fn summary(linked: usize, c: Counts, every: Duration) -> Option<String> {
    if c == Counts::default() {
        return None;
    }
    Some(format!(
        "computers: {linked} linked; in the last {} s {} joined, {} left, {} refused",
        every.as_secs(),
        c.joined,
        c.left,
        c.refused
    ))
}

/// Writes the summary every `every` until `shutdown`.
pub async fn report(
    stats: std::sync::Arc<LinkStats>,
    session: Session,
    every: Duration,
    shutdown: CancellationToken,
) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        // A flood of refused links that stopped is counted in the log too.
        session.flush_link_refusals();
        let linked = session.linked_count();
        if let Some(line) = summary(linked, stats.take(), every) {
            tracing::info!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_intervals_write_nothing_and_counts_reset() {
        let s = LinkStats::default();
        assert_eq!(summary(3, s.take(), INTERVAL), None);
        s.joined();
        s.joined();
        s.left();
        s.refused();
        let line = summary(1, s.take(), INTERVAL);
        assert_eq!(
            line.as_deref(),
            Some("computers: 1 linked; in the last 30 s 2 joined, 1 left, 1 refused")
        );
        assert_eq!(s.take(), Counts::default());
    }
}

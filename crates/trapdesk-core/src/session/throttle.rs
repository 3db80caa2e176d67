//! How many lines a flood of refusals may write: the first few of each minute, then a count.
//!
//! Refused links (a wrong secret, a bad or late `hello`) and refused MCP requests (a 401) come
//! from outside, as fast as a peer can send them; a line for each filled `trapdesk.log` at
//! megabytes a minute and pushed the person's and agents' own entries out of the recent log
//! and the transcript. One mechanism bounds both: within each minute the first `per_minute`
//! are written, the rest only counted, and the next line written (or [`Throttle::flush`] once
//! the minute is over) says how many were left out. The count is exact; only the lines are
//! bounded.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The window the allowance is counted in.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Refused links written one by one each minute (the rest are counted in the next line).
pub const LINK_REFUSALS_PER_MINUTE: u32 = 10;

/// One kind of refusal's allowance.
#[derive(Debug)]
pub struct Throttle {
    per_minute: u32,
    window: Mutex<Window>,
}

#[derive(Debug, Default)]
struct Window {
    /// When the current minute started (at its first refusal).
    start: Option<Instant>,
    /// Lines written in it.
    written: u32,
    /// Refusals not written since the last line that reported them.
    suppressed: u64,
}

/// What to do with one refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Note {
    /// Write its line.
    pub write: bool,
    /// Refusals left out before it, to be said in its line (0 when none, or when it is not
    /// written).
    pub left_out: u64,
}

impl Throttle {
    /// At most `per_minute` lines a minute (at least one).
    pub const fn new(per_minute: u32) -> Self {
        Throttle {
            per_minute: if per_minute == 0 { 1 } else { per_minute },
            window: Mutex::new(Window {
                start: None,
                written: 0,
                suppressed: 0,
            }),
        }
    }

    fn window(&self) -> std::sync::MutexGuard<'_, Window> {
        // Counters only: a panic elsewhere cannot leave them worth refusing service for.
        self.window.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One refusal now: whether to write it, and what was left out before it.
    pub fn note(&self) -> Note {
        let now = Instant::now();
        let mut w = self.window();
        if w.start
            .is_none_or(|s| now.saturating_duration_since(s) >= WINDOW)
        {
            w.start = Some(now);
            w.written = 0;
        }
        if w.written < self.per_minute {
            w.written += 1;
            Note {
                write: true,
                left_out: std::mem::take(&mut w.suppressed),
            }
        } else {
            w.suppressed += 1;
            Note {
                write: false,
                left_out: 0,
            }
        }
    }

    /// The refusals left out in a minute that is over, for a summary line; `None` when there
    /// are none or the minute still runs (its next written line will say them).
    pub fn flush(&self) -> Option<u64> {
        let now = Instant::now();
        let mut w = self.window();
        let over = w
            .start
            .is_none_or(|s| now.saturating_duration_since(s) >= WINDOW);
        (over && w.suppressed > 0).then(|| std::mem::take(&mut w.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_flood_writes_the_allowance_then_one_count_a_minute() {
        let t = Throttle::new(3);
        let written = (0..1000).filter(|_| t.note().write).count();
        assert_eq!(written, 3);
        // The minute still runs: nothing to flush yet.
        assert_eq!(t.flush(), None);
        tokio::time::advance(WINDOW).await;
        // The next refusal is written and says what was left out.
        assert_eq!(
            t.note(),
            Note {
                write: true,
                left_out: 997
            }
        );
        for _ in 0..10 {
            t.note();
        }
        tokio::time::advance(WINDOW).await;
        // A flood that stopped: the summary comes from a flush, once.
        assert_eq!(t.flush(), Some(8));
        assert_eq!(t.flush(), None);
        assert_eq!(
            t.note(),
            Note {
                write: true,
                left_out: 0
            }
        );
    }
}

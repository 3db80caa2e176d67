//! The watchdog's state, shared by the machine (which resumes the coroutine and hooks it) and by
//! what must stop once the hard abort has struck (a websocket's `send`). A leaf, so that those
//! need not import the kernel.

use std::time::{Duration, Instant};

/// When the running coroutine was last resumed, for "Too long without yielding".
#[derive(Debug)]
pub(crate) struct Watchdog {
    pub resumed_at: Instant,
    pub warned_at: Option<Instant>,
    pub timeout: Duration,
    /// How long after the error the program may go on before the hard abort.
    pub abort_timeout: Duration,
    /// Set once the program ignored the error for `abort_timeout`: from then on the hook
    /// raises at every instruction, so the error escapes any `pcall` loop, and the machine turns
    /// the computer off as soon as the resume returns.
    pub killed: bool,
}

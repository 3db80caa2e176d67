//! Terminal setup and restore, and the thread that reads input.
//!
//! Restoring is idempotent and happens in `Drop` and in a panic hook installed before the
//! terminal changes, so a panic anywhere leaves a usable shell with the message visible.

use std::io::{Stdout, stdout};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use tokio::sync::mpsc;

/// The terminal in raw mode on the alternate screen; back to normal on drop.
pub struct Guard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

/// Puts the terminal back. Safe to call more than once.
pub fn restore() {
    // Each step is best effort: the terminal may already be partly restored.
    let _ = disable_raw_mode();
    let _ = execute!(
        stdout(),
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen
    );
    let _ = execute!(stdout(), ratatui::crossterm::cursor::Show);
}

impl Guard {
    /// Raw mode, alternate screen, mouse capture, bracketed paste (a paste comes as one event,
    /// not as a key per character), and a panic hook that restores first.
    ///
    /// # Errors
    /// When the terminal refuses any of it (not a tty, for example).
    pub fn enter() -> std::io::Result<Guard> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        enable_raw_mode()?;
        let setup = execute!(
            stdout(),
            EnterAlternateScreen,
            EnableMouseCapture,
            EnableBracketedPaste
        )
        .and_then(|()| Terminal::new(CrosstermBackend::new(stdout())));
        match setup {
            Ok(terminal) => Ok(Guard { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Terminal input delivered to the async loop.
pub struct Input {
    pub rx: mpsc::UnboundedReceiver<std::io::Result<Event>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Input {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads terminal events on a thread of its own (crossterm's reads block); it stops within
/// 100 ms of the [`Input`] being dropped.
pub fn spawn_input() -> Input {
    let (tx, rx) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            match event::poll(Duration::from_millis(100)) {
                Ok(false) => {}
                Ok(true) => {
                    let ev = event::read();
                    let failed = ev.is_err();
                    if tx.send(ev).is_err() || failed {
                        break;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    break;
                }
            }
        }
    });
    Input { rx, stop }
}

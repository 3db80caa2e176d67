//! What stops a command from outside: Ctrl-C (SIGINT), SIGTERM, and the reader of its stdout
//! going away (`trapdesk exec … | head -1`). Each cancels the request on the computer, as
//! Ctrl-C always did, and exits with the code a shell gives a process that signal ends:
//! 128 + the signal's number (130 SIGINT, 141 SIGPIPE, 143 SIGTERM), so `$?` and
//! `set -o pipefail` read as they do for any other program.

use tokio_util::sync::CancellationToken;

use super::super::{Failure, exit};

/// What stopped a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// SIGINT: Ctrl-C in the terminal.
    CtrlC,
    /// SIGTERM: `kill`, a service manager, an editor stopping its task.
    Term,
    /// stdout is a pipe whose reader is gone.
    PipeClosed,
}

impl Interrupt {
    /// The exit code: 128 + the signal's number.
    pub fn code(self) -> u8 {
        match self {
            Interrupt::CtrlC => exit::INTERRUPTED,
            Interrupt::Term => exit::TERMINATED,
            Interrupt::PipeClosed => exit::PIPE_CLOSED,
        }
    }

    /// What happened, in the words the person used: `Ctrl-C`, `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Interrupt::CtrlC => "Ctrl-C",
            Interrupt::Term => "SIGTERM",
            Interrupt::PipeClosed => "the output pipe closed",
        }
    }

    /// The failure a command that was doing `what` ends with. A closed pipe says nothing, as
    /// a program SIGPIPE ends says nothing: the person stopped reading on purpose.
    pub fn failure(self, what: &str) -> Failure {
        match self {
            Interrupt::PipeClosed => Failure::new(self.code(), ""),
            _ => Failure::new(self.code(), format!("{}: cancelled {what}", self.name())),
        }
    }
}

/// Resolves on SIGINT or SIGTERM, saying which (never, when neither can be watched).
pub async fn signal() -> Interrupt {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            return tokio::select! {
                _ = int.recv() => Interrupt::CtrlC,
                _ = term.recv() => Interrupt::Term,
            };
        }
    }
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
    Interrupt::CtrlC
}

/// A token cancelled when stdout is a pipe and its reader goes away, whether or not anything
/// is written meanwhile: a program that prints one line and then waits (`while true do
/// sleep(1) end`) would otherwise hold `… | head -1` open until its timeout. Never cancelled
/// for a terminal or a file.
pub fn stdout_closed() -> CancellationToken {
    let token = CancellationToken::new();
    #[cfg(unix)]
    if stdout_is_pipe() {
        let t = token.clone();
        // A plain thread, not the runtime's blocking pool: it may wait until the process
        // exits, and the runtime's shutdown would wait for a blocking task.
        let _ = std::thread::Builder::new()
            .name("stdout-watch".into())
            .spawn(move || {
                if wait_reader_gone() {
                    t.cancel();
                }
            });
    }
    token
}

#[cfg(unix)]
fn stdout_is_pipe() -> bool {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::FileTypeExt as _;
    // A duplicate of descriptor 1, closed again at once: only its type is wanted.
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(fd)
        .metadata()
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_socket())
}

/// Blocks until the pipe on stdout has no reader: asked for no event, `poll` still reports
/// POLLERR (Linux, a pipe without readers) or POLLHUP (a socket the peer shut), and nothing
/// else. False when poll itself fails.
#[cfg(unix)]
fn wait_reader_gone() -> bool {
    loop {
        let mut fd = libc::pollfd {
            fd: libc::STDOUT_FILENO,
            events: 0,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the call's duration.
        let n = unsafe { libc::poll(&raw mut fd, 1, -1) };
        if n > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            return true;
        }
        if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
}

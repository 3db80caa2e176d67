//! What can go wrong with an emulated computer: [`EmuError`].

use std::path::PathBuf;

/// Everything that can go wrong with an emulated computer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmuError {
    /// The Lua state could not be built (a bug in the emulator, not in the program).
    #[error("lua setup failed: {0}")]
    Setup(String),
    /// A Lua program failed; the text is its error message as Lua produced it.
    #[error("{0}")]
    Lua(String),
    /// The computer is off, or turned off before it could answer.
    #[error("the computer is off")]
    Stopped,
    /// The host disk of the computer could not be written or read.
    #[error("disk error at {path}: {source}")]
    Io {
        /// The host path involved.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
}

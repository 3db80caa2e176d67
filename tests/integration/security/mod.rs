//! No way past one's seat: each attack tried against a running host, one module per part of the
//! host it goes through, each test named for the attack it stops (docs/security.md, "Attacks
//! tried, and what stops each"). One binary, so the attacks link the library once.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

/// Running the real `trapdesk` binary from the attacks that need a process.
mod cli {
    use std::process::{Command, Output};

    /// A command's output, waited for off the async runtime.
    pub async fn output(mut cmd: Command) -> Output {
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap()
    }

    /// What a process printed, as text.
    pub fn text(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }
}

mod credentials;
mod emulator;
mod listeners;
mod names;
mod private;
mod reach;

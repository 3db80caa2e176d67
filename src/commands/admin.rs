//! The trust subcommands: `trapdesk agent …`, `trapdesk secret …` and `trapdesk transcript`.
//! They work on the data directory only (no running host needed); a running host notices
//! their changes at its next request or link, since it reads those files each time.

use std::path::PathBuf;

mod agents;
mod secrets;
mod transcript;

pub use agents::{AgentCmd, agent};
pub use secrets::{SecretCmd, Switch, secret, show_running};
pub use transcript::{TranscriptArgs, keep, readable, transcript};

/// The data directory a subcommand uses.
///
/// # Errors
/// When there is no home and no `--data-dir`.
pub fn data_dir(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    given
        .or_else(trapdesk_core::config::default_data_dir)
        .ok_or_else(|| anyhow::anyhow!("no home directory to keep data in; pass --data-dir"))
}

#[cfg(test)]
mod tests;

//! The computers' secrets: the shared one (rotated with `trapdesk secret rotate`) and optional
//! per-computer ones (`trapdesk secret add COMPUTER`), so that one leaked computer does not
//! expose the rest.
//!
//! Per-computer secrets are stored only as SHA-256 hashes in `<data dir>/computer-secrets.json`
//! (0600). A computer that has one must present it, and the shared secret no longer links it;
//! a computer without one must present the shared secret, so presenting another computer's
//! secret never links anything. The gateway reads both files at each `hello`, so a rotation or
//! an added secret applies to the next link with no restart (computers already linked stay
//! linked until they reconnect).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::config::{SecretSource, Settings, generate_secret, write_private};

/// The per-computer file in the data directory.
pub const FILE: &str = "computer-secrets.json";

/// One computer's own secret, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputerSecret {
    /// A computer id (`"7"`) or label (`"miner"`).
    pub computer: String,
    pub secret_sha256: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Store {
    computers: Vec<ComputerSecret>,
}

/// Why a secret could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("cannot use {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid secrets file: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("computer {0:?} is not an id or label (use the id, like 7, or the label, like miner)")]
    BadComputer(String),
}

fn load(dir: &Path) -> Result<Store, SecretError> {
    let path = dir.join(FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| SecretError::Parse {
            path,
            message: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Store::default()),
        Err(source) => Err(SecretError::Io { path, source }),
    }
}

/// Gives `computer` (an id or label) a secret of its own, replacing any it had, and returns
/// it (the only time it is shown).
///
/// # Errors
/// A bad computer name, or the file cannot be read or written.
pub fn add(dir: &Path, computer: &str) -> Result<String, SecretError> {
    let computer = computer.trim();
    if computer.is_empty() || computer.contains(':') {
        return Err(SecretError::BadComputer(computer.to_owned()));
    }
    let mut store = load(dir)?;
    let secret = generate_secret();
    store.computers.retain(|c| c.computer != computer);
    store.computers.push(ComputerSecret {
        computer: computer.to_owned(),
        secret_sha256: crate::agents::hash(&secret),
    });
    let path = dir.join(FILE);
    let text = serde_json::to_string_pretty(&store).unwrap_or_default();
    write_private(&path, text.as_bytes()).map_err(|source| SecretError::Io { path, source })?;
    Ok(secret)
}

/// Writes a new shared secret to `<data dir>/secret` and returns it.
///
/// # Errors
/// When the file cannot be written.
pub fn rotate(dir: &Path) -> Result<String, SecretError> {
    let path = dir.join("secret");
    let secret = generate_secret();
    write_private(&path, secret.as_bytes()).map_err(|source| SecretError::Io { path, source })?;
    Ok(secret)
}

/// Whether a computer (`id`, `label`) presenting `given` may link.
pub fn accepts(settings: &Settings, id: u64, label: Option<&str>, given: &str) -> bool {
    let store = match load(&settings.data_dir) {
        Ok(s) => s,
        Err(e) => {
            // Refusing everyone is safer than letting a computer past its own secret.
            tracing::warn!("refusing computers: {e}");
            return false;
        }
    };
    let id = id.to_string();
    let own = store
        .computers
        .iter()
        .rev()
        .find(|c| c.computer == id || Some(c.computer.as_str()) == label);
    if let Some(own) = own {
        let h = crate::agents::hash(given);
        return bool::from(h.as_bytes().ct_eq(own.secret_sha256.as_bytes()));
    }
    let shared = current_shared(settings);
    bool::from(given.as_bytes().ct_eq(shared.as_bytes()))
}

/// The shared secret now: a stored one is read again, so `secret rotate` takes effect at once.
fn current_shared(settings: &Settings) -> String {
    match &settings.secret_source {
        SecretSource::Generated(p) | SecretSource::Stored(p) => std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| settings.secret.clone()),
        _ => settings.secret.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_secrets_replace_the_shared_one_for_their_computer()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let shared = rotate(dir.path())?;
        let settings = Settings {
            data_dir: dir.path().to_owned(),
            secret: "stale".into(),
            secret_source: SecretSource::Stored(dir.path().join("secret")),
            ..Settings::default()
        };
        assert!(accepts(&settings, 7, Some("miner"), &shared));
        let miner = add(dir.path(), "miner")?;
        let farm = add(dir.path(), "12")?;
        assert!(accepts(&settings, 7, Some("miner"), &miner));
        assert!(!accepts(&settings, 7, Some("miner"), &shared));
        assert!(
            !accepts(&settings, 7, Some("miner"), &farm),
            "another's secret"
        );
        assert!(accepts(&settings, 12, None, &farm));
        assert!(!accepts(&settings, 3, None, &farm), "another's secret");
        assert!(accepts(&settings, 3, None, &shared));
        let stored = std::fs::read_to_string(dir.path().join(FILE))?;
        assert!(!stored.contains(&miner) && !stored.contains(&farm));
        let new = rotate(dir.path())?;
        assert!(!accepts(&settings, 3, None, &shared), "rotated out");
        assert!(accepts(&settings, 3, None, &new));
        Ok(())
    }
}

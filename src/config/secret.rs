//! The computers' shared secret when no flag, variable or file gives one: generated once and
//! kept in the data directory, readable by its owner only.

use std::path::{Path, PathBuf};

use super::ConfigError;

/// Where the secret came from, so the console can say how to change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    Flag,
    Env,
    ConfigFile,
    /// Generated and stored at this path (mode 0600).
    Generated(PathBuf),
    /// Read back from this path, generated on an earlier start.
    Stored(PathBuf),
}

/// Reads `<data_dir>/secret`, or generates a fresh one there with mode 0600.
pub(super) fn stored_secret(data_dir: &Path) -> Result<(String, SecretSource), ConfigError> {
    let path = data_dir.join("secret");
    let err = |source| ConfigError::DataDir {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => {
            return Ok((s.trim().to_owned(), SecretSource::Stored(path)));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(e)),
    }
    let secret = generate_secret();
    write_private(&path, secret.as_bytes()).map_err(err)?;
    Ok((secret, SecretSource::Generated(path)))
}

/// 20 characters from an alphabet that survives typing into a Minecraft chat-like prompt.
pub fn generate_secret() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut rng = rand::rng();
    (0..20)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// Writes a file readable by its owner only.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    // `mode` applies only to a new file; an existing one is made private before it is written.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    f.write_all(bytes)?;
    f.sync_all()
}

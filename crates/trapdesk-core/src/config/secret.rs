//! The computers' shared secret when no flag, variable or file gives one: generated once and
//! kept in the data directory, readable by its owner only.

use std::path::{Path, PathBuf};

use super::ConfigError;

/// Where the secret came from, so the console can say how to change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    Flag,
    /// `--secret-file`: read from this file.
    File(PathBuf),
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
    // Checked before it is read: one that another user owns or can write may be planted.
    match super::private::read_checked(&path) {
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

/// Shortest secret a person may give (`--secret`, `SANDBOX_PASSWORD`, config.toml).
pub const MIN_SECRET_CHARS: usize = 16;
/// Fewest different characters in it.
pub const MIN_SECRET_DISTINCT: usize = 8;

/// Whether a secret given by hand is strong enough to be the only thing between the gateway
/// and anyone who can reach it: every hello's secret is checked at once, with no slowing of
/// guesses, so a short or repetitive one would fall to guessing.
///
/// # Errors
/// The reason, with the rule, as one phrase.
pub fn strong_enough(secret: &str) -> Result<(), String> {
    let chars = secret.chars().count();
    let distinct = secret
        .chars()
        .collect::<std::collections::HashSet<_>>()
        .len();
    if chars < MIN_SECRET_CHARS || distinct < MIN_SECRET_DISTINCT {
        let plural = if chars == 1 { "" } else { "s" };
        return Err(format!(
            "it has {chars} character{plural}, {distinct} of them different; a secret needs at least {MIN_SECRET_CHARS} characters and at least {MIN_SECRET_DISTINCT} different ones"
        ));
    }
    Ok(())
}

/// 20 characters from an alphabet that survives typing into a Minecraft chat-like prompt
/// (31 letters and digits: about 99 bits), never one [`strong_enough`] would refuse.
pub fn generate_secret() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut rng = rand::rng();
    loop {
        let s: String = (0..20)
            .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
            .collect();
        // Fewer than 8 different characters in 20 draws from 31 happens about once in
        // three million; drawing again costs nothing.
        if strong_enough(&s).is_ok() {
            return s;
        }
    }
}

/// Writes a file readable by its owner only ([`super::private::create_file`]).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = super::private::create_file(path, false)?;
    f.write_all(bytes)?;
    f.sync_all()
}

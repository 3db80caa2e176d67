//! The Lua client (`lua/` in the repository), embedded at build time by `build.rs`.
//!
//! `lua/` is the readable source ([`SOURCES`]). What a computer gets is its served form
//! ([`FILES`]): every file minified (`build/minify.rs`: no comments, short local names, one
//! output line per source line that holds code), and every file the computer stores packed
//! with one shared dictionary (`build/pack.rs`, the extra `unpack.lua`), so the installed
//! client stays within 64 KB of the computer's disk. The gateway serves these files under
//! `/lua/<path>` and the emulator installs them into its computers, so both always carry
//! exactly the bytes a real computer downloads. [`crate::lua_map`] reads the position map
//! ([`LINES`]) to name `lua/` lines in what the host shows.

/// The client as served, as `(path relative to the client's root, bytes)`, sorted by path:
/// every file under `lua/`, minified and (all but the installer) packed, and `unpack.lua`.
pub static FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/lua_files.rs"));

/// Every file under `lua/` as it is in the repository, sorted by path.
pub static SOURCES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/lua_sources.rs"));

/// The position map: for each `.lua` file under `lua/`, the source line (1-based) of each line
/// of its served text (the line at index 0 is line 1).
pub static LINES: &[(&str, &[u32])] = include!(concat!(env!("OUT_DIR"), "/lua_lines.rs"));

/// The bytes of one client file, by its path relative to `lua/` (for example `apis/json.lua`).
pub fn get(path: &str) -> Option<&'static [u8]> {
    FILES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, bytes)| *bytes)
}

/// The client's version: the first 12 hex digits of a SHA-256 over every file's path, length
/// and bytes. The gateway announces it in `welcome` and the installer writes it to
/// `/trapdesk/version`, so a computer whose files differ from the ones served here knows it,
/// and the version can never claim files it does not have.
pub fn version() -> &'static str {
    use sha2::{Digest, Sha256};
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| {
        let mut h = Sha256::new();
        for (path, bytes) in FILES {
            h.update(path.as_bytes());
            h.update([0]);
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        }
        h.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_sorted_and_relative() {
        let names: Vec<&str> = FILES.iter().map(|(p, _)| *p).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(
            names
                .iter()
                .all(|n| !n.starts_with('/') && !n.contains('\\'))
        );
    }

    #[test]
    fn the_version_is_twelve_hex_digits_and_stable() {
        let v = version();
        assert_eq!(v.len(), 12, "{v}");
        assert!(v.chars().all(|c| c.is_ascii_hexdigit()), "{v}");
        assert_eq!(v, version());
    }
}

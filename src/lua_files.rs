//! The Lua client (`lua/` in the repository), embedded at build time by `build.rs`.
//!
//! The gateway serves these files under `/lua/<path>` and the emulator installs them into its
//! computers, so both always carry exactly the bytes that are in the repository.

/// Every file under `lua/`, as `(path relative to lua/, bytes)`, sorted by path.
pub static FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/lua_files.rs"));

/// The bytes of one client file, by its path relative to `lua/` (for example `apis/json.lua`).
pub fn get(path: &str) -> Option<&'static [u8]> {
    FILES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, bytes)| *bytes)
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
}

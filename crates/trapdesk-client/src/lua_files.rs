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
    #![allow(clippy::panic)]
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

    /// What the installer stores, counted as CC counts a disk (`src/emu/quota.rs`: each file
    /// and folder at least 500 bytes): every served file but the installer under `/trapdesk/`
    /// with its folders, `/trapdesk/version`, and the wrapper `/startup.lua` (a copy of
    /// `startup.lua`). `tests/integration/craftos/served_client.rs` measures the whole disk on a
    /// computer.
    #[test]
    fn the_stored_client_costs_at_most_64_kb() {
        const MIN: usize = 500;
        let mut folders = std::collections::BTreeSet::from(["".to_owned()]);
        let mut cost = 0;
        for (path, bytes) in FILES.iter().filter(|(p, _)| *p != "install.lua") {
            cost += bytes.len().max(MIN);
            let mut dir = *path;
            while let Some((parent, _)) = dir.rsplit_once('/') {
                folders.insert(parent.to_owned());
                dir = parent;
            }
        }
        cost += folders.len() * MIN + MIN; // the folders and `version`
        cost += get("startup.lua").map_or(0, |w| w.len().max(MIN));
        assert!(cost <= 64_000, "the stored client costs {cost} bytes");
    }

    /// Every served file compiles, and so does the text a packed one unpacks to: each stub is
    /// run with `dofile` giving the real unpacker and a `load` that only compiles.
    #[test]
    fn every_served_file_and_what_it_unpacks_to_compiles() {
        let lua = mlua::Lua::new();
        let unpack: mlua::Function = lua
            .load(get("unpack.lua").expect("the unpacker is served"))
            .call(())
            .expect("the unpacker runs");
        let checks = lua
            .load(
                r#"local unpack = ...
                   dofile = function() return unpack end
                   local compile = load
                   load = function(s, name, mode, env)
                       local f, e = compile(s, name, mode, env)
                       if not f then error("does not compile: " .. e, 0) end
                       return function() return #s end
                   end"#,
            )
            .call::<()>(unpack);
        checks.expect("the checks are set up");
        for (path, bytes) in FILES {
            let f = lua
                .load(*bytes)
                .set_name(format!("@/trapdesk/{path}"))
                .into_function()
                .unwrap_or_else(|e| panic!("served {path} does not compile: {e}"));
            if *path == "install.lua" || *path == "unpack.lua" {
                continue;
            }
            let unpacked: usize = f
                .call(())
                .unwrap_or_else(|e| panic!("served {path} does not unpack: {e}"));
            assert!(unpacked > 0, "{path}");
        }
    }

    /// The minifier's cases (`tests/lua/minify_cases.lua`: shadowing, scopes, methods,
    /// globals, tokens that need a space, long strings, goto) return the same from the source
    /// and from its minified form, and an error's line maps back to the source's.
    #[test]
    fn the_minifier_keeps_behaviour() {
        let source = include_str!("../../../tests/lua/minify_cases.lua");
        let minified = include_str!(concat!(env!("OUT_DIR"), "/minify_cases.lua"));
        let map: Vec<usize> = include_str!(concat!(env!("OUT_DIR"), "/minify_cases.lines"))
            .split(',')
            .filter_map(|l| l.parse().ok())
            .collect();
        assert!(minified.len() * 2 < source.len(), "{minified}");
        let run = |code: &str| -> Vec<String> {
            let lua = mlua::Lua::new();
            let out: String = lua
                .load(code)
                .set_name("=cases")
                .eval()
                .unwrap_or_else(|e| panic!("{e}\n{code}"));
            out.split(',').map(str::to_owned).collect()
        };
        let (mut want, mut got) = (run(source), run(minified));
        assert_eq!(want.len(), got.len(), "{want:?}\n{got:?}");
        // The last value is an error's line: the source's, and the minified one's mapped back.
        let src_line = want.pop();
        let min_line: Option<usize> = got.pop().and_then(|l| l.parse().ok());
        assert_eq!(want, got, "\n{minified}");
        let mapped = min_line.and_then(|l| map.get(l - 1)).map(usize::to_string);
        assert_eq!(mapped, src_line, "\n{minified}");
    }

    #[test]
    fn the_version_is_twelve_hex_digits_and_stable() {
        let v = version();
        assert_eq!(v.len(), 12, "{v}");
        assert!(v.chars().all(|c| c.is_ascii_hexdigit()), "{v}");
        assert_eq!(v, version());
    }
}

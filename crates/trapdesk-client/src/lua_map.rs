//! Client error positions back to `lua/`: the served client is minified (`build/minify.rs`),
//! so a Lua error in it names a line of the served text (`/trapdesk/apis/run.lua:12:`); the
//! position map built beside it ([`crate::lua_files::LINES`]) names the source line, and
//! [`translate`] rewrites such positions to `lua/apis/run.lua:345:` in what the host shows.
//!
//! The session applies it once, where a computer's words come in (`session/link.rs`: the
//! error message, `error` and `traceback` of a response, and live output), and only for a
//! computer that runs the client this host serves (its `hello` names [`crate::lua_files::version`]):
//! an older client's positions are lines of older files, which this map does not describe.

use std::borrow::Cow;

use crate::lua_files;

/// The chunk names the served client's files run under, as they appear in a Lua position, and
/// the client file each names. CC's `loadfile` names a chunk `@/` followed by its path
/// (`bios.lua`, `loadfile`: `"@/" .. fs.combine(filename)`), so the client's files are
/// `/trapdesk/<path>`, and the startup wrapper, a copy of `startup.lua`, is `/startup.lua`. The
/// installer runs as a chunk named `install.lua`: `wget run` loads it under the name of the
/// URL's last part (`rom/programs/http/wget.lua`, shown as `[string "install.lua"]`), and an
/// upgrade as `@install.lua` or `=install.lua`. A player's own file of the same name elsewhere
/// (`/run.lua`, `/disk/startup.lua`) is never mistaken for the client's.
fn client_file(chunk: &str) -> Option<&'static str> {
    let rel = if let Some(rest) = chunk.strip_prefix("/trapdesk/") {
        rest
    } else if chunk == "/startup.lua" {
        "startup.lua"
    } else if chunk == "install.lua" {
        "install.lua"
    } else {
        return None;
    };
    lua_files::LINES
        .iter()
        .find(|(p, _)| *p == rel)
        .map(|(p, _)| *p)
}

/// The source line of line `line` (1-based) of the served `rel`.
pub fn source_line(rel: &str, line: usize) -> Option<u32> {
    let (_, lines) = lua_files::LINES.iter().find(|(p, _)| *p == rel)?;
    lines.get(line.checked_sub(1)?).copied()
}

/// Whether `c` can be part of a chunk path in a position.
fn path_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'/' | b'.' | b'_' | b'-')
}

/// `text` with every position in the served client's files (`/trapdesk/apis/run.lua:12`,
/// `/startup.lua:3`, `install.lua:40`, `[string "install.lua"]:40`) rewritten to the
/// `lua/` file and line it came from (`lua/apis/run.lua:345`). Everything else, positions
/// in other chunks included, is left as it is; so is a line the map does not hold.
pub fn translate(text: &str) -> Cow<'_, str> {
    const MARK: &str = ".lua";
    if !text.contains(MARK) {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::new();
    // Everything before `done` is already in `out`.
    let mut done = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find(MARK) {
        let end_name = from + found + MARK.len();
        from = end_name;
        let mut start = end_name - MARK.len();
        while start > done && path_char(bytes[start - 1]) {
            start -= 1;
        }
        let chunk = &text[start..end_name];
        // `[string "install.lua"]:40`: the whole bracket is the position's name.
        let (replace_from, after_name) =
            if text[end_name..].starts_with("\"]") && text[..start].ends_with("[string \"") {
                (start - "[string \"".len(), end_name + 2)
            } else {
                (start, end_name)
            };
        let Some(digits_at) = text[after_name..].strip_prefix(':').map(|_| after_name + 1) else {
            continue;
        };
        let digits = text[digits_at..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if digits == 0 || replace_from < done {
            continue;
        }
        let line_end = digits_at + digits;
        let Some(rel) = client_file(chunk) else {
            continue;
        };
        let Some(source) = text[digits_at..line_end]
            .parse()
            .ok()
            .and_then(|line| source_line(rel, line))
        else {
            continue;
        };
        out.push_str(&text[done..replace_from]);
        out.push_str(&format!("lua/{rel}:{source}"));
        done = line_end;
        from = line_end;
    }
    if done == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[done..]);
    Cow::Owned(out)
}

/// Whether the map describes the client of a computer whose hello named `client_version`:
/// only the client this host serves is.
pub fn describes(client_version: Option<&str>) -> bool {
    client_version == Some(lua_files::version())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The served line of `rel` that came from the first source line holding `needle`, and
    /// that source line: a real entry of the embedded map.
    fn entry(rel: &str, needle: &str) -> (usize, u32) {
        let (_, src) = lua_files::SOURCES
            .iter()
            .find(|(p, _)| *p == rel)
            .expect("a client file");
        let src = String::from_utf8_lossy(src);
        let wanted = src
            .lines()
            .position(|l| l.contains(needle))
            .expect("the needle is in the file") as u32
            + 1;
        let (_, lines) = lua_files::LINES
            .iter()
            .find(|(p, _)| *p == rel)
            .expect("a mapped file");
        let served = lines
            .iter()
            .position(|&l| l == wanted)
            .expect("the line holds code")
            + 1;
        (served, wanted)
    }

    #[test]
    fn a_client_position_names_the_source_line() {
        let (served, source) = entry("apis/json.lua", "local function encodeString");
        assert!(served < source as usize, "comments make source lines later");
        let msg = format!("/trapdesk/apis/json.lua:{served}: attempt to index a nil value");
        assert_eq!(
            translate(&msg),
            format!("lua/apis/json.lua:{source}: attempt to index a nil value")
        );
    }

    #[test]
    fn a_traceback_is_translated_line_by_line() {
        let (a, sa) = entry("apis/run.lua", "local function");
        let (b, sb) = entry("servers/mcp-computer-server.lua", "local");
        let tb = format!(
            "stack traceback:\n\t[C]: in function 'error'\n\t/trapdesk/apis/run.lua:{a}: in function 'x'\n\t/trapdesk/servers/mcp-computer-server.lua:{b}: in upvalue 'y'\n\t[string \"exec\"]:1: in main chunk"
        );
        let want = format!(
            "stack traceback:\n\t[C]: in function 'error'\n\tlua/apis/run.lua:{sa}: in function 'x'\n\tlua/servers/mcp-computer-server.lua:{sb}: in upvalue 'y'\n\t[string \"exec\"]:1: in main chunk"
        );
        assert_eq!(translate(&tb), want);
    }

    #[test]
    fn the_wrapper_and_the_installer_are_the_clients_too() {
        let (s, ss) = entry("startup.lua", "local");
        assert_eq!(
            translate(&format!("/startup.lua:{s}: x")),
            format!("lua/startup.lua:{ss}: x")
        );
        let (i, si) = entry("install.lua", "local");
        assert_eq!(
            translate(&format!("install.lua:{i}: x")),
            format!("lua/install.lua:{si}: x")
        );
        assert_eq!(
            translate(&format!("[string \"install.lua\"]:{i}: x")),
            format!("lua/install.lua:{si}: x")
        );
    }

    #[test]
    fn other_positions_are_left_alone() {
        for text in [
            "no position here",
            "/run.lua:3: a player's file named like a client file",
            "/disk/startup.lua:3: another startup",
            "[string \"exec\"]:1: attempt to call nil",
            "/trapdesk/apis/json.lua: no line",
            "/trapdesk/apis/json.lua:999999: past the end of the map",
            "/trapdesk/apis/nosuch.lua:3: not a client file",
            "rom/apis/textutils.lua:3: CC's own",
        ] {
            assert!(matches!(translate(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn only_the_served_client_is_described() {
        assert!(describes(Some(lua_files::version())));
        assert!(!describes(Some("0123456789ab")));
        assert!(!describes(None));
    }
}

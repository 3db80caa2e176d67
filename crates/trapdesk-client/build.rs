//! Embeds every file under `lua/` into the binary twice: as it is in the repository (the
//! readable source), and as served (minified by `build/minify.rs`, and every file a computer
//! stores packed by `build/pack.rs`, with the unpacker `unpack.lua`), the form the gateway
//! serves and the emulator runs, so that both carry byte for byte the code a real computer
//! downloads. Beside each minified file it embeds its position map: the source line of every
//! served line (docs/lua-client.md, "The served client").
//!
//! `lua/` stays at the repository root (the installer, the docs and the Lua specs name it
//! there); this crate reads it from two levels up, and only an edit there (or to the build
//! step) reruns this script and rebuilds what depends on this crate.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[path = "build/minify.rs"]
mod minify;
#[path = "build/pack.rs"]
mod pack;

/// Served to run once, never stored: `wget run` runs the installer straight from the host, so
/// it cannot rely on the unpacker it is about to install, and is only minified.
const NOT_STORED: &str = "install.lua";

/// Leading comment paragraphs a file keeps when minified: the startup wrapper's mark (the
/// installer and uninstaller find the wrapper by it) and its notice to the player who opens
/// `/startup.lua` (where their own startup program went).
fn keep_header(rel: &str) -> usize {
    if rel == "startup.lua" { 2 } else { 0 }
}

fn collect(dir: &Path, root: &Path, out: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            collect(&path, root, out)?;
        } else if let Ok(rel) = path.strip_prefix(root) {
            let rel = rel.to_string_lossy().replace('\\', "/");
            out.push((rel, path.canonicalize()?));
        }
    }
    Ok(())
}

/// What the build makes of the files under `lua/`.
struct Read {
    /// `lua_sources.rs`: every file as it is.
    sources: String,
    /// `lua_lines.rs`: each Lua file's position map (minified line to source line).
    maps: String,
    /// (path relative to lua/, minified text, kept header lines)
    minified: Vec<(String, Vec<u8>, usize)>,
    /// (path relative to lua/, bytes served as they are)
    served: Vec<(String, Vec<u8>)>,
}

fn main() -> std::io::Result<()> {
    let root = Path::new("../../lua");
    println!("cargo:rerun-if-changed=../../lua");
    println!("cargo:rerun-if-changed=build/minify.rs");
    println!("cargo:rerun-if-changed=build/pack.rs");
    let mut files = Vec::new();
    if root.is_dir() {
        collect(root, root, &mut files)?;
    }
    files.sort();
    let out = PathBuf::from(std::env::var("OUT_DIR").map_err(std::io::Error::other)?);
    let Read {
        mut sources,
        mut maps,
        minified,
        mut served,
    } = read(&files)?;
    pack_stored(minified, &mut served);
    served.sort();
    let mut served_list = write_served(&out.join("served"), &served)?;
    for s in [&mut sources, &mut served_list, &mut maps] {
        s.push(']');
    }
    minify_cases(&out)?;
    std::fs::write(out.join("lua_sources.rs"), sources)?;
    std::fs::write(out.join("lua_files.rs"), served_list)?;
    std::fs::write(out.join("lua_lines.rs"), maps)
}

/// Reads every file: Lua files are minified, the others served as they are.
fn read(files: &[(String, PathBuf)]) -> std::io::Result<Read> {
    let mut r = Read {
        sources: String::from("&[\n"),
        maps: String::from("&[\n"),
        minified: Vec::new(),
        served: Vec::new(),
    };
    for (rel, abs) in files {
        // Debug formatting quotes and escapes both strings for us.
        let _ = writeln!(
            r.sources,
            "    ({rel:?}, include_bytes!({:?})),",
            abs.to_string_lossy()
        );
        if rel == pack::UNPACK_FILE {
            return Err(std::io::Error::other(format!(
                "lua/{rel}: this name is the build's unpacker (build/pack.rs)"
            )));
        }
        if rel.ends_with(".lua") {
            let text = std::fs::read_to_string(abs)?;
            let min = minify::minify(&text, keep_header(rel))
                .map_err(|e| std::io::Error::other(format!("lua/{rel}: {e}")))?;
            let lines: Vec<String> = min.lines.iter().map(u32::to_string).collect();
            let _ = writeln!(r.maps, "    ({rel:?}, &[{}]),", lines.join(","));
            r.minified
                .push((rel.clone(), min.text.into_bytes(), min.header_lines));
        } else {
            r.served.push((rel.clone(), std::fs::read(abs)?));
        }
    }
    Ok(r)
}

/// Every stored file is packed with one shared dictionary (each served as a stub that unpacks
/// it); the installer is only minified.
fn pack_stored(minified: Vec<(String, Vec<u8>, usize)>, served: &mut Vec<(String, Vec<u8>)>) {
    let (stored, plain): (Vec<_>, Vec<_>) = minified
        .into_iter()
        .partition(|(rel, _, _)| rel != NOT_STORED);
    for (rel, text, _) in plain {
        served.push((rel, text));
    }
    // Header lines stay readable above the stub; in the packed text they are blank, so its
    // lines still count as the minified text's (the position map's).
    let bodies: Vec<Vec<u8>> = stored
        .iter()
        .map(|(_, text, header)| {
            let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
            for l in lines.iter_mut().take(*header) {
                *l = b"";
            }
            lines.join(&b'\n')
        })
        .collect();
    let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
    let (dict, packed) = pack::encode(&refs);
    for ((rel, text, header), packed) in stored.into_iter().zip(packed) {
        let head: Vec<u8> = text
            .split_inclusive(|&b| b == b'\n')
            .take(header)
            .flatten()
            .copied()
            .collect();
        served.push((rel.clone(), pack::stub(&rel, &head, &packed, &dict.hash())));
    }
    served.push((pack::UNPACK_FILE.to_owned(), dict.unpacker()));
}

/// Writes the served files under `dir`; the `lua_files.rs` list naming them.
fn write_served(dir: &Path, served: &[(String, Vec<u8>)]) -> std::io::Result<String> {
    let mut served_list = String::from("&[\n");
    for (rel, bytes) in served {
        let dest = dir.join(rel);
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&dest, bytes)?;
        let _ = writeln!(
            served_list,
            "    ({rel:?}, include_bytes!({:?})),",
            dest.to_string_lossy()
        );
    }
    Ok(served_list)
}

/// The minifier's own cases, minified beside the generated sources.
fn minify_cases(out: &Path) -> std::io::Result<()> {
    // The minifier's own cases (tests/lua/minify_cases.lua, never served): minified here so
    // that a test can run both forms and compare them (`lua_files` tests).
    let cases = Path::new("../../tests/lua/minify_cases.lua");
    println!("cargo:rerun-if-changed={}", cases.display());
    let (text, lines) = match std::fs::read_to_string(cases) {
        Ok(src) => {
            let min = minify::minify(&src, 0)
                .map_err(|e| std::io::Error::other(format!("{}: {e}", cases.display())))?;
            let lines: Vec<String> = min.lines.iter().map(u32::to_string).collect();
            (min.text, lines.join(","))
        }
        Err(_) => (String::new(), String::new()),
    };
    std::fs::write(out.join("minify_cases.lua"), text)?;
    std::fs::write(out.join("minify_cases.lines"), lines)?;
    Ok(())
}

//! Embeds every file under `lua/` into the binary, so that the gateway serves and the emulator
//! runs byte for byte the same client code that a real computer downloads.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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

fn main() -> std::io::Result<()> {
    let root = Path::new("lua");
    println!("cargo:rerun-if-changed=lua");
    let mut files = Vec::new();
    if root.is_dir() {
        collect(root, root, &mut files)?;
    }
    files.sort();
    let mut src = String::from("&[\n");
    for (rel, abs) in &files {
        // Debug formatting quotes and escapes both strings for us.
        let _ = writeln!(
            src,
            "    ({rel:?}, include_bytes!({:?})),",
            abs.to_string_lossy()
        );
    }
    src.push(']');
    let out = PathBuf::from(std::env::var("OUT_DIR").map_err(std::io::Error::other)?);
    std::fs::write(out.join("lua_files.rs"), src)
}

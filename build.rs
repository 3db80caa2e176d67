//! Embeds every file under `lua/` into the binary, so that the gateway serves and the emulator
//! runs byte for byte the same client code that a real computer downloads.
//!
//! Also sets `cfg(craftos_pc)` when `CRAFTOS_PC` names a CraftOS-PC launcher: the tests that
//! need a real CC runtime are ignored without it (reported as ignored, with the reason), and
//! run (failing loudly if the launcher cannot start) with it. A cfg from a build script
//! reaches every target of the package, the integration tests included.

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
    println!("cargo:rustc-check-cfg=cfg(craftos_pc)");
    println!("cargo:rerun-if-env-changed=CRAFTOS_PC");
    if std::env::var_os("CRAFTOS_PC").is_some_and(|v| !v.is_empty()) {
        println!("cargo:rustc-cfg=craftos_pc");
    }
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

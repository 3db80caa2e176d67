//! The outside programs some integration tests run, found on `PATH` at build time, as cfgs for
//! every target of the package (the tests included):
//!
//! - `cfg(has_nvim)`: `nvim` (Neovim), for the Neovim recipes of docs/editors.md
//!   (`tests/integration/cli/editors.rs`);
//! - `cfg(has_npm)`: both `npm` and `node`, which install and run the real agent clients
//!   (`tests/integration/mcp/agent_clients.rs`).
//!
//! A test that needs one carries `#[cfg_attr(not(has_nvim), ignore = "needs nvim (Neovim) on
//! PATH")]` (or the `has_npm` one), so a machine without the program reports it ignored, with
//! the reason, instead of passing a test that never ran; `cfg(craftos_pc)` works the same way
//! for CraftOS-PC (build.rs). The build script runs again when `PATH` changes, and when a program
//! it found is removed.

use std::path::PathBuf;

/// The first executable file named `name` in a directory of `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &std::path::Path) -> bool {
    // Windows finds programs by extension (PATHEXT); `.exe` and `.cmd` cover nvim, node and npm.
    ["", "exe", "cmd"]
        .iter()
        .any(|ext| p.with_extension(ext).is_file())
}

/// Prints the cfg lines for the tools (see the top of this file).
pub fn emit() {
    println!("cargo:rerun-if-env-changed=PATH");
    let tools: [(&str, &[&str]); 2] = [("has_nvim", &["nvim"]), ("has_npm", &["npm", "node"])];
    for (cfg, programs) in tools {
        println!("cargo:rustc-check-cfg=cfg({cfg})");
        let found: Vec<PathBuf> = programs.iter().filter_map(|p| on_path(p)).collect();
        for f in &found {
            // Removing the program makes this file "changed", so the cfg goes with it.
            println!("cargo:rerun-if-changed={}", f.display());
        }
        if found.len() == programs.len() {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}

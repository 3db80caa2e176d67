//! Tells the tests what this machine can run, as cfgs (a cfg from a build script reaches every
//! target of the package, the integration tests included):
//!
//! - `cfg(craftos_pc)` when `CRAFTOS_PC` names a CraftOS-PC launcher: the tests that need a real
//!   CC runtime are ignored without it (reported as ignored, with the reason), and run (failing
//!   loudly if the launcher cannot start) with it.
//! - `cfg(has_nvim)` and `cfg(has_npm)` from `build/tools.rs`, the same way for the tests that
//!   drive Neovim and the npm agent clients.
//!
//! The Lua client is embedded by `crates/trapdesk-client/build.rs`.

#[path = "build/tools.rs"]
mod tools;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(craftos_pc)");
    println!("cargo:rerun-if-env-changed=CRAFTOS_PC");
    if std::env::var_os("CRAFTOS_PC").is_some_and(|v| !v.is_empty()) {
        println!("cargo:rustc-cfg=craftos_pc");
    }
    tools::emit();
}

//! The Lua client that every linked computer runs (`lua/` at the repository root), embedded at
//! build time by this crate's `build.rs`.
//!
//! - [`lua_files`]: every client file as it is in the repository and as served (minified and
//!   packed), the form the gateway serves and the emulator installs.
//! - [`lua_map`]: the served client's error positions back to `lua/` lines.
//!
//! It is a crate of its own so that an edit under `lua/` rebuilds this crate and what depends
//! on it, not the vocabulary below it.

pub mod lua_files;
pub mod lua_map;

//! The integration tests, one binary: the library and its dependencies (mlua, SQLite, rmcp,
//! ratatui, syntect) are linked once for all of them, where a binary per file linked them some
//! eighty times over. One folder of `tests/integration/` per front of trapdesk, one module per
//! former test file, and one support module (`tests/integration/support/`) they all share.
//!
//! Run one part with a filter on the module path, e.g. `cargo test --test integration mcp::`
//! or `cargo test --test integration tui::tui_keys::`. The tests that measure this process
//! itself are in `tests/process.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "integration/cli/mod.rs"]
mod cli;
#[path = "integration/craftos/mod.rs"]
mod craftos;
#[path = "integration/docs/mod.rs"]
mod docs;
#[path = "integration/emulator/mod.rs"]
mod emulator;
#[path = "integration/gateway/mod.rs"]
mod gateway;
#[path = "integration/host/mod.rs"]
mod host;
#[path = "integration/house/mod.rs"]
mod house;
#[path = "integration/lua/mod.rs"]
mod lua;
#[path = "integration/mcp/mod.rs"]
mod mcp;
#[path = "integration/security/mod.rs"]
mod security;
#[path = "integration/support/mod.rs"]
mod support;
#[path = "integration/tui/mod.rs"]
mod tui;

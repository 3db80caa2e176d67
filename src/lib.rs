//! trapdesk: one terminal console and one MCP endpoint for every linked ComputerCraft computer.
//!
//! Computers run the Lua client in `lua/` and hold one WebSocket each to the gateway. A person
//! (through the console) and AI agents (through MCP) drive them through one shared session, so
//! each sees what the other does as it happens.
//!
//! # Layout
//!
//! The crates are the layers, and each imports only from the ones above it in this list (the
//! compiler holds it: a crate cannot name one that does not depend on it). `docs/architecture.md`
//! shows how a request travels through them and where each kind of change goes.
//!
//! - `trapdesk-proto`, the vocabulary: [`protocol`], [`glob`], [`text`], [`time`].
//! - `trapdesk-client`, the Lua client in `lua/`, embedded: [`lua_files`], [`lua_map`].
//! - `trapdesk-emu`, a computer: [`emu`], an emulated CC: Tweaked computer (embedded Lua 5.2)
//!   that runs the real client and links like any other.
//! - `trapdesk-core`, the hub and what it consults: [`config`], [`policy`], [`door`],
//!   [`trust`], [`session`].
//! - `trapdesk` (this crate), the fronts and the wiring. The fronts sit side by side, none
//!   importing another:
//!   - [`gateway`]: the axum server computers link to (`/gateway` WebSocket, `/install.lua`,
//!     `/lua/*`, `/health`).
//!   - [`mcp`]: the rmcp server that offers the session's actions to agents over Streamable
//!     HTTP and stdio.
//!   - [`tui`]: the ratatui console.
//!   - [`control`]: the local control channel, what only the person's own tools ask of the
//!     running host (`doctor`, `secret show`, `pause`, `resume`).
//!
//!   [`host`] wires them around one session (listeners, gateway, MCP, trust watch and demo),
//!   with the process's logging and signals; [`commands`] holds every subcommand (the command
//!   line, the run modes, the admin of the stores, `doctor`, the one-shot MCP clients and
//!   `sync`). `main.rs` only parses and runs one.
//!
//! The lower crates are re-exported here under their module names, so that `trapdesk::session`
//! (or `trapdesk::emu`) is one path for the integration tests, the benches and the fuzz targets.
//!
//! # Where a change goes
//!
//! - A request type: one variant of [`protocol::Kind`] (the compiler lists every match to
//!   decide), its handler in `lua/`, `docs/protocol.md`.
//! - A wire message: [`protocol::Message`], its handling in [`gateway::connection`] or
//!   [`session::link`], `docs/protocol.md`.
//! - An MCP tool: a `#[tool]` in [`mcp`]'s routers, its arguments in [`mcp::params`], its
//!   output schema in [`mcp::schemas`], `docs/mcp.md`.
//! - A policy action: [`policy`], and the request kinds that map to it.
//! - A console key: one row of [`tui::keymap`]; a pane: a module of [`tui::panes`].
//! - A subcommand: a variant of [`commands::Command`] and one arm in [`commands::run`].

pub use trapdesk_client::{lua_files, lua_map};
pub use trapdesk_core::{config, door, policy, session, trust};
pub use trapdesk_emu as emu;
pub use trapdesk_proto::{glob, protocol, text, time};

pub mod control;
pub mod gateway;
pub mod mcp;
pub mod tui;

pub mod host;

pub mod commands;

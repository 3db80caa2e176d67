//! trapdesk: one terminal console and one MCP endpoint for every linked ComputerCraft computer.
//!
//! Computers run the Lua client in `lua/` and hold one WebSocket each to the gateway. A person
//! (through the console) and AI agents (through MCP) drive them through one shared session, so
//! each sees what the other does as it happens.
//!
//! # Layout
//!
//! The modules are listed by role, and each imports only from the groups above it (the
//! emulator, a computer of its own, only from the vocabulary). `docs/architecture.md` shows how
//! a request travels and where each kind of change goes.
//!
//! **Vocabulary**: what every other part speaks, depending on nothing of ours above it.
//! - [`protocol`]: the wire messages of `docs/protocol.md` and the byte-string rule, shared
//!   by the hub, the gateway and the emulator.
//! - [`text`]: what others control made safe for a terminal (no control characters, no bidi
//!   overrides), for the console and the CLI alike.
//! - [`glob`]: the one `*`/`?` glob (ASCII case ignored) of the console's filter, the fleet
//!   tools, the policy's rules and the CLI.
//! - [`policy`]: who may do what on which computer (`[policy]` of `config.toml`); it only
//!   decides, and the session is its one door.
//! - [`config`]: settings from defaults, `config.toml`, environment and flags (it owns the
//!   host's flags, so it depends on nothing above it).
//! - [`door`]: every listener's accept loop, with a deadline for a request's headers and a
//!   cap on the connections that have not proved themselves (the gateway's and the MCP's).
//! - [`lua_files`]: the `lua/` client, embedded at build time, as it is and as served
//!   (minified and packed); [`lua_map`]: the served client's error positions back to `lua/`.
//!
//! **Trust**: [`trust`], the stores of who holds which credential: named agents and the local
//! token for MCP, the computers' secrets for the gateway (hashed, checked with one `stat`).
//!
//! **The hub**: [`session`]. Registry of computers, pending requests with their deadlines, the
//! event broadcast, the recent log and transcript, output rings, terminal mirrors. Every front
//! is a client of it; it imports none of them.
//!
//! **The fronts**, side by side, none importing another:
//! - [`gateway`]: the axum server computers link to (`/gateway` WebSocket, `/install.lua`,
//!   `/lua/*`, `/health`).
//! - [`mcp`]: the rmcp server that offers the session's actions to agents over Streamable HTTP
//!   and stdio.
//! - [`tui`]: the ratatui console.
//! - [`control`]: the local control channel, what only the person's own tools ask of the
//!   running host (`doctor`, `secret show`, `pause`, `resume`), on the MCP listener under the
//!   local token alone.
//!
//! **A computer**: [`emu`], an emulated CC: Tweaked computer (embedded Lua 5.2) that runs the
//! real client and links like any other.
//!
//! **The wiring**: [`host`], the running host (listeners, gateway, MCP, trust watch and demo
//! around one session), with the process's logging and signals.
//!
//! **The commands**: [`commands`], every subcommand: the command line, the run modes, the
//! admin of the stores, `doctor`, the one-shot MCP clients (`exec`, `ls`, `put`, ...) and
//! `sync`. `main.rs` only parses and runs one.
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

pub mod config;
pub mod door;
pub mod glob;
pub mod lua_files;
pub mod lua_map;
pub mod policy;
pub mod protocol;
pub mod text;

pub mod trust;

pub mod session;

pub mod control;
pub mod gateway;
pub mod mcp;
pub mod tui;

pub mod emu;

pub mod host;

pub mod commands;

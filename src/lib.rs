//! trapdesk: one terminal console and one MCP endpoint for every linked ComputerCraft computer.
//!
//! Computers run the Lua client in `lua/` and hold one WebSocket each to the gateway. A person
//! (through the TUI) and AI agents (through MCP) drive them through one shared session, so each
//! sees what the other does as it happens.
//!
//! # Layout
//!
//! - [`admin`]: the `agent`, `secret` and `transcript` subcommands.
//! - [`agents`]: named agents, whose bearer tokens (stored hashed) give them a name they cannot
//!   forge.
//! - [`config`]: settings from defaults, `config.toml`, environment and flags (it owns the
//!   host flags, `HostArgs`, so it depends on nothing above it; `cli` re-exports them).
//! - [`stamp`]: one `stat` tells whether a file read on every request changed (agents,
//!   secrets).
//! - [`secrets`]: the computers' secrets: rotating the shared one, per-computer ones (hashed).
//! - [`session`]: the hub. Registry of computers, pending requests with their deadlines, the
//!   event broadcast, the recent log and transcript, per-computer output rings, the computers'
//!   terminal mirrors (`session::screen`: frames, watching, input checks). Every other
//!   part is a client of it.
//! - [`gateway`]: the axum server computers link to: `/gateway` WebSocket, `/install.lua`,
//!   `/lua/*`, `/health`.
//! - [`glob`]: the one `*`/`?` glob (ASCII case ignored) of the console's filter, the fleet
//!   tools, the policy's rules and the CLI, beneath everything that matches computers.
//! - [`protocol`]: the wire types of `docs/protocol.md` and the byte-string rule, beneath the
//!   session so that the hub and the gateway (and the emulator) share them without the hub
//!   depending on the gateway.
//! - [`policy`]: who may do what on which computer (`[policy]` of `config.toml`); it only
//!   decides, and the session is its one door.
//! - [`mcp`]: the rmcp server that offers the session's actions to agents over Streamable HTTP
//!   and stdio.
//! - [`tui`]: the ratatui console.
//! - [`emu`]: an emulated CC: Tweaked computer (embedded Lua 5.2) that runs the real client.
//! - [`lua_files`]: the `lua/` client, embedded at build time.
//! - [`app`]: the running host (gateway + MCP + demo around one session), shared by `main` and
//!   the tests.
//! - [`client`]: the one-shot commands (`exec`, `run`, `computers`, `ls`, `get`, `put`), MCP
//!   clients of the running trapdesk under the origin `cli`.
//! - [`sync`]: `trapdesk sync`, a local folder mirrored onto a computer (run-on-save), an MCP
//!   client under the origin `sync`.
//! - [`doctor`]: `trapdesk doctor`, why a computer will not link.
//! - [`cli`]: the command line (flags, subcommands), the other run modes (`mcp-stdio`,
//!   `emulate`), logging and signals.

pub mod admin;
pub mod agents;
pub mod app;
pub mod cli;
pub mod client;
pub mod config;
pub mod doctor;
pub mod emu;
pub mod gateway;
pub mod glob;
pub mod lua_files;
pub mod mcp;
pub mod policy;
pub mod protocol;
pub mod secrets;
pub mod session;
pub mod stamp;
pub mod sync;
pub mod tui;

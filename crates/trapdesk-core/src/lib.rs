//! trapdesk's core: the shared session every front drives, and what it consults.
//!
//! Built on the vocabulary (`trapdesk-proto`) and the client's position map
//! (`trapdesk-client`); it imports no front, and the compiler holds that.
//!
//! - [`policy`]: who may do what on which computer (`[policy]` of `config.toml`); it only
//!   decides, and the session is its one door.
//! - [`config`]: settings from defaults, `config.toml`, environment and flags (it owns the
//!   host's flags, so it depends on nothing above it).
//! - [`door`]: every listener's accept loop, with a deadline for a request's headers and a cap
//!   on the connections that have not proved themselves (the gateway's and the MCP's).
//! - [`trust`]: the stores of who holds which credential: named agents and the local token for
//!   MCP, the computers' secrets for the gateway (hashed, checked with one `stat`).
//! - [`session`]: the hub. Registry of computers, pending requests with their deadlines, the
//!   event broadcast, the recent log and transcript, output rings, terminal mirrors. Every
//!   front is a client of it.

pub mod config;
pub mod door;
pub mod policy;
pub mod trust;

pub mod session;

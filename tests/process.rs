//! The tests that measure this whole process, so that they need it to themselves: the tests of
//! `tests/integration.rs` run beside each other in one process, and their sockets and memory
//! would count in these measures.
//!
//! - `identity`: counts the process's open file descriptors (`/proc/self/fd`) before and after
//!   a flood of connections, and bounds what the host holds by that count;
//! - `hello`: (the hello attacks of the security suite, `tests/integration/security/`) bounds
//!   the growth of the process's resident memory (`/proc/self/statm`) over a flood of hellos.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "process/hello.rs"]
mod hello;
#[path = "process/identity.rs"]
mod identity;
#[path = "integration/support/mod.rs"]
mod support;

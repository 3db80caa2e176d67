//! trapdesk's vocabulary: what every other crate speaks, depending on nothing of ours.
//!
//! - [`protocol`]: the wire messages of `docs/protocol.md` and the byte-string rule, shared by
//!   the hub, the gateway and the emulator.
//! - [`text`]: what others control made safe for a terminal (no control characters, no bidi
//!   overrides), for the console and the CLI alike.
//! - [`glob`]: the one `*`/`?` glob (ASCII case ignored) of the console's filter, the fleet
//!   tools, the policy's rules and the CLI.
//! - [`time`]: wall-clock times as the wire and the stores write them.

pub mod glob;
pub mod protocol;
pub mod text;
pub mod time;

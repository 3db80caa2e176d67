//! Tool arguments. Each struct's `///` docs become the `inputSchema` descriptions an agent
//! reads, so they say what the argument means to the caller, not how it is implemented.
//!
//! Arguments are camelCase (docs/mcp.md). An argument a tool does not take is refused by name
//! (`deny_unknown_fields`): ignored, a misspelt `timeOut` ran with the default timeout.
//!
//! One file per family of tools' arguments; this file holds how a caller names a computer,
//! which they all share.

use serde::{Deserialize, Deserializer};

mod files;
mod fleet;
mod invalid;
mod machine;
mod range;
mod requests;
mod run;
mod screen;

pub use files::{Encoding, ListFiles, MoveFile, OnePath, ReadFile, WriteFile};
pub use fleet::{ExecLuaMany, ProbeComputers};
pub(crate) use invalid::{invalid_arguments, invalid_field};
pub use machine::{OneComputer, RebootComputer};
pub(crate) use range::out_of_range;
pub use requests::{CancelRequest, ComputerOutput, LogSince, SessionLog, WaitRequest};
pub use run::{ExecLua, RunFile};
pub use screen::{ReadScreen, SendInput, Touch};

/// A computer as a caller names it: a string, or a bare id as a JSON number (the MCP
/// Inspector sends `traposId=7` as `7`), which means the same as `"7"`.
fn computer<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Named {
        Text(String),
        Id(u64),
    }
    Ok(match Named::deserialize(d) {
        Ok(Named::Text(s)) => s,
        Ok(Named::Id(n)) => n.to_string(),
        Err(_) => {
            return Err(serde::de::Error::custom(
                "a traposId (\"7:miner\"), a computer id (7) or a label (\"miner\")",
            ));
        }
    })
}

/// A list of computers as a caller names them: each a string or a bare id as a JSON number.
fn computers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    struct One(#[serde(deserialize_with = "computer")] String);
    let list: Option<Vec<One>> = Option::deserialize(d)?;
    Ok(list.map(|l| l.into_iter().map(|One(s)| s).collect()))
}

/// An optional computer, named as [`computer`] takes it.
fn some_computer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    computer(d).map(Some)
}

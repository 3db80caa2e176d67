//! The typed shapes of the results the tools build as JSON: their output schemas are derived
//! from these (`schemas::derived`), field by field, with the words an agent reads.
//!
//! The data itself is the computer's answer passed on (a Result, a file's entry) with the
//! host's fields beside it, so these types are only ever read by the schema derive: no code
//! constructs them, hence `dead_code` allowed in each family's file. A field left out when it
//! has no value is `Option` with `skip_serializing_if`; one that is always there but may be
//! `null` (a cursor at the end) is a bare `Option`.

mod files;
mod fleet;
mod run;
mod screen;

pub(crate) use files::{Changed, FileInfo, Listed, ReadPiece, Written};
pub(crate) use fleet::{Probed, many_schema};
pub(crate) use run::{LogPage, OutputPage, RunResult, Waited};
pub(crate) use screen::Screen;

//! Who is trusted with what: the MCP endpoint's credentials ([`agents`]: the local token and
//! named agents' tokens) and the computers' secrets ([`secrets`]: the shared one and each
//! computer's own). Both are files in the data dir that another process (`trapdesk agent …`,
//! `trapdesk secret …`) may change while the host runs; both store only hashes and are checked
//! with one `stat` per use ([`stamp`]).
//!
//! These stores only answer "is this credential good, and for whom"; what follows from a
//! removal (an agent's calls cancelled) is the host's wiring (`crate::host`).

pub mod agents;
pub mod secrets;
pub mod stamp;

use sha2::{Digest, Sha256};

/// Hex SHA-256 of a token or secret: what the stores keep instead of it.
pub fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

//! Attacks on credentials: see docs/security.md.

#[allow(unused_imports)]
use super::support;

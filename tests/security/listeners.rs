//! Attacks on listeners: see docs/security.md.

#[allow(unused_imports)]
use super::support;

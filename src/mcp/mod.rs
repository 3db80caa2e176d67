//! See the crate docs.

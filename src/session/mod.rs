//! The session hub.

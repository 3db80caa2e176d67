//! The gateway: the one HTTP/WebSocket listener computers link to.

pub mod protocol;

//! A linked (or recently unlinked) computer: [`ComputerInfo`].

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::json::{de_opt_time, de_time, ser_opt_time, ser_time};

/// A linked (or recently unlinked) computer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComputerInfo {
    pub trapos_id: String,
    pub id: u64,
    pub label: Option<String>,
    pub online: bool,
    #[serde(serialize_with = "ser_time", deserialize_with = "de_time")]
    pub connected_at: SystemTime,
    #[serde(serialize_with = "ser_opt_time", deserialize_with = "de_opt_time")]
    pub disconnected_at: Option<SystemTime>,
    pub serves: Vec<String>,
    /// Requests sent and not answered.
    pub running: usize,
    /// Requests waiting on the host because `running` is at the in-flight limit.
    pub queued: usize,
    /// Detached runs going on the computer (apart from `running`: they have their own budget).
    #[serde(default)]
    pub detached: usize,
    pub last_rtt_ms: Option<u64>,
    pub client: Option<String>,
    pub host: Option<String>,
    /// Largest frame the computer accepts.
    pub max_message: u64,
    /// What the computer is (device, flags, screen size), as its `hello` said.
    pub machine: trapdesk_proto::protocol::MachineInfo,
    /// What it has attached and, on a turtle, its fuel and selected slot, as its last status
    /// ping answered ([`crate::session::Session::refresh_status`]); `None` until one answered
    /// (and from a client that does not answer them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<crate::session::devices::DeviceStatus>,
}

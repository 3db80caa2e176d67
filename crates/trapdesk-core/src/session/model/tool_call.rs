//! An agent's tool call, as the console's activity pane shows it: [`ToolCall`].

use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Status;
use super::json::{de_json_text, de_time, ser_json_text, ser_time};

/// A tool call made by an agent, as the console's activity pane shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub call_id: u64,
    pub client: String,
    pub tool: String,
    pub target: Option<String>,
    pub args: Value,
    #[serde(serialize_with = "ser_time", deserialize_with = "de_time")]
    pub started_at: SystemTime,
    pub status: Status,
    pub summary: String,
    /// The result's `structuredContent` as JSON text, shared: the call is kept in the
    /// session's list (the last 500) and sent to the console, which parses it only when the
    /// person opens the call. As a `Value` tree a 24 KiB probe page was ~2,000 allocations to
    /// copy and as many to free again, per call.
    #[serde(serialize_with = "ser_json_text", deserialize_with = "de_json_text")]
    pub result: Option<std::sync::Arc<str>>,
    pub duration_ms: Option<u64>,
    /// The gateway request this call made, if any.
    pub request_id: Option<String>,
}

//! `probe-computers` and `exec-lua-many`.
#![allow(dead_code)]

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::super::schemas::{Common, derived};
use rmcp::model::JsonObject;
use std::sync::Arc;

/// `probe-computers`: one page of the linked computers.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Probed {
    #[serde(flatten)]
    common: Common,
    /// this page, in (id, traposId) order
    #[serde(skip_serializing_if = "Option::is_none")]
    computers: Option<Vec<ProbeRow>>,
    /// computers matching, over all pages
    #[serde(skip_serializing_if = "Option::is_none")]
    matched: Option<u64>,
    /// computers linked, matching or not
    #[serde(skip_serializing_if = "Option::is_none")]
    linked: Option<u64>,
    /// pass as cursor for the next page; null on the last page
    next_cursor: Option<String>,
    /// the request kinds the computers of this page serve, said once (a row has serves only when its differ)
    #[serde(skip_serializing_if = "Option::is_none")]
    serves: Option<Vec<String>>,
}

/// What the policy lets the calling agent do on a computer.
#[derive(Serialize, JsonSchema)]
struct Allowed {
    #[schemars(extend("enum" = ["allow", "ask", "deny"]))]
    exec: String,
    #[schemars(extend("enum" = ["allow", "ask", "deny"]))]
    write: String,
    #[schemars(extend("enum" = ["allow", "ask", "deny"]))]
    read: String,
}

/// A terminal's size.
#[derive(Serialize, JsonSchema)]
struct Size {
    width: u64,
    height: u64,
}

/// One computer of a probe's page.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ProbeRow {
    trapos_id: String,
    id: u64,
    /// its label, or null
    label: Option<String>,
    /// epoch milliseconds
    connected_at: u64,
    /// only when not the page's serves
    #[serde(skip_serializing_if = "Option::is_none")]
    serves: Option<Vec<String>>,
    pending: u64,
    /// present only when pending > 0: requestId, kind, summary, origin, sent, ageMs (since it started)
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_requests: Option<Vec<Map<String, Value>>>,
    /// ms, or null
    last_rtt_ms: Option<u64>,
    /// this probe's ping: {ok, rttMs} or {ok:false, error}
    #[serde(skip_serializing_if = "Option::is_none")]
    ping: Option<Map<String, Value>>,
    /// the computer's _HOST; absent when its client did not say
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime: Option<String>,
    /// the client's name and version
    #[serde(skip_serializing_if = "Option::is_none")]
    client: Option<String>,
    /// the installed client files' version
    #[serde(skip_serializing_if = "Option::is_none")]
    client_version: Option<String>,
    /// absent from a client that does not report it
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["computer", "turtle", "pocket"]))]
    device: Option<String>,
    /// a colour (advanced) computer
    #[serde(skip_serializing_if = "Option::is_none")]
    advanced: Option<bool>,
    /// a command computer
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<bool>,
    /// the terminal's size at link time
    #[serde(skip_serializing_if = "Option::is_none")]
    screen: Option<Size>,
    /// peripherals attached (wired-network ones too), from this probe's ping; absent without ping or from a client that does not say
    #[serde(skip_serializing_if = "Option::is_none")]
    peripherals: Option<u64>,
    /// the monitors' peripheral names (for read-screen's monitor); absent like peripherals
    #[serde(skip_serializing_if = "Option::is_none")]
    monitors: Option<Vec<String>>,
    /// a turtle's fuel level, or "unlimited"; absent on other computers
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "IntOrText")]
    fuel: Option<Value>,
    /// a turtle's fuel limit, or "unlimited"; absent on other computers
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "IntOrText")]
    fuel_limit: Option<Value>,
    /// a turtle's selected slot, 1 to 16; absent on other computers
    #[serde(skip_serializing_if = "Option::is_none")]
    selected: Option<u64>,
    /// what the policy lets you (the calling agent) do here: allow, ask (a person must approve each call) or deny
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<Allowed>,
}

/// A whole number or a word (a turtle's fuel: a level, or "unlimited").
struct IntOrText;

impl JsonSchema for IntOrText {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IntOrText".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["integer", "string"]})
    }
}

/// `exec-lua-many`: one chunk run on many computers.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Many {
    #[serde(flatten)]
    common: Common,
    /// computers the chunk was meant for
    #[serde(skip_serializing_if = "Option::is_none")]
    computers: Option<u64>,
    /// results left out for room (successes first); their runs are in session-log
    #[serde(skip_serializing_if = "Option::is_none")]
    omitted: Option<u64>,
    /// failures first, then successes, each in id order
    #[serde(skip_serializing_if = "Option::is_none")]
    results: Option<Vec<ManyRow>>,
}

/// One computer's run in a broadcast.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ManyRow {
    trapos_id: String,
    ok: bool,
    #[schemars(extend("enum" = ["ok", "error", "timeout", "cancelled", "disconnected", "failed"]))]
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    returns: Option<Vec<Map<String, Value>>>,
    /// the Lua error (string), or {code, message} when no answer came
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
    /// head of the captured output
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_truncated: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
}

/// `exec-lua-many`'s schema: its `ok` is the whole broadcast's.
pub(crate) fn many_schema() -> Arc<JsonObject> {
    let mut schema = (*derived::<Many>()).clone();
    if let Some(Value::Object(ok)) = schema.get_mut("properties").and_then(|p| p.get_mut("ok")) {
        ok.insert(
            "description".into(),
            "true when every computer succeeded".into(),
        );
    }
    Arc::new(schema)
}

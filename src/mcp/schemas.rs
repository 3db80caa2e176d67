//! The tools' `outputSchema`s: derived from the typed results (`schemars`, as rmcp derives
//! them) by [`derived`], and, for the tools not typed yet, written by hand.
//!
//! They are deliberately permissive (one required field, `ok`, which every result carries;
//! extra properties allowed): the same schema has to describe a success, a failure that
//! carries a computer's payload (a Lua error), and a failure without one (`{ok:false,
//! error:{code, message}}`), and a client that validates `structuredContent` against it must
//! never reject a real answer (tests/python/test_contract.py checks every tool's failures).

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

/// Fields every result may carry, whichever tool made it: flattened into each typed result.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Common {
    /// false when the call failed
    pub ok: bool,
    /// why it failed: the computer's message (string), or {code, message} (invalid_arguments, bad_path, timeout, disconnected, cancelled, busy, unknown_computer, ambiguous_computer, ...: docs/mcp.md, Errors)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// invalid_arguments: the argument at fault
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// the computer the request ran on
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trapos_id: Option<String>,
    /// the request's id, for cancel-request and computer-output
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl Common {
    /// A success's common fields on `trapos_id`.
    pub fn ok_on(trapos_id: &str) -> Common {
        Common {
            ok: true,
            trapos_id: Some(trapos_id.to_owned()),
            ..Common::default()
        }
    }
}

/// A typed result as the structured content's fields (a failure adds its own beside them).
pub fn fields<T: Serialize>(result: &T) -> Map<String, Value> {
    match serde_json::to_value(result) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// The output schema of the typed result `T`: what rmcp derives for it, made permissive as
/// the module docs say (only `ok` required, extra properties allowed) and plain: no `null`
/// among a field's types, no `default: null`, no number formats.
///
/// An optional field left out when it has no value (`skip_serializing_if`) is described by
/// its type alone. A field that is always there but may be `null` (a cursor at the end) is
/// described without a type, by its description: a `null` type is what the schemas leave out.
pub fn derived<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let derived = rmcp::handler::server::tool::schema_for_output::<T>();
    let mut root = Value::Object((*derived).clone());
    plain(&mut root);
    let Value::Object(mut map) = root else {
        return Arc::new(JsonObject::new());
    };
    map.remove("$schema");
    // A nested shape's doc comment is the Rust type's, not the agent's: its field says it.
    if let Some(Value::Object(defs)) = map.get_mut("$defs") {
        for def in defs.values_mut() {
            if let Value::Object(def) = def {
                def.remove("description");
            }
        }
    }
    map.insert("required".into(), json!(["ok"]));
    map.insert("additionalProperties".into(), Value::Bool(true));
    Arc::new(map)
}

/// Whether `schema` allows `null` (`type: [.., "null"]`, or an `anyOf` with a null branch).
fn nullable(schema: &Value) -> bool {
    let null = |t: &Value| t == "null" || t.get("type").is_some_and(|t| t == "null");
    match (schema.get("type"), schema.get("anyOf")) {
        (Some(Value::Array(types)), _) => types.iter().any(null),
        (_, Some(Value::Array(branches))) => branches.iter().any(null),
        _ => false,
    }
}

/// A schema that allows anything, keeping only what describes it in words.
fn untyped(schema: &mut Value) {
    if let Value::Object(map) = schema {
        map.retain(|k, _| k == "description");
    }
}

/// The post-pass of [`derived`] over one schema and everything under it.
fn plain(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    // Always there, maybe null: described in words only.
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for name in &required {
            if let Some(p) = props.get_mut(name)
                && nullable(p)
            {
                untyped(p);
            }
        }
    }
    if let Some(items) = map.get_mut("items")
        && nullable(items)
    {
        untyped(items);
    }
    // Left out when it has no value: its type alone.
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let one = types.remove(0);
            map.insert("type".into(), one);
        }
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
        if branches.len() == 1
            && let Some(Value::Object(one)) = branches.pop()
        {
            map.remove("anyOf");
            for (k, v) in one {
                map.entry(k).or_insert(v);
            }
        }
    }
    if map.get("default").is_some_and(Value::is_null) {
        map.remove("default");
    }
    map.remove("format");
    if map.get("minimum").is_some_and(|m| m == 0) {
        map.remove("minimum");
    }
    for (key, v) in map.iter_mut() {
        match (key.as_str(), v) {
            ("properties" | "$defs", Value::Object(named)) => named.values_mut().for_each(plain),
            ("items" | "additionalProperties", v) => plain(v),
            ("anyOf" | "oneOf" | "allOf", Value::Array(branches)) => {
                branches.iter_mut().for_each(plain);
            }
            _ => {}
        }
    }
}

fn object(properties: Value, required: &[&str]) -> Arc<JsonObject> {
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": true,
    });
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// Fields every request-backed result may carry.
fn common() -> serde_json::Map<String, Value> {
    let v = json!({
        "ok": {"type": "boolean", "description": "false when the call failed"},
        "error": {"description": "why it failed: the computer's message (string), or {code, message} (invalid_arguments, bad_path, timeout, disconnected, cancelled, busy, unknown_computer, ambiguous_computer, ...: docs/mcp.md, Errors)"},
        "field": {"type": "string", "description": "invalid_arguments: the argument at fault"},
        "traposId": {"type": "string", "description": "the computer the request ran on"},
        "requestId": {"type": "string", "description": "the request's id, for cancel-request and computer-output"},
    });
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

fn with_common(extra: Value) -> Value {
    let mut props = common();
    if let Value::Object(m) = extra {
        props.extend(m);
    }
    Value::Object(props)
}

/// `exec-lua` and `run-file`: the computer's Result (docs/protocol.md, "Payloads") plus ids.
pub fn run_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "returns": {"type": "array", "items": {"type": "object"}, "description": "one descriptor per returned value: {type, value} or {type, repr}; a value too large for the result keeps its head in value (a table: the head of its JSON text), its full length in bytes, and cut: true"},
            "n": {"type": "integer", "description": "number of returned values"},
            "output": {"type": "string", "description": "captured print/write output (head and tail when cut)"},
            "outputTruncated": {"type": "boolean", "description": "true only when output was left out"},
            "outputBytes": {"type": "integer", "description": "bytes of output the run produced in all"},
            "outputLines": {"type": "integer", "description": "lines of output the run produced in all"},
            "outputKeptBytes": {"type": "integer", "description": "bytes of output in `output` when it was cut (the marker excluded)"},
            "errorOutput": {"type": "string", "description": "what the run wrote to the error stream (printError, text drawn in red), also in `output` in its place; present only when there was some"},
            "cancelledBy": {"type": "string", "description": "who cancelled the request: person, or an agent's client name"},
            "elapsedMs": {"type": "integer", "description": "how long the request ran before it failed"},
            "traceback": {"type": "string"},
            "errorValue": {"description": "a Lua error that was not a string: its descriptor"},
            "durationMs": {"type": "number", "description": "how long the chunk ran on the computer"},
            "status": {"type": "string", "description": "with detach: running (the run goes on; follow it with wait-request)"},
        })),
        &["ok"],
    )
}

/// `wait-request`: a running request's lines so far, or the ended request's own result.
pub fn wait_result() -> Arc<JsonObject> {
    let mut schema = (*run_result()).clone();
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        let more = json!({
            "status": {"type": "string", "description": "running, or how it ended: ok, error, timeout, cancelled, disconnected, failed"},
            "cursor": {"description": "pass as after next time: output after it is new"},
            "matched": {"type": "boolean", "description": "running: whether `until` was found (in `line`)"},
            "line": {"type": "string", "description": "the line where `until` was found"},
            "lines": {"type": "array", "items": {"type": "object"}, "description": "running: the lines after the cursor, oldest first: {seq, at (ms since the Unix epoch), stream, text, complete}"},
            "more": {"type": "boolean", "description": "running: more lines follow the cursor than fitted"},
        });
        if let Value::Object(m) = more {
            props.extend(m);
        }
    }
    Arc::new(schema)
}

/// `write-file`.
pub fn write_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "path": {"type": "string"},
            "bytes": {"type": "integer", "description": "bytes written"},
            "needed": {"type": "integer", "description": "bytes of disk the refused write needs (each file and folder costs at least 500)"},
            "free": {"type": "integer", "description": "bytes free on the computer's disk when the write was refused"},
            "neededInPlace": {"type": "integer", "description": "bytes the write would need with inPlace"},
        })),
        &["ok"],
    )
}

/// `read-file`.
pub fn read_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "path": {"type": "string"},
            "content": {"type": "string", "description": "UTF-8 text, or base64 when encoding is base64"},
            "encoding": {"type": "string", "enum": ["utf8", "base64"]},
            "offset": {"type": "integer", "description": "first byte of this piece"},
            "bytes": {"type": "integer", "description": "bytes in this piece"},
            "total": {"type": "integer", "description": "size of the whole file"},
            "nextOffset": {"description": "offset of the next piece, null at the end"},
        })),
        &["ok"],
    )
}

/// `list-files`.
pub fn list_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "path": {"type": "string"},
            "entries": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "dir": {"type": "boolean"}, "size": {"type": "number"}}}},
        })),
        &["ok"],
    )
}

/// `move-file`, `delete-file` and `make-dir`.
pub fn change_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "path": {"type": "string"},
            "from": {"type": "string"},
            "to": {"type": "string"},
            "deleted": {"type": "boolean", "description": "delete-file: false when nothing was there"},
            "created": {"type": "boolean", "description": "make-dir: false when the directory was there"},
        })),
        &["ok"],
    )
}

/// `file-info`.
pub fn info_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "path": {"type": "string"},
            "exists": {"type": "boolean"},
            "isDir": {"type": "boolean"},
            "size": {"type": "integer", "description": "bytes; 0 for a directory"},
            "crc32": {"type": "integer", "description": "a file's CRC-32 (IEEE, as zlib's crc32)"},
            "modified": {"type": "integer", "description": "when it was last modified, ms since the epoch (absent from an older client)"},
            "readOnly": {"type": "boolean", "description": "on a read-only mount such as /rom"},
        })),
        &["ok"],
    )
}

/// `probe-computers`.
pub fn probe_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "computers": {"type": "array", "description": "this page, in (id, traposId) order", "items": {"type": "object", "properties": {
                "traposId": {"type": "string"},
                "id": {"type": "integer"},
                "label": {"description": "its label, or null"},
                "connectedAt": {"type": "integer", "description": "epoch milliseconds"},
                "serves": {"type": "array", "items": {"type": "string"}},
                "pending": {"type": "integer"},
                "pendingRequests": {"type": "array", "items": {"type": "object"}, "description": "present only when pending > 0: requestId, kind, summary, origin, sent, ageMs (since it started)"},
                "lastRttMs": {"description": "ms, or null"},
                "ping": {"type": "object", "description": "this probe's ping: {ok, rttMs} or {ok:false, error}"},
                "runtime": {"type": "string", "description": "the computer's _HOST; absent when its client did not say"},
                "client": {"type": "string", "description": "the client's name and version"},
                "clientVersion": {"type": "string", "description": "the installed client files' version"},
                "device": {"type": "string", "enum": ["computer", "turtle", "pocket"], "description": "absent from a client that does not report it"},
                "advanced": {"type": "boolean", "description": "a colour (advanced) computer"},
                "command": {"type": "boolean", "description": "a command computer"},
                "screen": {"type": "object", "description": "the terminal's size at link time", "properties": {"width": {"type": "integer"}, "height": {"type": "integer"}}},
                "peripherals": {"type": "integer", "description": "peripherals attached (wired-network ones too), from this probe's ping; absent without ping or from a client that does not say"},
                "monitors": {"type": "array", "items": {"type": "string"}, "description": "the monitors' peripheral names (for read-screen's monitor); absent like peripherals"},
                "fuel": {"type": ["integer", "string"], "description": "a turtle's fuel level, or \"unlimited\"; absent on other computers"},
                "fuelLimit": {"type": ["integer", "string"], "description": "a turtle's fuel limit, or \"unlimited\"; absent on other computers"},
                "selected": {"type": "integer", "description": "a turtle's selected slot, 1 to 16; absent on other computers"},
                "policy": {"type": "object", "description": "what the policy lets you (the calling agent) do here: allow, ask (a person must approve each call) or deny",
                    "properties": {
                        "exec": {"type": "string", "enum": ["allow", "ask", "deny"]},
                        "write": {"type": "string", "enum": ["allow", "ask", "deny"]},
                        "read": {"type": "string", "enum": ["allow", "ask", "deny"]},
                    }},
            }}},
            "matched": {"type": "integer", "description": "computers matching, over all pages"},
            "linked": {"type": "integer", "description": "computers linked, matching or not"},
            "nextCursor": {"description": "pass as cursor for the next page; null on the last page"},
        })),
        &["ok"],
    )
}

/// `exec-lua-many`.
pub fn many_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "ok": {"type": "boolean", "description": "true when every computer succeeded"},
            "computers": {"type": "integer", "description": "computers the chunk was meant for"},
            "failed": {"type": "integer"},
            "omitted": {"type": "integer", "description": "results left out for room (successes first); their runs are in session-log"},
            "results": {"type": "array", "description": "failures first, then successes, each in id order", "items": {"type": "object", "properties": {
                "traposId": {"type": "string"},
                "ok": {"type": "boolean"},
                "status": {"type": "string", "enum": ["ok", "error", "timeout", "cancelled", "disconnected", "failed"]},
                "requestId": {"type": "string"},
                "returns": {"type": "array", "items": {"type": "object"}},
                "error": {"description": "the Lua error (string), or {code, message} when no answer came"},
                "output": {"type": "string", "description": "head of the captured output"},
                "outputTruncated": {"type": "boolean"},
                "durationMs": {"type": "integer"},
            }}},
        })),
        &["ok"],
    )
}

/// `computer-output`.
pub fn output_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "lines": {"type": "array", "items": {"type": "object", "properties": {
                "seq": {"type": "integer"},
                "at": {"type": "integer", "description": "when the host received the line, in ms since the Unix epoch"},
                "requestId": {"description": "the request that wrote it, or null"},
                "stream": {"type": "string", "enum": ["out", "err"]},
                "text": {"type": "string"},
                "complete": {"type": "boolean"},
            }}},
            "before": {"description": "cursor for the page before this one; null when nothing older is kept"},
            "cursor": {"description": "the newest line's seq: pass as after to read only newer lines"},
            "more": {"type": "boolean", "description": "with after: more lines follow the cursor than fitted"},
            "status": {"type": "string", "description": "with requestId: running, how it ended (ok, error, timeout, cancelled, disconnected, failed), or ended once its result is no longer kept"},
        })),
        &["ok"],
    )
}

/// `session-log`.
pub fn log_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "events": {"type": "array", "items": {"type": "object"}, "description": "oldest first; one per call (event \"call\") or request (\"request\"), links and refusals as they are; each with seq, timeMs, who, traposId (resolved), requestId, what, status, detail, durationMs; empty on a failure"},
            "before": {"description": "cursor for the entries before these; null when nothing older is kept"},
            "latest": {"type": "integer", "description": "the log's newest cursor: pass it as since to get only what began or changed after this answer"},
        })),
        &["ok"],
    )
}

/// `read-screen` and `send-input`: the terminal as text rows, cursor and size.
pub fn screen_result() -> Arc<JsonObject> {
    object(
        with_common(json!({
            "width": {"type": "integer"},
            "height": {"type": "integer"},
            "cursor": {"type": "object", "description": "1-based x, y (may lie off screen) and blink"},
            "rows": {"type": "array", "items": {"type": "string"}, "description": "one string per row, trailing blanks cut"},
            "fg": {"type": "array", "items": {"type": "string"}, "description": "text colour per cell in blit form (colors only)"},
            "bg": {"type": "array", "items": {"type": "string"}, "description": "background colour per cell in blit form (colors only)"},
            "palette": {"type": "array", "items": {"type": "string"}, "description": "the 16 colours as #rrggbb, by blit digit (colors only)"},
            "events": {"type": "integer", "description": "events queued (send-input)"},
            "running": {"type": "boolean", "description": "send-input with requestId: whether that request still runs"},
            "output": {"type": "string", "description": "send-input with requestId: that request's newest output lines"},
            "monitor": {"type": "string", "description": "the monitor shown (with monitor): its peripheral name"},
            "scale": {"type": "number", "description": "the monitor's text scale, 0.5 to 5 (with monitor)"},
            "known": {"type": "array", "items": {}, "description": "a monitor with cells this computer never drew (or another computer drew over): per row, null when every cell is known, else one character per cell, 1 known, 0 unknown (an unknown cell's text in rows is a blank, shown as ░ (U+2591) in the text block)"},
            "touched": {"type": "object", "description": "send-input with touch: the cell touched, {x, y}"},
            "colorsCut": {"type": "boolean", "description": "true when the colours were left out to fit one result (a large monitor)"},
            "rowsShown": {"type": "integer", "description": "when the rows did not all fit one result: how many are given, from the top (rows and known alike)"},
        })),
        &["ok"],
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::TrapdeskMcp;
    use super::*;
    use trapdesk_core::config::Settings;
    use trapdesk_core::session::Session;

    fn tools() -> Vec<rmcp::model::Tool> {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            data_dir: dir.path().to_owned(),
            ..Settings::default()
        };
        TrapdeskMcp::new(Session::new(settings, false))
            .tool_router
            .list_all()
    }

    /// Whether a `type` anywhere in `schema` names `null`.
    fn null_type(schema: &Value) -> bool {
        match schema {
            Value::Object(map) => map.iter().any(|(k, v)| {
                (k == "type"
                    && (v == "null" || v.as_array().is_some_and(|t| t.iter().any(|t| t == "null"))))
                    || null_type(v)
            }),
            Value::Array(items) => items.iter().any(null_type),
            _ => false,
        }
    }

    /// A field that may be absent or null is described without a `null` type: some clients
    /// reject `["T", "null"]`, and the words say it already.
    #[test]
    fn no_output_schema_has_a_null_type() {
        for t in tools() {
            let schema = Value::Object((*t.output_schema.unwrap()).clone());
            assert!(!null_type(&schema), "{}: {schema}", t.name);
            assert_eq!(schema["required"], json!(["ok"]), "{}", t.name);
            assert_eq!(schema["additionalProperties"], true, "{}", t.name);
        }
    }

    /// What `tools/list` costs an agent's context, every session: 63251 characters when the
    /// schemas were all written by hand; derived ones must not make it grow by more than 10%.
    #[test]
    fn tools_list_stays_small() {
        let n = serde_json::to_string(&tools()).unwrap().len();
        eprintln!("tools/list: {n} characters");
        assert!(n <= 63_251 * 11 / 10, "{n}");
    }

    /// The post-pass keeps the type of a field left out when empty, drops the type of one that
    /// is always there but may be null, and leaves no formats.
    #[test]
    fn derived_schemas_are_plain() {
        #[derive(serde::Serialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Page {
            #[serde(flatten)]
            common: Common,
            /// the next piece, null at the end
            next_offset: Option<u64>,
            /// only when cut
            #[serde(skip_serializing_if = "Option::is_none")]
            kept_bytes: Option<u64>,
            known: Vec<Option<String>>,
        }
        let s = Value::Object((*derived::<Page>()).clone());
        let p = &s["properties"];
        assert_eq!(
            p["nextOffset"],
            json!({"description": "the next piece, null at the end"})
        );
        assert_eq!(
            p["keptBytes"],
            json!({"type": "integer", "description": "only when cut"})
        );
        assert_eq!(p["known"]["items"], json!({}));
        assert_eq!(p["ok"]["type"], "boolean");
        assert!(!null_type(&s), "{s}");
    }
}

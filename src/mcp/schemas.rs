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
    // A shape's doc comment is the Rust type's, not the agent's: the tool's description and
    // the field's say it. A nested shape requires nothing, as the result itself requires only
    // `ok` (a computer's answer may lack a field an older client does not send).
    map.remove("description");
    if let Some(Value::Object(mut defs)) = map.remove("$defs") {
        for def in defs.values_mut() {
            if let Value::Object(def) = def {
                def.remove("description");
                def.remove("required");
            }
        }
        // Each nested shape in its place: a client reads `computers.items.properties` without
        // resolving references (the shapes are used once each, and none holds itself).
        let mut root = Value::Object(map);
        inline(&mut root, &defs);
        let Value::Object(inlined) = root else {
            return Arc::new(JsonObject::new());
        };
        map = inlined;
    }
    map.insert("required".into(), json!(["ok"]));
    map.insert("additionalProperties".into(), Value::Bool(true));
    Arc::new(map)
}

/// Replaces every `{"$ref": "#/$defs/X", ..}` under `schema` by `defs[X]`, the reference's
/// own words (its description) kept over the shape's.
fn inline(schema: &mut Value, defs: &JsonObject) {
    match schema {
        Value::Object(map) => {
            let target = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .and_then(|name| defs.get(name));
            if let Some(Value::Object(shape)) = target {
                map.remove("$ref");
                for (k, v) in shape {
                    map.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            map.values_mut().for_each(|v| inline(v, defs));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| inline(v, defs)),
        _ => {}
    }
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
    // Allowed anyway: said only where it is the point (the result itself, in [`derived`]).
    if map.get("additionalProperties") == Some(&Value::Bool(true)) {
        map.remove("additionalProperties");
    }
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
            // Nested shapes are in place, not behind references.
            assert!(!schema.to_string().contains("$ref"), "{}", t.name);
            assert_eq!(schema["required"], json!(["ok"]), "{}", t.name);
            assert_eq!(schema["additionalProperties"], true, "{}", t.name);
        }
    }

    /// What `tools/list` costs an agent's context, every session (`tool_list`'s budgets):
    /// 63,251 characters, 28,700 of them read by the model, when each tool said everything.
    #[test]
    fn tools_list_stays_small() {
        use super::super::tool_list::{CONTEXT_BUDGET, LIST_BUDGET, context_chars};
        let tools = tools();
        let n = serde_json::to_string(&tools).unwrap().chars().count();
        let read = context_chars(super::super::INSTRUCTIONS, &tools);
        eprintln!("tools/list: {n} characters; instructions and inputs: {read}");
        if let Ok(path) = std::env::var("TOOLS_LIST_DUMP") {
            std::fs::write(path, serde_json::to_string(&tools).unwrap()).unwrap();
        }
        assert!(n <= LIST_BUDGET, "{n}");
        assert!(read <= CONTEXT_BUDGET, "{read}");
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

//! The tool list as agents receive it: every client puts each tool's name, description and
//! `inputSchema` into the model's context on every turn (some the `outputSchema` too), so the
//! list is shaped once, over the whole router, to say each thing once and in a form every
//! client accepts (docs/mcp.md, "Tool list budget"):
//!
//! - [`portable_input`]: no `type` arrays, no `null` branches, no `$ref`/`$defs`, no `format`,
//!   no titles; `minimum`, `maximum`, `enum` and `required` kept (ranges are checked from them);
//!   the shared `traposId` argument described once, in the server's instructions.
//! - [`lean_output`]: what every result carries (`ok`, `error`, ...) described once, in the
//!   instructions, and a description another tool's output schema already gave left out.

use std::collections::HashSet;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{JsonObject, Tool};
use serde_json::{Map, Value, json};

use super::TrapdeskMcp;
use super::schemas::{Common, derived};

/// What the server's instructions plus every tool's name, description and compact
/// `inputSchema` may cost, in characters: what a client puts before the model every turn.
pub const CONTEXT_BUDGET: usize = 16_000;
/// What the whole `tools/list` result may cost, in characters of compact JSON.
pub const LIST_BUDGET: usize = 40_000;

/// Arguments every tool names the same way, described in the instructions instead.
const SHARED_ARGUMENTS: [&str; 1] = ["traposId"];

/// Shapes every tool of `router` in place, as the module docs say.
pub(crate) fn shape(router: &mut ToolRouter<TrapdeskMcp>) {
    let common = common_descriptions();
    let mut said = HashSet::new();
    let mut names: Vec<_> = router.map.keys().cloned().collect();
    // In the order clients list them, so "said before" is the order an agent reads.
    names.sort();
    for name in names {
        let Some(route) = router.map.get_mut(&name) else {
            continue;
        };
        shape_tool(&mut route.attr, &common, &mut said);
    }
}

fn shape_tool(tool: &mut Tool, common: &HashSet<String>, said: &mut HashSet<String>) {
    tool.input_schema = Arc::new(portable_input(&tool.input_schema));
    if let Some(out) = &tool.output_schema {
        tool.output_schema = Some(Arc::new(lean_output(out, common, said)));
    }
    // The title is said once, as the tool's own (clients prefer it to the annotation's).
    if let Some(a) = tool.annotations.as_mut()
        && a.title.is_some()
        && a.title == tool.title
    {
        a.title = None;
    }
}

/// What a client's model reads of the list every turn: `instructions`, then each tool's name,
/// description and compact `inputSchema`, in characters.
pub fn context_chars(instructions: &str, tools: &[Tool]) -> usize {
    let per_tool: usize = tools
        .iter()
        .map(|t| {
            let schema = serde_json::to_string(&*t.input_schema).unwrap_or_default();
            t.name.chars().count()
                + t.description.as_deref().map_or(0, |d| d.chars().count())
                + schema.chars().count()
        })
        .sum();
    instructions.chars().count() + per_tool
}

/// The descriptions of the fields every result carries ([`Common`]).
fn common_descriptions() -> HashSet<String> {
    let schema = derived::<Common>();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.values())
        .filter_map(|p| p.get("description").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// `schema`, an input schema as schemars derives it, in the form every client accepts.
pub(crate) fn portable_input(schema: &JsonObject) -> JsonObject {
    let mut root = Value::Object(schema.clone());
    let defs = match &mut root {
        Value::Object(map) => {
            map.remove("$schema");
            match map.remove("$defs") {
                Some(Value::Object(defs)) => defs,
                _ => Map::new(),
            }
        }
        _ => Map::new(),
    };
    portable(&mut root, &defs, 0);
    if let Some(Value::Object(props)) = root.get_mut("properties") {
        for name in SHARED_ARGUMENTS {
            if let Some(Value::Object(p)) = props.get_mut(name) {
                p.remove("description");
            }
        }
    }
    match root {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The rewrite of [`portable_input`] on one schema and everything under it. `defs` are the
/// root's shapes, put in place of each reference to them (none refers to itself; `depth`
/// bounds it anyway).
fn portable(schema: &mut Value, defs: &Map<String, Value>, depth: usize) {
    let Value::Object(map) = schema else {
        return;
    };
    without_null_branches(map);
    // After the branches: an `Option<Shape>` is a reference in a branch beside `null`.
    let shape = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name));
    if let Some(Value::Object(shape)) = shape {
        map.remove("$ref");
        for (k, v) in shape {
            map.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    map.remove("title");
    map.remove("format");
    // A doc comment's line breaks are the source's, not the words'.
    if let Some(Value::String(d)) = map.get_mut("description")
        && d.contains('\n')
    {
        *d = d.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    if map.get("default").is_some_and(Value::is_null) {
        map.remove("default");
    }
    // Absent is how an argument is left out: its type alone, never a type array.
    if let Some(Value::Array(mut types)) = map.get("type").filter(|t| t.is_array()).cloned() {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            map.insert("type".into(), types.remove(0));
        } else if !types.is_empty() {
            let branches = types.into_iter().map(|t| json!({ "type": t })).collect();
            map.remove("type");
            map.insert("anyOf".into(), Value::Array(branches));
        }
    }
    // A choice's own words are the argument's (an untagged enum's variant docs say it again).
    if map.contains_key("description") {
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get_mut(key) {
                for b in branches.iter_mut().filter_map(Value::as_object_mut) {
                    b.remove("description");
                }
            }
        }
    }
    if depth < 16 {
        for (key, v) in map.iter_mut() {
            match (key.as_str(), v) {
                ("properties", Value::Object(named)) => {
                    named
                        .values_mut()
                        .for_each(|v| portable(v, defs, depth + 1));
                }
                ("items" | "additionalProperties", v) => portable(v, defs, depth + 1),
                ("anyOf" | "oneOf" | "allOf", Value::Array(branches)) => {
                    branches
                        .iter_mut()
                        .for_each(|v| portable(v, defs, depth + 1));
                }
                _ => {}
            }
        }
    }
    enum_of_consts(map);
}

/// An `Option<T>` as schemars writes it (`anyOf: [T, {type: null}]`) as `T` alone: absent is
/// how an argument is left out.
fn without_null_branches(map: &mut JsonObject) {
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = map.get_mut(key) else {
            continue;
        };
        branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
        if branches.len() == 1
            && let Some(Value::Object(one)) = branches.pop()
        {
            map.remove(key);
            for (k, v) in one {
                map.entry(k).or_insert(v);
            }
        }
    }
}

/// A choice between constant strings (a Rust enum, each variant with its doc comment) as the
/// plain `enum` every client reads; the argument's own description says what each means.
fn enum_of_consts(map: &mut JsonObject) {
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = map.get(key) else {
            continue;
        };
        let consts: Option<Vec<Value>> = branches
            .iter()
            .map(|b| b.get("const").filter(|c| c.is_string()).cloned())
            .collect();
        if let Some(consts) = consts.filter(|c| !c.is_empty()) {
            map.remove(key);
            map.insert("type".into(), Value::String("string".into()));
            map.insert("enum".into(), Value::Array(consts));
        }
    }
}

/// `schema`, an output schema of [`derived`], without the descriptions said elsewhere: those
/// of the fields every result carries (`common`), and any an earlier tool's gave (`said`).
fn lean_output(
    schema: &JsonObject,
    common: &HashSet<String>,
    said: &mut HashSet<String>,
) -> JsonObject {
    let mut root = Value::Object(schema.clone());
    if let Some(Value::Object(props)) = root.get_mut("properties") {
        for p in props.values_mut() {
            if let Value::Object(p) = p
                && p.get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| common.contains(d))
            {
                p.remove("description");
            }
        }
    }
    unsaid(&mut root, said);
    match root {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// Drops every description under `schema` that is in `said`, and adds the others to it.
fn unsaid(schema: &mut Value, said: &mut HashSet<String>) {
    match schema {
        Value::Object(map) => {
            let repeated = map
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| !said.insert(d.to_owned()));
            if repeated {
                map.remove("description");
            }
            for (key, v) in map.iter_mut() {
                // A property's name is not a schema: its value is.
                if key == "properties"
                    && let Value::Object(named) = v
                {
                    named.values_mut().for_each(|v| unsaid(v, said));
                } else if key != "description" {
                    unsaid(v, said);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| unsaid(v, said)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use schemars::JsonSchema;

    /// What the MCP Inspector flags in a schema (its `schemaLint`): a `type` array, a `$ref`,
    /// a node that constrains nothing, a bare boolean where a schema object belongs.
    fn unportable(schema: &Value, path: &str, out: &mut Vec<String>) {
        const CONSTRAINS: [&str; 12] = [
            "type",
            "enum",
            "const",
            "minimum",
            "maximum",
            "pattern",
            "items",
            "properties",
            "required",
            "anyOf",
            "oneOf",
            "allOf",
        ];
        let Value::Object(map) = schema else {
            out.push(format!("{path}: not a schema object"));
            return;
        };
        if map.get("type").is_some_and(Value::is_array) {
            out.push(format!("{path}: type array"));
        }
        for key in ["$ref", "$defs", "title", "format", "$schema"] {
            if map.contains_key(key) {
                out.push(format!("{path}: {key}"));
            }
        }
        if !CONSTRAINS.iter().any(|k| map.contains_key(*k)) {
            out.push(format!("{path}: constrains nothing"));
        }
        for (key, v) in map {
            match (key.as_str(), v) {
                ("properties", Value::Object(named)) => {
                    for (name, v) in named {
                        unportable(v, &format!("{path}.{name}"), out);
                    }
                }
                ("items", v) => unportable(v, &format!("{path}[]"), out),
                ("additionalProperties", v) if !v.is_boolean() => {
                    unportable(v, &format!("{path}{{}}"), out);
                }
                ("anyOf" | "oneOf" | "allOf", Value::Array(branches)) => {
                    for (i, v) in branches.iter().enumerate() {
                        unportable(v, &format!("{path}.{key}[{i}]"), out);
                    }
                }
                _ => {}
            }
        }
    }

    fn tools() -> Vec<Tool> {
        let dir = tempfile::tempdir().unwrap();
        let settings = trapdesk_core::config::Settings {
            data_dir: dir.path().to_owned(),
            ..Default::default()
        };
        TrapdeskMcp::new(trapdesk_core::session::Session::new(settings, false))
            .tool_router
            .list_all()
    }

    #[test]
    fn every_input_schema_is_portable() {
        for t in tools() {
            let schema = Value::Object((*t.input_schema).clone());
            let mut found = Vec::new();
            unportable(&schema, "", &mut found);
            assert!(found.is_empty(), "{}: {found:?} in {schema}", t.name);
            assert_eq!(schema["additionalProperties"], false, "{}", t.name);
            assert!(
                schema["properties"]["traposId"]
                    .get("description")
                    .is_none()
            );
        }
    }

    /// Ranges and choices stay in the schema: arguments are checked against them.
    #[test]
    fn portable_input_keeps_ranges_enums_and_required() {
        #[derive(serde::Deserialize, JsonSchema)]
        #[serde(rename_all = "lowercase")]
        #[allow(dead_code)]
        enum Mode {
            /// the first
            One,
            /// the second
            Two,
        }
        #[derive(serde::Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        #[allow(dead_code)]
        struct Args {
            /// where
            trapos_id: String,
            /// how many
            #[schemars(range(min = 1, max = 500))]
            limit: Option<u64>,
            /// which
            mode: Option<Mode>,
            /// these
            names: Option<Vec<String>>,
        }
        let derived = rmcp::handler::server::common::schema_for_type::<Args>();
        let s = Value::Object(portable_input(&derived));
        let p = &s["properties"];
        assert_eq!(
            p["limit"],
            json!({"type": "integer", "minimum": 1, "maximum": 500, "description": "how many"})
        );
        assert_eq!(p["mode"]["type"], "string");
        assert_eq!(p["mode"]["enum"], json!(["one", "two"]));
        assert_eq!(p["mode"]["description"], "which");
        assert_eq!(
            p["names"],
            json!({"type": "array", "items": {"type": "string"}, "description": "these"})
        );
        assert_eq!(p["traposId"], json!({"type": "string"}));
        assert_eq!(s["required"], json!(["traposId"]));
        let mut found = Vec::new();
        unportable(&s, "", &mut found);
        assert!(found.is_empty(), "{found:?} in {s}");
    }

    /// What every result carries is described once (in the instructions), and a description
    /// is in one output schema only.
    #[test]
    fn output_schemas_say_each_thing_once() {
        let mut seen = HashSet::new();
        for t in tools() {
            let schema = Value::Object((*t.output_schema.unwrap()).clone());
            assert!(schema["properties"]["error"].get("description").is_none());
            let mut stack = vec![&schema];
            while let Some(v) = stack.pop() {
                match v {
                    Value::Object(map) => {
                        if let Some(Value::String(d)) = map.get("description") {
                            assert!(seen.insert(d.clone()), "{}: {d}", t.name);
                        }
                        stack.extend(
                            map.iter()
                                .filter(|(k, _)| *k != "description")
                                .map(|(_, v)| v),
                        );
                    }
                    Value::Array(items) => stack.extend(items),
                    _ => {}
                }
            }
        }
    }
}

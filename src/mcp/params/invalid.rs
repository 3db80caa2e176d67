//! Arguments that fail a tool's input schema: the `invalid_arguments` tool result, naming
//! the field and what was expected.

/// The result for arguments that fail a tool's input schema: an `isError` tool result (not a
/// JSON-RPC error) that names the field and what was expected, so an agent can correct its
/// call (docs/mcp.md, "Errors").
pub(crate) fn invalid_arguments(
    tool: &str,
    schema: Option<&serde_json::Map<String, serde_json::Value>>,
    args: &serde_json::Map<String, serde_json::Value>,
    detail: &str,
) -> super::super::Outcome {
    // An argument the tool does not take is named first, even beside a missing one: it is
    // most often the missing one misspelt (`timeOut` for `timeoutMs`).
    let unknown = detail
        .starts_with("unknown field `")
        .then(|| backticked(detail).map(|f| (f, String::new())))
        .flatten();
    let (field, expected) = unknown
        .or_else(|| schema.and_then(|s| schema_problem(s, args)))
        .or_else(|| backticked(detail).map(|f| (f, String::new())))
        .unwrap_or_default();
    let message = if field.is_empty() {
        format!("{tool}: invalid arguments: {detail}")
    } else if expected.is_empty() {
        format!("{tool}: invalid argument {field}: {detail}")
    } else {
        format!("{tool}: invalid argument {field}: {expected} ({detail})")
    };
    invalid_field(&field, &message)
}

/// An `invalid_arguments` failure naming `field`.
pub(crate) fn invalid_field(field: &str, message: &str) -> super::super::Outcome {
    let mut extra = serde_json::Map::new();
    if !field.is_empty() {
        extra.insert("field".into(), serde_json::Value::String(field.to_owned()));
    }
    super::super::Outcome::failure("invalid_arguments", message, extra)
}

/// serde names a missing or unknown field in backticks: "missing field `code`", "unknown
/// field `timeOut`, expected one of `traposId`, `code`, `timeoutMs`".
fn backticked(detail: &str) -> Option<String> {
    let rest = detail
        .strip_prefix("missing field `")
        .or_else(|| detail.strip_prefix("unknown field `"))?;
    rest.split('`').next().map(str::to_owned)
}

/// The first argument that does not match the schema: a missing required field, or a present
/// one of the wrong JSON type. Returns the field and what it should be.
fn schema_problem(
    schema: &serde_json::Map<String, serde_json::Value>,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Option<(String, String)> {
    use serde_json::Value;
    let props = schema.get("properties").and_then(Value::as_object)?;
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !args.contains_key(name) {
                return Some((name.to_owned(), "it is required".to_owned()));
            }
        }
    }
    for (name, value) in args {
        let Some(prop) = props.get(name) else {
            continue;
        };
        let types: Vec<&str> = match prop.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => match prop.get("enum").and_then(Value::as_array) {
                Some(options) if !options.contains(value) => {
                    let list: Vec<String> = options.iter().map(Value::to_string).collect();
                    return Some((name.clone(), format!("expected one of {}", list.join(", "))));
                }
                _ => continue,
            },
        };
        let matches = |t: &str| match t {
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            "null" => value.is_null(),
            _ => true,
        };
        if !types.iter().any(|t| matches(t)) {
            let want: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
            let mut expected = format!("expected {}", want.join(" or "));
            if types.contains(&"integer")
                && prop.get("minimum").and_then(Value::as_f64) == Some(0.0)
            {
                expected = "expected a non-negative integer".to_owned();
            }
            return Some((name.clone(), format!("{expected}, got {value}")));
        }
        if let Some(expected) = super::range::range_problem(name, prop, value) {
            return Some((name.clone(), expected));
        }
    }
    None
}

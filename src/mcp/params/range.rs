//! Numeric ranges. Each bounded argument declares its range once, on its field
//! (`#[schemars(range(min = .., max = ..))]`), which the input schema shows as `minimum` and
//! `maximum`; the check here reads that same schema, so every tool refuses a value out of
//! range the same way (`invalid_arguments` naming the field and the range) and none clamps
//! one silently (`limit: 0` and `limit: 501` once ran as 1 and 500).

use serde_json::{Map, Value};

/// The first argument whose number lies outside its schema's `minimum`/`maximum`, as the
/// `invalid_arguments` result naming it and the range; `None` when all are in range.
pub(crate) fn out_of_range(
    tool: &str,
    schema: &Map<String, Value>,
    args: &Map<String, Value>,
) -> Option<super::super::Outcome> {
    let props = schema.get("properties").and_then(Value::as_object)?;
    args.iter().find_map(|(name, value)| {
        let expected = range_problem(name, props.get(name)?, value)?;
        let message = format!("{tool}: invalid argument {name}: {expected}");
        Some(super::invalid_field(name, &message))
    })
}

/// What `value` should be when it is a number outside the range `prop` declares
/// ("expected 1 to 500, got 0"); `None` when it is in range or not a number.
pub(super) fn range_problem(name: &str, prop: &Value, value: &Value) -> Option<String> {
    let n = value.as_f64()?;
    let min = prop.get("minimum").and_then(Value::as_f64);
    let max = prop.get("maximum").and_then(Value::as_f64);
    if min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m) {
        return None;
    }
    // Milliseconds are said as such: `timeoutMs`, `waitMs`.
    let unit = if name.ends_with("Ms") {
        " milliseconds"
    } else {
        ""
    };
    let range = match (min, max) {
        (Some(lo), Some(hi)) => format!("expected {lo} to {hi}{unit}"),
        (Some(lo), None) => format!("expected at least {lo}{unit}"),
        (None, Some(hi)) => format!("expected at most {hi}{unit}"),
        (None, None) => return None,
    };
    Some(format!("{range}, got {value}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        let v = json!({"properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": 500},
            "timeoutMs": {"type": "integer", "minimum": 1, "maximum": 600000},
            "length": {"type": "integer", "minimum": 1},
            "path": {"type": "string"}
        }});
        v.as_object().cloned().unwrap_or_default()
    }

    fn refused(args: Value) -> Option<(String, String)> {
        let args = args.as_object().cloned().unwrap_or_default();
        out_of_range("t", &schema(), &args).map(|o| {
            let field = o.data["field"].as_str().unwrap_or_default().to_owned();
            (field, o.line)
        })
    }

    #[test]
    fn a_value_out_of_its_declared_range_is_named_with_the_range() {
        for n in [0, 501] {
            let (field, line) = refused(json!({"limit": n})).unwrap_or_default();
            assert_eq!(field, "limit");
            assert!(
                line.contains(&format!(
                    "t: invalid argument limit: expected 1 to 500, got {n}"
                )),
                "{line}"
            );
        }
        let (_, line) = refused(json!({"timeoutMs": 0})).unwrap_or_default();
        assert!(
            line.contains("expected 1 to 600000 milliseconds, got 0"),
            "{line}"
        );
        let (_, line) = refused(json!({"length": 0})).unwrap_or_default();
        assert!(line.contains("expected at least 1, got 0"), "{line}");
    }

    #[test]
    fn values_in_range_and_other_arguments_pass() {
        assert!(refused(json!({"limit": 1, "timeoutMs": 600000, "path": "x"})).is_none());
        assert!(refused(json!({"limit": 500, "length": 99999999})).is_none());
        assert!(refused(json!({"limit": "x", "other": 0})).is_none());
    }
}

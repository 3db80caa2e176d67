//! Turning tool outcomes into MCP results that fit an agent's context.
//!
//! Every result has the same two parts: `structuredContent` (the data) and one text block
//! whose first line says what happened, followed by the same data as compact JSON. The JSON
//! is repeated in the text because the specification asks for it (clients that ignore
//! `structuredContent` still see everything), and because of that the budget counts it twice.
//!
//! Claude Code refuses tool results over about 25,000 tokens counting text and structured
//! content together, so a result is cut to `max_result_bytes` here: captured `output` keeps
//! its head and tail with a marker in the middle that says how much was cut and how to read
//! the rest (`computer-output` with the `requestId`); lists that are still too long lose
//! their oldest items and say so with a `truncated` flag.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

/// What one tool call produced, before sizing.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// One line for the text block; the reason first when `is_error`.
    pub line: String,
    /// The structured content (always a JSON object).
    pub data: Value,
    /// Whether this is a failed call (`isError: true`).
    pub is_error: bool,
}

impl Outcome {
    /// A successful call.
    pub fn ok(line: impl Into<String>, data: Value) -> Self {
        Outcome {
            line: line.into(),
            data,
            is_error: false,
        }
    }

    /// A failed call.
    pub fn error(line: impl Into<String>, data: Value) -> Self {
        Outcome {
            line: line.into(),
            data,
            is_error: true,
        }
    }

    /// A failure without any payload from a computer: `{ok:false, error:{code,message}}` plus
    /// whatever `extra` fields say where it happened.
    pub fn failure(code: &str, message: &str, extra: Map<String, Value>) -> Self {
        let mut data = Map::new();
        data.insert("ok".into(), Value::Bool(false));
        data.insert("error".into(), json!({"code": code, "message": message}));
        data.extend(extra);
        Outcome::error(format!("{code}: {message}"), Value::Object(data))
    }

    /// Sizes the outcome to `budget` bytes and builds the MCP result.
    pub fn into_result(self, budget: usize) -> CallToolResult {
        let line = crate::session::summary::one_line(&self.line, 200);
        let mut max = json_budget(budget, &line);
        let mut data = self.data;
        // The text repeats the JSON, escaped once more inside the envelope, so the first
        // estimate can be a little high: measure, and shrink in proportion until it fits.
        for _ in 0..6 {
            fit(&mut data, max);
            let result = build(&line, data.clone(), self.is_error);
            let total = serde_json::to_string(&result).map_or(0, |s| s.len());
            if total <= budget || max < 256 {
                return result;
            }
            max = (max as u128 * budget as u128 / total as u128) as usize;
            max = max.saturating_sub(128);
        }
        build(&line, data, self.is_error)
    }
}

fn build(line: &str, data: Value, is_error: bool) -> CallToolResult {
    let text = format!("{line}\n\n{data}");
    let mut result = if is_error {
        CallToolResult::structured_error(data)
    } else {
        CallToolResult::structured(data)
    };
    result.content = vec![ContentBlock::text(text)];
    result
}

/// Bytes the structured content may take: the text block repeats it, so half of what is left
/// after the first line and some slack for the envelope.
pub fn json_budget(budget: usize, line: &str) -> usize {
    budget.saturating_sub(line.len() + 64) / 2
}

/// Cuts `text` to at most `max` bytes by keeping its head and tail around `marker(cut)`, where
/// `cut` is the number of bytes left out. Cuts fall on character boundaries.
pub fn head_tail(text: &str, max: usize, marker: impl Fn(usize) -> String) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let probe = marker(text.len());
    let keep = max.saturating_sub(probe.len());
    let mut head_end = keep / 2;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - (keep - keep / 2);
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let cut = tail_start - head_end;
    format!(
        "{}{}{}",
        &text[..head_end],
        marker(cut),
        &text[tail_start..]
    )
}

/// The marker put where captured output was cut.
pub fn output_marker(cut: usize, trapos_id: &str, request_id: &str) -> String {
    format!(
        "\n[… {cut} bytes of output cut here; read all of it with computer-output \
         {{\"traposId\":\"{trapos_id}\",\"requestId\":\"{request_id}\"}} …]\n"
    )
}

fn size(v: &Value) -> usize {
    serde_json::to_string(v).map(|s| s.len()).unwrap_or(0)
}

/// Shrinks `data` in place until its JSON is at most `max` bytes: first the captured output
/// (head and tail kept), then the longest list (oldest items dropped), then any long string.
pub fn fit(data: &mut Value, max: usize) {
    let over = |d: &Value| size(d).saturating_sub(max);
    if over(data) == 0 {
        return;
    }
    let ids = |d: &Value, k: &str| {
        d.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (trapos_id, request_id) = (ids(data, "traposId"), ids(data, "requestId"));
    for key in ["output", "traceback"] {
        let excess = over(data);
        if excess == 0 {
            return;
        }
        if let Some(Value::String(text)) = data.get_mut(key) {
            // Escaping makes the JSON of the text longer than the text (`\n` is two bytes):
            // scale the room left for it by that ratio, and aim a little lower.
            let json_len = size(&Value::String(text.clone())).max(1);
            let room = json_len.saturating_sub(excess + 64);
            let target = (room as u128 * text.len() as u128 / json_len as u128) as usize;
            *text = head_tail(text, target, |cut| {
                output_marker(cut, &trapos_id, &request_id)
            });
            if key == "output"
                && let Some(obj) = data.as_object_mut()
            {
                obj.insert("output_truncated".into(), Value::Bool(true));
            }
        }
    }
    // Lists: drop the oldest (first) items of the longest list until it fits.
    for _ in 0..64 {
        if over(data) == 0 {
            return;
        }
        let Some(obj) = data.as_object_mut() else {
            return;
        };
        let longest = obj
            .iter()
            .filter_map(|(k, v)| v.as_array().map(|a| (k.clone(), size(v), a.len())))
            .filter(|(_, _, n)| *n > 0)
            .max_by_key(|(_, s, _)| *s);
        let Some((key, _, n)) = longest else { break };
        if let Some(Value::Array(items)) = obj.get_mut(&key) {
            let drop = (n / 4).max(1);
            items.drain(..drop);
        }
        obj.insert(format!("{key}Truncated"), Value::Bool(true));
    }
    // Last resort: cut every remaining long string.
    for _ in 0..8 {
        let excess = over(data);
        if excess == 0 {
            return;
        }
        cut_longest_string(data, excess);
    }
}

fn cut_longest_string(v: &mut Value, excess: usize) {
    fn longest(v: &mut Value) -> Option<&mut String> {
        match v {
            Value::String(s) => Some(s),
            Value::Array(items) => items.iter_mut().filter_map(longest).max_by_key(|s| s.len()),
            Value::Object(map) => map.values_mut().filter_map(longest).max_by_key(|s| s.len()),
            _ => None,
        }
    }
    if let Some(s) = longest(v) {
        let target = s.len().saturating_sub(excess + 32);
        *s = head_tail(s, target, |cut| format!("[… {cut} bytes cut …]"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_survive_with_a_marker() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let cut = head_tail(&text, 200, |n| format!("[{n} cut]"));
        assert!(cut.len() <= 200, "{}", cut.len());
        assert!(cut.starts_with("line 0\n"));
        assert!(cut.ends_with("line 999\n"));
        assert!(cut.contains(" cut]"));
    }

    #[test]
    fn results_fit_the_budget() {
        let out = "é".repeat(50_000);
        let data = json!({"ok": true, "output": out, "traposId": "7:m", "requestId": "h-1",
            "returns": (0..2000).map(|i| json!({"type":"number","value":i})).collect::<Vec<_>>()});
        let r = Outcome::ok("done", data).into_result(24 * 1024);
        let total = serde_json::to_string(&r)
            .map(|s| s.len())
            .unwrap_or(usize::MAX);
        assert!(total < 24 * 1024, "{total}");
    }
}

//! Turning tool outcomes into MCP results that fit an agent's context.
//!
//! Every result has the same two parts: `structuredContent` (the data) and one text block
//! whose first line says what happened, followed by the same data as compact JSON. The JSON
//! is repeated in the text because the specification asks for it (clients that ignore
//! `structuredContent` still see everything), and because of that the budget counts it twice.
//! A list whose every field fits a table (`probe-computers`) gives the table instead of the
//! JSON ([`Outcome::with_text`]): just as complete for a client that reads only the text,
//! easier for a person to read, and a third of the bytes, so a page holds more.
//!
//! A result is cut to `max_result_bytes` by [`super::cut`] (how, and why that number).

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use super::cut::{fit, holds_cut, json_len};

/// What one tool call produced, before sizing.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// One line for the text block; the reason first when `is_error`.
    pub line: String,
    /// The structured content (always a JSON object).
    pub data: Value,
    /// Whether this is a failed call (`isError: true`).
    pub is_error: bool,
    /// What the text block holds under the first line, when not the JSON again: a rendering
    /// of the same data that leaves nothing out (see the module docs).
    pub text: Option<String>,
}

impl Outcome {
    /// A successful call.
    pub fn ok(line: impl Into<String>, data: Value) -> Self {
        Outcome {
            line: line.into(),
            data,
            is_error: false,
            text: None,
        }
    }

    /// A failed call.
    pub fn error(line: impl Into<String>, data: Value) -> Self {
        Outcome {
            line: line.into(),
            data,
            is_error: true,
            text: None,
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

    /// The text block shows `text` under the first line instead of the JSON. The caller sizes
    /// such a result itself (`probe-computers` ends its page early); should it still be over
    /// the budget, the text goes back to the JSON and the usual sizing applies.
    pub fn with_text(mut self, text: String) -> Self {
        self.text = Some(text);
        self
    }

    /// The MCP result as it is, without sizing: for a caller that sized the outcome itself
    /// and measures the result it will send (one serialization, no copy).
    pub fn into_unsized(self) -> CallToolResult {
        let line = crate::session::summary::one_line(&self.line, 200);
        build(&line, self.text.as_deref(), self.data, self.is_error)
    }

    /// Sizes the outcome to `budget` bytes and builds the MCP result.
    pub fn into_result(self, budget: usize) -> CallToolResult {
        let mut line = crate::session::summary::one_line(&self.line, 200);
        let mut data = self.data;
        if let Some(text) = &self.text {
            let mut result = build(&line, Some(text), data, self.is_error);
            if json_len(&result) <= budget {
                return result;
            }
            data = result.structured_content.take().unwrap_or(Value::Null);
        }
        let mut max = json_budget(budget, &line);
        let cut_before = data.get("output_truncated").and_then(Value::as_bool) == Some(true);
        // `fit` changes nothing in data that fits and holds no output the computer cut: then
        // the trial cut on a copy can be skipped (a 24 KiB probe page paid a deep copy and a
        // serialization for it).
        let precut = matches!(data.get("output"), Some(Value::String(t)) if holds_cut(t));
        if !cut_before && !line.contains("computer-output") && (precut || json_len(&data) > max) {
            // Cut here, the first line says so too.
            let mut probe = data.clone();
            fit(&mut probe, max);
            if probe.get("output_truncated").and_then(Value::as_bool) == Some(true) {
                line.push_str("; output cut to its head and tail, all of it with computer-output");
                max = json_budget(budget, &line);
            }
        }
        // The text repeats the JSON, escaped once more inside the envelope, so the first
        // estimate can be a little high: measure, and shrink in proportion until it fits.
        for _ in 0..6 {
            fit(&mut data, max);
            let mut result = build(&line, None, data, self.is_error);
            let total = json_len(&result);
            if total <= budget || max < 256 {
                return result;
            }
            data = result.structured_content.take().unwrap_or(Value::Null);
            max = (max as u128 * budget as u128 / total as u128) as usize;
            max = max.saturating_sub(128);
        }
        build(&line, None, data, self.is_error)
    }

    /// Bytes of the MCP result as it is, before any sizing.
    pub fn unfitted_size(&self) -> usize {
        let line = crate::session::summary::one_line(&self.line, 200);
        let result = build(
            &line,
            self.text.as_deref(),
            self.data.clone(),
            self.is_error,
        );
        json_len(&result)
    }
}

fn build(line: &str, text: Option<&str>, data: Value, is_error: bool) -> CallToolResult {
    let text = match text {
        Some(t) => format!("{line}\n\n{t}"),
        None => format!("{line}\n\n{data}"),
    };
    // Made empty and filled in: the SDK's constructors serialize the data for a text block of
    // their own, which this one replaces (a wasted serialization of up to 24 KiB per call).
    let mut result = if is_error {
        CallToolResult::structured_error(Value::Null)
    } else {
        CallToolResult::structured(Value::Null)
    };
    result.structured_content = Some(data);
    result.content = vec![ContentBlock::text(text)];
    result
}

/// Bytes the structured content may take: the text block repeats it, so half of what is left
/// after the first line and some slack for the envelope.
pub fn json_budget(budget: usize, line: &str) -> usize {
    budget.saturating_sub(line.len() + 64) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

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

//! Turning tool outcomes into MCP results that fit an agent's context.
//!
//! Every result has the same two parts: `structuredContent` (the data) and one text block an
//! agent reads: a first line that says what happened (and whether it was cut, whether more
//! follows, the cursor and the next step), then what matters in it as plain text (`render`):
//! the returned values, a listing, log or screen rows; on a failure the output, the error
//! output and the traceback too. Bulk (a file's content, output) is sent once, in
//! `structuredContent` on success (what Claude Code and Codex give the model); an `isError`
//! text is whole on its own (Claude Code gives the model the text of a failure).
//! A list whose every field fits a table (`probe-computers`) gives the table instead
//! ([`Outcome::with_text`]).
//!
//! Field names of `structuredContent` are camelCase, by the types that make the data: the
//! tools' own results, and the computer's answers as `wire` reads them from their snake_case
//! wire names.
//!
//! The budget, `max_result_bytes`, bounds the larger of the two blocks, not their sum: the
//! data is cut to it by [`super::cut`] (how, and why that number), and the text, made from
//! the data that was kept, is cut on its own should it still be longer.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use super::cut::{fit, head_tail, holds_cut, json_len};
use super::render::render;

/// Bytes kept for what surrounds the structured content in the result (`isError`, the
/// envelope's keys), so that the data block alone stays inside the budget.
const ENVELOPE: usize = 256;

/// What one tool call produced, before sizing.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// One line for the text block; the reason first when `is_error`.
    pub line: String,
    /// The structured content (always a JSON object).
    pub data: Value,
    /// Whether this is a failed call (`isError: true`).
    pub is_error: bool,
    /// What the text block holds under the first line, when not `render`'s text: a
    /// rendering of the same data that leaves nothing out (see the module docs).
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
    /// A computer's `bad_request` (a request it found malformed) reads as `invalid_arguments`:
    /// one code for bad arguments everywhere (docs/mcp.md, "Errors").
    pub fn failure(code: &str, message: &str, extra: Map<String, Value>) -> Self {
        let code = agent_code(code);
        let mut data = Map::new();
        data.insert("ok".into(), Value::Bool(false));
        data.insert("error".into(), json!({"code": code, "message": message}));
        data.extend(extra);
        Outcome::error(format!("{code}: {message}"), Value::Object(data))
    }

    /// The text block shows `text` under the first line instead of `render`'s. The caller
    /// sizes such a result itself (`probe-computers` ends its page early); should it still
    /// be over the budget, the usual sizing applies.
    pub fn with_text(mut self, text: String) -> Self {
        self.text = Some(text);
        self
    }

    /// The MCP result as it is, without sizing: for a caller that sized the outcome itself
    /// and measures the result it will send (one serialization, no copy).
    pub fn into_unsized(self) -> CallToolResult {
        let line = trapdesk_core::session::summary::one_line(&self.line, 200);
        let mut data = self.data;
        settle(&mut data, self.is_error);
        let line = said_cuts(line, &data);
        let text = self.text.unwrap_or_else(|| render(&data, self.is_error));
        build(&line, &text, data, self.is_error)
    }

    /// Sizes the outcome to `budget` bytes and builds the MCP result.
    pub fn into_result(self, budget: usize) -> CallToolResult {
        let mut line = trapdesk_core::session::summary::one_line(&self.line, 200);
        let mut data = self.data;
        settle(&mut data, self.is_error);
        line = said_cuts(line, &data);
        if let Some(text) = &self.text {
            let result = build(&line, text, data.clone(), self.is_error);
            if result_size(&result) <= budget {
                return result;
            }
        }
        let mut max = json_budget(budget, &line);
        let cut_before = data.get("outputTruncated").and_then(Value::as_bool) == Some(true);
        // `fit` changes nothing in data that fits and holds no output the computer cut: then
        // the trial cut on a copy can be skipped (a 24 KiB probe page paid a deep copy and a
        // serialization for it), and so can `fit` itself and the measuring around it (most
        // results: an exec-lua `return 1` measured its data three times to change nothing).
        let precut = matches!(data.get("output"), Some(Value::String(t)) if holds_cut(t));
        let len = json_len(&data);
        if !precut && len <= max {
            let text = fit_text(&line, render(&data, self.is_error), budget);
            return build(&line, &text, data, self.is_error);
        }
        if !cut_before && !line.contains("computer-output") && (precut || len > max) {
            // Cut here, the first line says so too.
            let mut probe = data.clone();
            fit(&mut probe, max);
            if probe.get("outputTruncated").and_then(Value::as_bool) == Some(true) {
                line.push_str("; output cut to its head and tail, all of it with computer-output");
                max = json_budget(budget, &line);
            }
        }
        // `fit` aims a little high or low with escaping: measure, and shrink until it fits.
        for _ in 0..6 {
            fit(&mut data, max);
            let total = json_len(&data) + ENVELOPE;
            if total <= budget || max < 256 {
                break;
            }
            max = (max as u128 * budget as u128 / total as u128) as usize;
            max = max.saturating_sub(128);
        }
        line = said_cuts(line, &data);
        let text = render(&data, self.is_error);
        let text = fit_text(&line, text, budget);
        build(&line, &text, data, self.is_error)
    }

    /// Bytes of the MCP result as [`result_size`] counts them, before any sizing: an outcome
    /// of at most `budget` is left as it is by [`Outcome::into_result`].
    pub fn unfitted_size(&self) -> usize {
        result_size(&self.clone().into_unsized())
    }
}

/// `line` with what was cut of the returned values said in it, as the data says it: a table
/// the computer cut at its first 1,000 entries (`truncated`), a value cut to fit the result
/// (`cut`). The text shows such a value as it came, which alone would read as whole.
fn said_cuts(mut line: String, data: &Value) -> String {
    let Some(returns) = data.get("returns").and_then(Value::as_array) else {
        return line;
    };
    let has = |k: &str| returns.iter().any(|d| d.get(k) == Some(&Value::Bool(true)));
    if has("truncated") && !line.contains("(truncated:") {
        line.push_str("; a returned table was cut at its first 1,000 entries (truncated: true)");
    }
    if has("cut") && !line.contains("(cut:") {
        line.push_str("; a returned value was cut to fit the result (cut: true)");
    }
    line
}

/// A failure's code as an agent reads it: the computer's `bad_request` (a request it found
/// malformed) is `invalid_arguments`, the one code for bad arguments (docs/mcp.md, "Errors").
pub fn agent_code(code: &str) -> &str {
    match code {
        "bad_request" | "bad_arguments" => "invalid_arguments",
        code => code,
    }
}

/// What the budget bounds in a result: the larger of its two blocks, never their sum. The
/// structured content counts with the envelope and the first line (the room
/// [`json_budget`] leaves it), so that what this measures within the budget is what
/// [`Outcome::into_result`] leaves uncut.
pub fn result_size(result: &CallToolResult) -> usize {
    let data = result.structured_content.as_ref().map_or(0, json_len);
    result_size_with(result, data)
}

/// [`result_size`] and the structured content as JSON text, made once: for a tool that keeps
/// that text too (`probe-computers` hands it to the session's record of the call).
pub fn result_size_and_json(result: &CallToolResult) -> (usize, std::sync::Arc<str>) {
    let json: std::sync::Arc<str> = result
        .structured_content
        .as_ref()
        .map_or_else(|| "null".into(), |v| v.to_string().into());
    let data = if result.structured_content.is_some() {
        json.len()
    } else {
        0
    };
    (result_size_with(result, data), json)
}

/// [`result_size`] for structured content of `data` bytes.
fn result_size_with(result: &CallToolResult, data: usize) -> usize {
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.as_str());
    let (mut len, mut line) = (0, 0);
    for t in text {
        len += t.len();
        if line == 0 {
            line = t.find('\n').unwrap_or(t.len());
        }
    }
    let data = data + ENVELOPE + line;
    len.max(data)
}

/// The text block cut to `budget` bytes, should the rendering of kept data still be longer:
/// its head and tail stay, with a marker that says the whole is in `structuredContent`.
fn fit_text(line: &str, text: String, budget: usize) -> String {
    let room = budget.saturating_sub(line.len() + 2);
    if text.len() <= room {
        return text;
    }
    head_tail(&text, room, |cut| {
        format!(
            "\n[… {cut} bytes of this text cut here to fit the result; all of it is in structuredContent …]\n"
        )
    })
}

fn build(line: &str, text: &str, data: Value, is_error: bool) -> CallToolResult {
    let text = if text.is_empty() {
        line.to_owned()
    } else {
        format!("{line}\n\n{text}")
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

/// Bytes the structured content may take: the budget less the first line (said in the text
/// block, which may be about as long as the data) and the envelope.
pub fn json_budget(budget: usize, line: &str) -> usize {
    budget.saturating_sub(line.len() + ENVELOPE)
}

/// What every result's data gets, whichever tool made it: `ok` (the one field every output
/// schema requires, so that a failure fits its tool's schema as a success does).
fn settle(data: &mut Value, is_error: bool) {
    if let Value::Object(map) = data {
        map.entry("ok").or_insert(Value::Bool(!is_error));
        one_error_shape(map);
    }
}

/// A computer's file answer says a refusal as `error: "File exists: /a"` with `code: "exists"`
/// beside it; every other failure as `error: {code, message}`. One shape for an agent: the code
/// moves into `error`. (A chunk's own Lua error keeps `error` as the message it raised, with
/// `traceback` beside it: it has no code, and it is the program's, not the host's.)
fn one_error_shape(map: &mut Map<String, Value>) {
    let Some(Value::String(code)) = map.get("code") else {
        return;
    };
    if !matches!(map.get("error"), Some(Value::String(_))) {
        return;
    }
    let code = agent_code(code).to_owned();
    map.remove("code");
    if let Some(Value::String(message)) = map.remove("error") {
        map.insert("error".into(), json!({"code": code, "message": message}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: &CallToolResult) -> String {
        r.content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default()
    }

    #[test]
    fn results_fit_the_budget() {
        let out = "é".repeat(50_000);
        let data = json!({"ok": true, "output": out, "traposId": "7:m", "requestId": "h-1",
            "returns": (0..2000).map(|i| json!({"type":"number","value":i})).collect::<Vec<_>>()});
        let r = Outcome::ok("done", data).into_result(24 * 1024);
        assert!(result_size(&r) <= 24 * 1024, "{}", result_size(&r));
        let data = json_len(&r.structured_content);
        assert!(data + ENVELOPE <= 24 * 1024, "{data}");
        assert!(text(&r).len() <= 24 * 1024, "{}", text(&r).len());
    }

    /// The text block is a summary an agent reads, never the JSON again; the data is
    /// camelCase as the computer's answer is passed on, the returned table's own keys untouched.
    #[test]
    fn the_text_says_what_returned_and_the_output_not_the_json() {
        let wire = json!({"ok": false, "error": "exec:1: boom", "n": 1,
            "traceback": "exec:1: boom\nstack traceback:\n\t[C]: in function 'error'",
            "output": "a\nbad\n", "error_output": "bad\n", "output_truncated": false,
            "duration_ms": 3, "returns": [{"type": "table", "value": {"my_key": 1}}]});
        let wire = wire.as_object().cloned().expect("an object");
        let kind = trapdesk_proto::protocol::Kind::ExecLua;
        let data = Value::Object(super::super::wire::passed_on(kind, wire).expect("reads"));
        let r = Outcome::error("Lua failed: exec:1: boom", data).into_result(24 * 1024);
        let t = text(&r);
        assert!(
            t.starts_with("Lua failed: exec:1: boom\n\n[returned]\n{\"my_key\":1}\n"),
            "{t}"
        );
        assert!(
            t.contains("[output]\na\nbad\n\n[error output]\nbad\n"),
            "{t}"
        );
        assert!(
            t.contains("[traceback]\nexec:1: boom\nstack traceback:"),
            "{t}"
        );
        assert!(!t.contains("\"ok\""), "{t}");
        let d = r.structured_content.unwrap_or_default();
        assert_eq!(d["durationMs"], 3);
        assert_eq!(d["outputTruncated"], false);
        assert_eq!(d["errorOutput"], "bad\n");
        assert!(d.get("duration_ms").is_none());
        assert_eq!(d["returns"][0]["value"]["my_key"], 1);
    }

    /// The computer's `bad_request` reads as the one code for bad arguments.
    #[test]
    fn a_bad_request_is_invalid_arguments() {
        let o = Outcome::failure("bad_request", "offset must be a whole number", Map::new());
        assert_eq!(o.data["error"]["code"], "invalid_arguments");
        assert!(o.line.starts_with("invalid_arguments: "), "{}", o.line);
    }

    #[test]
    fn a_file_refusal_has_the_one_error_shape() {
        let mut d = json!({"ok": false, "error": "File exists: /a", "code": "exists", "path": "a"});
        settle(&mut d, true);
        assert_eq!(
            d,
            json!({"ok": false, "error": {"code": "exists", "message": "File exists: /a"}, "path": "a"})
        );
        // A chunk's Lua error has no code: it stays the message the chunk raised.
        let mut lua = json!({"ok": false, "error": "boom", "traceback": "t"});
        settle(&mut lua, true);
        assert_eq!(lua["error"], "boom");
    }
}

//! The text block of a result: what an agent reads (docs/mcp.md, "Sizing"). It is made from
//! the result's data by the fields it holds, so that every tool, new ones too, gets it alike;
//! it never repeats the JSON. Bulk (a file's content, output) is sent once: on success it is
//! in `structuredContent` alone, which is what Claude Code and Codex give the model when a
//! result has it; a failure's text is whole on its own (Claude Code gives the model the text
//! of an `isError` result).

use serde_json::Value;

/// The text block under the first line: what an agent reads of a result, made from its data
/// by the fields it holds, so that every tool (new ones too) gets it alike. Sections are
/// headed `[output]`, `[error output]`, `[traceback]`, `[returned]`; a file's content, a
/// listing, output lines, log events, screen rows and a broadcast's results follow as plain
/// lines. Anything else is said by the first line alone. On success (`is_error` false) the
/// bulk ([`BULK`]) is left out and named in a last line, `[in structuredContent: output]`.
pub fn render(data: &Value, is_error: bool) -> String {
    let mut out = String::new();
    let mut section = |head: &str, body: &str| {
        if body.is_empty() {
            return;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        if !head.is_empty() {
            out.push_str(head);
            out.push('\n');
        }
        out.push_str(body);
        if !body.ends_with('\n') {
            out.push('\n');
        }
    };
    let s = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or_default();
    // A file's content (read-file): the piece itself, byte for byte as in the file (no
    // newline added), and nothing else.
    if data.get("encoding").is_some() {
        return match is_error {
            true => s("content").to_owned(),
            false => elsewhere(data),
        };
    }
    if let Some(returns) = data.get("returns").and_then(Value::as_array) {
        let values: Vec<String> = returns.iter().map(value_text).collect();
        section("[returned]", &values.join("\n"));
    }
    if is_error {
        section("[output]", s("output"));
        section("[error output]", s("errorOutput"));
    }
    match data.get("error") {
        // A Lua error: its message is in the first line (cut there when long) and whole in
        // the traceback; without one, whole here.
        Some(Value::String(e)) if s("traceback").is_empty() && !whole_in_line(e) => {
            section("[error]", e);
        }
        Some(Value::Object(e)) => {
            let m = e.get("message").and_then(Value::as_str).unwrap_or_default();
            if !whole_in_line(m) {
                section("[error]", m);
            }
        }
        _ => {}
    }
    section("[traceback]", s("traceback"));
    let rows = |key: &str, f: &dyn Fn(&Value) -> String| -> String {
        data.get(key)
            .and_then(Value::as_array)
            .map(|items| items.iter().map(f).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    };
    section("", &rows("entries", &entry_text));
    section("", &rows("events", &event_text));
    section("", &screen_rows(data));
    section("", &rows("results", &many_text));
    if !is_error {
        section("", &elsewhere(data));
    }
    out
}

/// What a successful result's text leaves to `structuredContent` alone: a file's content, a
/// run's output and error output, an output page's lines.
pub const BULK: [&str; 3] = ["content", "output", "errorOutput"];

/// The line that names the bulk a successful result holds in `structuredContent` alone
/// (empty when it holds none), so that a client that shows only the text knows where it is.
fn elsewhere(data: &Value) -> String {
    let held: Vec<&str> = BULK
        .into_iter()
        .filter(|k| {
            data.get(*k)
                .and_then(Value::as_str)
                .is_some_and(|t| !t.is_empty())
        })
        .collect();
    if held.is_empty() {
        return String::new();
    }
    format!("[in structuredContent: {}]", held.join(", "))
}

/// A directory entry (`list-files`): a folder's name with `/`, a file's with its size.
fn entry_text(e: &Value) -> String {
    let name = e.get("name").and_then(Value::as_str).unwrap_or_default();
    if e.get("dir").and_then(Value::as_bool) == Some(true) {
        format!("{name}/")
    } else {
        let size = e.get("size").and_then(Value::as_u64).unwrap_or(0);
        format!("{name}\t{size}")
    }
}

/// A screen's rows (`read-screen`, `send-input`), one a line. A monitor's cells its computer
/// cannot know (`known`: per row `null`, or one `1`/`0` per cell) are shown as
/// [`UNKNOWN_CELL`](trapdesk_core::session::screen::UNKNOWN_CELL), never as the blank the data holds
/// for them, so an agent does not take a gap for an empty cell.
fn screen_rows(data: &Value) -> String {
    let Some(rows) = data.get("rows").and_then(Value::as_array) else {
        return String::new();
    };
    let known = data.get("known").and_then(Value::as_array);
    let mut out: Vec<String> = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let text = r.as_str().unwrap_or_default();
        let mask = known
            .and_then(|k| k.get(i))
            .and_then(Value::as_str)
            .map(str::as_bytes);
        let Some(mask) = mask else {
            out.push(text.to_owned());
            continue;
        };
        // The row's trailing blanks were cut: the mask says how wide it is.
        let mut chars: Vec<char> = text.chars().collect();
        if chars.len() < mask.len() {
            chars.resize(mask.len(), ' ');
        }
        let shown: String = chars
            .iter()
            .enumerate()
            .map(|(x, c)| {
                if mask.get(x).is_some_and(|b| *b != b'1') {
                    trapdesk_core::session::screen::UNKNOWN_CELL
                } else {
                    *c
                }
            })
            .collect();
        out.push(shown.trim_end().to_owned());
    }
    out.join("\n")
}

/// Whether a message fits whole in a first line (which keeps one line of at most 200
/// characters, after its code or what failed).
fn whole_in_line(m: &str) -> bool {
    m.chars().count() <= 120 && !m.trim().contains('\n')
}

/// A returned value in the text: a string as JSON text (quoted, escapes visible), anything
/// else as its JSON, or the descriptor's own wording (`<function>`, a cut value's head).
fn value_text(d: &Value) -> String {
    if d.get("repr").is_some() || d.get("cut").is_some() || d.get("encoding").is_some() {
        return trapdesk_core::session::summary::descriptor(d);
    }
    match d.get("value") {
        Some(v) => v.to_string(),
        None => trapdesk_core::session::summary::descriptor(d),
    }
}

/// One session-log event on one line.
fn event_text(e: &Value) -> String {
    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut parts = vec![
        e.get("seq").map(Value::to_string).unwrap_or_default(),
        s("event").to_owned(),
    ];
    for k in ["who", "what", "traposId", "requestId", "status", "detail"] {
        if !s(k).is_empty() {
            parts.push(s(k).to_owned());
        }
    }
    if let Some(ms) = e.get("durationMs").and_then(Value::as_u64) {
        parts.push(format!("{ms} ms"));
    }
    parts.join("\t")
}

/// One computer of an `exec-lua-many` result: where, how it went, and its output's head.
fn many_text(r: &Value) -> String {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
    let what = match (r.get("returns").and_then(Value::as_array), r.get("error")) {
        (_, Some(Value::String(e))) => e.clone(),
        (_, Some(Value::Object(e))) => {
            let code = e.get("code").and_then(Value::as_str).unwrap_or_default();
            let m = e.get("message").and_then(Value::as_str).unwrap_or_default();
            format!("{code}: {m}")
        }
        (Some(returns), None) if !returns.is_empty() => {
            format!(
                "returned {}",
                trapdesk_core::session::summary::returns_line(returns)
            )
        }
        _ => String::new(),
    };
    let mut line = format!("{} {}", s("traposId"), s("status"));
    if !what.is_empty() {
        line.push_str(": ");
        line.push_str(&what);
    }
    let output = s("output");
    if !output.is_empty() {
        line.push('\n');
        line.push_str(output.strip_suffix('\n').unwrap_or(output));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::render;
    use serde_json::json;

    #[test]
    fn unknown_monitor_cells_are_shown_as_such() {
        let monitor = json!({"rows": ["hi", "", "  ok"], "known": ["1100", null, "0011"]});
        assert_eq!(
            render(&monitor, false),
            "hi\u{2591}\u{2591}\n\n\u{2591}\u{2591}ok\n"
        );
        let terminal = json!({"rows": ["> ls", ""]});
        assert_eq!(render(&terminal, false), "> ls\n");
    }

    #[test]
    fn bulk_is_in_the_text_of_a_failure_only() {
        let ran = json!({"output": "dig 1\ndig 2\n", "errorOutput": "", "returns": []});
        assert_eq!(render(&ran, false), "[in structuredContent: output]\n");
        assert_eq!(render(&ran, true), "[output]\ndig 1\ndig 2\n");
        let read = json!({"content": "print(1)", "encoding": "utf8"});
        assert_eq!(render(&read, false), "[in structuredContent: content]");
        assert_eq!(render(&json!({"ok": true}), false), "");
    }
}

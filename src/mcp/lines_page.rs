//! An output page as an agent receives it (`computer-output`, `wait-request`; docs/mcp.md,
//! "Output pages"): what every line shares is said once for the page, each line's text once
//! (in `output`, one line after another, as it was printed), and a time per line. A line as
//! an object of its own cost ~112 characters for a 5-character line.

use serde_json::{Map, Value, json};

use super::cut::json_len;
use super::results::Outcome;

/// What a line adds to a page beside its escaped text: its `\n` and its time in `times`.
const PER_LINE: usize = 8;

/// What a line (as [`super::wait::line_json`] makes it) costs in a page, in bytes of JSON.
pub fn line_cost(line: &Value) -> usize {
    let text = line.get("text").and_then(Value::as_str).unwrap_or_default();
    // `json_len` counts the quotes too: two bytes of slack a line.
    json_len(&json!(text)) + PER_LINE
}

/// Puts `lines` into `obj` as the page's fields: `output` (each line's text, ending with a
/// newline unless it is still open), `at` (when the first came, ms since the Unix epoch; absent
/// without lines),
/// `times` (per line, ms after the line before it; the first's after `at`, so 0), `err` (the indices of error-stream lines, only when
/// there are some), and `requestId` once when every line has the same one (otherwise
/// `requests`: `[{from, requestId}]`, one per run of lines of one request, null for none).
pub fn compact(obj: &mut Map<String, Value>, lines: &[Value]) {
    let field = |l: &Value, k: &str| l.get(k).cloned().unwrap_or(Value::Null);
    let at = lines
        .first()
        .and_then(|l| l.get("at"))
        .and_then(Value::as_u64);
    let mut output = String::new();
    let mut times = Vec::with_capacity(lines.len());
    let mut err = Vec::new();
    let mut requests: Vec<Value> = Vec::new();
    let mut last_request: Option<Value> = None;
    let mut previous = at;
    for (i, l) in lines.iter().enumerate() {
        output.push_str(l.get("text").and_then(Value::as_str).unwrap_or_default());
        if l.get("complete") != Some(&Value::Bool(false)) {
            output.push('\n');
        }
        // After the line before: mostly 0 or a few digits, where a time since `at` took
        // four or five characters a line of a long page.
        let t = l.get("at").and_then(Value::as_u64).unwrap_or(0);
        times.push(json!(t.saturating_sub(previous.unwrap_or(t))));
        previous = Some(t.max(previous.unwrap_or(0)));
        if l.get("stream").and_then(Value::as_str) == Some("err") {
            err.push(json!(i));
        }
        let request = field(l, "requestId");
        if last_request.as_ref() != Some(&request) {
            requests.push(json!({"from": i, "requestId": request}));
            last_request = Some(request);
        }
    }
    obj.insert("output".into(), json!(output));
    // Absent on a page without lines: the output schema has no null types.
    if let Some(at) = at {
        obj.insert("at".into(), json!(at));
    }
    obj.insert("times".into(), Value::Array(times));
    if !err.is_empty() {
        obj.insert("err".into(), Value::Array(err));
    }
    match requests.as_slice() {
        [] => {}
        [one] if !one["requestId"].is_null() => {
            obj.entry("requestId")
                .or_insert_with(|| one["requestId"].clone());
        }
        [_] => {}
        _ if !obj.contains_key("requestId") => {
            obj.insert("requests".into(), Value::Array(requests));
        }
        _ => {}
    }
}

/// As many of `rows` from the oldest as fit in `room` bytes of a page's JSON (at least one),
/// and whether some were left for the next call.
pub fn head_that_fits(mut rows: Vec<(u64, Value)>, room: usize) -> (Vec<(u64, Value)>, bool) {
    let mut used = 0;
    let mut keep = 0;
    for (_, v) in &rows {
        let size = line_cost(v);
        if keep > 0 && used + size > room {
            break;
        }
        used += size;
        keep += 1;
    }
    let more = keep < rows.len();
    rows.truncate(keep);
    (rows, more)
}

/// As many of `rows` from the newest as fit in `room` bytes of a page's JSON (at least one): the lines up to a match.
pub fn tail_that_fits(mut rows: Vec<(u64, Value)>, room: usize) -> Vec<(u64, Value)> {
    let mut used = 0;
    let mut keep = 0;
    for (_, v) in rows.iter().rev() {
        let size = line_cost(v);
        if keep > 0 && used + size > room {
            break;
        }
        used += size;
        keep += 1;
    }
    rows.drain(..rows.len() - keep);
    rows
}

/// What a page's first line says of its lines: how many, whether more follow, and the cursor
/// to read on from.
pub fn page_said(n: usize, more: bool, cursor: u64) -> String {
    let n = super::convert::plural(n, "line", "lines");
    match more {
        true => format!("; {n} here, more follow: read on with after={cursor}"),
        false => format!("; {n}; next after={cursor}"),
    }
}

/// The end of a run its waiter followed (`after` given): its result without the output read
/// already. `output` holds only what came after the cursor, paged as a running answer is
/// (`more`, the cursor, a time per line), so that following a run to its end costs its
/// output once; `outputBytes` and `outputLines` still count all of it.
pub fn followed_end(outcome: &mut Outcome, rows: Vec<(u64, Value)>, room: usize, after: u64) {
    let Some(obj) = outcome.data.as_object_mut() else {
        return;
    };
    for k in [
        "output",
        "error_output",
        "errorOutput",
        "output_truncated",
        "outputTruncated",
        "output_kept_bytes",
        "outputKeptBytes",
    ] {
        obj.remove(k);
    }
    let room = room.saturating_sub(json_len(&*obj));
    let (rows, more) = head_that_fits(rows, room);
    let cursor = rows.last().map_or(after, |(seq, _)| *seq);
    let lines: Vec<Value> = rows.into_iter().map(|(_, v)| v).collect();
    obj.insert("cursor".into(), json!(cursor));
    obj.insert("more".into(), json!(more));
    compact(obj, &lines);
    // The output is no longer here, cut or not: the line says what is.
    let line = &mut outcome.line;
    if let Some(i) = line.find("; head and tail kept here")
        && let Some(j) = line[i..].find(')')
    {
        line.replace_range(i..i + j, "");
    }
    let said =
        page_said(lines.len(), more, cursor).replacen("; ", "; output after the cursor: ", 1);
    line.push_str(&said);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(at: u64, rid: Option<&str>, stream: &str, text: &str, complete: bool) -> Value {
        json!({"seq": 1, "at": at, "requestId": rid, "stream": stream, "text": text,
            "complete": complete})
    }

    #[test]
    fn a_page_says_the_shared_fields_once() {
        let lines = [
            line(1000, Some("h-1"), "out", "a", true),
            line(1003, Some("h-1"), "err", "bad", true),
            line(1010, Some("h-1"), "out", "open", false),
        ];
        let mut obj = Map::new();
        compact(&mut obj, &lines);
        assert_eq!(
            Value::Object(obj),
            json!({"output": "a\nbad\nopen", "at": 1000, "times": [0, 3, 7], "err": [1],
                "requestId": "h-1"})
        );
        let mixed = [
            line(5, None, "out", "x", true),
            line(6, Some("h-2"), "out", "y", true),
        ];
        let mut obj = Map::new();
        compact(&mut obj, &mixed);
        assert_eq!(
            obj["requests"],
            json!([{"from": 0, "requestId": null}, {"from": 1, "requestId": "h-2"}])
        );
        assert!(obj.get("requestId").is_none());
        let mut ended = Outcome::ok(
            "returned 1; 9 lines of output (99 bytes; head and tail kept here, all of it with computer-output)",
            json!({"output": "a\n…cut…\nz\n", "output_truncated": true, "requestId": "h-1"}),
        );
        let rows = vec![(41, line(7, Some("h-1"), "out", "z", true))];
        followed_end(&mut ended, rows, 10_000, 40);
        assert_eq!(ended.data["output"], "z\n");
        assert_eq!(
            (&ended.data["cursor"], &ended.data["more"]),
            (&json!(41), &json!(false))
        );
        assert!(ended.data.get("output_truncated").is_none());
        assert_eq!(
            ended.line,
            "returned 1; 9 lines of output (99 bytes); output after the cursor: 1 line; next after=41"
        );
        let mut empty = Map::new();
        compact(&mut empty, &[]);
        assert_eq!(Value::Object(empty), json!({"output": "", "times": []}));
    }
}

//! Paging of large answers: a file read in pieces, a computer's output in pages. Both are cut
//! here, before the generic sizing in `results`, so that the cursors they return stay exact.

use serde_json::{Value, json};

use super::results::{Outcome, json_budget};

/// Room kept for the fields around the content.
const ENVELOPE: usize = 512;

/// Cuts a `read-file` answer (`{ok, content(base64), bytes, ...}`) to the piece at `offset`
/// of at most `length` bytes that fits `budget` bytes of JSON, decoded to UTF-8 text when
/// the file is valid UTF-8.
pub fn piece(
    mut data: Value,
    path: &str,
    offset: Option<u64>,
    length: Option<u64>,
    budget: usize,
) -> Outcome {
    use base64::Engine;
    let encoded = data
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let bytes = match base64::engine::general_purpose::STANDARD.decode(encoded.trim()) {
        Ok(b) => b,
        Err(e) => {
            let msg = format!("the computer sent content that is not base64: {e}");
            return Outcome::error(msg, data);
        }
    };
    let total = bytes.len();
    let text = std::str::from_utf8(&bytes).ok();
    let start = (offset.unwrap_or(0) as usize).min(total);
    let want = length.map_or(total - start, |l| (l as usize).min(total - start));
    let room = budget.saturating_sub(ENVELOPE).max(64);
    let mut end = start + want;
    let (content, encoding) = loop {
        let (content, encoding) = match text {
            Some(t) => {
                let (mut s, mut e) = (start, end);
                while !t.is_char_boundary(s) {
                    s -= 1;
                }
                while !t.is_char_boundary(e) {
                    e -= 1;
                }
                (t.get(s..e).unwrap_or_default().to_owned(), "utf8")
            }
            None => (
                base64::engine::general_purpose::STANDARD.encode(&bytes[start..end]),
                "base64",
            ),
        };
        let size = serde_json::to_string(&content).map_or(usize::MAX, |s| s.len());
        if size <= room || end == start {
            break (content, encoding);
        }
        // Shrink in proportion to the overshoot, at least a little each round.
        let len = end - start;
        let shrunk = (len as u128 * room as u128 / size as u128) as usize;
        end = start + shrunk.min(len - 1);
    };
    let piece_len = match encoding {
        "utf8" => content.len(),
        _ => end - start,
    };
    let next = start + piece_len;
    if let Some(obj) = data.as_object_mut() {
        obj.insert("content".into(), json!(content));
        obj.insert("encoding".into(), json!(encoding));
        obj.insert("offset".into(), json!(start));
        obj.insert("bytes".into(), json!(piece_len));
        obj.insert("total".into(), json!(total));
        obj.insert("nextOffset".into(), json!((next < total).then_some(next)));
        obj.entry("path").or_insert(json!(path));
    }
    let line = if start == 0 && next >= total {
        format!("{path}: {total} bytes ({encoding})")
    } else {
        format!("{path}: bytes {start}..{next} of {total} ({encoding}); read on with offset {next}")
    };
    Outcome::ok(line, data)
}

/// A `computer-output` page that fits the budget: the newest lines are kept and the cursor
/// moves to the oldest line kept, so paging on loses nothing.
pub fn output_page(
    trapos_id: String,
    request_id: Option<String>,
    mut rows: Vec<(u64, Value)>,
    mut before: Option<u64>,
    max_result_bytes: usize,
) -> Outcome {
    let line_for = |n: usize| format!("{n} lines of {trapos_id}");
    let budget = json_budget(max_result_bytes, &line_for(rows.len())).saturating_sub(ENVELOPE);
    let mut size: usize = rows
        .iter()
        .map(|(_, v)| serde_json::to_string(v).map_or(0, |s| s.len() + 1))
        .sum();
    while size > budget && rows.len() > 1 {
        let (_, v) = rows.remove(0);
        size -= serde_json::to_string(&v).map_or(0, |s| s.len() + 1);
        before = rows.first().map(|(seq, _)| *seq);
    }
    let lines: Vec<Value> = rows.into_iter().map(|(_, v)| v).collect();
    let line = match before {
        Some(b) => format!("{}; older lines with before={b}", line_for(lines.len())),
        None => line_for(lines.len()),
    };
    let mut data = json!({"ok": true, "traposId": trapos_id, "lines": lines, "before": before});
    if let (Some(r), Some(obj)) = (request_id, data.as_object_mut()) {
        obj.insert("requestId".into(), json!(r));
    }
    Outcome::ok(line, data)
}

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
    let asked = offset.unwrap_or(0);
    let line = if asked > total as u64 {
        format!(
            "{path}: offset {asked} is past the end of the file ({total} bytes); nothing to read"
        )
    } else if start == 0 && next >= total {
        format!("{path}: {total} bytes ({encoding})")
    } else if next >= total {
        format!("{path}: bytes {start}..{next} of {total} ({encoding}); the end of the file")
    } else {
        format!("{path}: bytes {start}..{next} of {total} ({encoding}); read on with offset {next}")
    };
    Outcome::ok(line, data)
}

/// A `computer-output` page that fits the budget: the newest lines that fit are returned, and
/// the cursor points just before the oldest line returned, so paging on with it returns every
/// kept line exactly once. The first line counts exactly the lines returned.
pub fn output_page(
    trapos_id: String,
    request_id: Option<String>,
    rows: Vec<(u64, Value)>,
    before: Option<u64>,
    max_result_bytes: usize,
) -> Outcome {
    let page = |rows: &[(u64, Value)], before: Option<u64>| {
        let lines: Vec<Value> = rows.iter().map(|(_, v)| v.clone()).collect();
        let what = match &request_id {
            Some(r) => format!(
                "{} of {trapos_id} ({r})",
                plural(lines.len(), "line", "lines")
            ),
            None => format!("{} of {trapos_id}", plural(lines.len(), "line", "lines")),
        };
        let line = match before {
            Some(b) => format!("{what}; older lines with before={b}"),
            None => format!("{what}; nothing older is kept"),
        };
        let mut data = json!({"ok": true, "traposId": trapos_id, "lines": lines, "before": before});
        if let (Some(r), Some(obj)) = (&request_id, data.as_object_mut()) {
            obj.insert("requestId".into(), json!(r));
        }
        Outcome::ok(line, data)
    };
    let fits = |k: usize| {
        let kept = &rows[rows.len() - k..];
        let cursor = if k < rows.len() {
            kept.first().map(|(seq, _)| *seq)
        } else {
            before
        };
        page(kept, cursor).unfitted_size() <= max_result_bytes
    };
    if rows.is_empty() || fits(rows.len()) {
        return page(&rows, before);
    }
    // The most newest lines that fit: fitting is monotone in the count.
    let (mut lo, mut hi) = (0, rows.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    let mut kept: Vec<(u64, Value)> = rows[rows.len() - lo.max(1)..].to_vec();
    let cursor = kept
        .first()
        .map(|(seq, _)| *seq)
        .filter(|_| kept.len() < rows.len());
    let cursor = cursor.or(before);
    if lo == 0 {
        // One line larger than a whole result: it keeps its head and tail, marked as cut.
        if let Some((_, v)) = kept.first_mut() {
            let text = v
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let room = json_budget(max_result_bytes, "").saturating_sub(ENVELOPE) / 2;
            let cut = super::results::head_tail(&text, room, |n| format!("[… {n} bytes cut …]"));
            if let Some(obj) = v.as_object_mut() {
                obj.insert("text".into(), json!(cut));
                obj.insert("cut".into(), json!(true));
                obj.insert("length".into(), json!(text.len()));
            }
        }
    }
    page(&kept, cursor)
}

/// `1 line`, `3 lines`.
fn plural(n: usize, one: &str, many: &str) -> String {
    super::convert::plural(n, one, many)
}

/// A `session-log` page that fits the budget: the newest events that fit, a count equal to
/// what is returned, and a `before` cursor just before the oldest event returned.
pub fn log_page(
    events: Vec<crate::session::LogEntry>,
    before: Option<u64>,
    max_result_bytes: usize,
) -> Outcome {
    let page = |events: &[crate::session::LogEntry], before: Option<u64>| {
        let what = plural(events.len(), "event", "events");
        let line = match before {
            Some(b) => format!("{what}, oldest first; older events with before={b}"),
            None => format!("{what}, oldest first; nothing older is kept"),
        };
        Outcome::ok(line, json!({"events": events, "before": before}))
    };
    let fits = |k: usize| {
        let kept = &events[events.len() - k..];
        let cursor = if k < events.len() {
            kept.first().map(|e| e.seq)
        } else {
            before
        };
        page(kept, cursor).unfitted_size() <= max_result_bytes
    };
    if events.is_empty() || fits(events.len()) {
        return page(&events, before);
    }
    let (mut lo, mut hi) = (1, events.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    let kept = &events[events.len() - lo..];
    page(kept, kept.first().map(|e| e.seq))
}

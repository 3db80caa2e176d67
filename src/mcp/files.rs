//! Paging of large answers: a file read in pieces, a computer's output in pages. Both are cut
//! here, before the generic sizing in `results`, so that the cursors they return stay exact.

use serde_json::{Map, Value, json};

use super::results::{Outcome, json_budget};

/// Room kept for the fields around the content.
const ENVELOPE: usize = 512;

/// Raw bytes to ask the computer for in one page when a result has `budget` bytes of JSON:
/// as much as fits as text (a 20 KB program reads in one call); a binary page (base64 makes
/// 3 bytes 4) or text that escapes heavily is cut further by [`piece`], and the cursor stays
/// exact.
pub fn page_len(budget: usize) -> u64 {
    budget.saturating_sub(ENVELOPE + 8).max(64) as u64
}

/// Cuts a `read-file` answer (`{ok, content(base64), bytes, offset?, total?, ...}`) to the
/// piece at `offset` of at most `length` bytes that fits `budget` bytes of JSON, decoded to
/// UTF-8 text when it is valid UTF-8. The answer holds either the whole file (clients before
/// paged reads: no `total`) or one page of it starting at its `offset`, of a file of `total`
/// bytes (the client read only that page).
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
    // Where the bytes that came back sit in the file.
    let paged = data.get("total").and_then(Value::as_u64);
    let base = match paged {
        Some(_) => data.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize,
        None => 0,
    };
    let total = paged.map_or(bytes.len(), |t| t as usize);
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => Some(t),
        // A page may end inside a character: its complete characters are still text.
        Err(e) if paged.is_some() && e.error_len().is_none() && e.valid_up_to() > 0 => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()
        }
        Err(_) => None,
    };
    let start = (offset.unwrap_or(0) as usize)
        .saturating_sub(base)
        .min(bytes.len());
    // Starting inside a page's last, incomplete character: no text to give, bytes instead.
    let text = text.filter(|t| start < t.len() || start == bytes.len());
    let avail = match text {
        Some(t) => t.len(),
        None => bytes.len(),
    };
    let want = length.map_or(avail.saturating_sub(start), |l| {
        (l as usize).min(avail.saturating_sub(start))
    });
    let room = budget.saturating_sub(ENVELOPE).max(64);
    let (content, encoding, end) = fit_piece(text, &bytes, start, start + want, room);
    let piece_len = match encoding {
        "utf8" => content.len(),
        _ => end - start,
    };
    let (start, next) = (base + start, base + start + piece_len);
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
    // Where the caller wanted this piece to end: shorter than that (and not at the file's
    // end) means the result budget cut it, and the line says so (a `length: 100000` once
    // served 8,796 bytes and said nothing). Without a length nothing was asked: a piece is
    // as much as one result holds, and only where to read on is said.
    let wanted_end = length.map_or(next as u64, |l| asked.saturating_add(l).min(total as u64));
    let line = piece_line(path, asked, (start, next, total), encoding, wanted_end);
    Outcome::ok(line, data)
}

/// The piece of the file from `start` to at most `end` (bytes of the answer) whose JSON text
/// fits `room` bytes: as text when the answer is `text`, else base64; with where it ends.
fn fit_piece(
    text: Option<&str>,
    bytes: &[u8],
    start: usize,
    mut end: usize,
    room: usize,
) -> (String, &'static str, usize) {
    use base64::Engine;
    loop {
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
            break (content, encoding, end);
        }
        // Shrink in proportion to the overshoot, at least a little each round.
        let len = end - start;
        let shrunk = (len as u128 * room as u128 / size as u128) as usize;
        end = start + shrunk.min(len - 1);
    }
}

/// A read piece's first line: where it is in the file, and, when it ends before what was
/// asked (a `length: 100000` once served 8,796 bytes and said nothing), why.
fn piece_line(
    path: &str,
    asked: u64,
    (start, next, total): (usize, usize, usize),
    encoding: &str,
    wanted_end: u64,
) -> String {
    let shortened = (next as u64) < wanted_end;
    if asked > total as u64 {
        format!(
            "{path}: offset {asked} is past the end of the file ({total} bytes); nothing to read"
        )
    } else if start == 0 && next >= total {
        format!("{path}: {total} bytes ({encoding})")
    } else if next >= total {
        format!("{path}: bytes {start}..{next} of {total} ({encoding}); the end of the file")
    } else if shortened {
        let why = if wanted_end - next as u64 <= 3 && encoding == "utf8" {
            "ends before a character the page would split"
        } else {
            "cut to fit one result (the host's --max-result-bytes)"
        };
        format!(
            "{path}: bytes {start}..{next} of {total} ({encoding}), {} fewer than asked: {why}; read on with offset {next}",
            wanted_end - next as u64
        )
    } else {
        format!("{path}: bytes {start}..{next} of {total} ({encoding}); read on with offset {next}")
    }
}

/// A `computer-output` page that fits the budget: the newest lines that fit are returned, and
/// the cursor points just before the oldest line returned, so paging on with it returns every
/// kept line exactly once. The first line counts exactly the lines returned.
pub fn output_page(
    trapos_id: String,
    request_id: Option<String>,
    rows: Vec<(u64, Value)>,
    before: Option<u64>,
    extra: Map<String, Value>,
    max_result_bytes: usize,
) -> Outcome {
    let page = |shown: &[(u64, Value)], before: Option<u64>| {
        let lines: Vec<Value> = shown.iter().map(|(_, v)| v.clone()).collect();
        let what = match &request_id {
            Some(r) => format!(
                "{} of {trapos_id} ({r})",
                plural(lines.len(), "line", "lines")
            ),
            None => format!("{} of {trapos_id}", plural(lines.len(), "line", "lines")),
        };
        let mut line = match before {
            Some(b) => format!("{what}; older lines with before={b}"),
            None => format!("{what}; nothing older is kept"),
        };
        line.push_str(&shortened(rows.len() - shown.len()));
        let mut data = json!({"ok": true, "traposId": trapos_id, "before": before});
        if let Some(obj) = data.as_object_mut() {
            if let Some(r) = &request_id {
                obj.insert("requestId".into(), json!(r));
            }
            super::lines_page::compact(obj, &lines);
            // Counted while the page is sized, so that they never push its lines over.
            obj.extend(extra.clone());
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
            let room = json_budget(max_result_bytes, "").saturating_sub(ENVELOPE);
            let cut = super::cut::head_tail(&text, room, |n| format!("[… {n} bytes cut …]"));
            if let Some(obj) = v.as_object_mut() {
                obj.insert("text".into(), json!(cut));
                obj.insert("cut".into(), json!(true));
                obj.insert("length".into(), json!(text.len()));
            }
        }
    }
    page(&kept, cursor)
}

/// What a page says when the budget left out some of what was asked.
fn shortened(left: usize) -> String {
    if left == 0 {
        return String::new();
    }
    format!(" ({left} more of those asked did not fit one result: read them with before)")
}

/// `1 line`, `3 lines`.
fn plural(n: usize, one: &str, many: &str) -> String {
    super::convert::plural(n, one, many)
}

/// A `session-log` page that fits the budget: the newest entries that fit, a count equal to
/// what is returned, a `before` cursor just before the oldest entry returned, and `latest`,
/// the log's newest cursor (for `since` next time).
pub fn log_page(
    events: Vec<trapdesk_core::session::LogEntry>,
    before: Option<u64>,
    latest: u64,
    max_result_bytes: usize,
) -> Outcome {
    let page = |shown: &[trapdesk_core::session::LogEntry], before: Option<u64>| {
        let what = plural(shown.len(), "event", "events");
        let mut line = match before {
            Some(b) => format!(
                "{what}, oldest first; older events with before={b}; newer ones later with since={latest}"
            ),
            None => format!(
                "{what}, oldest first; nothing older is kept; newer ones later with since={latest}"
            ),
        };
        line.push_str(&shortened(events.len() - shown.len()));
        Outcome::ok(
            line,
            json!({"events": shown, "before": before, "latest": latest}),
        )
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

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn b64(b: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    #[test]
    fn a_whole_file_answer_is_cut_at_the_offset() {
        let data = json!({"ok": true, "content": b64(b"hello world"), "bytes": 11});
        let o = piece(data, "f", Some(6), None, 24 * 1024);
        assert_eq!(o.data["content"], "world");
        assert_eq!(o.data["offset"], 6);
        assert_eq!(o.data["total"], 11);
        assert_eq!(o.data["nextOffset"], Value::Null);
    }

    #[test]
    fn a_page_answer_keeps_file_offsets_and_the_files_total() {
        // The computer read bytes 100..105 of a 200-byte file.
        let data =
            json!({"ok": true, "content": b64(b"abcde"), "bytes": 5, "offset": 100, "total": 200});
        let o = piece(data, "f", Some(100), Some(5), 24 * 1024);
        assert_eq!(o.data["content"], "abcde");
        assert_eq!(o.data["offset"], 100);
        assert_eq!(o.data["bytes"], 5);
        assert_eq!(o.data["total"], 200);
        assert_eq!(o.data["nextOffset"], 105);
    }

    #[test]
    fn a_page_ending_inside_a_character_is_text_up_to_it() {
        let mut page = "héllo ".as_bytes().to_vec();
        page.extend_from_slice(&"☃".as_bytes()[..2]);
        let data = json!({"ok": true, "content": b64(&page), "bytes": page.len(), "offset": 0, "total": 50});
        let o = piece(data, "f", Some(0), None, 24 * 1024);
        assert_eq!(o.data["encoding"], "utf8");
        assert_eq!(o.data["content"], "héllo ");
        assert_eq!(o.data["nextOffset"], "héllo ".len());
        // Starting on those two bytes gives them as base64, and the cursor still moves.
        let data =
            json!({"ok": true, "content": b64(&page[7..]), "bytes": 2, "offset": 7, "total": 50});
        let o = piece(data, "f", Some(7), None, 24 * 1024);
        assert_eq!(o.data["encoding"], "base64");
        assert_eq!(o.data["nextOffset"], 9);
    }

    #[test]
    fn a_page_holds_a_20_kb_program() {
        let budget = super::super::results::json_budget(24 * 1024, "prog.lua");
        assert!(page_len(budget) >= 20_000, "{}", page_len(budget));
        // Lua source with quotes and newlines, which JSON escapes.
        let program: String = (0..1500)
            .map(|i| format!("print(\"line {i}\")\n"))
            .collect();
        let program = program[..20_000].to_owned();
        let data = json!({"ok": true, "content": b64(program.as_bytes()), "bytes": 20_000,
            "offset": 0, "total": 20_000});
        let o = piece(data, "prog.lua", None, None, budget);
        assert_eq!(o.data["bytes"], 20_000, "{}", o.line);
        assert_eq!(o.data["nextOffset"], Value::Null);
    }

    /// A piece the budget shortened says so, and how to read on.
    #[test]
    fn a_shortened_piece_says_why() {
        let file = "x".repeat(100_000);
        let data = json!({"ok": true, "content": b64(file.as_bytes()), "bytes": 100_000});
        let o = piece(data, "big.txt", Some(0), Some(100_000), 8 * 1024);
        let next = o.data["nextOffset"].as_u64().unwrap_or(0);
        assert!(next > 0 && next < 100_000);
        assert!(
            o.line.contains("fewer than asked: cut to fit one result"),
            "{}",
            o.line
        );
        assert!(
            o.line.ends_with(&format!("read on with offset {next}")),
            "{}",
            o.line
        );
        // Without a length nothing was asked: no "fewer than asked", only where to read on.
        let data = json!({"ok": true, "content": b64(file.as_bytes()), "bytes": 100_000});
        let o = piece(data, "big.txt", Some(0), None, 8 * 1024);
        assert!(!o.line.contains("fewer"), "{}", o.line);
        assert!(
            o.line.ends_with(&format!("read on with offset {next}")),
            "{}",
            o.line
        );
    }
}

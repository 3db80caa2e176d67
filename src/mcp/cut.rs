//! Cutting a result to the budget, so that it fits an agent's context.
//!
//! Claude Code refuses tool results over about 25,000 tokens counting text and structured
//! content together, so a result is cut to `max_result_bytes` here: captured `output` keeps
//! its head and tail with a marker in the middle that says how much was cut and how to read
//! the rest (`computer-output` with the `requestId`); lists that are still too long lose
//! their oldest items and say so with a `truncated` flag.

use serde_json::{Value, json};

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

/// Bytes of `v` as compact JSON, counted as serde_json writes them, without building the
/// text: a probe page's result is 24 KiB, and a string that size grown by doubling is a chain
/// of large allocations (and, on a long-running host's heap, `malloc_consolidate` calls).
pub fn json_len<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    match serde_json::to_writer(&mut n, v) {
        Ok(()) => n.0,
        // Serializing a Value or our own types does not fail; if it did, no size is known.
        Err(_) => usize::MAX,
    }
}

/// The marker the computer (and the host, for live output) puts where output was left out.
const CUT_PREFIX: &str = "\n[… trapdesk cut ";

/// Whether `text` holds a cut marker: output the computer (or the host) already cut.
pub fn holds_cut(text: &str) -> bool {
    text.contains(CUT_PREFIX)
}
/// The rest of the computer's marker after its count.
const CUT_SUFFIX: &str = " bytes of output here …]\n";

/// Splits output at a cut marker, the computer's own or one the host put there: head, tail
/// and the bytes left out there.
fn split_cut(text: &str) -> (&str, &str, usize) {
    let mut from = 0;
    while let Some(found) = text[from..].find("\n[… ") {
        let at = from + found;
        let rest = &text[at + "\n[… ".len()..];
        let rest = rest.strip_prefix("trapdesk cut ").unwrap_or(rest);
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let after = &rest[digits..];
        if digits > 0
            && (after.starts_with(CUT_SUFFIX) || after.starts_with(" bytes of output cut here;"))
            && let (Ok(n), Some(end)) = (rest[..digits].parse::<usize>(), after.find(" …]\n"))
        {
            let tail_start = text.len() - after.len() + end + " …]\n".len();
            return (&text[..at], &text[tail_start..], n);
        }
        from = at + 1;
    }
    (text, "", 0)
}

/// Captured output cut to about `max` bytes, keeping its head and tail around one marker that
/// says how many bytes of output are left out in all (by the computer and here) and how to
/// read them. Returns the text, the bytes of output in it, and whether anything is left out.
pub fn cut_output(
    text: &str,
    max: usize,
    trapos_id: &str,
    request_id: &str,
) -> (String, usize, bool) {
    let (mut head, mut tail, earlier) = split_cut(text);
    if earlier == 0 {
        // Uncut so far: its two halves are the head and the tail.
        let mut mid = text.len() / 2;
        while !text.is_char_boundary(mid) {
            mid -= 1;
        }
        (head, tail) = text.split_at(mid);
    }
    let kept = head.len() + tail.len();
    let probe = output_marker(earlier + kept, trapos_id, request_id);
    let room = if earlier == 0 && text.len() <= max {
        kept
    } else {
        max.saturating_sub(probe.len()).min(kept)
    };
    if earlier == 0 && room == kept {
        return (text.to_owned(), kept, false);
    }
    // Half for each end; an end shorter than its half gives the rest to the other.
    let mut head_end = head.len().min(room / 2);
    let mut tail_keep = tail.len().min(room - head_end);
    head_end = head.len().min(room - tail_keep);
    while !head.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = tail.len() - tail_keep;
    while !tail.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    tail_keep = tail.len() - tail_start;
    let cut = earlier + (head.len() - head_end) + (tail.len() - tail_keep);
    if cut == 0 {
        return (format!("{head}{tail}"), kept, false);
    }
    let text = format!(
        "{}{}{}",
        &head[..head_end],
        output_marker(cut, trapos_id, request_id),
        &tail[tail_start..]
    );
    (text, head_end + tail_keep, true)
}

/// Shrinks `data` in place until its JSON is at most `max` bytes: first the captured output
/// (head and tail kept), then returned values (each keeps its descriptor with a cut value),
/// then the longest list (oldest items dropped), then any long string.
pub fn fit(data: &mut Value, max: usize) {
    let ids = |d: &Value, k: &str| {
        d.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (trapos_id, request_id) = (ids(data, "traposId"), ids(data, "requestId"));
    // Output the computer already cut gets the marker that says how to read the rest, even
    // when it fits.
    if let Some(Value::String(text)) = data.get("output")
        && text.contains(CUT_PREFIX)
    {
        let (text, kept, cut) = cut_output(text, usize::MAX, &trapos_id, &request_id);
        set_output(data, text, kept, cut);
    }
    let over = |d: &Value| json_len(d).saturating_sub(max);
    if over(data) == 0 {
        return;
    }
    // A cut aims from the whole text's escaping ratio, which the kept ends need not share:
    // cut again (from the ends already kept) until it fits, so the marker is never what the
    // last resort below cuts into.
    for key in ["output", "output", "output", "traceback", "traceback"] {
        let excess = over(data);
        if excess == 0 {
            return;
        }
        if let Some(Value::String(text)) = data.get(key) {
            // Escaping makes the JSON of the text longer than the text (`\n` is two bytes):
            // scale the room left for it by that ratio, and aim a little lower.
            let json_len = json_len(&Value::String(text.clone())).max(1);
            let room = json_len.saturating_sub(excess + 64);
            let target = (room as u128 * text.len() as u128 / json_len as u128) as usize;
            if key == "output" {
                let (text, kept, cut) = cut_output(text, target, &trapos_id, &request_id);
                set_output(data, text, kept, cut);
            } else if let Some(Value::String(text)) = data.get_mut(key) {
                *text = head_tail(text, target, |cut| format!("\n[… {cut} bytes cut …]\n"));
            }
        }
    }
    cut_returns(data, max);
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
            .filter_map(|(k, v)| v.as_array().map(|a| (k.clone(), json_len(v), a.len())))
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

fn set_output(data: &mut Value, text: String, kept: usize, cut: bool) {
    let Some(obj) = data.as_object_mut() else {
        return;
    };
    obj.insert("output".into(), Value::String(text));
    if cut {
        obj.insert("outputTruncated".into(), Value::Bool(true));
        obj.insert("outputKeptBytes".into(), json!(kept));
    }
}

/// Bytes a returned value keeps of its head, at least, when it is cut.
const MIN_HEAD: usize = 64;

/// Cuts the largest returned values until `data` fits: each keeps its descriptor, with the
/// head of its value (for a table, the head of its JSON text), its full length in bytes and
/// `cut: true`, so an agent sees what came back and how big it was.
fn cut_returns(data: &mut Value, max: usize) {
    for _ in 0..16 {
        let excess = json_len(data).saturating_sub(max);
        if excess == 0 {
            return;
        }
        let Some(Value::Array(returns)) = data.get_mut("returns") else {
            return;
        };
        let Some((idx, len)) = returns
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.get("value").map(|v| (i, value_text(v).len())))
            .filter(|(_, len)| *len > MIN_HEAD)
            .max_by_key(|(_, len)| *len)
        else {
            return;
        };
        let Some(d) = returns.get_mut(idx) else {
            return;
        };
        let Some(value) = d.get("value") else {
            return;
        };
        let text = value_text(value);
        // JSON escaping can make the text larger than its bytes: scale the excess by it.
        let json_len = json_len(&Value::String(text.clone())).max(1);
        let excess_bytes = (excess as u128 * len as u128 / json_len as u128) as usize;
        let mut keep = len.saturating_sub(excess_bytes + 96).max(MIN_HEAD);
        while !text.is_char_boundary(keep) {
            keep -= 1;
        }
        // A string of bytes (its value base64) keeps whole groups of four, so its head still
        // decodes, and its length counts the bytes, not the base64.
        let bytes = d.get("encoding").and_then(Value::as_str) == Some("base64");
        if bytes {
            keep -= keep % 4;
        }
        let own_len = if bytes {
            let pad = text.bytes().rev().take_while(|b| *b == b'=').count();
            (len / 4 * 3).saturating_sub(pad)
        } else {
            len
        };
        // Cut again (a later, tighter fit): the length stays the full value's.
        let full = d
            .get("length")
            .and_then(Value::as_u64)
            .unwrap_or(own_len as u64);
        if let Some(obj) = d.as_object_mut() {
            obj.insert("value".into(), Value::String(text[..keep].to_owned()));
            obj.insert("length".into(), json!(full));
            obj.insert("cut".into(), Value::Bool(true));
        }
    }
}

/// A returned value as text: a string as itself, anything else as its JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
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
    fn json_len_counts_what_serde_json_writes() {
        for v in [
            serde_json::json!(null),
            serde_json::json!({"a": [1, 2.5, "é\n\"q\""], "b": {"c": true}}),
            serde_json::json!("x".repeat(40_000)),
        ] {
            assert_eq!(json_len(&v), v.to_string().len(), "{v}");
        }
    }

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
    fn cutting_twice_counts_every_byte_left_out() {
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let client = format!(
            "{}{}{}",
            &text[..1000],
            trapdesk_core::session::captured::cut_marker(text.len() - 2000),
            &text[text.len() - 1000..]
        );
        let (once, kept1, cut1) = cut_output(&client, usize::MAX, "7:m", "h-1");
        assert!(cut1 && kept1 == 2000, "{kept1}");
        assert!(once.contains(&format!(
            "[… {} bytes of output cut here",
            text.len() - 2000
        )));
        let (twice, kept2, _) = cut_output(&once, 900, "7:m", "h-1");
        assert!(twice.contains(&format!(
            "[… {} bytes of output cut here",
            text.len() - kept2
        )));
        assert!(twice.starts_with("line 0\n") && twice.ends_with("line 4999\n"));
        assert_eq!(twice.matches("[…").count(), 1, "{twice}");
    }

    /// A byte string cut to fit keeps whole base64 groups (its head still decodes) and says
    /// how many bytes the whole string had, not how much base64.
    #[test]
    fn a_cut_byte_string_keeps_whole_groups_and_its_byte_length() {
        use base64::Engine;
        let bytes: Vec<u8> = (0..30_000u32).map(|i| (i * 7 % 256) as u8).collect();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let mut data = json!({"ok": true, "n": 1, "returns": [
            {"type": "string", "encoding": "base64", "value": b64}
        ]});
        fit(&mut data, 4096);
        let d = &data["returns"][0];
        assert_eq!(d["cut"], true, "{d}");
        assert_eq!(d["length"], 30_000, "{d}");
        let head = d["value"].as_str().unwrap_or_default();
        assert!(
            head.len() >= 64 && head.len().is_multiple_of(4),
            "{}",
            head.len()
        );
        let decoded = base64::engine::general_purpose::STANDARD.decode(head);
        assert!(
            decoded.is_ok_and(|b| bytes.starts_with(&b)),
            "the head decodes to the first bytes"
        );
    }
}

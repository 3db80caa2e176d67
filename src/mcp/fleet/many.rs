//! `exec-lua-many`'s results: one compact entry per computer, sized together so that the
//! failures come first and nothing is dropped without being counted.

use serde::Serialize;
use serde_json::{Value, json};

use super::{ENVELOPE, cost};
use crate::mcp::results::Outcome;
use trapdesk_core::session::{RequestError, Status, summary};

/// One computer's part of an `exec-lua-many` result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ManyEntry {
    pub trapos_id: String,
    pub ok: bool,
    /// `ok`, `error`, `timeout`, `disconnected`, `cancelled`, `failed`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub returns: Option<Value>,
    /// The Lua error, or `{code, message}` when no answer came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// The head of what it printed (the whole of it is in `computer-output`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub output: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub output_truncated: bool,
    pub duration_ms: u64,
}

impl ManyEntry {
    pub(super) fn new(
        trapos_id: String,
        request_id: Option<String>,
        result: Result<Value, RequestError>,
        ms: u64,
    ) -> Self {
        let (status, _) = summary::outcome(&result);
        let (returns, error, output) = match result {
            Ok(p) => {
                let failed = p.get("ok").and_then(Value::as_bool) == Some(false);
                (
                    p.get("returns").cloned().filter(|_| !failed),
                    failed.then(|| p.get("error").cloned().unwrap_or(json!("failed"))),
                    p.get("output")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                )
            }
            Err(e) => (
                None,
                Some(
                    json!({"code": crate::mcp::results::agent_code(e.code()), "message": e.to_string()}),
                ),
                e.output().unwrap_or_default().to_owned(),
            ),
        };
        ManyEntry {
            trapos_id,
            ok: status == Status::Ok,
            status: status.as_str(),
            request_id,
            returns,
            error,
            output,
            output_truncated: false,
            duration_ms: ms,
        }
    }

    /// One line for progress and the text block.
    pub(super) fn line(&self) -> String {
        let what = match (&self.error, &self.returns) {
            (Some(Value::String(e)), _) => summary::one_line(e, 80),
            (Some(e), _) => summary::one_line(
                e.get("message").and_then(Value::as_str).unwrap_or_default(),
                80,
            ),
            (None, Some(Value::Array(r))) if !r.is_empty() => {
                format!("returned {}", summary::returns_line(r))
            }
            _ => "done".to_owned(),
        };
        format!("{} {}: {what}", self.trapos_id, self.status)
    }

    /// Keeps the head of the output within `max` bytes, pointing at the rest.
    fn cut_output(&mut self, max: usize) {
        if self.output.len() <= max {
            return;
        }
        // The marker's own length hardly depends on the number in it: measure it once.
        let marker = |cut: usize| {
            format!(
                "\n[… {cut} bytes more; computer-output {{\"traposId\":\"{}\",\"requestId\":\"{}\"}} …]",
                self.trapos_id,
                self.request_id.as_deref().unwrap_or_default()
            )
        };
        let mut end = max.saturating_sub(marker(self.output.len()).len());
        while !self.output.is_char_boundary(end) {
            end -= 1;
        }
        let cut = self.output.len() - end;
        self.output = format!("{}{}", &self.output[..end], marker(cut));
        self.output_truncated = true;
    }
}

/// Where an entry goes in a broadcast's results: failures first, then by id, then by name.
fn order_key(e: &ManyEntry) -> (bool, u64, String) {
    let id: u64 = e
        .trapos_id
        .split(':')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX);
    (e.ok, id, e.trapos_id.clone())
}

/// A broadcast's first line (how many computers, how many per status, the first failure)
/// and its count per status, in the order the statuses first appear in `done`.
fn headline(done: &[ManyEntry], glob: Option<&str>) -> (String, Vec<(&'static str, usize)>) {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for e in done {
        match counts.iter_mut().find(|(s, _)| *s == e.status) {
            Some((_, n)) => *n += 1,
            None => counts.push((e.status, 1)),
        }
    }
    let counts_text: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    let mut line = match (done.len(), glob) {
        (0, Some(g)) => format!("no linked computer matches {g:?}"),
        (0, None) => "no computers given".to_owned(),
        (n, _) => format!(
            "{n} computer{}: {}",
            if n == 1 { "" } else { "s" },
            counts_text.join(", ")
        ),
    };
    if let Some(first) = done.first().filter(|e| !e.ok) {
        line.push_str(&format!("; first failure: {}", first.line()));
    }
    (line, counts)
}

/// The sized result of a broadcast: failures first, then successes, each in id order; output
/// heads share the budget; entries that still do not fit are counted, never dropped silently.
pub(super) fn many_outcome(
    mut done: Vec<ManyEntry>,
    budget: usize,
    glob: Option<&str>,
) -> (Status, Outcome) {
    done.sort_by_key(order_key);
    let total = done.len();
    let failed = done.iter().filter(|e| !e.ok).count();
    let (line, counts) = headline(&done, glob);
    // Every entry counts twice (structured and in the text), so does the line.
    let room = budget.saturating_sub(ENVELOPE * 2 + line.len() * 2 + 256);
    // Each computer's output head gets an equal share of what is left after the entries
    // (output escapes to about twice its bytes in the text copy, hence the 3).
    let bare: usize = done
        .iter()
        .map(|e| cost(e).saturating_sub(3 * e.output.len()))
        .sum::<usize>();
    let share = room.saturating_sub(bare) / 3 / total.max(1);
    for e in &mut done {
        e.cut_output(share.max(64));
    }
    let mut used = 0;
    let mut shown = Vec::with_capacity(total);
    let mut omitted = 0;
    for e in done {
        let n = cost(&e);
        if used + n > room && !shown.is_empty() {
            omitted += 1;
            continue;
        }
        used += n;
        shown.push(e);
    }
    let head = line;
    let build = |shown: &[ManyEntry], omitted: usize| {
        let mut line = head.clone();
        if omitted > 0 {
            line.push_str(&format!(
                "; {omitted} results not shown for room (their runs are in session-log)"
            ));
        }
        // The count of failures is one per status (`errorCount`, `timeoutCount`, …): a
        // top-level `failed` beside `failedCount` (the status) read as two disagreeing counts.
        let mut data = json!({"ok": failed == 0, "computers": total, "results": shown});
        if let Some(obj) = data.as_object_mut() {
            for (s, n) in &counts {
                obj.insert(format!("{s}Count"), json!(n));
            }
            if omitted > 0 {
                obj.insert("omitted".into(), json!(omitted));
            }
        }
        if failed == 0 {
            Outcome::ok(line, data)
        } else {
            Outcome::error(line, data)
        }
    };
    let mut outcome = build(&shown, omitted);
    // The estimate is close; the measure is exact: leave out more until the whole fits.
    while shown.len() > 1 && outcome.unfitted_size() > budget {
        let drop = (shown.len() / 10).max(1);
        shown.truncate(shown.len() - drop);
        omitted += drop;
        outcome = build(&shown, omitted);
    }
    let status = if failed == 0 {
        Status::Ok
    } else {
        Status::Error
    };
    (status, outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, ok: bool, out: &str) -> ManyEntry {
        let r = if ok {
            Ok(
                json!({"ok": true, "returns": [{"type": "number", "value": id}], "n": 1, "output": out}),
            )
        } else {
            Ok(json!({"ok": false, "error": "exec:1: boom", "output": out}))
        };
        ManyEntry::new(format!("{id}:c"), Some(format!("h-{id}")), r, 1)
    }

    #[test]
    fn failures_come_first_and_everything_is_counted() {
        let done: Vec<ManyEntry> = (1..=6).map(|i| entry(i, i % 3 != 0, "hi\n")).collect();
        let (status, o) = many_outcome(done, 24 * 1024, Some("*"));
        assert_eq!(status, Status::Error);
        assert!(o.line.starts_with("6 computers: "), "{}", o.line);
        assert!(
            o.line.contains("2 error") && o.line.contains("4 ok"),
            "{}",
            o.line
        );
        let ids: Vec<&str> = o.data["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["traposId"].as_str())
            .collect();
        assert_eq!(ids, ["3:c", "6:c", "1:c", "2:c", "4:c", "5:c"]);
        // One count per status, and no second count of failures beside them.
        assert_eq!(o.data["errorCount"], 2);
        assert_eq!(o.data["okCount"], 4);
        assert!(o.data.get("failed").is_none(), "{}", o.data);
    }

    #[test]
    fn big_outputs_keep_their_heads_and_the_result_fits() {
        let big = "x".repeat(100_000);
        let done: Vec<ManyEntry> = (1..=50).map(|i| entry(i, true, &big)).collect();
        let (_, o) = many_outcome(done, 24 * 1024, None);
        let r = o.clone().into_result(24 * 1024);
        let total = serde_json::to_string(&r).map_or(usize::MAX, |s| s.len());
        assert!(total <= 24 * 1024, "{total}");
        let results = o.data["results"].as_array().cloned().unwrap_or_default();
        assert_eq!(
            results.len() + o.data["omitted"].as_u64().unwrap_or(0) as usize,
            50
        );
        assert!(results.iter().all(|r| r["outputTruncated"] == true));
    }

    #[test]
    fn too_many_to_show_are_counted_not_dropped() {
        let done: Vec<ManyEntry> = (1..=2000).map(|i| entry(i, true, "")).collect();
        let (_, o) = many_outcome(done, 24 * 1024, Some("*"));
        let shown = o.data["results"].as_array().map_or(0, Vec::len);
        let omitted = o.data["omitted"].as_u64().unwrap_or(0) as usize;
        assert!(shown > 0 && omitted > 0);
        assert_eq!(shown + omitted, 2000);
        assert!(o.line.contains("not shown"), "{}", o.line);
    }
}

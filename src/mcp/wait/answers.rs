//! `wait-request`'s answers: a match of `until` (the matching line, its number in the run, the
//! cursor to go on from, and how many lines before it were not shown), the timeout's (the
//! output so far), an ended request's own result, and what became of a request the host no
//! longer has (`lost`, `expired`, `unknown_request`). Every figure is measured.

use serde_json::{Map, Value, json};

use super::super::Ran;
use super::super::convert::{outcome_of, run_line};
use super::super::lines_page::{compact, followed_end, head_that_fits, tail_that_fits};
use super::super::results::Outcome;
use trapdesk_core::session::detached::Fate;
use trapdesk_core::session::{FinishedRequest, OutputEntry, Session, Status};
use trapdesk_proto::protocol::Kind;

/// One wait: on what, from which cursor, with how much room, since when.
pub(in crate::mcp) struct Waiting<'a> {
    pub id: &'a str,
    pub trapos_id: &'a str,
    pub until: Option<&'a str>,
    /// The cursor the lines are read after (0: from the oldest kept).
    pub after: u64,
    /// Whether the caller gave `after`: an ended run's output is then the lines after it.
    pub given_after: bool,
    /// Bytes of JSON the lines may take.
    pub room: usize,
    pub started: tokio::time::Instant,
}

impl Waiting<'_> {
    fn waited_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

/// The first of `rows` whose text holds `until`.
pub(super) fn first_match(rows: &[(u64, Value)], until: Option<&str>) -> Option<usize> {
    let until = until?;
    rows.iter().position(|(_, v)| {
        v.get("text")
            .and_then(Value::as_str)
            .is_some_and(|t| t.contains(until))
    })
}

fn text_of(v: &Value) -> &str {
    v.get("text").and_then(Value::as_str).unwrap_or_default()
}

/// The number of the line at `seq` among request `id`'s lines, its first being 1.
fn line_number(session: &Session, trapos_id: &str, id: &str, seq: u64) -> u64 {
    session
        .output_since(trapos_id, 0)
        .iter()
        .filter(|item| item.seq <= seq)
        .filter(|item| {
            matches!(&item.entry, OutputEntry::Line { request_id, .. }
                if request_id.as_deref() == Some(id))
        })
        .count() as u64
}

/// `data` with `rows` as its page (docs/mcp.md, "Output pages").
fn with_page(mut data: Value, rows: Vec<(u64, Value)>) -> Value {
    let lines: Vec<Value> = rows.into_iter().map(|(_, v)| v).collect();
    if let Some(obj) = data.as_object_mut() {
        compact(obj, &lines);
    }
    data
}

/// `until` found in the last of `rows` (the lines after the cursor up to it): that line, its
/// number in the run and the cursor at it, with the lines just before it that fit; those
/// left out are counted in `skipped`.
pub(super) fn matched(
    session: &Session,
    w: &Waiting<'_>,
    rows: Vec<(u64, Value)>,
) -> (Status, Outcome) {
    let total = rows.len();
    let Some((seq, hit)) = rows.last().map(|(s, v)| (*s, v.clone())) else {
        return running(w, rows);
    };
    let number = line_number(session, w.trapos_id, w.id, seq);
    let shown = tail_that_fits(rows, w.room);
    let skipped = total - shown.len();
    let waited = w.waited_ms();
    let (id, t) = (w.id, w.trapos_id);
    let data = json!({"ok": true, "status": "running", "requestId": id, "traposId": t,
        "matched": true, "line": text_of(&hit), "lineNumber": number, "cursor": seq,
        "skipped": skipped, "waitedMs": waited, "more": false});
    let data = with_page(data, shown);
    let mut line = format!(
        "{id} on {t}: running; found in line {number} of its output after waiting {waited} ms: {}",
        text_of(&hit)
    );
    if skipped > 0 {
        line.push_str(&format!(
            " ({skipped} earlier lines after the cursor not shown: computer-output after={} reads them)",
            w.after
        ));
    }
    line.push_str(&format!("; go on with after={seq}"));
    (Status::Ok, Outcome::ok(line, data))
}

/// The timeout's answer: the lines after the cursor that fit, oldest first, and the cursor
/// to go on from.
pub(super) fn running(w: &Waiting<'_>, rows: Vec<(u64, Value)>) -> (Status, Outcome) {
    let (rows, more) = head_that_fits(rows, w.room);
    let cursor = rows.last().map_or(w.after, |(seq, _)| *seq);
    let n = rows.len();
    let waited = w.waited_ms();
    let (id, t) = (w.id, w.trapos_id);
    let data = json!({"ok": true, "status": "running", "requestId": id, "traposId": t,
        "matched": false, "waitedMs": waited, "cursor": cursor, "more": more});
    let data = with_page(data, rows);
    let line = format!(
        "{id} on {t}: still running after waiting {waited} ms; {n} line{} after {}{}; go on with after={cursor}",
        if n == 1 { "" } else { "s" },
        w.after,
        if more { ", more follow" } else { "" }
    );
    (Status::Ok, Outcome::ok(line, data))
}

/// An ended request's answer, as its own call would have given it; with `after`, its output
/// is the lines after that cursor, and with `until`, whether one of them holds it.
pub(super) fn ended(
    session: &Session,
    f: &FinishedRequest,
    w: &Waiting<'_>,
    rows: Vec<(u64, Value)>,
) -> (Status, Outcome) {
    let ran = Ran {
        kind: f.kind,
        trapos_id: Some(f.trapos_id.clone()),
        request_id: Some(f.request_id.clone()),
        ending: f.ending.clone(),
    };
    let what = match f.kind {
        Kind::ExecLua => "Lua".to_owned(),
        k => k.to_string(),
    };
    let (status, mut outcome) = match f.kind {
        Kind::ExecLua | Kind::RunFile => outcome_of(ran, &what, run_line),
        _ => outcome_of(ran, &what, |_| format!("{what} ended")),
    };
    let hit = first_match(&rows, w.until).and_then(|at| rows.get(at).cloned());
    let cursor = rows.last().map_or(w.after, |(seq, _)| *seq);
    if let Some(obj) = outcome.data.as_object_mut() {
        obj.insert("status".into(), json!(f.status.as_str()));
        obj.insert("cursor".into(), json!(cursor));
    }
    if w.given_after {
        // The waiter followed the run: its result without the output it has read, and what
        // came after the cursor paged (`more`, `cursor`), so the output goes once.
        followed_end(&mut outcome, rows, w.room, w.after);
        if let Some(obj) = outcome.data.as_object_mut() {
            obj.insert("outputAfter".into(), json!(w.after));
        }
    }
    let Some(obj) = outcome.data.as_object_mut() else {
        return (status, outcome);
    };
    if w.until.is_some() {
        obj.insert("matched".into(), json!(hit.is_some()));
        if let Some((seq, v)) = hit {
            let number = line_number(session, w.trapos_id, w.id, seq);
            obj.insert("line".into(), json!(text_of(&v)));
            obj.insert("lineNumber".into(), json!(number));
        }
    }
    (status, outcome)
}

/// A request the host has neither pending nor kept: `lost` (with its `reason`), `expired`,
/// or `unknown_request` for an id this host never issued; the session log has it too.
pub(super) fn missing(session: &Session, id: &str) -> (Status, Outcome) {
    let mut extra = Map::new();
    extra.insert("requestId".into(), json!(id));
    let (code, message) = match session.fate_of(id) {
        Fate::Lost {
            reason,
            trapos_id,
            message,
        } => {
            extra.insert("reason".into(), json!(reason));
            extra.insert("traposId".into(), json!(trapos_id));
            ("lost", message)
        }
        Fate::Expired { trapos_id, message } => {
            if let Some(t) = trapos_id {
                extra.insert("traposId".into(), json!(t));
            }
            ("expired", message)
        }
        Fate::Unknown => (
            "unknown_request",
            format!("no request {id}: this host never issued that id"),
        ),
    };
    (Status::Failed, Outcome::failure(code, &message, extra))
}

//! Long work that outlives a call (docs/mcp.md, "Detached runs"): `exec-lua` and `run-file`
//! with `detach`, and `wait-request`, which waits on any pending or recently ended request for
//! a text in its output, its end or a timeout, and never cancels it.

use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::{Map, Value, json};

mod answers;

use answers::Waiting;

use super::convert::{outcome_of, run_line};
use super::params::WaitRequest;
use super::results::{Outcome, json_budget};
use super::{Ran, Recorded, TrapdeskMcp, bare, schemas};
use trapdesk_core::session::{
    Event, OutputEntry, RequestError, RequestSpec, RequestState, Session, Status,
};

type ToolResult = Result<CallToolResult, ErrorData>;

/// How long `wait-request` waits when no `timeoutMs` is given.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// One line of a request's output as `wait-request` and `computer-output` give it.
pub(crate) fn line_json(seq: u64, at_ms: u64, entry: &OutputEntry) -> Option<Value> {
    match entry {
        OutputEntry::Line {
            request_id,
            stream,
            text,
            complete,
        } => Some(
            json!({"seq": seq, "at": at_ms, "requestId": request_id, "stream": stream,
            "text": text, "complete": complete}),
        ),
        _ => None,
    }
}

/// A request's status word: `running` while pending, how it ended while its result is kept,
/// `ended` once only its lines are left.
pub(crate) fn status_of(session: &Session, request_id: &str) -> &'static str {
    match session.request_state(request_id) {
        Some(RequestState::Running { .. }) => "running",
        Some(RequestState::Ended(f)) => f.status.as_str(),
        None => "ended",
    }
}

/// The lines of request `id` (or of every request, with `None`) after `after`, oldest first,
/// with their cursors.
fn lines_after(
    session: &Session,
    trapos_id: &str,
    id: Option<&str>,
    after: u64,
) -> Vec<(u64, Value)> {
    session
        .output_since(trapos_id, after)
        .into_iter()
        .filter(|item| match &item.entry {
            OutputEntry::Line { request_id, .. } => id.is_none() || request_id.as_deref() == id,
            _ => false,
        })
        .filter_map(|item| Some((item.seq, line_json(item.seq, item.at_ms, &item.entry)?)))
        .collect()
}

/// `computer-output` with `after`: the lines newer than the cursor, oldest first, at most
/// `limit` and what fits; `cursor` is the last one given (or `after` when none is new).
pub(crate) fn output_after(
    session: &Session,
    trapos_id: &str,
    request_id: Option<&str>,
    after: u64,
    limit: usize,
    max_result_bytes: usize,
) -> Outcome {
    let after = session.output_cursor(trapos_id, after);
    let mut rows = lines_after(session, trapos_id, request_id, after);
    let asked = rows.len();
    rows.truncate(limit);
    let (rows, more) = super::lines_page::head_that_fits(rows, page_room(max_result_bytes));
    let more = more || asked > limit;
    let cursor = rows.last().map_or(after, |(seq, _)| *seq);
    let lines: Vec<Value> = rows.into_iter().map(|(_, v)| v).collect();
    let n = lines.len();
    let mut data = json!({"ok": true, "traposId": trapos_id, "cursor": cursor, "more": more});
    let mut line = format!(
        "{n} new line{} of {trapos_id} after {after}; {} after={cursor}",
        if n == 1 { "" } else { "s" },
        if more {
            "more follow: read on with"
        } else {
            "next"
        }
    );
    if let Some(obj) = data.as_object_mut() {
        if let Some(r) = request_id {
            let status = status_of(session, r);
            obj.insert("requestId".into(), json!(r));
            obj.insert("status".into(), json!(status));
            line = format!("{line} ({r}: {status})");
        }
        super::lines_page::compact(obj, &lines);
    }
    Outcome::ok(line, data)
}

/// Bytes of JSON a page's lines may take in a result of `max_result_bytes`: nearly all of the
/// data's room (the text block no longer repeats them), less what the fields around them take.
fn page_room(max_result_bytes: usize) -> usize {
    json_budget(max_result_bytes, "").saturating_sub(1024)
}

impl TrapdeskMcp {
    /// Starts a detached run for `exec-lua` or `run-file` and answers once it is on its way:
    /// at once, or after the person's approval when the policy asks for one. A call that goes
    /// away while the approval is pending takes the request with it (it never started).
    pub(crate) async fn detach_run(
        &self,
        ctx: &RequestContext<RoleServer>,
        rec: &Recorded,
        target: &str,
        spec: RequestSpec,
        what: &str,
    ) -> (Status, Outcome) {
        let (mut events, kind) = (self.session.subscribe(), spec.kind());
        let ticket = match self
            .session
            .start(target, spec.detached(), rec.origin.clone())
        {
            Ok(t) => t,
            Err(e) => {
                let ran = Ran {
                    kind,
                    trapos_id: None,
                    request_id: None,
                    ending: bare(Err(e)),
                };
                return outcome_of(ran, what, run_line);
            }
        };
        self.session
            .tool_call_request(rec.call_id, &ticket.id, &ticket.trapos_id);
        let (trapos_id, request_id) = (ticket.trapos_id.clone(), ticket.id.clone());
        loop {
            let waiting = self
                .session
                .pending()
                .into_iter()
                .find(|p| p.request_id == request_id)
                .map(|p| p.awaiting_approval);
            match waiting {
                Some(false) => break,
                // Refused, or ended before it was answered: as the call would have answered.
                None => {
                    let ending = ticket.wait_ending().await;
                    let ran = Ran {
                        kind,
                        trapos_id: Some(trapos_id),
                        request_id: Some(request_id),
                        ending,
                    };
                    return outcome_of(ran, what, run_line);
                }
                Some(true) => tokio::select! {
                    _ = events.recv() => {}
                    () = tokio::time::sleep(Duration::from_millis(500)) => {}
                    () = ctx.ct.cancelled() => {
                        drop(ticket);
                        let ran = Ran {
                            kind,
                            trapos_id: Some(trapos_id),
                            request_id: Some(request_id),
                            ending: bare(Err(RequestError::Cancelled { output: None })),
                        };
                        return outcome_of(ran, what, run_line);
                    }
                },
            }
        }
        ticket.detach();
        let data = json!({"ok": true, "status": "running", "requestId": request_id,
            "traposId": trapos_id});
        let line = format!(
            "{what} detached on {trapos_id} as {request_id}: running; follow it with wait-request or computer-output, stop it with cancel-request"
        );
        (Status::Ok, Outcome::ok(line, data))
    }
}

#[tool_router(router = wait_router, vis = "pub(crate)")]
impl TrapdeskMcp {
    #[tool(
        name = "wait-request",
        title = "Wait on a request",
        description = "Wait on a pending or recently ended request (results stay 15 minutes: the last 64 detached runs and 64 other requests). Answers when until appears in a line of its output after the cursor after: status running, that line, its lineNumber and the cursor at it; when the request ends: its result, as its own call would have answered (with after: only the output after it); or at timeoutMs: status running with the output so far. Never cancels the request.",
        annotations(title = "Wait on a request", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = schemas::derived::<crate::mcp::shapes::Waited>()
    )]
    async fn wait_request(
        &self,
        Parameters(p): Parameters<WaitRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"requestId": p.request_id, "until": p.until, "after": p.after, "timeoutMs": p.timeout_ms});
        let state = self.session.request_state(&p.request_id);
        let target = match &state {
            Some(RequestState::Running { trapos_id, .. }) => Some(trapos_id.clone()),
            Some(RequestState::Ended(f)) => Some(f.trapos_id.clone()),
            None => None,
        };
        let rec = self.begin(&ctx, "wait-request", target.as_deref(), args);
        if let Some(bad) = self.bad_wait(p.timeout_ms) {
            return Ok(self.end(rec, Status::Failed, bad));
        }
        if p.until.as_deref() == Some("") {
            let bad = super::params::invalid_field(
                "until",
                "invalid argument until: expected some text to look for (leave it out to wait for the end)",
            );
            return Ok(self.end(rec, Status::Failed, bad));
        }
        let Some(trapos_id) = target else {
            let (status, outcome) = answers::missing(&self.session, &p.request_id);
            return Ok(self.end(rec, status, outcome));
        };
        if let Err(refused) = self.may_read_output(&trapos_id, &rec.origin).await {
            return Ok(self.end(rec, Status::Failed, refused));
        }
        let timeout = p.timeout_ms.map_or(DEFAULT_WAIT, Duration::from_millis);
        let after = self.session.output_cursor(&trapos_id, p.after.unwrap_or(0));
        let w = Waiting {
            id: &p.request_id,
            trapos_id: &trapos_id,
            until: p.until.as_deref(),
            after,
            given_after: p.after.is_some(),
            room: page_room(self.max_result_bytes),
            started: tokio::time::Instant::now(),
        };
        let (status, outcome) = self.wait_for(&ctx, &w, timeout).await;
        Ok(self.end(rec, status, outcome))
    }
}

impl TrapdeskMcp {
    /// A `timeoutMs` for `wait-request` outside 1 ms to the longest request timeout.
    fn bad_wait(&self, ms: Option<u64>) -> Option<Outcome> {
        let max = self.session.settings().max_request_timeout.as_millis() as u64;
        let ms = ms?;
        (ms == 0 || ms > max).then(|| {
            super::params::invalid_field(
                "timeoutMs",
                &format!("invalid argument timeoutMs: expected 1 to {max} milliseconds, got {ms}"),
            )
        })
    }

    async fn wait_for(
        &self,
        ctx: &RequestContext<RoleServer>,
        w: &Waiting<'_>,
        timeout: Duration,
    ) -> (Status, Outcome) {
        let (id, trapos_id, after) = (w.id, w.trapos_id, w.after);
        // Subscribed before the first look, so that nothing between the look and the wait is
        // missed; a lagging receiver only means another look.
        let mut events = self.session.subscribe();
        let deadline = w.started + timeout;
        // The lines seen so far, read on from `scanned` at each look rather than from `after`
        // again (the scrollback holds up to 10,000 lines); a line still open is read again.
        let mut rows: Vec<(u64, Value)> = Vec::new();
        let mut scanned = after;
        loop {
            rows.retain(|(seq, _)| *seq <= scanned);
            rows.extend(lines_after(&self.session, trapos_id, Some(id), scanned));
            scanned = match rows.last() {
                Some((seq, v)) if v["complete"] == false => seq - 1,
                Some((seq, _)) => *seq,
                None => after,
            };
            match self.session.request_state(id) {
                Some(RequestState::Ended(f)) => return answers::ended(&self.session, &f, w, rows),
                None => return answers::missing(&self.session, id),
                Some(RequestState::Running { .. }) => {}
            }
            if let Some(at) = answers::first_match(&rows, w.until) {
                rows.truncate(at + 1);
                return answers::matched(&self.session, w, rows);
            }
            if tokio::time::Instant::now() >= deadline {
                return answers::running(w, rows);
            }
            if !news_of(&mut events, id, deadline, ctx).await {
                // The waiter went away: stop waiting; the request goes on.
                let mut extra = Map::new();
                extra.insert("requestId".into(), json!(id));
                return (
                    Status::Cancelled,
                    Outcome::failure(
                        "cancelled",
                        "the wait was cancelled; the request goes on",
                        extra,
                    ),
                );
            }
            // Output comes in bursts (the computer flushes every 50 ms): let one settle.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Waits until something about request `id` happens (or the deadline): other requests'
/// output and events are passed over without a look. False when the waiter went away.
async fn news_of(
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    id: &str,
    deadline: tokio::time::Instant,
    ctx: &RequestContext<RoleServer>,
) -> bool {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        tokio::select! {
            ev = events.recv() => match ev {
                Ok(Event::Output { request_id: Some(r), .. }) if r == id => return true,
                Ok(Event::RequestFinished { request_id, .. }) if request_id == id => return true,
                Ok(Event::RequestStarted { info }) if info.request_id == id => return true,
                Ok(_) => {}
                // Lagged: something may have been missed, so look.
                Err(RecvError::Lagged(_)) => return true,
                Err(RecvError::Closed) => {
                    tokio::time::sleep_until(deadline).await;
                    return true;
                }
            },
            () = tokio::time::sleep_until(deadline) => return true,
            () = ctx.ct.cancelled() => return false,
        }
    }
}

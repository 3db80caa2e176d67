//! Long work that outlives a call (docs/mcp.md, "Detached runs"): `exec-lua` and `run-file`
//! with `detach`, and `wait-request`, which waits on any pending or recently ended request for
//! a text in its output, its end or a timeout, and never cancels it.

use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::{Map, Value, json};

use super::convert::{outcome_of, run_line};
use super::params::WaitRequest;
use super::results::{Outcome, json_budget};
use super::{Ran, Recorded, TrapdeskMcp, bare, schemas};
use trapdesk_core::session::{
    Event, OutputEntry, RequestError, RequestSpec, RequestState, Session, Status,
};
use trapdesk_proto::protocol::Kind;

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

/// As many of `rows` from the oldest as fit in `room` bytes of JSON (at least one), and
/// whether some were left for the next call.
fn head_that_fits(mut rows: Vec<(u64, Value)>, room: usize) -> (Vec<(u64, Value)>, bool) {
    let mut used = 0;
    let mut keep = 0;
    for (_, v) in &rows {
        let size = v.to_string().len() + 1;
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
    rows.truncate(limit);
    let room = json_budget(max_result_bytes, "") / 2;
    let (rows, more) = head_that_fits(rows, room);
    let cursor = rows.last().map_or(after, |(seq, _)| *seq);
    let lines: Vec<Value> = rows.into_iter().map(|(_, v)| v).collect();
    let n = lines.len();
    let mut data = json!({"ok": true, "traposId": trapos_id, "lines": lines, "cursor": cursor,
        "more": more});
    let mut line = format!(
        "{n} new line{} of {trapos_id} after {after}; next after={cursor}",
        if n == 1 { "" } else { "s" }
    );
    if let (Some(r), Some(obj)) = (request_id, data.as_object_mut()) {
        let status = status_of(session, r);
        obj.insert("requestId".into(), json!(r));
        obj.insert("status".into(), json!(status));
        line = format!("{line} ({r}: {status})");
    }
    Outcome::ok(line, data)
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
        let mut events = self.session.subscribe();
        let ticket = match self
            .session
            .start(target, spec.detached(), rec.origin.clone())
        {
            Ok(t) => t,
            Err(e) => {
                let ran = Ran {
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

    /// The answer for a request that ended, as its own call would have given it.
    fn ended(&self, f: &trapdesk_core::session::FinishedRequest, cursor: u64) -> (Status, Outcome) {
        let ran = Ran {
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
        if let Some(obj) = outcome.data.as_object_mut() {
            obj.insert("status".into(), json!(f.status.as_str()));
            obj.insert("cursor".into(), json!(cursor));
        }
        (status, outcome)
    }
}

#[tool_router(router = wait_router, vis = "pub(crate)")]
impl TrapdeskMcp {
    #[tool(
        name = "wait-request",
        title = "Wait on a request",
        description = "Wait on a pending or recently ended request (results stay 15 minutes: the last 64 detached runs and 64 other requests). Answers when until appears in a line of its output after the cursor after: status running, the lines up to it and the cursor to pass next; when the request ends: its result, as its own call would have answered; or at timeoutMs: status running with the output so far. Never cancels the request.",
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
            let mut extra = Map::new();
            extra.insert("requestId".into(), json!(p.request_id));
            let message = format!(
                "no request {}: unknown, or it ended more than 15 minutes (or 64 requests of its sort) ago and its result is no longer kept; its output may still be in computer-output",
                p.request_id
            );
            let outcome = Outcome::failure("unknown_request", &message, extra);
            return Ok(self.end(rec, Status::Failed, outcome));
        };
        if let Err(refused) = self.may_read_output(&trapos_id, &rec.origin).await {
            return Ok(self.end(rec, Status::Failed, refused));
        }
        let timeout = p.timeout_ms.map_or(DEFAULT_WAIT, Duration::from_millis);
        let after = self.session.output_cursor(&trapos_id, p.after.unwrap_or(0));
        let (status, outcome) = self
            .wait_for(
                &ctx,
                &p.request_id,
                &trapos_id,
                p.until.as_deref(),
                after,
                timeout,
            )
            .await;
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
        id: &str,
        trapos_id: &str,
        until: Option<&str>,
        after: u64,
        timeout: Duration,
    ) -> (Status, Outcome) {
        // Subscribed before the first look, so that nothing between the look and the wait is
        // missed; a lagging receiver only means another look.
        let mut events = self.session.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        let room = json_budget(self.max_result_bytes, "") / 2;
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
            let last = rows.last().map_or(after, |(seq, _)| *seq);
            match self.session.request_state(id) {
                Some(RequestState::Ended(f)) => return self.ended(&f, last),
                None => {
                    let mut extra = Map::new();
                    extra.insert("requestId".into(), json!(id));
                    let message = format!("request {id} ended and its result is no longer kept");
                    return (
                        Status::Failed,
                        Outcome::failure("unknown_request", &message, extra),
                    );
                }
                Some(RequestState::Running { .. }) => {}
            }
            if let Some(text) = until
                && let Some(at) = rows.iter().position(|(_, v)| {
                    v.get("text")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.contains(text))
                })
            {
                rows.truncate(at + 1);
                let hit = rows.last().map(|(s, v)| (*s, v.clone()));
                return running(id, trapos_id, after, rows, room, hit, None);
            }
            if tokio::time::Instant::now() >= deadline {
                return running(id, trapos_id, after, rows, room, None, Some(timeout));
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

/// A running request's answer: the lines after the cursor (those that fit, oldest first), the
/// cursor to pass next time, and why it answered (`until` found, or the timeout).
fn running(
    id: &str,
    trapos_id: &str,
    after: u64,
    rows: Vec<(u64, Value)>,
    room: usize,
    hit: Option<(u64, Value)>,
    timed_out: Option<Duration>,
) -> (Status, Outcome) {
    let (rows, more) = head_that_fits(rows, room);
    // A match beyond what fits is not given yet: the next call, from this cursor, finds it.
    let hit = hit.filter(|_| !more);
    let cursor = rows.last().map_or(after, |(seq, _)| *seq);
    let output: String = rows
        .iter()
        .filter_map(|(_, v)| v.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    let lines: Vec<Value> = rows.into_iter().map(|(_, v)| v).collect();
    let mut data = json!({"ok": true, "status": "running", "requestId": id, "traposId": trapos_id,
        "output": output, "lines": lines, "cursor": cursor, "more": more});
    let obj = data.as_object_mut();
    let line = match (&hit, timed_out) {
        (Some((seq, v)), _) => {
            if let Some(obj) = obj {
                obj.insert("matched".into(), json!(true));
                obj.insert("line".into(), v.get("text").cloned().unwrap_or(Value::Null));
                obj.insert("cursor".into(), json!(seq));
            }
            format!(
                "{id} on {trapos_id}: running; found at line {seq}: {}",
                v.get("text").and_then(Value::as_str).unwrap_or_default()
            )
        }
        (None, t) => {
            if let Some(obj) = obj {
                obj.insert("matched".into(), json!(false));
            }
            let ms = t.map_or(0, |t| t.as_millis());
            format!("{id} on {trapos_id}: still running after waiting {ms} ms")
        }
    };
    (Status::Ok, Outcome::ok(line, data))
}

//! The fleet tools: `probe-computers` (one page of computers by glob and cursor) and
//! `exec-lua-many` (one chunk on many computers, the console's broadcast for agents).
//!
//! Both answer in compact entries sized to the result budget, and neither loses a computer
//! without saying so: a probe page that would not fit ends early and its `nextCursor` starts
//! after the last entry shown; a broadcast whose results would not fit lists the failures first
//! and counts the rest.

use std::time::Duration;

use futures_util::StreamExt;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::convert::timeout;
use super::params::{ExecLuaMany, ProbeComputers};
use super::results::Outcome;
use super::{TrapdeskMcp, schemas};
use crate::glob::Glob;
use crate::session::fleet::PageQuery;
use crate::session::{ComputerInfo, PendingInfo, RequestError, RequestSpec, Status, summary};

/// How long a probe waits for each computer's `ping`.
const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// Page size when the caller gives none, and the most a caller may ask for.
const DEFAULT_PAGE: u64 = 50;
const MAX_PAGE: u64 = 500;
/// Computers running a broadcast chunk at once, by default and at most.
const DEFAULT_CONCURRENCY: u64 = 16;
const MAX_CONCURRENCY: u64 = 256;
/// Bytes kept for the structured content's own keys around the list.
const ENVELOPE: usize = 256;

type ToolResult = Result<CallToolResult, ErrorData>;

/// One computer in a `probe-computers` page. A struct rather than ad-hoc JSON so that what an
/// entry holds is in one place, and a new field (a per-computer policy, say) is one line here
/// and one where it is filled in.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProbeEntry {
    pub trapos_id: String,
    pub id: u64,
    pub label: Option<String>,
    /// Epoch milliseconds.
    pub connected_at: u64,
    pub serves: Vec<String>,
    /// Requests running or queued on it (pings of this probe excepted).
    pub pending: usize,
    /// Those requests, only when there are any (compact entries: an idle computer has none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending_requests: Vec<Value>,
    /// Absent until a round trip was measured (compact entries: an idle computer just linked
    /// has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_rtt_ms: Option<u64>,
    /// This probe's ping: `{ok, rttMs}` or `{ok:false, error}`; absent with `ping:false`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ping: Option<Value>,
    /// What the policy lets the caller do there: `{exec, write, read}` = allow, ask or deny.
    pub policy: Value,
}

impl ProbeEntry {
    fn new(c: &ComputerInfo, pending: &[PendingInfo], ping: Option<Value>, policy: Value) -> Self {
        let pending_requests: Vec<Value> = pending
            .iter()
            .filter(|r| r.trapos_id == c.trapos_id && r.kind != "ping")
            .map(|r| {
                json!({"requestId": r.request_id, "kind": r.kind, "summary": r.summary,
                    "origin": r.origin.name(), "sent": r.sent})
            })
            .collect();
        let rtt = ping
            .as_ref()
            .and_then(|p| p.get("rttMs").and_then(Value::as_u64))
            .or(c.last_rtt_ms);
        ProbeEntry {
            trapos_id: c.trapos_id.clone(),
            id: c.id,
            label: c.label.clone(),
            connected_at: crate::session::model::epoch_ms(c.connected_at),
            serves: c.serves.clone(),
            pending: pending_requests.len(),
            pending_requests,
            last_rtt_ms: rtt,
            ping,
            policy,
        }
    }
}

/// One computer's part of an `exec-lua-many` result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ManyEntry {
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
    fn new(
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
                Some(json!({"code": e.code(), "message": e.to_string()})),
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
    fn line(&self) -> String {
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

impl ProbeEntry {
    /// This entry's row in the page's table (the text block): every field of the entry, in far
    /// fewer bytes than its JSON would take there. `id` and `label` are the two halves of the
    /// traposId (`"<id>:<label>"`). A label is any text a player typed, so its control
    /// characters are written escaped (`\t`, `\n`) to keep one row a line and six cells.
    fn row(&self) -> String {
        // `to_rfc3339_opts` rather than `format`: the latter parses its pattern every call.
        let at = chrono::DateTime::from_timestamp_millis(self.connected_at as i64).map_or_else(
            || "?".to_owned(),
            |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        );
        let pending = if self.pending_requests.is_empty() {
            "0".to_owned()
        } else {
            let ids: Vec<&str> = self
                .pending_requests
                .iter()
                .filter_map(|r| r.get("requestId").and_then(Value::as_str))
                .collect();
            format!("{} ({})", self.pending, ids.join(" "))
        };
        let rtt = match (&self.ping, self.last_rtt_ms) {
            (Some(p), _) if p.get("ok") == Some(&Value::Bool(false)) => {
                let code = p
                    .pointer("/error/code")
                    .and_then(Value::as_str)
                    .unwrap_or("failed");
                format!("ping {code}")
            }
            (_, Some(ms)) => ms.to_string(),
            (_, None) => "-".to_owned(),
        };
        let policy = |k: &str| self.policy.get(k).and_then(Value::as_str).unwrap_or("?");
        let id: String = self
            .trapos_id
            .chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect();
        format!(
            "{id}\t{at}\t{pending}\t{rtt}\t{}/{}/{}\t{}",
            policy("exec"),
            policy("write"),
            policy("read"),
            self.serves.join(",")
        )
    }
}

/// The header of a probe page's table.
const TABLE_HEADER: &str = "traposId\tconnected (UTC)\tpending\trtt ms\texec/write/read\tserves";

fn size<T: Serialize>(v: &T) -> usize {
    summary::json_len(v)
}

/// What an entry costs in a result: its JSON in `structuredContent`, and the same JSON again,
/// escaped as a string, in the text block.
fn cost<T: Serialize>(v: &T) -> usize {
    let json = serde_json::to_string(v).unwrap_or_default();
    json.len() + escaped_len(&json) + 2
}

/// The most entries a probe page with `room` bytes can hold: `room` over what the smallest
/// possible entry costs (an empty label, no request, nothing served, the shortest policy
/// words).
fn most_per_page(room: usize) -> usize {
    let smallest = ProbeEntry {
        trapos_id: "0:".into(),
        id: 0,
        label: Some(String::new()),
        connected_at: 0,
        serves: Vec::new(),
        pending: 0,
        pending_requests: Vec::new(),
        last_rtt_ms: None,
        ping: None,
        policy: json!({"exec": "ask", "write": "ask", "read": "ask"}),
    };
    (room / probe_cost(&smallest, &smallest.row()).max(1)).max(1)
}

/// What a probe entry costs in a result: its JSON and a comma in `structuredContent`, and its
/// row of the table in the text block (escaped there, without the quotes, plus a newline).
fn probe_cost(e: &ProbeEntry, row: &str) -> usize {
    size(e) + 1 + escaped_len(row) - 2 + 2
}

/// The length of `text` as a JSON string (quotes included), counted rather than serialized:
/// serde_json escapes `"`, `\` and the control characters, those with a short form in two
/// bytes and the rest as `\u00XX`.
fn escaped_len(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// The size of the MCP result an outcome becomes, unsized.
fn result_size(o: &Outcome) -> usize {
    size(&o.clone().into_result(usize::MAX))
}

/// The first line of a probe page: how many are linked and matched, what this page holds and
/// how to go on.
fn probe_line(
    linked: usize,
    matched: usize,
    pattern: Option<&str>,
    shown: &[ProbeEntry],
    next_cursor: Option<&str>,
) -> String {
    let mut line = match (linked, pattern) {
        (0, _) => "no computers linked".to_owned(),
        (l, None) => format!("{l} linked"),
        (l, Some(g)) => format!("{matched} of {l} linked match {g:?}"),
    };
    if matched > 0 {
        match (shown.first(), shown.last()) {
            (Some(a), Some(b)) => line.push_str(&format!(
                "; this page: {} ({} … {})",
                shown.len(),
                a.trapos_id,
                b.trapos_id
            )),
            _ => line.push_str("; this page: none (the cursor is past the last one)"),
        }
        match next_cursor {
            Some(c) => line.push_str(&format!("; more with cursor {c:?}")),
            None => line.push_str("; last page"),
        }
    }
    line
}

#[tool_router(router = fleet_router, vis = "pub(crate)")]
impl TrapdeskMcp {
    #[tool(
        name = "probe-computers",
        title = "Probe linked computers",
        description = "List linked ComputerCraft computers, one page at a time: traposId, id, label, connectedAt, the request types each serves, its pending requests, the last round trip, and what the policy lets you do there (policy: exec/write/read = allow, ask or deny). match narrows by a glob on traposId or label (\"miner-*\"); limit sets the page size; pass the returned nextCursor as cursor for the next page (nextCursor is null on the last page). The first line says how many matched. With ping (default true) each computer of the page is pinged now.",
        annotations(title = "Probe linked computers", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::probe_result()
    )]
    async fn probe_computers(
        &self,
        Parameters(p): Parameters<ProbeComputers>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args =
            json!({"ping": p.ping, "match": p.pattern, "limit": p.limit, "cursor": p.cursor});
        let rec = self.begin(&ctx, "probe-computers", None, args);
        let room = self
            .max_result_bytes
            .saturating_sub(ENVELOPE * 2 + TABLE_HEADER.len());
        let limit = p.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE) as usize;
        let query = PageQuery {
            glob: p.pattern.as_deref().map(Glob::new),
            // No more than could fit: a page of `limit: 500` used to copy (and ping) 500
            // computers to show the ~90 that fit the budget.
            limit: limit.min(most_per_page(room)),
            cursor: p.cursor.clone().filter(|c| !c.is_empty()),
            offline: false,
        };
        let page = self.session.computers_page(&query);
        let ping = p.ping != Some(false);
        // Without pings, nothing to wait for: no future per computer of the page either.
        let pings = if !ping {
            vec![None; page.computers.len()]
        } else {
            futures_util::future::join_all(page.computers.iter().map(|c| {
            // Quiet: a probe is the agent looking, not acting; it stays in the session log but
            // adds nothing to the computers' scrollback.
            let spec = RequestSpec::new("ping", json!({}))
                .timeout(Some(PING_TIMEOUT))
                .quiet();
            let (session, origin, target) = (
                self.session.clone(),
                rec.origin.clone(),
                c.trapos_id.clone(),
            );
            async move {
                let started = tokio::time::Instant::now();
                let r = session.request(&target, spec, origin).await;
                let ms = started.elapsed().as_millis() as u64;
                Some(match r {
                    Ok(_) => json!({"ok": true, "rttMs": ms}),
                    Err(e) => {
                        json!({"ok": false, "error": {"code": e.code(), "message": e.to_string()}})
                    }
                })
            }
        }))
        .await
        };
        let pending = self.session.pending();
        // Fit the page to the result budget by ending it early: what does not fit is on the
        // next page, never cut from this one. Each entry costs its JSON and its row of the text
        // block's table. Entries are made one at a time and only until the budget is spent: a
        // page of `limit: 500` holds ~90 idle computers, and making all 500
        // (a policy decision and a serialization each) was most of a page's time.
        let mut used = 0;
        let mut shown = Vec::new();
        let mut rows = Vec::new();
        for (c, ping) in page.computers.iter().zip(pings) {
            let [exec, write, read] = self.session.effective_policy(&rec.origin, &c.trapos_id);
            let policy =
                json!({"exec": exec.as_str(), "write": write.as_str(), "read": read.as_str()});
            let e = ProbeEntry::new(c, &pending, ping, policy);
            let row = e.row();
            let n = probe_cost(&e, &row);
            if used + n > room && !shown.is_empty() {
                break;
            }
            used += n;
            shown.push(e);
            rows.push(row);
        }
        let (linked, matched) = (page.linked, page.matched);
        let build = |shown: &[ProbeEntry], cut: bool| {
            let next_cursor = if cut {
                shown.last().map(|e| e.trapos_id.clone())
            } else {
                page.next_cursor.clone()
            };
            let line = probe_line(
                linked,
                matched,
                p.pattern.as_deref(),
                shown,
                next_cursor.as_deref(),
            );
            let data = json!({"computers": shown, "matched": matched, "linked": linked,
                "nextCursor": next_cursor});
            let table = if shown.is_empty() {
                String::new()
            } else {
                format!("{TABLE_HEADER}\n{}", rows[..shown.len()].join("\n"))
            };
            Outcome::ok(line, data).with_text(table)
        };
        let total = page.computers.len();
        let mut outcome = build(&shown, shown.len() < total);
        // The estimate is close; the measure is exact. Shorten until the whole result fits:
        // the result is built once and measured as it will be sent, and no later sizing
        // ever drops entries from the list.
        loop {
            let line = outcome.line.clone();
            let result = outcome.into_unsized();
            if shown.len() <= 1 || size(&result) <= self.max_result_bytes {
                return Ok(self.end_sized(rec, Status::Ok, &line, result));
            }
            let drop = (shown.len() / 10).max(1);
            shown.truncate(shown.len() - drop);
            outcome = build(&shown, true);
        }
    }

    #[tool(
        name = "exec-lua-many",
        title = "Run Lua on many computers",
        description = "Run one Lua chunk on every linked computer matching a glob (match: on traposId or label, \"*\" for all) or on a list (computers), at most concurrency at a time (default 16). Returns one compact result per computer: ok, status, returns, error, the head of its output and the requestId (read the rest with computer-output). Each computer is reported as it finishes through progress notifications when a progressToken is given. Failures come first in the list; the first line counts them.",
        annotations(title = "Run Lua on many computers", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true),
        output_schema = schemas::many_result()
    )]
    async fn exec_lua_many(
        &self,
        Parameters(p): Parameters<ExecLuaMany>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"match": p.pattern, "computers": p.computers, "code": p.code,
            "timeoutMs": p.timeout_ms, "concurrency": p.concurrency});
        let target = p.pattern.clone();
        let rec = self.begin(&ctx, "exec-lua-many", target.as_deref(), args);
        // Who to run on: unknown names in a list are results of their own, not a refusal of
        // the whole call, so one typo does not stop a broadcast.
        let mut early: Vec<ManyEntry> = Vec::new();
        let targets: Vec<String> = match (&p.pattern, &p.computers) {
            (Some(_), Some(_)) | (None, None) => {
                let outcome = Outcome::failure(
                    "bad_arguments",
                    "give either match (a glob) or computers (a list), not both and not neither",
                    Map::new(),
                );
                return Ok(self.end(rec, Status::Failed, outcome));
            }
            (Some(g), None) => self.session.matching(&Glob::new(g)),
            (None, Some(list)) => {
                let mut out: Vec<String> = Vec::new();
                for q in list {
                    match self.session.resolve(q) {
                        Ok(t) if !out.contains(&t) => out.push(t),
                        Ok(_) => {}
                        Err(e) => early.push(ManyEntry::new(q.clone(), None, Err(e), 0)),
                    }
                }
                out
            }
        };
        let total = targets.len() + early.len();
        let concurrency = p
            .concurrency
            .unwrap_or(DEFAULT_CONCURRENCY)
            .clamp(1, MAX_CONCURRENCY) as usize;
        let token = ctx.meta.get_progress_token();
        let spec = RequestSpec::new("exec-lua", json!({"code": p.code, "name": "=exec"}))
            .timeout(timeout(p.timeout_ms));
        let origin = rec.origin.clone();
        let mut runs = Box::pin(
            futures_util::stream::iter(targets.into_iter().map(|t| {
                let (session, spec, origin) = (self.session.clone(), spec.clone(), origin.clone());
                async move {
                    let started = tokio::time::Instant::now();
                    match session.start(&t, spec, origin) {
                        Ok(ticket) => {
                            let id = ticket.id.clone();
                            let r = ticket.wait().await;
                            let ms = started.elapsed().as_millis() as u64;
                            ManyEntry::new(t, Some(id), r, ms)
                        }
                        Err(e) => ManyEntry::new(t, None, Err(e), 0),
                    }
                }
            }))
            .buffer_unordered(concurrency),
        );
        let mut done: Vec<ManyEntry> = early;
        let mut n = 0.0;
        for e in &done {
            n += 1.0;
            self.progress(&ctx, &token, n, total, e.line()).await;
        }
        loop {
            let next = tokio::select! {
                e = runs.next() => e,
                // Dropping the stream drops every ticket still waiting, and a dropped ticket
                // cancels its request on the computer.
                () = ctx.ct.cancelled() => {
                    drop(runs);
                    let outcome = Outcome::failure("cancelled", "the client cancelled the call", Map::new());
                    return Ok(self.end(rec, Status::Cancelled, outcome));
                }
            };
            let Some(e) = next else { break };
            n += 1.0;
            self.progress(&ctx, &token, n, total, e.line()).await;
            done.push(e);
        }
        let (status, outcome) = many_outcome(done, self.max_result_bytes, p.pattern.as_deref());
        Ok(self.end(rec, status, outcome))
    }
}

impl TrapdeskMcp {
    async fn progress(
        &self,
        ctx: &RequestContext<RoleServer>,
        token: &Option<rmcp::model::ProgressToken>,
        n: f64,
        total: usize,
        line: String,
    ) {
        if let Some(token) = token {
            let note = ProgressNotificationParam::new(token.clone(), n)
                .with_total(total as f64)
                .with_message(line);
            // A client that went away needs no progress; the results still matter.
            let _ = ctx.peer.notify_progress(note).await;
        }
    }
}

/// The sized result of a broadcast: failures first, then successes, each in id order; output
/// heads share the budget; entries that still do not fit are counted, never dropped silently.
fn many_outcome(mut done: Vec<ManyEntry>, budget: usize, glob: Option<&str>) -> (Status, Outcome) {
    let key = |e: &ManyEntry| {
        let id: u64 = e
            .trapos_id
            .split(':')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(u64::MAX);
        (e.ok, id, e.trapos_id.clone())
    };
    done.sort_by_key(key);
    let total = done.len();
    let failed = done.iter().filter(|e| !e.ok).count();
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for e in &done {
        match counts.iter_mut().find(|(s, _)| *s == e.status) {
            Some((_, n)) => *n += 1,
            None => counts.push((e.status, 1)),
        }
    }
    let counts_text: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    let mut line = match (total, glob) {
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
        let mut data = json!({"ok": failed == 0, "computers": total, "failed": failed,
            "results": shown});
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
    while shown.len() > 1 && result_size(&outcome) > budget {
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

    #[test]
    fn escaped_len_counts_what_serde_json_writes() {
        let all: String = (0u8..=0x7f).map(char::from).collect();
        for text in [
            "",
            "plain",
            "q\"uote\\s",
            "tab\tnew\nline\r",
            "\u{7}\u{1f}",
            "€ é 💾",
            &all,
        ] {
            assert_eq!(escaped_len(text), size(&text), "{text:?}");
        }
    }

    fn probe_entry(ping: Option<Value>, last: Option<u64>, pending: Vec<Value>) -> ProbeEntry {
        ProbeEntry {
            trapos_id: "7:miner one".into(),
            id: 7,
            label: Some("miner one".into()),
            connected_at: 1_764_585_062_123,
            serves: vec!["exec-lua".into(), "ping".into()],
            pending: pending.len(),
            pending_requests: pending,
            last_rtt_ms: last,
            ping,
            policy: json!({"exec": "ask", "write": "deny", "read": "allow"}),
        }
    }

    #[test]
    fn no_entry_costs_less_than_the_page_bound_assumes() {
        // The session is asked for at most `most_per_page` computers, so that bound must
        // never be below what really fits: every entry costs at least the smallest one.
        let room = 24 * 1024;
        let most = most_per_page(room);
        assert!((100..200).contains(&most), "{most}");
        for e in [
            probe_entry(None, None, vec![]),
            probe_entry(Some(json!({"ok": true, "rttMs": 1})), Some(1), vec![]),
        ] {
            assert!(room / probe_cost(&e, &e.row()) <= most, "{most}");
        }
    }

    #[test]
    fn a_probe_row_holds_every_field_of_its_entry() {
        let idle = probe_entry(None, None, vec![]);
        assert_eq!(
            idle.row(),
            "7:miner one\t2025-12-01T10:31:02Z\t0\t-\task/deny/allow\texec-lua,ping"
        );
        assert_eq!(
            TABLE_HEADER.split('\t').count(),
            idle.row().split('\t').count()
        );
        let busy = probe_entry(
            Some(json!({"ok": true, "rttMs": 4})),
            Some(4),
            vec![json!({"requestId": "h-1"}), json!({"requestId": "h-2"})],
        );
        assert!(busy.row().contains("\t2 (h-1 h-2)\t4\t"), "{}", busy.row());
        let lost = probe_entry(
            Some(json!({"ok": false, "error": {"code": "timeout", "message": "no answer"}})),
            Some(9),
            vec![],
        );
        assert!(lost.row().contains("\tping timeout\t"), "{}", lost.row());
        let mut odd = probe_entry(None, None, vec![]);
        odd.trapos_id = "7:a\tb\nc".into();
        assert!(odd.row().starts_with("7:a\\tb\\nc\t"), "{}", odd.row());
        assert_eq!(odd.row().split('\t').count(), 6);
        // The row costs far less than the JSON it stands for in the text block.
        let json_cost = cost(&idle);
        assert!(probe_cost(&idle, &idle.row()) * 10 < json_cost * 7);
    }

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

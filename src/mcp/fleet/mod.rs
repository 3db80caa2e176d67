//! The fleet tools: `probe-computers` (one page of computers by glob and cursor) and
//! `exec-lua-many` (one chunk on many computers, the console's broadcast for agents).
//!
//! Both answer in compact entries sized to the result budget, and neither loses a computer
//! without saying so: a probe page that would not fit ends early and its `nextCursor` starts
//! after the last entry shown; a broadcast whose results would not fit lists the failures first
//! and counts the rest.
//!
//! The tools' handlers and the sizing both share are here; `probe` holds a page's entries,
//! their table rows and what they cost, `many` a broadcast's results and how they are sized.

use std::time::Duration;

use futures_util::StreamExt;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde::Serialize;
use serde_json::{Map, json};

use super::convert::timeout;
use super::params::{ExecLuaMany, ProbeComputers};
use super::results::Outcome;
use super::{TrapdeskMcp, schemas};
use trapdesk_core::session::fleet::PageQuery;
use trapdesk_core::session::{RequestSpec, Status};
use trapdesk_proto::glob::Glob;
use trapdesk_proto::protocol::kind;

/// How long a probe waits for each computer's `ping`.
const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// Page size when the caller gives none, and the most a caller may ask for.
const DEFAULT_PAGE: u64 = 50;
const MAX_PAGE: u64 = 500;
/// Computers running a broadcast chunk at once, by default and at most.
///
/// CC: Tweaked runs every computer of a server on one Lua thread unless the server raised
/// `computer_threads` (default 1, `shared/config/ConfigSpec.java:157-163` of CC: Tweaked
/// 1.110.2), so each request's work on a computer is one slice of that one thread, and every
/// player's computer waits behind the slices queued before its own. Once a few requests are
/// out, the thread, not the number in flight, sets a broadcast's pace (256 slices of thread
/// time, whatever the concurrency): more in flight only lengthens the queue a player's
/// computer waits in. 4 keeps our share of that queue at 4 slices (~12 ms at the ~3 ms a
/// request took on CraftOS-PC (BENCHMARKS.md), a quarter of a 50 ms server tick; 16 made it ~48 ms,
/// nearly a whole tick, for every player for the whole broadcast) and stays under the 10
/// runnable computers below which CC's scheduler still gives each its turn within 50 ms
/// (`ComputerThread.java:79-92`). docs/mcp.md ("exec-lua-many") says what it costs in wall time.
const DEFAULT_CONCURRENCY: u64 = 4;
const MAX_CONCURRENCY: u64 = 256;
/// Bytes kept for the structured content's own keys around the list.
const ENVELOPE: usize = 256;

type ToolResult = Result<CallToolResult, ErrorData>;

mod many;
mod probe;

use many::{ManyEntry, many_outcome};
use probe::ProbeEntry;
use probe::{TABLE_HEADER, most_per_page, probe_cost, probe_line};

/// What an entry costs in a result: its JSON in `structuredContent`, and the same JSON again,
/// escaped as a string, in the text block.
fn cost<T: Serialize>(v: &T) -> usize {
    let json = serde_json::to_string(v).unwrap_or_default();
    json.len() + escaped_len(&json) + 2
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

#[tool_router(router = fleet_router, vis = "pub(crate)")]
impl TrapdeskMcp {
    #[tool(
        name = "probe-computers",
        title = "Probe linked computers",
        description = "List linked computers by page: traposId, id, label, connectedAt, serves, pending requests, last round trip, what it is (runtime, client, device, screen), its peripherals and monitors, a turtle's fuel and slot (from this probe's ping), and what the policy lets you do there (policy: exec/write/read = allow, ask or deny).",
        annotations(title = "Probe linked computers", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::Probed>()
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
        let pings = if p.ping == Some(false) {
            // Without pings, nothing to wait for: no future per computer of the page either.
            vec![(None, None); page.computers.len()]
        } else {
            ping_all(&self.session, &page.computers, &rec.origin).await
        };
        let serves = probe::shared_serves(&page.computers);
        let (mut shown, rows) = self.first_fit(&page.computers, pings, &rec.origin, room, &serves);
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
                "nextCursor": next_cursor, "serves": serves});
            let table = if shown.is_empty() {
                String::new()
            } else {
                format!(
                    "serves (* below): {}\n{TABLE_HEADER}\n{}",
                    serves.join(","),
                    rows[..shown.len()].join("\n")
                )
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
            // Measured as the JSON text that the call's record keeps (one serialization for
            // both, where the record made its own).
            let (size, json) = super::results::result_size_and_json(&result);
            if shown.len() <= 1 || size <= self.max_result_bytes {
                return Ok(self.end_sized_json(rec, Status::Ok, &line, result, json));
            }
            let drop = (shown.len() / 10).max(1);
            shown.truncate(shown.len() - drop);
            outcome = build(&shown, true);
        }
    }

    #[tool(
        name = "exec-lua-many",
        title = "Run Lua on many computers",
        description = "Run one Lua chunk on many computers (match or computers), concurrency at a time. One compact result per computer, failures first: ok, status, returns, error, the head of its output and the requestId (the rest: computer-output). Each is reported as it finishes.",
        annotations(title = "Run Lua on many computers", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true),
        output_schema = crate::mcp::shapes::many_schema()
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
        let (targets, early) = match self.many_targets(&p) {
            Ok(both) => both,
            Err(outcome) => return Ok(self.end(rec, Status::Failed, outcome)),
        };
        let total = targets.len() + early.len();
        let concurrency = p
            .concurrency
            .unwrap_or(DEFAULT_CONCURRENCY)
            .clamp(1, MAX_CONCURRENCY) as usize;
        let token = ctx.meta.get_progress_token();
        let spec = RequestSpec::of(kind::ExecLua {
            code: p.code.clone(),
            name: Some("=exec".into()),
        })
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
    /// Who `exec-lua-many` runs on, and a result of its own for each name in a list that is
    /// not a linked computer: unknown names are not a refusal of the whole call, so one typo
    /// does not stop a broadcast. A refusal when `match` and `computers` are both or neither
    /// given.
    fn many_targets(&self, p: &ExecLuaMany) -> Result<(Vec<String>, Vec<ManyEntry>), Outcome> {
        let mut early: Vec<ManyEntry> = Vec::new();
        let targets: Vec<String> = match (&p.pattern, &p.computers) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(super::params::invalid_field(
                    "match",
                    "exec-lua-many: invalid argument match: give either match (a glob) or computers (a list), not both and not neither",
                ));
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
        Ok((targets, early))
    }

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

/// What one computer's probe ping said: `{ok, rttMs}` or `{ok: false, error}`, and the status
/// it answered (peripherals, monitors, a turtle's fuel), when it did.
type Pinged = (
    Option<serde_json::Value>,
    Option<trapdesk_core::session::DeviceStatus>,
);

/// Pings each computer of a page at once (quietly: a probe is the agent looking, not acting;
/// it stays in the session log but adds nothing to the computers' scrollback), asking for its
/// status (`ping` with `status: true`; a client from before it answers a plain ping). A status
/// answered is kept on the computer too, for the console.
async fn ping_all(
    session: &trapdesk_core::session::Session,
    computers: &[trapdesk_core::session::ComputerInfo],
    origin: &trapdesk_core::session::Origin,
) -> Vec<Pinged> {
    futures_util::future::join_all(computers.iter().map(|c| {
        let spec = RequestSpec::of(kind::Ping { status: Some(true) })
            .timeout(Some(PING_TIMEOUT))
            .quiet();
        let (session, origin, target) = (session.clone(), origin.clone(), c.trapos_id.clone());
        async move {
            let started = tokio::time::Instant::now();
            let r = session.request(&target, spec, origin).await;
            let ms = started.elapsed().as_millis() as u64;
            match r {
                Ok(answer) => {
                    let status = trapdesk_core::session::DeviceStatus::from_ping(&answer);
                    if status.is_some() {
                        session.store_status(&target, &answer);
                    }
                    (Some(json!({"ok": true, "rttMs": ms})), status)
                }
                Err(e) => (
                    Some(
                        json!({"ok": false, "error": {"code": crate::mcp::results::agent_code(e.code()), "message": e.to_string()}}),
                    ),
                    None,
                ),
            }
        }
    }))
    .await
}

impl TrapdeskMcp {
    /// The entries of a page that fit `room`, with their table rows: the page ends early, and
    /// what does not fit is on the next page, never cut from this one. Each entry costs its
    /// JSON and its row of the text block's table. Entries are made one at a time and only
    /// until the budget is spent: a page of `limit: 500` holds ~90 idle computers, and making
    /// all 500 (a policy decision and a serialization each) was most of a page's time.
    fn first_fit(
        &self,
        computers: &[trapdesk_core::session::ComputerInfo],
        pings: Vec<Pinged>,
        origin: &trapdesk_core::session::Origin,
        room: usize,
        serves: &[String],
    ) -> (Vec<ProbeEntry>, Vec<String>) {
        let pending = self.session.pending();
        let mut used = 0;
        let mut shown = Vec::new();
        let mut rows = Vec::new();
        for (c, (ping, status)) in computers.iter().zip(pings) {
            let [exec, write, read] = self.session.effective_policy(origin, &c.trapos_id);
            let policy =
                json!({"exec": exec.as_str(), "write": write.as_str(), "read": read.as_str()});
            let e = ProbeEntry::new(c, &pending, ping, status.as_ref(), policy, serves);
            let row = e.row();
            let n = probe_cost(&e, &row);
            if used + n > room && !shown.is_empty() {
                break;
            }
            used += n;
            shown.push(e);
            rows.push(row);
        }
        (shown, rows)
    }
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
            assert_eq!(
                escaped_len(text),
                crate::mcp::cut::json_len(&text),
                "{text:?}"
            );
        }
    }
}

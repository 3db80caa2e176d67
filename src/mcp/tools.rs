//! The single-computer tools and the session's own (docs/mcp.md, "Tools"; the fleet tools are
//! in `fleet`, the file tools in `tools/files.rs`): each maps its arguments to one session call and its
//! outcome to a sized result. Failures of the work (a Lua error, a timeout, an unknown
//! computer, ...) are tool results with `isError: true`; only schema-invalid arguments and
//! unknown tools are JSON-RPC errors, and rmcp produces those before we are called.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::{Map, Value, json};

use super::TrapdeskMcp;
use super::convert::*;
use super::params::*;
use super::results::Outcome;
use super::schemas::{self, Common, fields};
use schemars::JsonSchema;
use serde::Serialize;
use trapdesk_core::session::{RequestError, RequestSpec, Session, Status};
use trapdesk_proto::protocol::kind;

mod files;

/// Largest `computer-output` page, whatever the caller asks.
const MAX_LINES: u64 = 2000;
/// Largest `session-log` answer, whatever the caller asks.
const MAX_EVENTS: u64 = 1000;

type ToolResult = Result<CallToolResult, ErrorData>;

/// `cancel-request`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CancelSent {
    #[serde(flatten)]
    common: Common,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

#[tool_router(vis = "pub(crate)")]
impl TrapdeskMcp {
    /// A `timeoutMs` outside the documented range, as an invalid-arguments result.
    fn bad_timeout(&self, ms: Option<u64>) -> Option<Outcome> {
        let max = self.session.settings().max_request_timeout.as_millis() as u64;
        let ms = ms?;
        (ms == 0 || ms > max).then(|| {
            invalid_field(
                "timeoutMs",
                &format!("invalid argument timeoutMs: expected 1 to {max} milliseconds, got {ms}"),
            )
        })
    }

    #[tool(
        name = "exec-lua",
        title = "Run Lua on a computer",
        description = "Run Lua source as one chunk on a computer. Returns its returned values as descriptors, its captured output (errorOutput: the error stream's) and the requestId. A Lua error (with traceback), a timeout or a disconnect is an error result with the output so far. os.reboot() or os.shutdown() in the chunk answers first (power).",
        annotations(title = "Run Lua on a computer", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::RunResult>()
    )]
    async fn exec_lua(
        &self,
        Parameters(p): Parameters<ExecLua>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id, "code": p.code, "timeoutMs": p.timeout_ms, "detach": p.detach});
        let rec = self.begin(&ctx, "exec-lua", Some(&p.trapos_id), args);
        if let Some(bad) = self.bad_timeout(p.timeout_ms) {
            return Ok(self.end(rec, Status::Failed, bad));
        }
        let spec = RequestSpec::of(kind::ExecLua {
            code: p.code,
            name: Some("=exec".into()),
        })
        .timeout(timeout(p.timeout_ms));
        if p.detach == Some(true) {
            let (status, outcome) = self.detach_run(&ctx, &rec, &p.trapos_id, spec, "Lua").await;
            return Ok(self.end(rec, status, outcome));
        }
        let ran = self.run(&ctx, &rec, &p.trapos_id, spec).await;
        let (status, outcome) = outcome_of(ran, "Lua", run_line);
        Ok(self.end(rec, status, outcome))
    }

    #[tool(
        name = "run-file",
        title = "Run a program on a computer",
        description = "Run an existing Lua program on a computer, as the shell runs it. Result and detach as exec-lua's.",
        annotations(title = "Run a program on a computer", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::RunResult>()
    )]
    async fn run_file(
        &self,
        Parameters(p): Parameters<RunFile>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id, "path": p.path, "args": p.args, "timeoutMs": p.timeout_ms, "detach": p.detach});
        let rec = self.begin(&ctx, "run-file", Some(&p.trapos_id), args);
        if let Some(bad) = self.bad_timeout(p.timeout_ms) {
            return Ok(self.end(rec, Status::Failed, bad));
        }
        let spec = RequestSpec::of(kind::RunFile {
            path: p.path.clone(),
            args: p.args.unwrap_or_default(),
        })
        .timeout(timeout(p.timeout_ms));
        if p.detach == Some(true) {
            let (status, outcome) = self
                .detach_run(&ctx, &rec, &p.trapos_id, spec, &p.path)
                .await;
            return Ok(self.end(rec, status, outcome));
        }
        let ran = self.run(&ctx, &rec, &p.trapos_id, spec).await;
        let (status, outcome) = outcome_of(ran, &p.path, run_line);
        Ok(self.end(rec, status, outcome))
    }
    #[tool(
        name = "computer-output",
        title = "Read a computer's output",
        description = "What the host captured of a computer's requests, anyone's (the player's own shell is read-screen's), the last scrollback_lines lines (10000 by default). Newest page first, with a before cursor for older lines; after (a previous cursor) gives newer lines, oldest first. requestId narrows it to one request, with its status.",
        annotations(title = "Read a computer's output", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = schemas::derived::<crate::mcp::shapes::OutputPage>()
    )]
    async fn computer_output(
        &self,
        Parameters(p): Parameters<ComputerOutput>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id, "lines": p.lines, "before": p.before, "after": p.after, "requestId": p.request_id});
        let rec = self.begin(&ctx, "computer-output", Some(&p.trapos_id), args);
        let Some(trapos_id) = self.session.known_computer(&p.trapos_id) else {
            let e = match self.session.resolve(&p.trapos_id) {
                Err(e) => e,
                Ok(_) => RequestError::Disconnected,
            };
            return Ok(self.end(rec, Status::Failed, request_failure(&e, Map::new())));
        };
        if let Err(refused) = self.may_read_output(&trapos_id, &rec.origin).await {
            return Ok(self.end(rec, Status::Failed, refused));
        }
        if let Some(rid) = p.request_id.as_deref()
            && !self.session.knows_request(&trapos_id, rid)
        {
            let mut extra = Map::new();
            extra.insert("traposId".into(), json!(trapos_id));
            extra.insert("requestId".into(), json!(rid));
            let message = format!(
                "no request {rid} on {trapos_id}: unknown, or its output is no longer kept (requestIds are reported by exec-lua, run-file, probe-computers and session-log)"
            );
            let outcome = Outcome::failure("unknown_request", &message, extra);
            return Ok(self.end(rec, Status::Failed, outcome));
        }
        let lines = p.lines.unwrap_or(200).clamp(1, MAX_LINES) as usize;
        if let Some(after) = p.after {
            if p.before.is_some() {
                let bad = invalid_field(
                    "after",
                    "invalid arguments: give after (newer lines) or before (older lines), not both",
                );
                return Ok(self.end(rec, Status::Failed, bad));
            }
            let outcome = super::wait::output_after(
                &self.session,
                &trapos_id,
                p.request_id.as_deref(),
                after,
                lines,
                self.max_result_bytes,
            );
            return Ok(self.end(rec, Status::Ok, outcome));
        }
        let outcome = output_before(
            &self.session,
            trapos_id,
            p.request_id,
            p.before,
            lines,
            self.max_result_bytes,
        );
        Ok(self.end(rec, Status::Ok, outcome))
    }

    #[tool(
        name = "session-log",
        title = "Read the session log",
        description = "The shared session's recent events, oldest first, one entry per call or request: who (the person, or an agent by name) did what on which computer, its status and a one-line summary; links, unlinks and refusals too.",
        annotations(title = "Read the session log", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = schemas::derived::<crate::mcp::shapes::LogPage>()
    )]
    async fn session_log(
        &self,
        Parameters(p): Parameters<SessionLog>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let since = match &p.since {
            None => Ok(None),
            Some(LogSince::Cursor(c)) => Ok(Some(super::log_view::Since::Cursor(*c))),
            Some(LogSince::Time(t)) => super::log_args::since_time(t, std::time::SystemTime::now())
                .map(|ms| Some(super::log_view::Since::TimeMs(ms))),
        };
        let args = json!({"limit": p.limit, "before": p.before, "since": p.since,
            "computer": p.computer, "who": p.who, "kind": p.kind});
        let since = match since {
            Ok(s) => s,
            Err(message) => {
                let rec = self.begin(&ctx, "session-log", None, args);
                let mut bad = invalid_field("since", &message);
                // The answer still has the shape of a page (an empty one), as a success has.
                if let Some(obj) = bad.data.as_object_mut() {
                    obj.insert("events".into(), json!([]));
                }
                return Ok(self.end(rec, Status::Failed, bad));
            }
        };
        let query = super::log_view::LogQuery {
            limit: p.limit.unwrap_or(100).clamp(1, MAX_EVENTS) as usize,
            before: p.before,
            since,
            computer: p.computer,
            who: p.who,
            kind: p.kind,
            reader: Some(self.origin(&ctx)),
        };
        // Read before recording this call, so the answer is not about itself.
        let (events, before, latest) = super::log_view::log_compact(&self.session, &query);
        let rec = self.begin(&ctx, "session-log", None, args);
        let outcome = super::files::log_page(events, before, latest, self.max_result_bytes);
        Ok(self.end(rec, Status::Ok, outcome))
    }

    #[tool(
        name = "cancel-request",
        title = "Cancel a pending request",
        description = "Cancel a pending request by its requestId, whoever started it. A running chunk stops at its next yield; its requester gets a cancelled result with the output so far.",
        annotations(title = "Cancel a pending request", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<CancelSent>()
    )]
    async fn cancel_request(
        &self,
        Parameters(p): Parameters<CancelRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let target = self
            .session
            .pending()
            .into_iter()
            .find(|r| r.request_id == p.request_id)
            .map(|r| r.trapos_id);
        let rec = self.begin(
            &ctx,
            "cancel-request",
            target.as_deref(),
            json!({"requestId": p.request_id}),
        );
        let mut sent = CancelSent {
            common: Common {
                trapos_id: target,
                request_id: Some(p.request_id.clone()),
                ..Common::default()
            },
            message: None,
        };
        let (status, outcome) = match self.session.cancel_by(&p.request_id, &rec.origin) {
            Ok(()) => {
                sent.common.ok = true;
                sent.message = Some("cancel sent".into());
                let line = format!("cancel sent for {}", p.request_id);
                (Status::Ok, Outcome::ok(line, Value::Object(fields(&sent))))
            }
            Err(e) => {
                // A failure's fields beside its error: which request, on which computer.
                let mut extra = fields(&sent);
                extra.remove("ok");
                let outcome = Outcome::failure("not_pending", &e.to_string(), extra);
                (Status::Failed, outcome)
            }
        };
        Ok(self.end(rec, status, outcome))
    }
}

/// `computer-output`'s newest page (or the page before `before`): up to `lines` lines of
/// `trapos_id`'s output (`request_id`'s only, with its status), with the cursors around it.
fn output_before(
    session: &Session,
    trapos_id: String,
    request_id: Option<String>,
    before: Option<u64>,
    lines: usize,
    budget: usize,
) -> Outcome {
    let (items, before) = session.output_page(&trapos_id, lines, before, request_id.as_deref());
    let rows: Vec<(u64, Value)> = items
        .into_iter()
        .filter_map(|item| {
            Some((
                item.seq,
                super::wait::line_json(item.seq, item.at_ms, &item.entry)?,
            ))
        })
        .collect();
    let newest = rows.last().map(|(seq, _)| *seq);
    let status = request_id
        .as_deref()
        .map(|r| super::wait::status_of(session, r));
    let mut extra = Map::new();
    // Where a later call with `after` goes on from: only newer lines.
    extra.insert("cursor".into(), json!(newest));
    if let Some(s) = status {
        extra.insert("status".into(), json!(s));
    }
    super::files::output_page(trapos_id, request_id, rows, before, extra, budget)
}

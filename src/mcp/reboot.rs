//! `reboot-computer` (docs/mcp.md, the Tools table): reboots a computer and answers once it
//! has linked again, with how long that took, or says it did not come back in time.
//!
//! The reboot is an `exec-lua` of `os.reboot()` rather than a request type of its own: it is
//! `exec` under the policy (it runs code that ends every program there), shows in the Requests pane and the
//! session log like any chunk, and needs nothing new on the wire. The client answers such a
//! chunk with `power: "reboot"` before rebooting (apis/run.lua); an older client drops the link
//! instead, and that counts as the reboot starting too.

use std::time::{Duration, Instant, SystemTime};

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::TrapdeskMcp;
use super::convert::{outcome_of, request_failure};
use super::params::RebootComputer;
use super::results::Outcome;
use super::schemas::{self, Common, fields};
use trapdesk_core::session::{RequestError, RequestSpec, Status};
use trapdesk_proto::protocol::kind;

/// How long a reboot may take to link again when the caller does not say: a computer boots
/// and links in a few seconds; a busy server's tick rate stretches that.
const DEFAULT_WAIT_MS: u64 = 60_000;
/// How long the `os.reboot()` chunk may take to answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(15);
/// How often the session is looked at while waiting for the relink.
const POLL: Duration = Duration::from_millis(50);

type ToolResult = Result<CallToolResult, ErrorData>;

/// `reboot-computer`'s result: the reboot began, and how long the computer took to link again
/// (a timeout's failure carries both too).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Rebooted {
    #[serde(flatten)]
    common: Common,
    /// the reboot began
    rebooted: bool,
    /// from the call until the computer linked again (or until the wait ended)
    took_ms: u64,
}

#[tool_router(router = reboot_router, vis = "pub(crate)")]
impl TrapdeskMcp {
    #[tool(
        name = "reboot-computer",
        title = "Reboot a computer",
        description = "Reboot a computer (os.reboot(), so exec under the policy: every running program and request on it ends) and answer once it has linked again, with tookMs; an error result with code timeout when it did not link again within timeoutMs.",
        annotations(title = "Reboot a computer", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true),
        output_schema = schemas::derived::<Rebooted>()
    )]
    async fn reboot_computer(
        &self,
        Parameters(p): Parameters<RebootComputer>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id, "timeoutMs": p.timeout_ms});
        let rec = self.begin(&ctx, "reboot-computer", Some(&p.trapos_id), args);
        // Its range (1 to 600000) is declared on the argument and checked before this runs.
        let wait_ms = p.timeout_ms.unwrap_or(DEFAULT_WAIT_MS);
        let trapos_id = match self.session().resolve(&p.trapos_id) {
            Ok(t) => t,
            Err(e) => return Ok(self.end(rec, Status::Failed, request_failure(&e, Map::new()))),
        };
        // The link the reboot must replace: a relink is a link made after this one.
        let before = self.session().computer(&trapos_id).map(|c| c.connected_at);
        let started = Instant::now();
        let spec = RequestSpec::of(kind::ExecLua {
            code: "os.reboot()".into(),
            name: Some("=reboot-computer".into()),
        })
        .timeout(Some(ANSWER_WITHIN));
        let ran = self.run(&ctx, &rec, &trapos_id, spec).await;
        let began = match &ran.ending.result {
            Ok(v) => v.get("power").and_then(Value::as_str) == Some("reboot"),
            Err(RequestError::Disconnected) => true,
            Err(_) => false,
        };
        if !began {
            let (status, mut outcome) = outcome_of(ran, "reboot", |_| String::new());
            if !outcome.is_error {
                // Answered without rebooting: a client whose os.reboot did not end the chunk.
                outcome = Outcome::failure(
                    "not_rebooted",
                    "the computer answered the reboot without rebooting",
                    ids_map(&trapos_id),
                );
                return Ok(self.end(rec, Status::Failed, outcome));
            }
            return Ok(self.end(rec, status, outcome));
        }
        let relink = Relink {
            trapos_id,
            request_id: ran.request_id.clone(),
            before,
            started,
            wait_ms,
        };
        let (status, outcome) = self.relinked(&ctx, relink).await;
        Ok(self.end(rec, status, outcome))
    }
}

/// What the wait for a rebooted computer's new link knows.
struct Relink {
    trapos_id: String,
    /// The `os.reboot()` request's.
    request_id: Option<String>,
    /// When the link the reboot must replace was made: a relink is a link made after it.
    before: Option<SystemTime>,
    started: Instant,
    wait_ms: u64,
}

impl TrapdeskMcp {
    /// Waits until the rebooted computer links again (the reboot's success), the wait ends
    /// (a timeout that still says the reboot began) or the call is cancelled.
    async fn relinked(&self, ctx: &RequestContext<RoleServer>, r: Relink) -> (Status, Outcome) {
        let trapos_id = &r.trapos_id;
        let deadline = r.started + Duration::from_millis(r.wait_ms);
        let result = |took_ms| Rebooted {
            common: Common {
                request_id: r.request_id.clone(),
                ..Common::ok_on(trapos_id)
            },
            rebooted: true,
            took_ms,
        };
        loop {
            let back = self.session().computer(trapos_id).is_some_and(|c| {
                c.online
                    && Some(c.connected_at) != r.before
                    && c.serves.iter().any(|s| s == "exec-lua")
            });
            let took = r.started.elapsed().as_millis() as u64;
            if back {
                let line = format!("{trapos_id} rebooted and linked again after {took} ms");
                return (
                    Status::Ok,
                    Outcome::ok(line, Value::Object(fields(&result(took)))),
                );
            }
            if Instant::now() >= deadline {
                let mut extra = fields(&result(took));
                extra.remove("ok");
                let message = format!(
                    "{trapos_id} began rebooting but did not link again within {} ms (its startup may not start the client, or it is off: a player can turn it on); probe-computers shows it when it does",
                    r.wait_ms
                );
                return (
                    Status::Timeout,
                    Outcome::failure("timeout", &message, extra),
                );
            }
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = ctx.ct.cancelled() => {
                    let mut extra = fields(&result(took).common);
                    extra.remove("ok");
                    let outcome = Outcome::failure("cancelled", "the call was cancelled while waiting for the computer to link again (the reboot itself was already under way)", extra);
                    return (Status::Cancelled, outcome);
                }
            }
        }
    }
}

/// `{traposId}` for a failure.
fn ids_map(trapos_id: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("traposId".into(), json!(trapos_id));
    m
}

//! `completion/complete` for the templates' variables: linked traposIds, paths on a computer
//! and the monitors its last status named. Nothing here ever waits on a person (see the parent module's docs).

use rmcp::RoleServer;
use rmcp::model::{CompleteRequestParams, CompleteResult, CompletionInfo};
use rmcp::service::RequestContext;
use serde_json::Value;

use super::uri::decode;
use super::{FILES_TEMPLATE, LISTING_TIMEOUT, MONITOR_TEMPLATE, SCREEN_TEMPLATE};
use crate::mcp::{TrapdeskMcp, caller_origin};
use trapdesk_core::session::{Origin, RequestSpec};
use trapdesk_proto::protocol::kind;

fn empty() -> CompleteResult {
    CompleteResult::new(CompletionInfo::default())
}

/// At most 100 values (the specification's limit), saying how many there were in all.
fn completion(mut values: Vec<String>) -> CompleteResult {
    let total = values.len();
    values.truncate(CompletionInfo::MAX_VALUES);
    let has_more = total > values.len();
    match CompletionInfo::with_pagination(values, Some(total as u32), has_more) {
        Ok(info) => CompleteResult::new(info),
        Err(_) => empty(),
    }
}

impl TrapdeskMcp {
    /// `completion/complete` for `traposId`, `path` and `monitor` of the templates; nothing
    /// for anything else.
    pub(crate) async fn complete_argument(
        &self,
        request: CompleteRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> CompleteResult {
        let Some(uri) = request.r#ref.as_resource_uri() else {
            return empty();
        };
        if uri != FILES_TEMPLATE && uri != SCREEN_TEMPLATE && uri != MONITOR_TEMPLATE {
            return empty();
        }
        let origin = caller_origin(ctx);
        let typed = decode(&request.argument.value).unwrap_or_default();
        match request.argument.name.as_str() {
            "traposId" => self.complete_ids(&origin, &typed),
            "path" if uri == FILES_TEMPLATE => {
                let computer = request
                    .context
                    .as_ref()
                    .and_then(|c| c.get_argument("traposId"))
                    .and_then(|c| decode(c));
                match computer {
                    Some(c) => self.complete_path(&origin, &c, &typed).await,
                    None => empty(),
                }
            }
            "monitor" if uri == MONITOR_TEMPLATE => {
                let computer = request
                    .context
                    .as_ref()
                    .and_then(|c| c.get_argument("traposId"))
                    .and_then(|c| decode(c));
                match computer {
                    Some(c) => self.complete_monitor(&origin, &c, &typed),
                    None => empty(),
                }
            }
            _ => empty(),
        }
    }

    /// The monitors of `computer` that start with `typed` (case ignored), from its last
    /// status (a probe's ping or the console's refresh): nothing is asked of the computer.
    fn complete_monitor(&self, origin: &Origin, computer: &str, typed: &str) -> CompleteResult {
        let Ok(trapos_id) = self.session.resolve(computer) else {
            return empty();
        };
        if !self.session.reads_freely(origin, &trapos_id) {
            return empty();
        }
        let typed = typed.to_ascii_lowercase();
        let names: Vec<String> = self
            .session
            .computer(&trapos_id)
            .and_then(|c| c.status)
            .map(|s| s.monitors)
            .unwrap_or_default()
            .into_iter()
            .filter(|m| m.to_ascii_lowercase().starts_with(&typed))
            .collect();
        completion(names)
    }

    /// Linked traposIds that start with `typed` (case ignored) and that `origin` may read.
    fn complete_ids(&self, origin: &Origin, typed: &str) -> CompleteResult {
        let typed = typed.to_ascii_lowercase();
        let ids: Vec<String> = self
            .session
            .computers()
            .into_iter()
            .filter(|c| c.online && c.trapos_id.to_ascii_lowercase().starts_with(&typed))
            .map(|c| c.trapos_id)
            .filter(|id| self.session.reads_freely(origin, id))
            .collect();
        completion(ids)
    }

    /// Paths on `computer` that continue `typed`: the entries of the folder being typed whose
    /// names start with its last part (case ignored), folders with a trailing `/`.
    async fn complete_path(&self, origin: &Origin, computer: &str, typed: &str) -> CompleteResult {
        let Ok(trapos_id) = self.session.resolve(computer) else {
            return empty();
        };
        if !self.session.reads_freely(origin, &trapos_id) {
            return empty();
        }
        let lead = if typed.starts_with('/') { "/" } else { "" };
        let body = typed.trim_start_matches('/');
        let (dir, partial) = match body.rfind('/') {
            Some(i) => body.split_at(i + 1),
            None => ("", body),
        };
        let folder = if dir.is_empty() {
            "/".to_owned()
        } else {
            dir.to_owned()
        };
        let spec = RequestSpec::of(kind::ListFiles { path: folder })
            .timeout(Some(LISTING_TIMEOUT))
            .quiet()
            .never_ask();
        let Ok(ticket) = self.session.start(&trapos_id, spec, origin.clone()) else {
            return empty();
        };
        let Ok(listing) = ticket.wait().await else {
            return empty();
        };
        let partial = partial.to_ascii_lowercase();
        let values: Vec<String> = listing
            .get("entries")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let name = e.get("name").and_then(Value::as_str)?;
                let slash = if e.get("dir").and_then(Value::as_bool) == Some(true) {
                    "/"
                } else {
                    ""
                };
                name.to_ascii_lowercase()
                    .starts_with(&partial)
                    .then(|| format!("{lead}{dir}{name}{slash}"))
            })
            .collect();
        completion(values)
    }
}

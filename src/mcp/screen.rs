//! `read-screen` and `send-input` (docs/mcp.md, "The screen tools"): an agent reads a computer's terminal
//! and types into it as a player would, or reads a monitor attached to it and touches it.

use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::{Map, Value, json};

use super::params::{ReadScreen, SendInput};
use super::results::Outcome;
use super::{TrapdeskMcp, schemas};
use trapdesk_core::session::Status;
use trapdesk_core::session::screen::{Display, InputError, ScreenError, ScreenFrame, input};

/// Longest wait after input before the screen is read back.
const MAX_WAIT_MS: u64 = 10_000;
/// Default wait after input: long enough for a shell to answer a command.
const DEFAULT_WAIT_MS: u64 = 300;

type ToolResult = Result<CallToolResult, ErrorData>;

fn screen_line(trapos_id: &str, f: &ScreenFrame) -> String {
    let what = match (&f.monitor, f.scale) {
        (Some(m), Some(s)) => format!("monitor {m} (text scale {s})"),
        (Some(m), None) => format!("monitor {m}"),
        (None, _) => "screen".to_owned(),
    };
    let unknown: usize = f
        .rows
        .iter()
        .map(|r| (0..r.text.len()).filter(|x| !r.is_known(*x)).count())
        .sum();
    let unknown = if unknown > 0 {
        format!(
            "; {unknown} cells unknown (never drawn by this computer, or drawn over by another), shown as {}",
            trapdesk_core::session::screen::UNKNOWN_CELL
        )
    } else {
        String::new()
    };
    format!(
        "{trapos_id}: {}x{} {what}, cursor at {},{}{}{unknown}",
        f.width,
        f.height,
        f.cursor_x,
        f.cursor_y,
        if f.blink { " (blinking)" } else { "" }
    )
}

/// A screen's outcome within `budget` bytes. A terminal always fits; a large monitor (164 x 81
/// cells at text scale 0.5) with its colours and masks may not, and the generic cut drops the
/// first items of the longest list, which would take `known` out of step with `rows`. So a
/// screen is cut here, whole rows at a time: the colours first (`colorsCut`), then the rows
/// from the bottom, each list alike (`rowsShown`), the first line saying so.
fn fit_screen(line: String, mut data: Value, budget: usize) -> Outcome {
    let fits = |line: &str, data: &Value| {
        super::results::result_size(&Outcome::ok(line.to_owned(), data.clone()).into_unsized())
            <= budget
    };
    if fits(&line, &data) {
        return Outcome::ok(line, data);
    }
    let mut line = line;
    if let Some(obj) = data.as_object_mut()
        && obj.contains_key("fg")
    {
        for k in ["fg", "bg", "palette"] {
            obj.remove(k);
        }
        obj.insert("colorsCut".into(), json!(true));
        line.push_str("; colours left out to fit one result");
        if fits(&line, &data) {
            return Outcome::ok(line, data);
        }
    }
    let rows = data["rows"].as_array().map_or(0, Vec::len);
    let keep = |data: &Value, k: usize| {
        let mut d = data.clone();
        if let Some(obj) = d.as_object_mut() {
            for key in ["rows", "known"] {
                if let Some(Value::Array(a)) = obj.get_mut(key) {
                    a.truncate(k);
                }
            }
            obj.insert("rowsShown".into(), json!(k));
        }
        let l = format!("{line}; rows {}..{rows} left out to fit one result", k + 1);
        (l, d)
    };
    let mut k = rows;
    while k > 1 {
        let (l, d) = keep(&data, k);
        if fits(&l, &d) {
            return Outcome::ok(l, d);
        }
        k = k * 3 / 4;
    }
    let (l, d) = keep(&data, k.max(1));
    Outcome::ok(l, d)
}

/// The display an agent's `monitor` argument names.
fn display_of(monitor: Option<&str>) -> Result<Display, InputError> {
    match monitor {
        Some(m) if m.trim().is_empty() => Err(InputError {
            field: "monitor".into(),
            message: "empty monitor name: give a monitor's peripheral name (list-peripherals shows them), or leave monitor out for the terminal".into(),
        }),
        other => Ok(Display::from_monitor(other)),
    }
}

fn screen_data(trapos_id: &str, f: &ScreenFrame, colors: bool) -> Value {
    let mut v = f.to_json(colors);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("ok".into(), Value::Bool(true));
        obj.insert("traposId".into(), json!(trapos_id));
    }
    v
}

fn failure(e: &ScreenError, target: &str, field: Option<&str>) -> (Status, Outcome) {
    let mut extra = Map::new();
    extra.insert("traposId".into(), json!(target));
    if let Some(f) = field {
        extra.insert("field".into(), json!(f));
    }
    let status = match e {
        ScreenError::Request(r) => trapdesk_core::session::summary::outcome(&Err(r.clone())).0,
        _ => Status::Failed,
    };
    // Input the host refuses before sending is a bad argument of the tool, reported with the
    // one code every tool uses for that; the computer's own `bad_request` stays its own.
    let code = match e {
        ScreenError::Input(_) => "invalid_arguments",
        _ => e.code(),
    };
    if let ScreenError::Request(r) = e {
        // The request path's own wording: the code once, then the message.
        return (status, super::convert::request_failure(r, extra));
    }
    (status, Outcome::failure(code, &e.to_string(), extra))
}

/// The computer a failed call meant, as resolved when it is linked (`2:farm`), else as typed.
fn shown(session: &trapdesk_core::session::Session, target: &str) -> String {
    session
        .resolve(target)
        .unwrap_or_else(|_| target.to_owned())
}

/// Lines of a request's newest output that `send-input` with `requestId` answers with.
const ANSWER_LINES: usize = 20;

/// What `send-input` to a request answers: its chunk's terminal is its own (captured, not on
/// the screen), so the request's newest output stands in for the screen, and whether it still
/// runs.
fn request_answer(
    session: &trapdesk_core::session::Session,
    target: &str,
    request_id: &str,
    events: u64,
) -> Outcome {
    let trapos_id = session
        .resolve(target)
        .unwrap_or_else(|_| target.to_owned());
    let (items, _) = session.output_page(&trapos_id, ANSWER_LINES, None, Some(request_id));
    let output: String = items
        .into_iter()
        .filter_map(|i| match i.entry {
            trapdesk_core::session::OutputEntry::Line { text, complete, .. } => {
                Some(if complete { format!("{text}\n") } else { text })
            }
            _ => None,
        })
        .collect();
    let running = session.pending().iter().any(|r| r.request_id == request_id);
    let state = if running { "still running" } else { "ended" };
    let line = format!("sent {events} events to {request_id} on {trapos_id}; it is {state}");
    let data = json!({"ok": true, "traposId": trapos_id, "requestId": request_id,
        "events": events, "running": running, "output": output});
    Outcome::ok(line, data)
}

#[tool_router(router = screen_router, vis = "pub(crate)")]
impl TrapdeskMcp {
    #[tool(
        name = "read-screen",
        title = "Read a computer's screen",
        description = "Read a computer's own terminal as a player sees it: text rows (trailing blanks cut), the cursor (1-based x, y, blink) and the size. With monitor, what this computer drew there, with its text scale; cells it never drew since its client started (or another drew over) are unknown: ░ in the text, blank in rows, 0 in known (a mask per row, null when all known).",
        annotations(title = "Read a computer's screen", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::Screen>()
    )]
    async fn read_screen(
        &self,
        Parameters(p): Parameters<ReadScreen>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let args = json!({"traposId": p.trapos_id, "colors": p.colors, "monitor": p.monitor});
        let rec = self.begin(&ctx, "read-screen", Some(&p.trapos_id), args);
        let display = match display_of(p.monitor.as_deref()) {
            Ok(d) => d,
            Err(e) => {
                let (status, outcome) = failure(
                    &ScreenError::Input(e),
                    &shown(&self.session, &p.trapos_id),
                    Some("monitor"),
                );
                return Ok(self.end(rec, status, outcome));
            }
        };
        let (status, outcome) = match self
            .session()
            .read_screen(&p.trapos_id, &display, rec.origin.clone())
            .await
        {
            Ok(f) => {
                let id = self
                    .session()
                    .resolve(&p.trapos_id)
                    .unwrap_or_else(|_| p.trapos_id.clone());
                let data = screen_data(&id, &f, p.colors == Some(true));
                let outcome = fit_screen(screen_line(&id, &f), data, self.max_result_bytes);
                (Status::Ok, outcome)
            }
            Err(e) => failure(&e, &shown(&self.session, &p.trapos_id), None),
        };
        Ok(self.end(rec, status, outcome))
    }

    #[tool(
        name = "send-input",
        title = "Type into a computer",
        description = "Type into a computer's terminal as a player would (text, then paste, then keys), then return its screen (as read-screen) after waitMs; with requestId, that request's newest output instead. In CC's edit, keys [\"ctrl\", \"enter\"] saves. With monitor the input is a touch alone (monitor_touch at the cell) and the answer is the monitor's screen.",
        annotations(title = "Type into a computer", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true),
        output_schema = schemas::derived::<crate::mcp::shapes::Screen>()
    )]
    async fn send_input(
        &self,
        Parameters(p): Parameters<SendInput>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        let keys = p.keys.clone().unwrap_or_default();
        let touch = p.touch.as_ref().map(|t| json!({"x": t.x, "y": t.y}));
        let args = json!({"traposId": p.trapos_id, "text": p.text, "keys": keys, "paste": p.paste.as_ref().map(|s| format!("<{} chars>", s.chars().count())), "waitMs": p.wait_ms, "requestId": p.request_id, "monitor": p.monitor, "touch": touch});
        let rec = self.begin(&ctx, "send-input", Some(&p.trapos_id), args);
        let (status, outcome) = self.input(&p, &keys, rec.origin.clone()).await;
        Ok(self.end(rec, status, outcome))
    }
}

impl TrapdeskMcp {
    /// `send-input`'s input checked and sent: a touch to a monitor, or what is typed to the
    /// computer (or to one request).
    async fn input(
        &self,
        p: &SendInput,
        keys: &[String],
        origin: trapdesk_core::session::Origin,
    ) -> (Status, Outcome) {
        let refuse = |e: InputError| {
            let field = e.field.clone();
            failure(
                &ScreenError::Input(e),
                &shown(&self.session, &p.trapos_id),
                Some(&field),
            )
        };
        if let Err(e) = input::check_display(
            p.monitor.as_deref(),
            p.touch.is_some(),
            p.text.as_deref(),
            keys,
            p.paste.as_deref(),
        ) {
            return refuse(e);
        }
        if let (Some(monitor), Some(t)) = (&p.monitor, &p.touch) {
            if p.request_id.is_some() {
                return refuse(InputError {
                    field: "requestId".into(),
                    message: "a touch goes to the computer (every program sees monitor_touch): leave requestId out".into(),
                });
            }
            let cell =
                input::cell(t.x, "touch.x").and_then(|x| Ok((x, input::cell(t.y, "touch.y")?)));
            let (x, y) = match cell {
                Ok(c) => c,
                Err(e) => return refuse(e),
            };
            return self
                .touch(&p.trapos_id, monitor, x, y, p.wait_ms, origin)
                .await;
        }
        self.typed(p, keys, origin).await
    }

    /// Text, keys and paste sent, and the screen (or the request's output) after `waitMs`.
    async fn typed(
        &self,
        p: &SendInput,
        keys: &[String],
        origin: trapdesk_core::session::Origin,
    ) -> (Status, Outcome) {
        let steps = match input::steps(p.text.as_deref(), keys, p.paste.as_deref()) {
            Ok(s) => s,
            Err(e) => {
                let field = e.field.clone();
                return failure(
                    &ScreenError::Input(e),
                    &shown(&self.session, &p.trapos_id),
                    Some(&field),
                );
            }
        };
        let session = self.session().clone();
        let sent = match &p.request_id {
            Some(rid) => {
                session
                    .send_input_to(&p.trapos_id, rid, steps, origin.clone())
                    .await
            }
            None => {
                session
                    .send_input(&p.trapos_id, steps, origin.clone())
                    .await
            }
        };
        let events = match sent {
            Ok(v) => v.get("events").and_then(Value::as_u64).unwrap_or(0),
            Err(e) => return failure(&e, &shown(&self.session, &p.trapos_id), None),
        };
        let wait = p.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        if let Some(rid) = &p.request_id {
            return (
                Status::Ok,
                request_answer(&session, &p.trapos_id, rid, events),
            );
        }
        match session
            .read_screen(&p.trapos_id, &Display::Terminal, origin)
            .await
        {
            Ok(f) => {
                let id = session
                    .resolve(&p.trapos_id)
                    .unwrap_or_else(|_| p.trapos_id.clone());
                let mut data = screen_data(&id, &f, false);
                if let Some(obj) = data.as_object_mut() {
                    obj.insert("events".into(), json!(events));
                }
                let line = format!("sent {events} events; {}", screen_line(&id, &f));
                (Status::Ok, fit_screen(line, data, self.max_result_bytes))
            }
            Err(e) => failure(&e, &shown(&self.session, &p.trapos_id), None),
        }
    }

    /// `send-input` with `monitor` and `touch`: the touch, the wait, then the monitor's frame.
    async fn touch(
        &self,
        target: &str,
        monitor: &str,
        x: u32,
        y: u32,
        wait_ms: Option<u64>,
        origin: trapdesk_core::session::Origin,
    ) -> (Status, Outcome) {
        let session = self.session().clone();
        let events = match session
            .send_touch(target, monitor, x, y, origin.clone())
            .await
        {
            Ok(v) => v.get("events").and_then(Value::as_u64).unwrap_or(1),
            Err(e) => return failure(&e, &shown(&session, target), None),
        };
        let wait = wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let display = Display::Monitor(monitor.to_owned());
        match session.read_screen(target, &display, origin).await {
            Ok(f) => {
                let id = session
                    .resolve(target)
                    .unwrap_or_else(|_| target.to_owned());
                let mut data = screen_data(&id, &f, false);
                if let Some(obj) = data.as_object_mut() {
                    obj.insert("events".into(), json!(events));
                    obj.insert("touched".into(), json!({"x": x, "y": y}));
                }
                let line = format!("touched {monitor} at {x},{y}; {}", screen_line(&id, &f));
                (Status::Ok, fit_screen(line, data, self.max_result_bytes))
            }
            Err(e) => failure(&e, &shown(&session, target), None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest monitor (8 x 6 blocks at text scale 0.5: 164 x 81 cells), half unknown.
    fn big() -> ScreenFrame {
        let rows: Vec<Value> = (1..=81)
            .map(|y| {
                json!({"y": y, "text": format!("{y:03}").repeat(54), "fg": "4".repeat(164),
                    "bg": "b".repeat(164), "known": format!("{}{}", "1".repeat(82), "0".repeat(82))})
            })
            .collect();
        let v = json!({"full": true, "width": 164, "height": 81, "monitor": "monitor_3",
            "scale": 0.5, "rows": rows});
        ScreenFrame::apply(None, &v).expect("frame")
    }

    #[test]
    fn a_large_monitor_is_cut_whole_rows_at_a_time() {
        let f = big();
        let budget = 24 * 1024;
        let o = fit_screen(screen_line("1:a", &f), screen_data("1:a", &f, true), budget);
        assert!(
            super::super::results::result_size(&o.clone().into_unsized()) <= budget,
            "fits"
        );
        assert_eq!(o.data["colorsCut"], true);
        assert!(o.data.get("fg").is_none());
        let shown = o.data["rowsShown"].as_u64().expect("rows cut") as usize;
        assert!(shown > 10 && shown < 81, "{shown}");
        assert_eq!(o.data["rows"].as_array().map(Vec::len), Some(shown));
        assert_eq!(o.data["known"].as_array().map(Vec::len), Some(shown));
        // Still in step: row 1 is row 1, its unknown half marked.
        assert!(
            o.data["rows"][0]
                .as_str()
                .is_some_and(|r| r.starts_with("001001"))
        );
        assert!(
            o.line.contains("colours left out")
                && o.line.contains(&format!("rows {}..81 left out", shown + 1)),
            "{}",
            o.line
        );
        // A terminal fits as it is.
        let t = ScreenFrame::blank(51, 19);
        let o = fit_screen(screen_line("1:a", &t), screen_data("1:a", &t, true), budget);
        assert!(o.data.get("colorsCut").is_none() && o.data.get("rowsShown").is_none());
    }
}

//! The requests pane (every pending request, with a live countdown) and the activity pane
//! (agents' tool calls as they happen).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::{cut, millis, name_of, pane, spinner};
use crate::session::{Origin, Status};
use crate::tui::app::{App, Focus};
use crate::tui::output::printable;

pub fn render_requests(app: &App, area: Rect, buf: &mut Buffer) {
    let title = format!(" Requests {} ", app.pending.len());
    let block = pane(app, title, Focus::Requests);
    let inner = block.inner(area);
    block.render(area, buf);
    if app.pending.is_empty() {
        Paragraph::new(Span::styled("none pending", app.theme.dim)).render(inner, buf);
        return;
    }
    let w = inner.width as usize;
    let h = inner.height as usize;
    let skip = (app.request_sel + 1).saturating_sub(h);
    let lines: Vec<Line> = app
        .pending
        .iter()
        .enumerate()
        .skip(skip)
        .take(h)
        .map(|(i, p)| {
            let elapsed = app.now_i.saturating_duration_since(p.started).as_millis() as u64;
            let left = p.deadline.saturating_duration_since(app.now_i).as_secs();
            let who_style = match p.origin {
                Origin::Person => app.theme.person,
                Origin::Agent(_) => app.theme.agent,
            };
            let state = if p.cancel_requested {
                "cancelling"
            } else if p.awaiting_approval {
                "awaiting approval"
            } else if !p.sent {
                "queued"
            } else {
                ""
            };
            let timing = if p.no_deadline {
                // A person's run without a deadline: how long it has run instead.
                format!("{} {:>3}s ", spinner(app.ticks), elapsed / 1000)
            } else {
                format!("{} ⏱{left:>2}s ", spinner(app.ticks))
            };
            let head = format!(
                "{} {} {} ",
                cut(&printable(p.origin.label()), 10),
                cut(&name_of(&p.trapos_id), 12),
                millis(elapsed)
            );
            let state = if state.is_empty() {
                String::new()
            } else {
                format!("{state} ")
            };
            let rest = w.saturating_sub(super::width(&head) + super::width(&timing));
            let base = if i == app.request_sel && app.focus == Focus::Requests {
                app.theme.selection
            } else {
                Style::default()
            };
            let rest = rest.saturating_sub(super::width(&state));
            Line::from(vec![
                Span::styled(timing, base.patch(app.theme.warn)),
                Span::styled(head, base.patch(who_style)),
                Span::styled(state, base.patch(app.theme.warn)),
                Span::styled(
                    cut(&printable(&format!("{} {}", p.kind, p.summary)), rest),
                    base.patch(app.theme.text),
                ),
            ])
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

pub fn render_activity(app: &App, area: Rect, buf: &mut Buffer) {
    let title = format!(" Agent activity {} ", app.calls.len());
    let block = pane(app, title, Focus::Activity);
    let inner = block.inner(area);
    block.render(area, buf);
    if app.calls.is_empty() {
        Paragraph::new(Span::styled("no agent calls yet", app.theme.dim)).render(inner, buf);
        return;
    }
    let w = inner.width as usize;
    let h = inner.height as usize;
    let skip = (app.call_sel + 1).saturating_sub(h);
    let lines: Vec<Line> = app
        .calls
        .iter()
        .enumerate()
        .skip(skip)
        .take(h)
        .map(|(i, c)| {
            let (mark, st) = match c.status {
                Status::Running => (spinner(app.ticks), app.theme.accent),
                Status::Ok => ("✓", app.theme.ok),
                s => ("✗", app.theme.status(s)),
            };
            let dur = c.duration_ms.map(millis).unwrap_or_default();
            // Everything an agent sends is shown only after `printable`, like computers' output.
            let head = format!(
                "{mark} {} {} ",
                cut(&printable(&c.client), 10),
                printable(&c.tool)
            );
            let target = c.target.as_deref().map(name_of).unwrap_or_default();
            let tail = format!(" {dur}");
            let args = crate::session::summary::one_line(&compact_args(&c.args), 60);
            let rest = w.saturating_sub(super::width(&head) + super::width(&tail));
            let base = if i == app.call_sel && app.focus == Focus::Activity {
                app.theme.selection
            } else {
                Style::default()
            };
            Line::from(vec![
                Span::styled(head, base.patch(st)),
                Span::styled(
                    cut(&printable(&format!("{target} {args}")), rest),
                    base.patch(app.theme.text),
                ),
                Span::styled(tail, base.patch(app.theme.dim)),
            ])
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

/// Arguments without the target (shown already), as `key=value` pairs.
fn compact_args(args: &serde_json::Value) -> String {
    match args.as_object() {
        Some(map) => map
            .iter()
            .filter(|(k, _)| k.as_str() != "computer" && k.as_str() != "target")
            .map(|(k, v)| match v.as_str() {
                Some(s) => format!("{k}={s}"),
                None => format!("{k}={v}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        None => args.to_string(),
    }
}

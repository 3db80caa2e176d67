//! What opens over the panes: help, the quit question, a tool call's details, the prompts.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

use super::{centred, cut, millis, name_of};
use crate::tui::app::{App, Intent, Popup};
use crate::tui::component::Component;
use crate::tui::keymap;
use crate::tui::output::printable;

fn frame<'a>(app: &App, title: &'a str) -> Block<'a> {
    super::popup_frame(&app.theme, title)
}

/// Where the help goes: all of it when the screen is tall enough, else as much as fits (it
/// scrolls).
fn help_rect(area: Rect) -> Rect {
    centred(area, 92, keymap::help().len() as u16 + 5)
}

/// The help's text: the keys, then how to link a computer and where the endpoints are.
fn help_lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    keymap::help()
        .into_iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!("{k:>18}  "), t.key),
                Span::raw(what),
            ])
        })
        .chain([
            Line::from(vec![
                Span::styled("link a computer: ", t.dim),
                Span::styled(
                    crate::config::install_line(app.settings.gateway_bind, &app.settings.secret),
                    t.accent,
                ),
            ]),
            Line::from(Span::styled(
                format!(
                    "gateway ws://{}/gateway · MCP http://{}/mcp",
                    app.settings.gateway_bind, app.settings.mcp_bind
                ),
                t.dim,
            )),
            Line::from(Span::styled(
                format!("times are {} · Esc closes", super::zone(app.utc_offset)),
                t.dim,
            )),
        ])
        .collect()
}

/// Where the tool call popup goes on a screen of `area`.
fn detail_rect(area: Rect) -> Rect {
    centred(
        area,
        area.width.saturating_sub(8),
        area.height.saturating_sub(4),
    )
}

/// The tool call popup's text: who called what, its arguments and its result. Strings inside
/// the JSON are escaped by the pretty printer; the rest goes through [`printable`] like output.
fn detail_lines(app: &App, id: u64) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = Vec::new();
    let Some(c) = app.activity.calls.iter().find(|c| c.call_id == id) else {
        return lines;
    };
    lines.push(Line::from(vec![
        Span::styled(printable(&c.client), t.agent),
        Span::raw(format!(
            " {} {} · {} {}",
            printable(&c.tool),
            c.target.as_deref().map(name_of).unwrap_or_default(),
            c.status.as_str(),
            c.duration_ms.map(millis).unwrap_or_default()
        )),
    ]));
    lines.push(Line::from(Span::styled("arguments", t.title)));
    let pretty = |v: &serde_json::Value| -> Vec<Line<'static>> {
        let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
        text.lines().map(|l| Line::from(printable(l))).collect()
    };
    lines.extend(pretty(&c.args));
    lines.push(Line::from(Span::styled("result", t.title)));
    match c.result.as_deref() {
        Some(text) => match serde_json::from_str(text) {
            Ok(v) => lines.extend(pretty(&v)),
            Err(_) => lines.extend(text.lines().map(|l| Line::from(printable(l)))),
        },
        None => lines.push(Line::from(Span::styled("(still running)", t.dim))),
    }
    lines
}

/// How far text of `lines` wrapped at `width` can scroll in `height` rows (an estimate by
/// characters, which is exact for the ASCII of pretty-printed JSON).
fn max_scroll(lines: &[Line], width: u16, height: u16) -> u16 {
    let w = usize::from(width.max(1));
    let rows: usize = lines.iter().map(|l| l.width().max(1).div_ceil(w)).sum();
    u16::try_from(rows.saturating_sub(usize::from(height))).unwrap_or(u16::MAX)
}

/// How far the open popup can scroll on a screen of `area` (0 when it all fits).
pub fn popup_max_scroll(app: &App, area: Rect) -> u16 {
    match app.popup {
        Some(Popup::Help) => {
            let r = help_rect(area);
            max_scroll(
                &help_lines(app),
                r.width.saturating_sub(2),
                r.height.saturating_sub(2),
            )
        }
        Some(Popup::Detail(id)) => {
            let r = detail_rect(area);
            max_scroll(
                &detail_lines(app, id),
                r.width.saturating_sub(2),
                r.height.saturating_sub(2),
            )
        }
        _ => 0,
    }
}

/// Draws a popup; returns the cursor position for prompts.
pub fn render(app: &App, popup: &Popup, area: Rect, buf: &mut Buffer) -> Option<(u16, u16)> {
    match popup {
        Popup::Help => help(app, area, buf),
        Popup::Link => link(app, area, buf),
        Popup::ConfirmQuit(n) => confirm_quit(app, *n, area, buf),
        Popup::Detail(id) => detail(app, *id, area, buf),
        Popup::Prompt(p) => {
            let targets = app.targets();
            return p.draw(area, buf, &app.draw_cx(app.focus, &targets));
        }
        Popup::ConfirmRun(intent, who) => confirm_run(app, intent, who, area, buf),
        Popup::Policy => policy(app, area, buf),
    }
    None
}

/// Lines that may not all fit in `r`: scrolled to the popup's scroll, with a title that says
/// where it is when it scrolls (`scrolling` gets the top and the last top).
fn scrolled(
    app: &App,
    lines: Vec<Line<'static>>,
    r: Rect,
    still: &str,
    scrolling: impl Fn(u16, u16) -> String,
    buf: &mut Buffer,
) {
    Clear.render(r, buf);
    let max = max_scroll(
        &lines,
        r.width.saturating_sub(2),
        r.height.saturating_sub(2),
    );
    let top = app.popup_scroll.min(max);
    let title = if max == 0 {
        still.to_owned()
    } else {
        scrolling(top, max)
    };
    Paragraph::new(lines)
        .block(frame(app, &title))
        .wrap(Wrap { trim: false })
        .scroll((top, 0))
        .render(r, buf);
}

/// Every key; on a short terminal it scrolls, and the title says so and where it is.
fn help(app: &App, area: Rect, buf: &mut Buffer) {
    scrolled(
        app,
        help_lines(app),
        help_rect(area),
        " Keys ",
        |top, max| format!(" Keys ({top}/{max} ↑↓ PgUp PgDn scroll) "),
        buf,
    );
}

/// A tool call's arguments and result.
fn detail(app: &App, id: u64, area: Rect, buf: &mut Buffer) {
    scrolled(
        app,
        detail_lines(app, id),
        detail_rect(area),
        " Tool call (Esc closes) ",
        |top, max| format!(" Tool call ({top}/{max} ↑↓ PgUp PgDn scroll, Esc closes) "),
        buf,
    );
}

/// The secret and the install line.
fn link(app: &App, area: Rect, buf: &mut Buffer) {
    let r = centred(area, 92, 10);
    Clear.render(r, buf);
    let inner = frame(app, " Link a computer ").inner(r);
    frame(app, " Link a computer ").render(r, buf);
    super::empty::link_text(app, inner, buf);
}

/// Quit while `n` requests are pending?
fn confirm_quit(app: &App, n: usize, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let r = centred(area, 50, 5);
    Clear.render(r, buf);
    let lines = vec![
        Line::from(format!(
            "{n} request(s) still pending; they will be cancelled."
        )),
        Line::from(vec![
            Span::raw("Quit? "),
            Span::styled("y", t.key),
            Span::raw(" / "),
            Span::styled("n", t.key),
        ]),
    ];
    Paragraph::new(lines)
        .block(frame(app, " Quit "))
        .wrap(Wrap { trim: true })
        .render(r, buf);
}

/// The policy in force, where it came from, and `r` to reload it.
fn policy(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let mut lines: Vec<Line> = app
        .policy_lines
        .iter()
        .map(|l| Line::from(printable(l)))
        .collect();
    lines.push(Line::from(""));
    let file = app.settings.config_file.as_ref().map_or_else(
        || "no config file (defaults)".to_owned(),
        |p| p.display().to_string(),
    );
    lines.push(Line::from(Span::styled(format!("from {file}"), t.dim)));
    lines.push(Line::from(vec![
        Span::styled("r", t.key),
        Span::raw(" reloads the file (so does SIGHUP) · "),
        Span::styled("Esc", t.key),
        Span::raw(" closes"),
    ]));
    let r = centred(area, area.width.saturating_sub(8), lines.len() as u16 + 2);
    Clear.render(r, buf);
    Paragraph::new(lines)
        .block(frame(app, " Policy "))
        .wrap(Wrap { trim: false })
        .render(r, buf);
}

/// "Run exec-lua on 12 computers?", who they are, the first few names, and the keys.
fn confirm_run(app: &App, intent: &Intent, who: &str, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let Intent::Start {
        targets,
        kind,
        payload,
        ..
    } = intent
    else {
        return;
    };
    let r = centred(area, 72, 8);
    Clear.render(r, buf);
    let inner = r.width.saturating_sub(2) as usize;
    let what = payload
        .get("code")
        .or_else(|| payload.get("path"))
        .and_then(|v| v.as_str())
        .map(|s| crate::session::summary::one_line(s, 60))
        .unwrap_or_default();
    let names: Vec<String> = targets.iter().take(6).map(|t| name_of(t)).collect();
    let more = targets.len().saturating_sub(names.len());
    let mut list = names.join(", ");
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    let lines = vec![
        Line::from(vec![
            Span::raw(format!("Run {kind} on ")),
            Span::styled(format!("{} computers", targets.len()), t.warn),
            Span::raw("?"),
        ]),
        Line::from(Span::styled(cut(&printable(who), inner), t.accent)),
        Line::from(Span::styled(cut(&printable(&what), inner), t.text)),
        Line::from(Span::styled(cut(&list, inner), t.dim)),
        Line::from(""),
        Line::from(vec![
            Span::styled("y", t.key),
            Span::raw(" / "),
            Span::styled("Enter", t.key),
            Span::raw(" runs on each · "),
            Span::styled("n", t.key),
            Span::raw(" / "),
            Span::styled("Esc", t.key),
            Span::raw(" does not"),
        ]),
    ];
    Paragraph::new(lines)
        .block(frame(app, " Run on several computers "))
        .render(r, buf);
}

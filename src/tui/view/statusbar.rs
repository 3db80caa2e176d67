//! The bottom line: addresses, how many are linked, and the keys of the focused pane (or the
//! latest notice).

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::app::{App, Focus};

/// One key hint. `press` is the key a click on the hint stands for, so that everything the
/// hints name can be done with the mouse too.
pub struct Hint {
    pub key: &'static str,
    pub what: &'static str,
    pub press: (KeyCode, KeyModifiers),
}

const fn hint(key: &'static str, what: &'static str, code: KeyCode, mods: KeyModifiers) -> Hint {
    Hint {
        key,
        what,
        press: (code, mods),
    }
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;

/// Key hints per focus.
static EDITOR: [Hint; 6] = [
    hint("F5", "run", KeyCode::F(5), NONE),
    hint("F6", "file", KeyCode::F(6), NONE),
    hint("^↑↓", "history", KeyCode::Up, CTRL),
    hint("Tab", "panes", KeyCode::Tab, NONE),
    hint("F1", "help", KeyCode::F(1), NONE),
    hint("^C", "quit", KeyCode::Char('c'), CTRL),
];
static COMPUTERS: [Hint; 6] = [
    hint("↑↓", "select", KeyCode::Down, NONE),
    hint("Space", "mark", KeyCode::Char(' '), NONE),
    hint("/", "filter", KeyCode::Char('/'), NONE),
    hint("a", "mark shown", KeyCode::Char('a'), NONE),
    hint("z", "group", KeyCode::Char('z'), NONE),
    hint("?", "help", KeyCode::Char('?'), NONE),
];
/// While the filter line is open (the keys go to it, so these are not clickable keys).
static FILTER: [Hint; 3] = [
    hint("* ?", "glob", KeyCode::Null, NONE),
    hint("Enter", "keep", KeyCode::Enter, NONE),
    hint("Esc", "clear", KeyCode::Esc, NONE),
];
static OUTPUT: [Hint; 5] = [
    hint("↑↓ PgUp", "scroll", KeyCode::PageUp, NONE),
    hint("End", "follow", KeyCode::End, NONE),
    hint("/", "search", KeyCode::Char('/'), NONE),
    hint("n N", "next", KeyCode::Char('n'), NONE),
    hint("q", "quit", KeyCode::Char('q'), NONE),
];
static REQUESTS: [Hint; 4] = [
    hint("↑↓", "select", KeyCode::Down, NONE),
    hint("c Del", "cancel", KeyCode::Char('c'), NONE),
    hint("?", "help", KeyCode::Char('?'), NONE),
    hint("q", "quit", KeyCode::Char('q'), NONE),
];
static ACTIVITY: [Hint; 4] = [
    hint("↑↓", "select", KeyCode::Down, NONE),
    hint("Enter", "details", KeyCode::Enter, NONE),
    hint("?", "help", KeyCode::Char('?'), NONE),
    hint("q", "quit", KeyCode::Char('q'), NONE),
];

/// Key hints of the focused pane (or of the filter line while it is open).
pub fn hints(app: &App) -> &'static [Hint] {
    if super::computers::editing_filter(app) {
        return &FILTER;
    }
    match app.focus {
        Focus::Editor => &EDITOR,
        Focus::Computers => &COMPUTERS,
        Focus::Output => &OUTPUT,
        Focus::Requests => &REQUESTS,
        Focus::Activity => &ACTIVITY,
    }
}

/// The hint drawn at column `col` of the status line (the line starts with one space, then
/// each hint as `KEY what` followed by two spaces), when the hints are showing.
pub fn hint_at(app: &App, col: u16) -> Option<&'static Hint> {
    if app.notice.is_some() || app.attached {
        return None;
    }
    let mut x = 1usize;
    for h in hints(app) {
        let width = super::width(h.key) + 1 + super::width(h.what);
        if (x..x + width).contains(&usize::from(col)) {
            return Some(h);
        }
        x += width + 2;
    }
    None
}

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let mut spans = vec![Span::raw(" ")];
    if app.attached {
        // Attach mode must be impossible to miss: every key goes to the computer.
        let who = app
            .selected
            .as_deref()
            .map(super::name_of)
            .unwrap_or_default();
        spans.push(Span::styled(
            format!(" ATTACHED to {who} "),
            t.warn.add_modifier(ratatui::style::Modifier::REVERSED),
        ));
        if let Some((text, error)) = &app.notice {
            // A note about the last key (Esc, say) replaces the reminder, next to the marker.
            spans.push(Span::raw("  "));
            spans.push(Span::styled(
                text.clone(),
                if *error { t.error } else { t.ok },
            ));
            spans.push(Span::raw("  "));
        } else {
            spans.push(Span::raw("  keys go to the computer · "));
            spans.push(Span::styled("F8", t.key));
            spans.push(Span::raw(" detach  "));
        }
    } else {
        match &app.notice {
            Some((text, error)) => spans.push(Span::styled(
                text.clone(),
                if *error { t.error } else { t.ok },
            )),
            None => {
                for h in hints(app) {
                    spans.push(Span::styled(h.key, t.key));
                    spans.push(Span::raw(format!(" {}  ", h.what)));
                }
            }
        }
    }
    // The keys come first so that they show on a narrow terminal; the addresses follow on the
    // right when there is room (the help popup always has them).
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let room = usize::from(area.width).saturating_sub(used);
    // Busy computers are online ones running something, so online + offline is every one.
    let c = app.fleet.counts;
    let counts = format!(
        "{} online · {} busy · {} offline",
        c.online, c.busy, c.offline
    );
    let full = format!(
        "{counts} · gw {} · mcp {} ",
        app.settings.gateway_bind, app.settings.mcp_bind
    );
    let short = format!("{} on {} busy {} off ", c.online, c.busy, c.offline);
    let tiny = format!("{} on ", c.online);
    if let Some(right) = [full, format!("{counts} "), short, tiny]
        .into_iter()
        .find(|r| super::width(r) <= room)
    {
        spans.push(Span::raw(" ".repeat(room - super::width(&right))));
        spans.push(Span::styled(right, t.dim));
    }
    Paragraph::new(Line::from(spans))
        .style(t.status)
        .render(area, buf);
}

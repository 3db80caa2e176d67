//! The bottom line: addresses, how many are linked, and the keys of the focused pane (or the
//! latest notice).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::app::App;
use crate::tui::keymap::{self, Binding, Hint, Scope};

/// The bar whose hints show: the filter line's while it is open, else the focused pane's.
fn bar(app: &App) -> Scope {
    if app.editing_filter() {
        return Scope::Filter;
    }
    app.focus.scope()
}

/// The key hints on the bar now, each with its row of the keymap. The Screen view's display
/// key shows only while the view is open on a computer with monitors (elsewhere it would
/// name a view that is not there, or have nothing to switch to).
pub fn hints(app: &App) -> impl Iterator<Item = (&'static Hint, &'static Binding)> {
    let screen = app.screen.on
        && app
            .selected_status()
            .is_some_and(|s| !s.monitors.is_empty());
    keymap::hints(bar(app))
        .filter(move |b| screen || b.action != keymap::Action::NextDisplay)
        .filter_map(|b| Some((b.hint.as_ref()?, b)))
}

/// The hint drawn at column `col` of the status line (the line starts with one space, then
/// each hint as `KEY what` followed by two spaces), when the hints are showing.
pub fn hint_at(app: &App, col: u16) -> Option<&'static Binding> {
    if app.notice.is_some() || app.screen.attached {
        return None;
    }
    let mut x = 1 + paused_marker(app).map_or(0, |m| crate::tui::draw::width(&m) + 2);
    for (h, b) in hints(app) {
        let width = crate::tui::draw::width(h.key) + 1 + crate::tui::draw::width(h.what);
        if (x..x + width).contains(&usize::from(col)) {
            return Some(b);
        }
        x += width + 2;
    }
    None
}

/// A message as the status line shows it: whole when it fits in `room` columns, else cut with
/// the key of the message log, where it is whole.
pub fn whole_or_cut(text: &str, room: usize) -> String {
    if crate::tui::draw::width(text) <= room {
        return text.to_owned();
    }
    let more = format!(
        " ({} shows it whole)",
        keymap::key_for(keymap::Scope::Global, keymap::Action::Messages)
    );
    let keep = room.saturating_sub(crate::tui::draw::width(&more));
    format!("{}{more}", crate::tui::draw::cut(text, keep))
}

/// While all agents are stopped, the marker that says so until they are let go again: first on
/// the line, so that it shows on any width.
pub fn paused_marker(app: &App) -> Option<String> {
    app.paused.then(|| {
        format!(
            " AGENTS STOPPED · {} resumes ",
            keymap::key_for(Scope::Global, keymap::Action::Pause)
        )
    })
}

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let mut spans = vec![Span::raw(" ")];
    if let Some(m) = paused_marker(app) {
        spans.push(Span::styled(
            m,
            t.error.add_modifier(ratatui::style::Modifier::REVERSED),
        ));
        spans.push(Span::raw("  "));
    }
    if app.screen.attached {
        // Attach mode must be impossible to miss: every key goes to the computer.
        let who = app
            .selected
            .as_deref()
            .map(crate::tui::draw::name_of)
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
            spans.push(Span::styled(
                keymap::key_for(keymap::Scope::Attached, keymap::Action::Attach),
                t.key,
            ));
            spans.push(Span::raw(" detach  "));
        }
    } else {
        match &app.notice {
            Some((text, error)) => spans.push(Span::styled(
                whole_or_cut(text, usize::from(area.width).saturating_sub(2)),
                if *error { t.error } else { t.ok },
            )),
            None => {
                for (h, _) in hints(app) {
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
    let c = app.computers.counts;
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
        .find(|r| crate::tui::draw::width(r) <= room)
    {
        spans.push(Span::raw(
            " ".repeat(room - crate::tui::draw::width(&right)),
        ));
        spans.push(Span::styled(right, t.dim));
    }
    Paragraph::new(Line::from(spans))
        .style(t.status)
        .render(area, buf);
}

//! The bottom line: addresses, how many are linked, and the keys of the focused pane (or the
//! latest notice).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::app::{App, Focus};

/// Key hints per focus: (key, what).
fn hints(focus: Focus) -> &'static [(&'static str, &'static str)] {
    match focus {
        Focus::Editor => &[
            ("F5", "run"),
            ("F6", "file"),
            ("^↑↓", "history"),
            ("Tab", "panes"),
            ("F1", "help"),
            ("^C", "quit"),
        ],
        Focus::Computers => &[
            ("↑↓", "select"),
            ("Space", "mark"),
            ("Enter", "edit"),
            ("?", "help"),
            ("q", "quit"),
        ],
        Focus::Output => &[
            ("↑↓ PgUp", "scroll"),
            ("End", "follow"),
            ("/", "search"),
            ("n N", "next"),
            ("q", "quit"),
        ],
        Focus::Requests => &[
            ("↑↓", "select"),
            ("c Del", "cancel"),
            ("?", "help"),
            ("q", "quit"),
        ],
        Focus::Activity => &[
            ("↑↓", "select"),
            ("Enter", "details"),
            ("?", "help"),
            ("q", "quit"),
        ],
    }
}

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let linked = app.computers.iter().filter(|c| c.online).count();
    let mut spans = vec![Span::raw(" ")];
    match &app.notice {
        Some((text, error)) => spans.push(Span::styled(
            text.clone(),
            if *error { t.error } else { t.ok },
        )),
        None => {
            for (key, what) in hints(app.focus) {
                spans.push(Span::styled(*key, t.key));
                spans.push(Span::raw(format!(" {what}  ")));
            }
        }
    }
    // The keys come first so that they show on a narrow terminal; the addresses follow on the
    // right when there is room (the help popup always has them).
    let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    let room = usize::from(area.width).saturating_sub(used);
    let full = format!(
        "{linked} linked · gw {} · mcp {} ",
        app.settings.gateway_bind, app.settings.mcp_bind
    );
    let short = format!("{linked} linked ");
    if let Some(right) = [full, short]
        .into_iter()
        .find(|r| r.chars().count() <= room)
    {
        spans.push(Span::raw(" ".repeat(room - right.chars().count())));
        spans.push(Span::styled(right, t.dim));
    }
    Paragraph::new(Line::from(spans))
        .style(t.status)
        .render(area, buf);
}

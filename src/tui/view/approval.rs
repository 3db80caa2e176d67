//! The approval prompt over the panes: who asks to do what where, the code or file in full
//! (Lua highlighted), its size, the countdown, and the keys that answer.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::session::Approval;
use crate::tui::app::App;
use crate::tui::output::printable;

fn body(app: &App, a: &Approval) -> Vec<Line<'static>> {
    let t = &app.theme;
    let left = a.deadline.saturating_duration_since(app.now_i).as_secs();
    let mut lines = vec![
        Line::from(vec![
            Span::styled(printable(a.origin.name()), t.agent),
            Span::raw(format!(" wants {} on ", printable(&a.kind))),
            Span::styled(printable(&a.trapos_id), t.title),
            Span::raw(format!(
                " · {} byte{} · {left} s left",
                a.size,
                if a.size == 1 { "" } else { "s" }
            )),
        ]),
        Line::from(Span::styled(printable(&a.because), t.dim)),
        Line::from(""),
    ];
    let text: Vec<String> = a.detail.split('\n').map(printable).collect();
    if a.kind == "exec-lua" {
        for spans in app.approval_highlight.lines(&text, text.len()) {
            lines.push(Line::from(spans));
        }
    } else {
        lines.extend(text.into_iter().map(Line::from));
    }
    lines
}

/// Draws the prompt for the oldest waiting call.
pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let Some(a) = app.approval() else {
        return;
    };
    let t = &app.theme;
    let w = area.width.saturating_sub(6).max(20);
    let h = area.height.saturating_sub(4).max(8);
    let r = Rect::new(
        area.x + (area.width.saturating_sub(w)) / 2,
        area.y + (area.height.saturating_sub(h)) / 2,
        w.min(area.width),
        h.min(area.height),
    );
    Clear.render(r, buf);
    let more = app.approvals.len().saturating_sub(1);
    let title = if more > 0 {
        format!(" Approve? ({more} more waiting) ")
    } else {
        " Approve? ".to_owned()
    };
    let keys = Line::from(vec![
        Span::styled(" y ", t.key),
        Span::raw("run it  "),
        Span::styled(" n ", t.key),
        Span::raw("refuse  "),
        Span::styled(" a ", t.key),
        Span::raw(format!(
            "allow {} {} on {} for this session  ",
            a.origin.name(),
            a.action,
            a.trapos_id
        )),
        Span::styled("↑↓", t.key),
        Span::raw(" scroll"),
    ]);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.warn)
        .title(Span::styled(title, t.title))
        .title_bottom(keys);
    Paragraph::new(body(app, a))
        .block(block)
        .wrap(Wrap { trim: false })
        .scroll((app.approval_scroll, 0))
        .render(r, buf);
}

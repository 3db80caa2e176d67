//! The computers pane: "All computers", then each computer with its status mark, round-trip
//! time and served types (on a second line when there is room).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::{age, cut, name_of, pane, spinner};
use crate::session::ComputerInfo;
use crate::tui::app::{App, Focus};

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let online = app.computers.iter().filter(|c| c.online).count();
    let title = format!(" Computers {online} ");
    let block = pane(app, title, Focus::Computers);
    let inner = block.inner(area);
    block.render(area, buf);
    let width = inner.width as usize;
    let sel = app.selected_index();
    let two_lines = inner.height as usize > app.computers.len() * 2;
    let mut lines = Vec::new();
    let all_style = if sel == 0 {
        app.theme.selection
    } else {
        app.theme.text
    };
    lines.push(Line::from(Span::styled(
        format!("{:<width$}", "  All computers"),
        all_style,
    )));
    for (i, c) in app.computers.iter().enumerate() {
        let selected = sel == i + 1;
        let marked = app.marked.contains(&c.trapos_id);
        let (mark, state, style) = status(app, c);
        let base = if selected {
            app.theme.selection
        } else {
            Style::default()
        };
        let mark_col = if marked { "•" } else { " " };
        let rtt = c.last_rtt_ms.map(|r| format!(" {r}ms")).unwrap_or_default();
        let right = format!("{state}{rtt}");
        let name_w = width.saturating_sub(3 + super::width(&right) + 1);
        let name = cut(&name_of(&c.trapos_id), name_w);
        let pad = width.saturating_sub(3 + super::width(&name) + super::width(&right));
        lines.push(Line::from(vec![
            Span::styled(mark_col, base.patch(app.theme.marked)),
            Span::styled(format!("{mark} "), base.patch(style)),
            Span::styled(name, base.patch(app.theme.text)),
            Span::styled(" ".repeat(pad), base),
            Span::styled(right, base.patch(style)),
        ]));
        if two_lines {
            let serves = if c.serves.is_empty() {
                "serves nothing".to_owned()
            } else {
                c.serves.join(" ")
            };
            lines.push(Line::from(Span::styled(
                format!("   {}", cut(&serves, width.saturating_sub(3))),
                app.theme.dim,
            )));
        }
    }
    // Keep the selection in view when the list is longer than the pane.
    let per = if two_lines { 2 } else { 1 };
    let sel_line = if sel == 0 { 0 } else { 1 + (sel - 1) * per };
    let h = inner.height as usize;
    let skip = (sel_line + per).saturating_sub(h);
    Paragraph::new(lines.into_iter().skip(skip).collect::<Vec<_>>()).render(inner, buf);
}

/// Mark, state text and style of a computer.
fn status(app: &App, c: &ComputerInfo) -> (&'static str, String, Style) {
    if !c.online {
        let since = c
            .disconnected_at
            .and_then(|t| app.now.duration_since(t).ok())
            .map(|d| format!("off {}", age(d)))
            .unwrap_or_else(|| "offline".into());
        return ("○", since, app.theme.dim);
    }
    if c.running + c.queued > 0 {
        let q = if c.queued > 0 {
            format!("+{}", c.queued)
        } else {
            String::new()
        };
        return (
            spinner(app.ticks),
            format!("run {}{q}", c.running),
            app.theme.accent,
        );
    }
    ("●", "idle".into(), app.theme.ok)
}

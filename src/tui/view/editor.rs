//! The Lua editor: line numbers, syntax colours for the visible lines, the cursor.
//!
//! The text and its editing live in the `TextArea`; this draws it, because the highlighted
//! spans come from syntect and the textarea widget has no hook for them.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::{cut, name_of, pane};
use crate::tui::app::{App, Focus};

/// Draws the editor; returns the cursor position when the editor has focus.
pub fn render(app: &App, area: Rect, buf: &mut Buffer) -> Option<(u16, u16)> {
    let targets = app.targets();
    let to = match targets.as_slice() {
        [] => "no computer selected".to_owned(),
        [one] => name_of(one),
        many => format!("{} marked computers", many.len()),
    };
    let title = Line::from(vec![
        Span::raw(" Lua → "),
        Span::styled(cut(&to, 30), app.theme.accent),
        Span::raw(" "),
        Span::styled("F5", app.theme.key),
        Span::raw(" run "),
        Span::styled("F6", app.theme.key),
        Span::raw(" run file "),
    ]);
    let block = pane(app, title, Focus::Editor);
    let inner = block.inner(area);
    block.render(area, buf);
    let lines = app.editor.lines();
    let ratatui_textarea::DataCursor(row, col) = app.editor.cursor();
    let h = inner.height as usize;
    if h == 0 {
        return None;
    }
    // Scroll just enough to keep the cursor line visible.
    let mut top = app.editor_top.get();
    if row < top {
        top = row;
    } else if row >= top + h {
        top = row + 1 - h;
    }
    app.editor_top.set(top);
    let gutter = lines.len().to_string().len().max(2);
    let visible_end = (top + h).min(lines.len());
    let styled = if app.theme.color {
        Some(app.highlight.lines(lines, visible_end))
    } else {
        None
    };
    let text_w = (inner.width as usize).saturating_sub(gutter + 1);
    let hscroll = col.saturating_sub(text_w.saturating_sub(1));
    let mut out = Vec::with_capacity(h);
    for i in top..visible_end {
        let mut spans = vec![Span::styled(
            format!("{:>gutter$} ", i + 1),
            if i == row {
                app.theme.accent
            } else {
                app.theme.line_number
            },
        )];
        let pieces: Vec<Span> = match styled.as_ref().and_then(|s| s.get(i)) {
            Some(s) => s.clone(),
            None => vec![Span::raw(lines.get(i).cloned().unwrap_or_default())],
        };
        spans.extend(skip_chars(pieces, hscroll));
        out.push(Line::from(spans));
    }
    if lines.len() == 1 && lines.first().is_some_and(String::is_empty) {
        out = vec![Line::from(vec![
            Span::styled(format!("{:>gutter$} ", 1), app.theme.accent),
            Span::styled(
                "type Lua here, e.g. print(os.getComputerLabel())",
                app.theme.dim.add_modifier(Modifier::ITALIC),
            ),
        ])];
    }
    Paragraph::new(out).render(inner, buf);
    let focused = app.focus == Focus::Editor && app.popup.is_none();
    focused.then(|| {
        let line = lines.get(row).map_or("", String::as_str);
        let before: usize = line
            .chars()
            .take(col)
            .skip(hscroll)
            .map(|c| if c == '\t' { 2 } else { 1 })
            .sum();
        (
            inner.x + (gutter + 1 + before) as u16,
            inner.y + (row - top) as u16,
        )
    })
}

/// Drops the first `n` chars of a run of spans (horizontal scrolling).
fn skip_chars(spans: Vec<Span<'static>>, mut n: usize) -> Vec<Span<'static>> {
    let mut out = Vec::with_capacity(spans.len());
    for s in spans {
        let len = s.content.chars().count();
        if n >= len {
            n -= len;
            continue;
        }
        let rest: String = s.content.chars().skip(n).collect();
        n = 0;
        out.push(Span::styled(rest, s.style));
    }
    out
}

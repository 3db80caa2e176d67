//! The output pane: the selected computer's rows (or everyone's, prefixed by name), only the
//! visible ones, each request under a header saying who ran what, when and how it ended.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::{clock, cut, millis, name_of, pane};
use crate::session::{Origin, Status, Stream};
use crate::tui::app::{App, Focus};
use crate::tui::output::{Ending, Header, Row, RowKind};

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let name = app
        .selected
        .as_deref()
        .map_or_else(|| "all computers".to_owned(), name_of);
    let mut title = vec![Span::raw(format!(" Output · {name} "))];
    if !app.scroll.following() {
        title.push(Span::styled(
            format!("↑{} (End follows) ", app.scroll.from_bottom),
            app.theme.warn,
        ));
    }
    if let Some(q) = &app.scroll.search {
        title.push(Span::styled(format!("/{q} "), app.theme.accent));
    }
    let block = pane(app, Line::from(title), Focus::Output);
    let inner = block.inner(area);
    block.render(area, buf);
    let Some(rows) = app.rows().filter(|r| !r.rows.is_empty()) else {
        let hint = if app.selected.is_some() {
            "No output yet. Type Lua in the editor below and press F5."
        } else {
            "No output yet from any computer."
        };
        Paragraph::new(Line::from(Span::styled(hint, app.theme.dim)))
            .wrap(Wrap { trim: true })
            .render(inner, buf);
        return;
    };
    let h = inner.height as usize;
    let n = rows.rows.len();
    let end = n.saturating_sub(app.scroll.from_bottom.min(n.saturating_sub(1)));
    // Scrolled to the top (Home), the screen is filled from the first row down, not one row
    // and blanks.
    let end = end.max(h.min(n));
    let start = end.saturating_sub(h);
    let prefix = app.selected.is_none();
    let query = app.scroll.search.as_ref().map(|q| q.to_lowercase());
    let hit_index = app.scroll.hit.and_then(|h| n.checked_sub(h + 1));
    let width = inner.width as usize;
    let lines: Vec<Line> = (start..end)
        .filter_map(|i| rows.rows.get(i).map(|r| (i, r)))
        .map(|(i, r)| {
            let mut line = row_line(app, r, prefix, width);
            let is_match = query
                .as_ref()
                .is_some_and(|q| r.text().to_lowercase().contains(q));
            if hit_index == Some(i) {
                line = line.style(app.theme.selection);
            } else if is_match {
                line = line.style(Style::default().add_modifier(Modifier::UNDERLINED));
            }
            line
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

fn who_style(app: &App, who: &Origin) -> Style {
    match who {
        Origin::Person => app.theme.person,
        Origin::Agent(_) => app.theme.agent,
    }
}

/// The outcome words of an ending: `ok 12 ms`, `timeout after 30.0 s`, ...
fn ending_words(e: &Ending) -> String {
    format!("{} {}", e.status.as_str(), millis(e.duration_ms))
}

/// A line of output as it fits `room` columns when scrolled `skip` columns right: a line cut
/// on the right ends in `…`, one scrolled past its start begins with `…`, so no cut is silent.
pub fn shift_line(text: &str, skip: usize, room: usize) -> String {
    // Never scroll a line further than shows its end: → past the longest line still shows
    // each line's last columns.
    let skip = skip.min((super::width(text) + 1).saturating_sub(room));
    if skip == 0 && super::width(text) <= room {
        return text.to_owned();
    }
    let mut used = 0;
    let rest: String = text
        .chars()
        .skip_while(|c| {
            let w = unicode_width::UnicodeWidthChar::width(*c).unwrap_or(0);
            used += w;
            used <= skip
        })
        .collect();
    if skip == 0 {
        return cut(&rest, room);
    }
    if rest.is_empty() {
        return "…".to_owned();
    }
    format!("…{}", cut(&rest, room.saturating_sub(1)))
}

fn row_line<'a>(app: &App, r: &'a Row, prefix: bool, width: usize) -> Line<'a> {
    let mut spans = Vec::new();
    if prefix {
        spans.push(Span::styled(
            format!("{} ", cut(&name_of(&r.trapos_id), 12)),
            app.theme.dim,
        ));
    }
    match &r.kind {
        RowKind::Header(h) => {
            let Header {
                request_id,
                who,
                kind,
                summary,
                at,
            } = &**h;
            spans.push(Span::styled("▶ ", app.theme.accent));
            spans.push(Span::styled(clock(*at, app.utc_offset), app.theme.dim));
            spans.push(Span::raw(" "));
            spans.push(Span::styled(
                who.label().to_owned(),
                who_style(app, who).add_modifier(Modifier::BOLD),
            ));
            spans.push(Span::styled(format!(" {kind} "), app.theme.dim));
            let status = match app.output.ending(request_id) {
                Some(e) => Span::styled(
                    format!(" · {}", ending_words(e)),
                    app.theme.status(e.status),
                ),
                None => Span::styled(" · running…", app.theme.accent),
            };
            let used: usize = spans.iter().map(|s| s.width()).sum::<usize>() + status.width();
            spans.push(Span::styled(
                cut(summary, width.saturating_sub(used).max(8)),
                app.theme.text.add_modifier(Modifier::BOLD),
            ));
            spans.push(status);
        }
        RowKind::Line { stream, text } => {
            let style = match stream {
                Stream::Err => app.theme.error,
                Stream::Out => app.theme.text,
            };
            let room = width.saturating_sub(spans.iter().map(|s| s.width()).sum::<usize>());
            let shown = shift_line(text, app.output_hscroll, room);
            if shown != **text {
                spans.push(Span::styled(shown, style));
            } else {
                spans.push(Span::styled(&**text, style));
            }
        }
        RowKind::End { ending, .. } => {
            let (mark, text) = match ending.status {
                Status::Ok if ending.summary.is_empty() => ("└ ", "ok".to_owned()),
                Status::Ok => ("└ → ", ending.summary.clone()),
                Status::Error | Status::Failed => ("└ ✗ error: ", ending.summary.clone()),
                s => (
                    "└ ✗ ",
                    format!("{} after {}", s.as_str(), millis(ending.duration_ms)),
                ),
            };
            let style = app.theme.status(ending.status);
            spans.push(Span::styled(mark, style));
            spans.push(Span::styled(text, style));
        }
    }
    Line::from(spans)
}

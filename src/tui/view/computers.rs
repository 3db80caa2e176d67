//! The computers pane: "All computers", then each computer with its status mark, round-trip
//! time and served types (on a second line when there is room); grouped by label prefix under
//! foldable headers when grouping is on; the filter on the bottom border. Only the rows on
//! screen are drawn, so a thousand computers cost what fifty do.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::{age, cut, name_of, pane, spinner};
use crate::session::ComputerInfo;
use crate::tui::app::{App, Focus, Popup, PromptKind};
use crate::tui::fleet::{Counts, Group, Row};

/// The pane's title: how many computers, or `N of M` under a filter.
pub fn title(app: &App) -> String {
    let f = &app.fleet;
    if f.filtering() {
        format!(" Computers {} of {} ", f.shown.total, f.counts.total)
    } else {
        format!(" Computers {} ", f.counts.total)
    }
}

/// Whether the filter line is open for typing.
pub fn editing_filter(app: &App) -> bool {
    matches!(&app.popup, Some(Popup::Prompt(p)) if p.kind == PromptKind::Filter)
}

/// The filter as shown on the bottom border (` /miner* `), cut to `room` columns from the
/// left so that the end being typed stays visible.
pub fn filter_text(app: &App, room: usize) -> String {
    let text = crate::tui::output::printable(&app.fleet.filter);
    let n = text.chars().count();
    let keep = room.saturating_sub(4);
    if super::width(&text) <= keep {
        return format!(" /{text} ");
    }
    let tail: String = text
        .chars()
        .skip(n.saturating_sub(keep.saturating_sub(1)))
        .collect();
    format!(" /…{tail} ")
}

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let f = &app.fleet;
    let mut block = pane(app, title(app), Focus::Computers);
    let editing = editing_filter(app);
    if editing || f.filtering() {
        let text = filter_text(app, area.width.saturating_sub(2) as usize);
        let style = if editing {
            app.theme.key
        } else {
            app.theme.accent
        };
        block = block.title_bottom(Line::from(Span::styled(text, style)));
    }
    let inner = block.inner(area);
    block.render(area, buf);
    let width = inner.width as usize;
    let h = inner.height as usize;
    let computer_rows = f.rows.len().saturating_sub(1 + f.rows_of_groups());
    // Served types go on a second line only when every row fits twice.
    let two_lines = h >= f.rows.len() + computer_rows;
    let top = if two_lines {
        0
    } else {
        let mut top = app.computers_top.get();
        if let Some(sel) = f.cursor_row(app.selected.as_deref()) {
            if sel < top {
                top = sel;
            } else if sel >= top + h {
                top = sel + 1 - h;
            }
        }
        top.min(f.rows.len().saturating_sub(h))
    };
    app.computers_top.set(top);
    let sel = f.cursor_row(app.selected.as_deref());
    let mut lines = Vec::with_capacity(h);
    for (r, row) in f.rows.iter().enumerate().skip(top) {
        if lines.len() >= h {
            break;
        }
        let base = if sel == Some(r) {
            app.theme.selection
        } else {
            Style::default()
        };
        match row {
            Row::All => {
                let all_style = if sel == Some(r) {
                    app.theme.selection
                } else {
                    app.theme.text
                };
                lines.push(Line::from(Span::styled(
                    format!("{:<width$}", "  All computers"),
                    all_style,
                )));
            }
            Row::Group(g) => {
                if let Some(g) = f.groups.get(*g) {
                    lines.push(group_line(app, g, base, width));
                }
            }
            Row::Computer(i) => {
                let Some(c) = app.computers.get(*i) else {
                    continue;
                };
                lines.push(computer_line(app, c, base, width));
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
        }
    }
    Paragraph::new(lines).render(inner, buf);
}

/// `•▾ miner 12        ●9 ◓2 ○1`: fold mark, name, how many, and how they are.
fn group_line(app: &App, g: &Group, base: Style, width: usize) -> Line<'static> {
    let online: Vec<&String> = g
        .members
        .iter()
        .filter_map(|i| app.computers.get(*i))
        .filter(|c| c.online)
        .map(|c| &c.trapos_id)
        .collect();
    let all_marked = !online.is_empty() && online.iter().all(|id| app.marked.contains(*id));
    let mark_col = if all_marked { "•" } else { " " };
    let fold = if g.collapsed { "▸" } else { "▾" };
    let right = counts_marks(&g.counts);
    let count = format!(" {}", g.counts.total);
    let name_w = width.saturating_sub(3 + super::width(&count) + super::width(&right) + 1);
    let name = cut(&crate::tui::output::printable(&g.name), name_w);
    let pad =
        width.saturating_sub(3 + super::width(&name) + super::width(&count) + super::width(&right));
    Line::from(vec![
        Span::styled(mark_col, base.patch(app.theme.marked)),
        Span::styled(format!("{fold} "), base.patch(app.theme.accent)),
        Span::styled(name, base.patch(app.theme.title)),
        Span::styled(count, base.patch(app.theme.dim)),
        Span::styled(" ".repeat(pad), base),
        Span::styled(right, base.patch(app.theme.dim)),
    ])
}

/// `●9 ◓2 ○1`: idle, busy and offline, the zeros left out.
fn counts_marks(c: &Counts) -> String {
    let idle = c.online - c.busy;
    [("●", idle), ("◓", c.busy), ("○", c.offline)]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(m, n)| format!("{m}{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn computer_line(app: &App, c: &ComputerInfo, base: Style, width: usize) -> Line<'static> {
    let marked = app.marked.contains(&c.trapos_id);
    let (mark, state, style) = status(app, c);
    let mark_col = if marked { "•" } else { " " };
    let rtt = c.last_rtt_ms.map(|r| format!(" {r}ms")).unwrap_or_default();
    let right = format!("{state}{rtt}");
    let name_w = width.saturating_sub(3 + super::width(&right) + 1);
    let name = cut(&name_of(&c.trapos_id), name_w);
    let pad = width.saturating_sub(3 + super::width(&name) + super::width(&right));
    Line::from(vec![
        Span::styled(mark_col, base.patch(app.theme.marked)),
        Span::styled(format!("{mark} "), base.patch(style)),
        Span::styled(name, base.patch(app.theme.text)),
        Span::styled(" ".repeat(pad), base),
        Span::styled(right, base.patch(style)),
    ])
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

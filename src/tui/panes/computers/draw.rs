//! Drawing the Computers pane: "All computers", then each computer with its status mark,
//! round-trip time and served types (on a second line when there is room); grouped by label
//! prefix under foldable headers when grouping is on; the filter on the bottom border. Only
//! the rows on screen are drawn, so a thousand computers cost what fifty do. Free functions over
//! the pane's state: the state and its keys are `mod.rs` and `keys.rs`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::{Computers, Counts, Group, Row};
use crate::tui::component::DrawCx;
use crate::tui::draw::{age, cut, name_of, spinner, width as cols};
use crate::tui::panes::prompt::filter_text;
use trapdesk_core::session::ComputerInfo;

/// The pane's title: how many computers, or `N of M` under a filter.
fn title(f: &Computers) -> String {
    if f.filtering() {
        format!(" Computers {} of {} ", f.shown.total, f.counts.total)
    } else {
        format!(" Computers {} ", f.counts.total)
    }
}

pub(super) fn render(f: &Computers, area: Rect, buf: &mut Buffer, cx: &DrawCx) {
    let mut block = cx.frame(title(f));
    let editing = cx.filter_open;
    if editing || f.filtering() {
        let text = filter_text(&f.filter, area.width.saturating_sub(2) as usize);
        let style = if editing {
            cx.theme.key
        } else {
            cx.theme.accent
        };
        block = block.title_bottom(Line::from(Span::styled(text, style)));
    }
    let inner = block.inner(area);
    block.render(area, buf);
    let width = inner.width as usize;
    let h = inner.height as usize;
    // Served types go on a second line only when every row fits twice beside any Device
    // pane, decided on the whole Computers area, so the line stays while panes come and go.
    let two_lines = crate::tui::panes::device::two_lines(f.whole.get(), f.height_twice())
        && h >= f.lines_twice();
    let top = if two_lines { 0 } else { top_for(f, cx, h) };
    f.top.set(top);
    let sel = f.cursor_row(cx.selected);
    let mut lines = Vec::with_capacity(h);
    for (r, row) in f.rows.iter().enumerate().skip(top) {
        if lines.len() >= h {
            break;
        }
        let base = if sel == Some(r) {
            cx.theme.selection
        } else {
            Style::default()
        };
        match row {
            Row::All => {
                let all_style = if sel == Some(r) {
                    cx.theme.selection
                } else {
                    cx.theme.text
                };
                lines.push(Line::from(Span::styled(
                    format!("{:<width$}", "  All computers"),
                    all_style,
                )));
            }
            Row::Group(g) => {
                if let Some(g) = f.groups.get(*g) {
                    lines.push(group_line(f, cx, g, base, width));
                }
            }
            Row::Computer(i) => {
                let Some(c) = f.list.get(*i) else {
                    continue;
                };
                lines.push(computer_line(f, cx, c, base, width));
                if two_lines {
                    let serves = if c.serves.is_empty() {
                        "serves nothing".to_owned()
                    } else {
                        c.serves.join(" ")
                    };
                    lines.push(Line::from(Span::styled(
                        format!("   {}", cut(&serves, width.saturating_sub(3))),
                        cx.theme.dim,
                    )));
                }
            }
        }
    }
    Paragraph::new(lines).render(inner, buf);
}

/// The first row shown in `h` rows: the one shown last, moved just enough to show the
/// cursor's row.
fn top_for(f: &Computers, cx: &DrawCx, h: usize) -> usize {
    let mut top = f.top.get();
    if let Some(sel) = f.cursor_row(cx.selected) {
        if sel < top {
            top = sel;
        } else if sel >= top + h {
            top = sel + 1 - h;
        }
    }
    top.min(f.rows.len().saturating_sub(h))
}

/// `•▾ miner 12        ●9 ◓2 ○1`: fold mark, name, how many, and how they are.
fn group_line(f: &Computers, cx: &DrawCx, g: &Group, base: Style, width: usize) -> Line<'static> {
    let online: Vec<&String> = g
        .members
        .iter()
        .filter_map(|i| f.list.get(*i))
        .filter(|c| c.online)
        .map(|c| &c.trapos_id)
        .collect();
    let all_marked = !online.is_empty() && online.iter().all(|id| f.marked.contains(*id));
    let mark_col = if all_marked { "•" } else { " " };
    let fold = if g.collapsed { "▸" } else { "▾" };
    let right = counts_marks(&g.counts);
    let count = format!(" {}", g.counts.total);
    let name_w = width.saturating_sub(3 + cols(&count) + cols(&right) + 1);
    let name = cut(&crate::tui::output::printable(&g.name), name_w);
    let pad = width.saturating_sub(3 + cols(&name) + cols(&count) + cols(&right));
    Line::from(vec![
        Span::styled(mark_col, base.patch(cx.theme.marked)),
        Span::styled(format!("{fold} "), base.patch(cx.theme.accent)),
        Span::styled(name, base.patch(cx.theme.title)),
        Span::styled(count, base.patch(cx.theme.dim)),
        Span::styled(" ".repeat(pad), base),
        Span::styled(right, base.patch(cx.theme.dim)),
    ])
}

fn computer_line(
    f: &Computers,
    cx: &DrawCx,
    c: &ComputerInfo,
    base: Style,
    width: usize,
) -> Line<'static> {
    let marked = f.marked.contains(&c.trapos_id);
    let (mark, state, style) = status(cx, c);
    let mark_col = if marked { "•" } else { " " };
    let rtt = c.last_rtt_ms.map(|r| format!(" {r}ms")).unwrap_or_default();
    // A turtle or pocket computer says so (as its hello did); a computer, the usual case,
    // says nothing, to keep the row short.
    let device = match c.machine.device.as_deref() {
        Some(d @ ("turtle" | "pocket")) => format!("{d} "),
        _ => String::new(),
    };
    // The name says which computer it is: on a narrow pane the kind goes first, then the
    // round-trip time, before the name is cut.
    let whole = cols(&name_of(&c.trapos_id));
    let fits = |right: &str| 3 + whole + 1 + cols(right) <= width;
    let right = [
        format!("{device}{state}{rtt}"),
        format!("{state}{rtt}"),
        state.clone(),
    ]
    .into_iter()
    .find(|r| fits(r))
    .unwrap_or(state);
    let name_w = width.saturating_sub(3 + cols(&right) + 1);
    let name = cut(&name_of(&c.trapos_id), name_w);
    let pad = width.saturating_sub(3 + cols(&name) + cols(&right));
    Line::from(vec![
        Span::styled(mark_col, base.patch(cx.theme.marked)),
        Span::styled(format!("{mark} "), base.patch(style)),
        Span::styled(name, base.patch(cx.theme.text)),
        Span::styled(" ".repeat(pad), base),
        Span::styled(right, base.patch(style)),
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

/// Mark, state text and style of a computer.
fn status(cx: &DrawCx, c: &ComputerInfo) -> (&'static str, String, Style) {
    if !c.online {
        let since = c
            .disconnected_at
            .and_then(|t| cx.now.duration_since(t).ok())
            .map(|d| format!("off {}", age(d)))
            .unwrap_or_else(|| "offline".into());
        return ("○", since, cx.theme.dim);
    }
    if c.running + c.queued > 0 {
        let q = if c.queued > 0 {
            format!("+{}", c.queued)
        } else {
            String::new()
        };
        return (
            spinner(cx.ticks),
            format!("run {}{q}", c.running),
            cx.theme.accent,
        );
    }
    if c.detached > 0 {
        // Only detached runs: busy, though its slots for ordinary requests are free.
        return (
            spinner(cx.ticks),
            format!("detached {}", c.detached),
            cx.theme.accent,
        );
    }
    ("●", "idle".into(), cx.theme.ok)
}

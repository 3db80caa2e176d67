//! The Screen view: the selected computer's own terminal, cell for cell, in its colours.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::{name_of, pane};
use crate::tui::app::{App, Focus};
use crate::tui::screen::colour;

/// Where the Screen view goes beside the Output pane: (output, screen). The screen takes its
/// real width (plus borders) when the output keeps at least 20 columns, else all of it.
pub fn split(app: &App, area: Rect) -> (Rect, Rect) {
    let w = app.screen.as_ref().map_or(51, |f| f.width) as u16 + 2;
    if area.width >= w + 20 {
        let out = Rect::new(area.x, area.y, area.width - w, area.height);
        let scr = Rect::new(area.x + area.width - w, area.y, w, area.height);
        (out, scr)
    } else {
        (Rect::new(area.x, area.y, 0, 0), area)
    }
}

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let who = app.selected.as_deref().map(name_of).unwrap_or_default();
    let title = if app.attached {
        Line::from(vec![
            Span::styled(
                " ATTACHED ",
                app.theme.warn.add_modifier(Modifier::REVERSED),
            ),
            Span::raw(format!(" {who} · F8 detaches ")),
        ])
    } else {
        Line::from(format!(" Screen {who} · F8 attach · F9 hide "))
    };
    let block = pane(app, title, Focus::Output);
    let inner = block.inner(area);
    block.render(area, buf);
    let Some(f) = &app.screen else {
        let msg = match app.selected.as_deref().and_then(|id| app.computers.iter().find(|c| c.trapos_id == id)) {
            None => "no computer selected".to_owned(),
            Some(c) if !c.serves.iter().any(|s| s == "screen") => {
                "this computer's client has no terminal mirror (it does not serve screen): re-run the installer to update it".to_owned()
            }
            Some(_) => "waiting for the screen…".to_owned(),
        };
        Paragraph::new(msg)
            .style(app.theme.dim)
            .wrap(Wrap { trim: true })
            .render(inner, buf);
        return;
    };
    for (y, row) in f.rows.iter().enumerate() {
        if y as u16 >= inner.height {
            break;
        }
        for (x, ch) in row.text.iter().enumerate() {
            if x as u16 >= inner.width {
                break;
            }
            let digit = |d: Option<&u8>| {
                d.and_then(|d| (char::from(*d)).to_digit(16)).unwrap_or(0) as usize
            };
            let fg = f.palette[digit(row.fg.get(x))];
            let bg = f.palette[row
                .bg
                .get(x)
                .map_or(15, |d| (char::from(*d)).to_digit(16).unwrap_or(15) as usize)];
            let mut style = Style::default()
                .fg(colour(fg, app.truecolor))
                .bg(colour(bg, app.truecolor));
            let cursor = f.blink && f.cursor_x == x as i64 + 1 && f.cursor_y == y as i64 + 1;
            if cursor {
                style = style.add_modifier(Modifier::REVERSED);
            }
            let shown = cc_char(*ch);
            if let Some(cell) = buf.cell_mut((inner.x + x as u16, inner.y + y as u16)) {
                cell.set_char(shown).set_style(style);
            }
        }
    }
}

/// How a CC character shows on the person's terminal: printable Latin-1 as itself, CC's
/// teletext block characters (0x80-0x9F) as a block, control characters as `?`.
pub fn cc_char(c: char) -> char {
    match u32::from(c) {
        0x20..=0x7E | 0xA1..=0xFF => c,
        0xA0 => ' ',
        0x80 => ' ',
        0x81..=0x9F => '▒',
        _ => '?',
    }
}

//! Drawing the Screen view: its title and keys, what it says while there is no frame, and the
//! display's cells in their colours.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{UNKNOWN_STYLE, cc_char, colour};
use crate::tui::component::DrawCx;
use crate::tui::keymap::{Action, Scope, key_for};
use trapdesk_core::session::screen::{Display, ScreenFrame, UNKNOWN_CELL};

/// The title (`heading` with the attached mark when `attached`) and the keys for the bottom
/// border.
pub(super) fn title(
    attached: bool,
    heading: &str,
    has_monitors: bool,
    cx: &DrawCx,
) -> (Line<'static>, String) {
    if attached {
        (
            Line::from(vec![
                Span::styled(" ATTACHED ", cx.theme.warn.add_modifier(Modifier::REVERSED)),
                Span::raw(format!(" {heading} ")),
            ]),
            format!(
                " {} detaches · {} menu ",
                key_for(Scope::Attached, Action::Attach),
                key_for(Scope::Attached, Action::Menu)
            ),
        )
    } else {
        let next = if has_monitors {
            format!("{} next · ", key_for(Scope::Global, Action::NextDisplay))
        } else {
            String::new()
        };
        (
            Line::from(format!(" Screen {heading} ")),
            format!(
                " {next}{} attach · {} hide ",
                key_for(Scope::Global, Action::Attach),
                key_for(Scope::Global, Action::ToggleScreen)
            ),
        )
    }
}

/// What the view says while it has no frame of the display to show.
pub(super) fn waiting(display: &Display, gone: bool, cx: &DrawCx) -> String {
    let serves = |what: &str| {
        cx.selected_computer
            .is_some_and(|c| c.serves.iter().any(|s| s == what))
    };
    match (display, cx.selected_computer) {
        (_, None) => "no computer selected".to_owned(),
        (_, Some(_)) if !serves("screen") => {
            "this computer's client has no terminal mirror (it does not serve screen): re-run the installer to update it".to_owned()
        }
        (Display::Monitor(_), Some(_)) if !serves("peripherals") => {
            "this computer's client keeps no monitor shadows (it does not serve peripherals): re-run the installer to update it".to_owned()
        }
        (Display::Monitor(m), Some(_)) if gone => format!(
            "monitor {} is not attached to this computer now",
            crate::tui::output::printable(m)
        ),
        (Display::Monitor(m), Some(_)) => format!(
            "waiting for monitor {}…",
            crate::tui::output::printable(m)
        ),
        (Display::Terminal, Some(_)) => "waiting for the screen…".to_owned(),
    }
}

/// Paints the frame's cells into `inner`, cut to its size.
pub(super) fn cells(f: &ScreenFrame, inner: Rect, buf: &mut Buffer, truecolor: bool) {
    for (y, row) in f.rows.iter().enumerate() {
        if y as u16 >= inner.height {
            break;
        }
        for (x, ch) in row.text.iter().enumerate() {
            if x as u16 >= inner.width {
                break;
            }
            let Some(cell) = buf.cell_mut((inner.x + x as u16, inner.y + y as u16)) else {
                continue;
            };
            // A cell of a monitor this computer cannot know: marked, never guessed.
            if !row.is_known(x) {
                cell.set_char(UNKNOWN_CELL).set_style(UNKNOWN_STYLE);
                continue;
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
                .fg(colour(fg, truecolor))
                .bg(colour(bg, truecolor));
            let cursor = f.blink && f.cursor_x == x as i64 + 1 && f.cursor_y == y as i64 + 1;
            if cursor {
                style = style.add_modifier(Modifier::REVERSED);
            }
            cell.set_char(cc_char(*ch)).set_style(style);
        }
    }
}

//! The link popup (`s`): the secret and the line that links a computer, the text the empty
//! screen shows before any computer is linked.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::MouseEventKind;
use ratatui::layout::Rect;
use ratatui::widgets::{Clear, Widget};

use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::draw::{centred, link_text, popup_frame};
use crate::tui::keymap::{Action, Scope};

/// Nothing of its own to keep: what it shows is the settings'.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Link;

impl Component for Link {
    /// It reads like the help, so the help's keys close it (its text always fits: they scroll
    /// nothing).
    fn scope(&self) -> Scope {
        Scope::Scroll
    }

    fn act(&mut self, action: Action, _cx: Cx) -> Outcome {
        match action {
            Action::Close => Outcome::Close,
            Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::Top
            | Action::Bottom => Outcome::Done,
            _ => Outcome::Ignored,
        }
    }

    fn mouse(&mut self, kind: MouseEventKind, _cx: Cx) -> Outcome {
        close_on_click(kind)
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let r = centred(area, 92, 10);
        Clear.render(r, buf);
        let frame = popup_frame(cx.theme, " Link a computer ");
        let inner = frame.inner(r);
        frame.render(r, buf);
        link_text(cx.settings, cx.theme, inner, buf);
        None
    }
}

/// A click anywhere closes a popup that only shows or asks.
pub(crate) fn close_on_click(kind: MouseEventKind) -> Outcome {
    match kind {
        MouseEventKind::Down(_) => Outcome::Close,
        _ => Outcome::Done,
    }
}

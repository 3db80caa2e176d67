//! The message log (F2, `m` outside the editor): every message the status line has shown,
//! whole and with its time, newest last. The status line has one row, so a long message is
//! cut there; here it wraps. The log lives on while closed (in
//! [`Popups`](crate::tui::app::Popups)), and is kept to the last [`KEPT`] messages.

use std::collections::VecDeque;
use std::time::SystemTime;

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::MouseEventKind;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::draw::{centred, clock};
use crate::tui::keymap::{Action, Scope, key_for};
use crate::tui::panes::help::{max_scroll, scroll_act, scroll_keys, scroll_mouse, scrolled};
use crate::tui::theme::Theme;

/// Messages kept: a session of hours says a few hundred things at most; more would only
/// cost memory.
pub const KEPT: usize = 500;

/// One message: when, its text, whether it was an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub at: SystemTime,
    pub text: String,
    pub error: bool,
}

#[derive(Debug, Default)]
pub struct Messages {
    pub log: VecDeque<Message>,
    /// First line on screen; `None` follows the newest message (where it opens).
    pub scroll: Option<u16>,
}

/// Where the log goes: most of the screen.
fn rect(area: Rect) -> Rect {
    centred(area, area.width.saturating_sub(8).max(40), area.height)
}

impl Messages {
    /// Keeps a message the status line shows.
    pub fn push(&mut self, at: SystemTime, text: String, error: bool) {
        if self.log.len() >= KEPT {
            self.log.pop_front();
        }
        self.log.push_back(Message { at, text, error });
    }

    /// Opens at the newest message.
    pub fn opened(&mut self) {
        self.scroll = None;
    }

    fn lines(&self, t: &Theme, utc_offset: i32) -> Vec<Line<'static>> {
        if self.log.is_empty() {
            return vec![Line::from(Span::styled("no message yet", t.dim))];
        }
        self.log
            .iter()
            .map(|m| {
                Line::from(vec![
                    Span::styled(format!("{} ", clock(m.at, utc_offset)), t.dim),
                    Span::styled(
                        crate::tui::output::printable(&m.text),
                        if m.error { t.error } else { t.text },
                    ),
                ])
            })
            .collect()
    }

    fn max(&self, t: &Theme, utc_offset: i32, size: Rect) -> u16 {
        let r = rect(size);
        max_scroll(
            &self.lines(t, utc_offset),
            r.width.saturating_sub(2),
            r.height.saturating_sub(2),
        )
    }
}

impl Component for Messages {
    /// It reads like the help: the help's keys scroll and close it.
    fn scope(&self) -> Scope {
        Scope::Scroll
    }

    fn act(&mut self, action: Action, cx: Cx) -> Outcome {
        let max = self.max(cx.theme, cx.utc_offset, cx.size);
        let mut top = self.scroll.unwrap_or(max).min(max);
        let o = scroll_act(&mut top, action, cx.size, max);
        self.scroll = Some(top);
        o
    }

    fn mouse(&mut self, kind: MouseEventKind, cx: Cx) -> Outcome {
        let max = self.max(cx.theme, cx.utc_offset, cx.size);
        let mut top = self.scroll.unwrap_or(max).min(max);
        let o = scroll_mouse(&mut top, kind, max);
        self.scroll = Some(top);
        o
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let close = key_for(Scope::Scroll, Action::Close);
        scrolled(
            cx.theme,
            self.lines(cx.theme, cx.utc_offset),
            rect(area),
            self.scroll.unwrap_or(u16::MAX),
            format!(" Messages ({} · {close} closes) ", self.log.len()),
            |top, max| {
                format!(
                    " Messages ({}; {top}/{max} {} scroll · {close} closes) ",
                    self.log.len(),
                    scroll_keys()
                )
            },
            buf,
        );
        None
    }
}

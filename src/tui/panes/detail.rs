//! A tool call's details (Enter in Activity): who called what, its full arguments and its
//! result. The popup holds its call, which the app refreshes while it is open, so a result
//! that arrives shows at once.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::MouseEventKind;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::help::{max_scroll, scroll_act, scroll_keys, scroll_mouse, scrolled};
use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::draw::{centred, millis, name_of};
use crate::tui::keymap::{Action, Scope, key_for};
use crate::tui::output::printable;
use crate::tui::theme::Theme;
use trapdesk_core::session::ToolCall;

#[derive(Debug, Clone, PartialEq)]
pub struct Detail {
    pub call: ToolCall,
    /// First line on screen; a call's details open at their top.
    pub scroll: u16,
}

/// Where the popup goes on a screen of `area`.
fn rect(area: Rect) -> Rect {
    centred(
        area,
        area.width.saturating_sub(8),
        area.height.saturating_sub(4),
    )
}

impl Detail {
    pub fn new(call: ToolCall) -> Detail {
        Detail { call, scroll: 0 }
    }

    /// The calls pulled from the session: this one's newer state, if it is among them.
    pub fn refresh(&mut self, calls: &[ToolCall]) {
        if let Some(c) = calls.iter().find(|c| c.call_id == self.call.call_id) {
            self.call = c.clone();
        }
    }

    /// Who called what, its arguments and its result. Strings inside the JSON are escaped by
    /// the pretty printer; the rest goes through [`printable`] like output.
    fn lines(&self, t: &Theme) -> Vec<Line<'static>> {
        let c = &self.call;
        let mut lines = vec![Line::from(vec![
            Span::styled(printable(&c.client), t.agent),
            Span::raw(format!(
                " {} {} · {} {}",
                printable(&c.tool),
                c.target.as_deref().map(name_of).unwrap_or_default(),
                c.status.as_str(),
                c.duration_ms.map(millis).unwrap_or_default()
            )),
        ])];
        lines.push(Line::from(Span::styled("arguments", t.title)));
        let pretty = |v: &serde_json::Value| -> Vec<Line<'static>> {
            let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
            text.lines().map(|l| Line::from(printable(l))).collect()
        };
        lines.extend(pretty(&c.args));
        lines.push(Line::from(Span::styled("result", t.title)));
        match c.result.as_deref() {
            Some(text) => match serde_json::from_str(text) {
                Ok(v) => lines.extend(pretty(&v)),
                Err(_) => lines.extend(text.lines().map(|l| Line::from(printable(l)))),
            },
            None => lines.push(Line::from(Span::styled("(still running)", t.dim))),
        }
        lines
    }

    fn max(&self, cx: &Cx) -> u16 {
        let r = rect(cx.size);
        max_scroll(
            &self.lines(cx.theme),
            r.width.saturating_sub(2),
            r.height.saturating_sub(2),
        )
    }
}

impl Component for Detail {
    fn scope(&self) -> Scope {
        Scope::Scroll
    }

    fn act(&mut self, action: Action, cx: Cx) -> Outcome {
        let max = self.max(&cx);
        scroll_act(&mut self.scroll, action, cx.size, max)
    }

    fn mouse(&mut self, kind: MouseEventKind, cx: Cx) -> Outcome {
        let max = self.max(&cx);
        scroll_mouse(&mut self.scroll, kind, max)
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let close = key_for(Scope::Scroll, Action::Close);
        scrolled(
            cx.theme,
            self.lines(cx.theme),
            rect(area),
            self.scroll,
            format!(" Tool call ({close} closes) "),
            |top, max| {
                format!(
                    " Tool call ({top}/{max} {} scroll, {close} closes) ",
                    scroll_keys()
                )
            },
            buf,
        );
        None
    }
}

//! The Activity pane: agents' tool calls as they happen, Enter for one's full arguments and
//! result.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::component::Focus;
use crate::tui::component::Open;
use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::draw::{cut, millis, name_of, spinner, width};
use crate::tui::keymap::{Action, Scope};
use crate::tui::output::printable;
use trapdesk_core::session::{Status, ToolCall};

#[derive(Debug, Default)]
pub struct Activity {
    pub calls: Vec<ToolCall>,
    /// The selected row.
    pub sel: usize,
}

impl Activity {
    pub fn set(&mut self, list: Vec<ToolCall>) {
        let at_end = self.sel + 1 >= self.calls.len();
        // A put's many calls are one entry (`tui/puts.rs`).
        self.calls = crate::tui::puts::fold_calls(list);
        if at_end {
            // Follow new calls unless the person moved up to look at an older one.
            self.sel = self.calls.len().saturating_sub(1);
        }
    }

    /// A wheel turn over the pane.
    pub fn wheel(&mut self, up: bool) {
        self.sel = super::step(self.sel, up, self.calls.len());
    }

    /// A click on line `line` of a pane `height` rows high (the last calls are on screen).
    pub fn click(&mut self, line: usize, height: u16) {
        let first = self.calls.len().saturating_sub(height as usize - 2);
        self.sel = (first + line).min(self.calls.len().saturating_sub(1));
    }
}

impl Component for Activity {
    fn scope(&self) -> Scope {
        Scope::Activity
    }

    fn act(&mut self, action: Action, cx: Cx) -> Outcome {
        let last = self.calls.len().saturating_sub(1);
        let page = super::list_page(cx.size);
        match action {
            Action::Details => {
                return match self.calls.get(self.sel) {
                    Some(c) => Outcome::Open(Open::Detail(Box::new(c.clone()))),
                    None => Outcome::Done,
                };
            }
            a => self.sel = super::moved(self.sel, a, page, last),
        }
        Outcome::Done
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let title = format!(" Agent activity {} ", self.calls.len());
        let block = cx.frame(title);
        let inner = block.inner(area);
        block.render(area, buf);
        if self.calls.is_empty() {
            Paragraph::new(Span::styled("no agent calls yet", cx.theme.dim)).render(inner, buf);
            return None;
        }
        let w = inner.width as usize;
        let h = inner.height as usize;
        let skip = (self.sel + 1).saturating_sub(h);
        let lines: Vec<Line> = self
            .calls
            .iter()
            .enumerate()
            .skip(skip)
            .take(h)
            .map(|(i, c)| {
                let (mark, st) = match c.status {
                    Status::Running => (spinner(cx.ticks), cx.theme.accent),
                    Status::Ok => ("✓", cx.theme.ok),
                    s => ("✗", cx.theme.status(s)),
                };
                let dur = c.duration_ms.map(millis).unwrap_or_default();
                // Everything an agent sends is shown only after `printable`, like computers' output.
                let head = format!(
                    "{mark} {} {} ",
                    cut(&printable(&c.client), 10),
                    printable(&c.tool)
                );
                let target = c.target.as_deref().map(name_of).unwrap_or_default();
                let tail = format!(" {dur}");
                let args = trapdesk_core::session::summary::one_line(&compact_args(&c.args), 60);
                let rest = w.saturating_sub(width(&head) + width(&tail));
                let base = if i == self.sel && cx.focus == Focus::Activity {
                    cx.theme.selection
                } else {
                    Style::default()
                };
                Line::from(vec![
                    Span::styled(head, base.patch(st)),
                    Span::styled(
                        cut(&printable(&format!("{target} {args}")), rest),
                        base.patch(cx.theme.text),
                    ),
                    Span::styled(tail, base.patch(cx.theme.dim)),
                ])
            })
            .collect();
        Paragraph::new(lines).render(inner, buf);
        None
    }
}

/// Arguments without the target (shown already), as `key=value` pairs.
fn compact_args(args: &serde_json::Value) -> String {
    match args.as_object() {
        Some(map) => map
            .iter()
            .filter(|(k, _)| k.as_str() != "computer" && k.as_str() != "target")
            .map(|(k, v)| match v.as_str() {
                Some(s) => format!("{k}={s}"),
                None => format!("{k}={v}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        None => args.to_string(),
    }
}

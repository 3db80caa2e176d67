//! The policy popup (F7): the policy in force as lines, where it came from, and the key that
//! reloads it. Its lines are pulled from the session whenever the policy changes, open or not,
//! so the app keeps it (in [`Popups`](crate::tui::app::Popups)) while it is closed.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::MouseEventKind;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use super::link::close_on_click;
use crate::tui::component::Intent;
use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::draw::{centred, popup_frame};
use crate::tui::keymap::{Action, Scope, key_for};
use crate::tui::output::printable;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Policy {
    /// The policy in force, as lines.
    pub lines: Vec<String>,
    /// Where it came from, as the hub says (`None` until pulled).
    pub source: Option<String>,
}

impl Policy {
    pub fn new(lines: Vec<String>) -> Policy {
        Policy {
            lines,
            source: None,
        }
    }
}

impl Component for Policy {
    fn scope(&self) -> Scope {
        Scope::Policy
    }

    fn act(&mut self, action: Action, _cx: Cx) -> Outcome {
        match action {
            Action::Reload => Outcome::Intents(vec![Intent::ReloadPolicy]),
            Action::Close => Outcome::Close,
            _ => Outcome::Ignored,
        }
    }

    fn mouse(&mut self, kind: MouseEventKind, _cx: Cx) -> Outcome {
        close_on_click(kind)
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let t = cx.theme;
        let mut lines: Vec<Line> = self
            .lines
            .iter()
            .map(|l| Line::from(printable(l)))
            .collect();
        lines.push(Line::from(""));
        // The hub's word when pulled (a file made after the start counts), else the start's.
        let source = self.source.clone().unwrap_or_else(|| {
            cx.settings.config_file.as_ref().map_or_else(
                || "defaults: no config file".to_owned(),
                |p| format!("from {}", p.display()),
            )
        });
        lines.push(Line::from(Span::styled(source, t.dim)));
        lines.push(Line::from(vec![
            Span::styled(key_for(Scope::Policy, Action::Reload), t.key),
            Span::raw(" reloads the file (so does SIGHUP) · "),
            Span::styled(key_for(Scope::Policy, Action::Close), t.key),
            Span::raw(" closes"),
        ]));
        let r = centred(area, area.width.saturating_sub(8), lines.len() as u16 + 2);
        Clear.render(r, buf);
        Paragraph::new(lines)
            .block(popup_frame(t, " Policy "))
            .wrap(Wrap { trim: false })
            .render(r, buf);
        None
    }
}

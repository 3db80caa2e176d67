//! The approval prompt: a call the policy says to `ask` about takes the screen until the
//! person answers `y` (run it), `n` (refuse it) or `a` (allow that agent that kind of action
//! on that computer for the rest of the session). The oldest waiting call is asked first. It
//! shows who asks to do what where, the code or file in full (Lua highlighted), its size, the
//! countdown, and the keys that answer.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::tui::component::Intent;
use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::highlight::Highlight;
use crate::tui::keymap::{Action, Scope, key_for};
use crate::tui::output::printable;
use trapdesk_core::session::{Answer, Approval};

#[derive(Default)]
pub struct Approvals {
    /// Requests waiting for the person's answer; the first is the prompt on screen.
    pub list: Vec<Approval>,
    /// First line of the prompt's code on screen.
    pub scroll: u16,
    /// Its own highlighter, so that showing an agent's code does not churn the editor's cache.
    highlight: Highlight,
}

impl Approvals {
    pub fn set(&mut self, list: Vec<Approval>) {
        let same_first =
            self.list.first().map(|a| &a.request_id) == list.first().map(|a| &a.request_id);
        if !same_first {
            self.scroll = 0;
        }
        self.list = list;
    }

    /// The prompt on screen, if any.
    pub fn first(&self) -> Option<&Approval> {
        self.list.first()
    }

    fn body(&self, a: &Approval, cx: &DrawCx) -> Vec<Line<'static>> {
        let t = &cx.theme;
        let left = a.deadline.saturating_duration_since(cx.now_i).as_secs();
        let mut lines = vec![
            Line::from(vec![
                Span::styled(printable(a.origin.name()), t.agent),
                Span::raw(format!(" wants {} on ", printable(a.kind.as_str()))),
                Span::styled(printable(&a.trapos_id), t.title),
                Span::raw(format!(
                    " · {} byte{} · {left} s left",
                    a.size,
                    if a.size == 1 { "" } else { "s" }
                )),
            ]),
            Line::from(Span::styled(printable(&a.because), t.dim)),
            Line::from(""),
        ];
        let text: Vec<String> = a.detail.split('\n').map(printable).collect();
        if a.kind == trapdesk_proto::protocol::Kind::ExecLua {
            for spans in self.highlight.lines(&text, 0, text.len()) {
                lines.push(Line::from(spans));
            }
        } else {
            lines.extend(text.into_iter().map(Line::from));
        }
        lines
    }
}

/// Modal: nothing typed for the editor can answer it by accident; only y, n, a, scrolling and
/// Ctrl-C (quit, which passes) act.
impl Component for Approvals {
    fn scope(&self) -> Scope {
        Scope::Approval
    }

    fn act(&mut self, action: Action, _cx: Cx) -> Outcome {
        let Some(a) = self.first() else {
            return Outcome::Ignored;
        };
        let answer = |ans| Outcome::Intents(vec![Intent::Answer(a.request_id.clone(), ans)]);
        match action {
            Action::Yes => answer(Answer::Yes),
            Action::No => answer(Answer::No),
            Action::Always => answer(Answer::Always),
            Action::Up => {
                self.scroll = self.scroll.saturating_sub(1);
                Outcome::Done
            }
            Action::Down => {
                self.scroll = self.scroll.saturating_add(1);
                Outcome::Done
            }
            Action::PageUp => {
                self.scroll = self.scroll.saturating_sub(10);
                Outcome::Done
            }
            Action::PageDown => {
                self.scroll = self.scroll.saturating_add(10);
                Outcome::Done
            }
            _ => Outcome::Ignored,
        }
    }

    fn input(&mut self, _key: KeyEvent, _cx: Cx) -> Outcome {
        let key = |a| key_for(Scope::Approval, a);
        Outcome::Notify(
            format!(
                "an agent's call waits for you: {} runs it, {} refuses it, {} allows this agent this on this computer for the session",
                key(Action::Yes),
                key(Action::No),
                key(Action::Always)
            ),
            false,
        )
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let a = self.first()?;
        let t = &cx.theme;
        let w = area.width.saturating_sub(6).max(20);
        let h = area.height.saturating_sub(4).max(8);
        let r = Rect::new(
            area.x + (area.width.saturating_sub(w)) / 2,
            area.y + (area.height.saturating_sub(h)) / 2,
            w.min(area.width),
            h.min(area.height),
        );
        Clear.render(r, buf);
        let more = self.list.len().saturating_sub(1);
        let title = if more > 0 {
            format!(" Approve? ({more} more waiting) ")
        } else {
            " Approve? ".to_owned()
        };
        let key = |a| key_for(Scope::Approval, a);
        let keys = Line::from(vec![
            Span::styled(format!(" {} ", key(Action::Yes)), t.key),
            Span::raw("run it  "),
            Span::styled(format!(" {} ", key(Action::No)), t.key),
            Span::raw("refuse  "),
            Span::styled(format!(" {} ", key(Action::Always)), t.key),
            Span::raw(format!(
                "allow {} {} on {} for this session  ",
                a.origin.name(),
                a.action,
                a.trapos_id
            )),
            Span::styled(format!("{}{}", key(Action::Up), key(Action::Down)), t.key),
            Span::raw(" scroll"),
        ]);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.warn)
            .title(Span::styled(title, t.title))
            .title_bottom(keys);
        Paragraph::new(self.body(a, cx))
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((self.scroll, 0))
            .render(r, buf);
        None
    }
}

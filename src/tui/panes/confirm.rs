//! The two questions: quit while requests are pending, and run on several computers. Each
//! holds what it asks about, and any key it has a row for answers (and closes) it.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::MouseEventKind;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use super::link::close_on_click;
use crate::tui::component::Intent;
use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::draw::{centred, cut, name_of, popup_frame};
use crate::tui::keymap::{Action, Scope, first_keys, key_for};
use crate::tui::output::printable;
use trapdesk_proto::protocol::RequestBody;

/// Quit while this many requests are pending?
#[derive(Debug, Clone, PartialEq)]
pub struct ConfirmQuit {
    pub pending: usize,
}

impl Component for ConfirmQuit {
    fn scope(&self) -> Scope {
        Scope::ConfirmQuit
    }

    fn act(&mut self, action: Action, _cx: Cx) -> Outcome {
        match action {
            Action::Yes => Outcome::Quit,
            _ => Outcome::Close,
        }
    }

    fn mouse(&mut self, kind: MouseEventKind, _cx: Cx) -> Outcome {
        close_on_click(kind)
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let t = cx.theme;
        let r = centred(area, 50, 5);
        Clear.render(r, buf);
        // The count is kept current while the question is open (a call refused meanwhile).
        let what = match self.pending {
            0 => "Nothing is pending any more.".to_owned(),
            n => format!(
                "{n} request(s) still pending; they will be cancelled (detached runs go on)."
            ),
        };
        let lines = vec![
            Line::from(what),
            Line::from(vec![
                Span::raw("Quit? "),
                Span::styled(key_for(Scope::ConfirmQuit, Action::Yes), t.key),
                Span::raw(" / "),
                Span::styled(key_for(Scope::ConfirmQuit, Action::No), t.key),
            ]),
        ];
        Paragraph::new(lines)
            .block(popup_frame(t, " Quit "))
            .wrap(Wrap { trim: true })
            .render(r, buf);
        None
    }
}

/// A run on several computers, waiting for its answer: the request, and who the targets are
/// ("every online computer matching miner*").
#[derive(Debug, Clone, PartialEq)]
pub struct ConfirmRun {
    pub intent: Box<Intent>,
    pub who: String,
}

impl Component for ConfirmRun {
    fn scope(&self) -> Scope {
        Scope::ConfirmRun
    }

    fn act(&mut self, action: Action, _cx: Cx) -> Outcome {
        match action {
            Action::Yes => Outcome::Many(vec![
                Outcome::Close,
                Outcome::Confirmed((*self.intent).clone()),
            ]),
            Action::No => Outcome::Many(vec![
                Outcome::Close,
                Outcome::Notify("not run".into(), false),
            ]),
            _ => Outcome::Close,
        }
    }

    fn mouse(&mut self, kind: MouseEventKind, _cx: Cx) -> Outcome {
        close_on_click(kind)
    }

    /// "Run exec-lua on 12 computers?", who they are, the first few names, and the keys.
    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let t = cx.theme;
        let Intent::Start { targets, body, .. } = &*self.intent else {
            return None;
        };
        let r = centred(area, 72, 8);
        Clear.render(r, buf);
        let inner = r.width.saturating_sub(2) as usize;
        let what = match body {
            RequestBody::ExecLua(e) => trapdesk_core::session::summary::one_line(&e.code, 60),
            RequestBody::RunFile(r) => trapdesk_core::session::summary::one_line(&r.path, 60),
            _ => String::new(),
        };
        let kind = body.kind();
        let names: Vec<String> = targets.iter().take(6).map(|t| name_of(t)).collect();
        let more = targets.len().saturating_sub(names.len());
        let mut list = names.join(", ");
        if more > 0 {
            list.push_str(&format!(" and {more} more"));
        }
        let mut keys = Vec::new();
        // The first two keys of each answer: `y / Enter`, `n / Esc`.
        for (action, what) in [(Action::Yes, " runs on each · "), (Action::No, " does not")] {
            for (i, key) in first_keys(Scope::ConfirmRun, action, 2)
                .into_iter()
                .enumerate()
            {
                if i > 0 {
                    keys.push(Span::raw(" / "));
                }
                keys.push(Span::styled(key, t.key));
            }
            keys.push(Span::raw(what));
        }
        let lines = vec![
            Line::from(vec![
                Span::raw(format!("Run {kind} on ")),
                Span::styled(format!("{} computers", targets.len()), t.warn),
                Span::raw("?"),
            ]),
            Line::from(Span::styled(cut(&printable(&self.who), inner), t.accent)),
            Line::from(Span::styled(cut(&printable(&what), inner), t.text)),
            Line::from(Span::styled(cut(&list, inner), t.dim)),
            Line::from(""),
            Line::from(keys),
        ];
        Paragraph::new(lines)
            .block(popup_frame(t, " Run on several computers "))
            .render(r, buf);
        None
    }
}

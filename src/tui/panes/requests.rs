//! The Requests pane: every pending request, with a live countdown (or how long it has run),
//! and `c` to cancel the selected one.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::component::{Focus, Intent};
use crate::tui::draw::{cut, millis, name_of, spinner, width};
use crate::tui::keymap::{Action, Scope};
use crate::tui::output::printable;
use trapdesk_core::session::{Origin, PendingInfo};

#[derive(Debug, Default)]
pub struct Requests {
    pub pending: Vec<PendingInfo>,
    /// The selected row.
    pub sel: usize,
}

impl Requests {
    pub fn set(&mut self, list: Vec<PendingInfo>) {
        self.pending = list;
        self.sel = self.sel.min(self.pending.len().saturating_sub(1));
    }

    /// The pending requests quitting would cancel that are worth a question: every one but a
    /// ping (the Device pane's status, a probe's), whose loss costs nothing. A quit pressed
    /// while a status ping was in flight asked, and then said nothing was pending.
    pub fn worth_asking(&self) -> usize {
        self.pending
            .iter()
            .filter(|r| r.kind != trapdesk_proto::protocol::Kind::Ping)
            .count()
    }

    /// What the status line says when a request in the pane ends while it still says the
    /// request is being cancelled (`said`): how it ended. `None` when it says something else.
    pub fn cancel_ended(
        &self,
        request_id: &str,
        status: trapdesk_core::session::Status,
        said: Option<&str>,
    ) -> Option<String> {
        let p = self.pending.iter().find(|p| p.request_id == request_id)?;
        let what = what(p);
        if said? != format!("cancelling {what}") {
            return None;
        }
        Some(if status == trapdesk_core::session::Status::Cancelled {
            format!("cancelled {what}")
        } else {
            format!(
                "{what} ended before the cancel reached it: {}",
                status.as_str()
            )
        })
    }

    /// A wheel turn over the pane.
    pub fn wheel(&mut self, up: bool) {
        self.sel = super::step(self.sel, up, self.pending.len());
    }

    /// A click on line `line` of the pane.
    pub fn click(&mut self, line: usize) {
        self.sel = line.min(self.pending.len().saturating_sub(1));
    }
}

/// A request in the pane's words (what, where): `exec-lua dig() on 7:miner`.
pub fn what(p: &PendingInfo) -> String {
    format!(
        "{} {} on {}",
        p.kind,
        trapdesk_core::session::summary::one_line(&p.summary, 40),
        crate::tui::draw::name_of(&p.trapos_id)
    )
}

impl Component for Requests {
    fn scope(&self) -> Scope {
        Scope::Requests
    }

    fn act(&mut self, action: Action, cx: Cx) -> Outcome {
        let last = self.pending.len().saturating_sub(1);
        let page = super::list_page(cx.size);
        match action {
            Action::Cancel => {
                return match self.pending.get(self.sel) {
                    // Said in the words the pane shows (what, where), never by the request's
                    // internal id, which the person sees nowhere else.
                    Some(p) => Outcome::Many(vec![
                        Outcome::Notify(format!("cancelling {}", what(p)), false),
                        Outcome::Intents(vec![Intent::Cancel(p.request_id.clone())]),
                    ]),
                    None => Outcome::Done,
                };
            }
            a => self.sel = super::moved(self.sel, a, page, last),
        }
        Outcome::Done
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let title = format!(" Requests {} ", self.pending.len());
        let block = cx.frame(title);
        let inner = block.inner(area);
        block.render(area, buf);
        if self.pending.is_empty() {
            Paragraph::new(Span::styled("none pending", cx.theme.dim)).render(inner, buf);
            return None;
        }
        let w = inner.width as usize;
        let h = inner.height as usize;
        let skip = (self.sel + 1).saturating_sub(h);
        let lines: Vec<Line> = self
            .pending
            .iter()
            .enumerate()
            .skip(skip)
            .take(h)
            .map(|(i, p)| {
                let elapsed = cx.now_i.saturating_duration_since(p.started).as_millis() as u64;
                let left = p.deadline.saturating_duration_since(cx.now_i).as_secs();
                let who_style = match p.origin {
                    Origin::Person | Origin::Cli | Origin::Sync | Origin::Host => cx.theme.person,
                    Origin::Agent(_) => cx.theme.agent,
                };
                let state = if p.cancel_requested {
                    "cancelling"
                } else if p.awaiting_approval {
                    "awaiting approval"
                } else if !p.sent {
                    "queued"
                } else {
                    ""
                };
                let timing = if p.no_deadline {
                    // A person's run without a deadline has no time left to show; how long it
                    // has run follows, as on every row.
                    format!("{} ", spinner(cx.ticks))
                } else {
                    format!("{} ⏱{left:>2}s ", spinner(cx.ticks))
                };
                let head = format!(
                    "{} {} {} ",
                    cut(&printable(p.origin.label()), 10),
                    cut(&name_of(&p.trapos_id), 12),
                    millis(elapsed)
                );
                let state = if state.is_empty() {
                    String::new()
                } else {
                    format!("{state} ")
                };
                let rest = w.saturating_sub(width(&head) + width(&timing));
                let base = if i == self.sel && cx.focus == Focus::Requests {
                    cx.theme.selection
                } else {
                    Style::default()
                };
                let rest = rest.saturating_sub(width(&state));
                Line::from(vec![
                    Span::styled(timing, base.patch(cx.theme.warn)),
                    Span::styled(head, base.patch(who_style)),
                    Span::styled(state, base.patch(cx.theme.warn)),
                    Span::styled(
                        cut(&printable(&format!("{} {}", p.kind, p.summary)), rest),
                        base.patch(cx.theme.text),
                    ),
                ])
            })
            .collect();
        Paragraph::new(lines).render(inner, buf);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trapdesk_core::session::Origin;
    use trapdesk_proto::protocol::Kind;

    fn pending(kind: Kind) -> PendingInfo {
        PendingInfo {
            request_id: "r".into(),
            trapos_id: "1:a".into(),
            origin: Origin::Person,
            kind,
            summary: String::new(),
            started_at: std::time::SystemTime::UNIX_EPOCH,
            started: tokio::time::Instant::now(),
            deadline: tokio::time::Instant::now(),
            timeout_ms: 0,
            no_deadline: false,
            sent: true,
            cancel_requested: false,
            awaiting_approval: false,
        }
    }

    #[test]
    fn a_ping_in_flight_is_not_worth_a_quit_question() {
        let mut r = Requests::default();
        r.set(vec![pending(Kind::Ping)]);
        assert_eq!(r.worth_asking(), 0);
        r.set(vec![pending(Kind::Ping), pending(Kind::ExecLua)]);
        assert_eq!(r.worth_asking(), 1);
    }
}

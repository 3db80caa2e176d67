//! The approval prompt: a call the policy says to `ask` about takes the screen until the
//! person answers `y` (run it), `n` (refuse it) or `a` (allow that agent that kind of action
//! on that computer for the rest of the session). The oldest waiting call is asked first.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Intent, Popup};
use crate::session::{Answer, Approval};

impl App {
    pub fn set_approvals(&mut self, list: Vec<Approval>) {
        let same_first =
            self.approvals.first().map(|a| &a.request_id) == list.first().map(|a| &a.request_id);
        if !same_first {
            self.approval_scroll = 0;
        }
        self.approvals = list;
    }

    /// The prompt on screen, if any.
    pub fn approval(&self) -> Option<&Approval> {
        self.approvals.first()
    }

    /// Keys while a prompt is on screen: it is modal, so nothing typed for the editor can
    /// answer it by accident; only y, n, a, scrolling and Ctrl-C (quit) act.
    pub(crate) fn approval_key(&mut self, key: KeyEvent) -> Option<Vec<Intent>> {
        let a = self.approval()?.clone();
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let answer = |ans| Some(vec![Intent::Answer(a.request_id.clone(), ans)]);
        match key.code {
            KeyCode::Char('c') if ctrl => None,
            KeyCode::Char('y' | 'Y') => answer(Answer::Yes),
            KeyCode::Char('n' | 'N') => answer(Answer::No),
            KeyCode::Char('a' | 'A') => answer(Answer::Always),
            KeyCode::Up | KeyCode::Char('k') => {
                self.approval_scroll = self.approval_scroll.saturating_sub(1);
                Some(Vec::new())
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.approval_scroll = self.approval_scroll.saturating_add(1);
                Some(Vec::new())
            }
            KeyCode::PageUp => {
                self.approval_scroll = self.approval_scroll.saturating_sub(10);
                Some(Vec::new())
            }
            KeyCode::PageDown | KeyCode::Char(' ') => {
                self.approval_scroll = self.approval_scroll.saturating_add(10);
                Some(Vec::new())
            }
            _ => {
                self.notify(
                    "an agent's call waits for you: y runs it, n refuses it, a allows this agent this on this computer for the session",
                    false,
                );
                Some(Vec::new())
            }
        }
    }

    /// Keys of the policy popup (F7): `r` reloads the file.
    pub(crate) fn policy_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        match key.code {
            KeyCode::Char('r' | 'R') => vec![Intent::ReloadPolicy],
            KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') | KeyCode::F(7) => {
                self.popup = None;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// F7 opens the policy.
    pub(crate) fn open_policy(&mut self) {
        self.popup = Some(Popup::Policy);
    }
}

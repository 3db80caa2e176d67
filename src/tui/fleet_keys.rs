//! Keys of the Computers pane: moving over computers and group headers, marking, the filter
//! line (`/`), marking everything the filter shows (`a`), grouping (`z`), collapsing groups,
//! and the confirmation a run on several computers waits for.

use std::collections::HashSet;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Focus, Intent, Popup, Prompt, PromptKind};
use super::fleet::Row;

impl App {
    pub(crate) fn computers_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        let i = self.selected_index();
        let last = self.fleet.rows.len().saturating_sub(1);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.select_index(i.saturating_sub(1)),
            KeyCode::Down | KeyCode::Char('j') => self.select_index((i + 1).min(last)),
            KeyCode::Home | KeyCode::Char('g') => self.select_index(0),
            KeyCode::End | KeyCode::Char('G') => self.select_index(last),
            KeyCode::PageUp => self.select_index(i.saturating_sub(self.list_page())),
            KeyCode::PageDown => self.select_index((i + self.list_page()).min(last)),
            KeyCode::Char(' ') => {
                if let Some(g) = self.fleet.group_at(i) {
                    let ids = self.online_ids(g.members.iter().copied());
                    self.toggle_marks(ids);
                } else if let Some(id) = self.selected.clone() {
                    if !self.marked.remove(&id) {
                        self.marked.insert(id);
                    }
                } else {
                    return Vec::new(); // "All computers" is not a computer to mark.
                }
                self.select_index((i + 1).min(last));
            }
            KeyCode::Enter if self.fleet.group_at(i).is_some() => self.fold(i, None),
            KeyCode::Left | KeyCode::Char('h') => self.fold(i, Some(true)),
            KeyCode::Right | KeyCode::Char('l') => self.fold(i, Some(false)),
            KeyCode::Enter => self.focus = Focus::Editor,
            KeyCode::Char('/') => {
                self.popup = Some(Popup::Prompt(Prompt {
                    kind: PromptKind::Filter,
                    text: self.fleet.filter.clone(),
                    hint: None,
                }));
            }
            KeyCode::Char('a') => self.mark_shown(),
            KeyCode::Char('z') => {
                self.fleet.grouped = !self.fleet.grouped;
                self.fleet.cursor_group = None;
                self.refresh_fleet();
                let how = if self.fleet.grouped {
                    "grouped by label prefix (Enter or ← → folds a group)"
                } else {
                    "not grouped"
                };
                self.notify(format!("computers {how}; z toggles"), false);
            }
            _ => {}
        }
        Vec::new()
    }

    /// Collapses (`Some(true)`), expands (`Some(false)`) or toggles (`None`) the group of the
    /// cursor's row, and leaves the cursor on its header.
    fn fold(&mut self, row: usize, collapse: Option<bool>) {
        if !self.fleet.grouped {
            return;
        }
        let name = match self.fleet.group_at(row) {
            Some(g) => g.name.clone(),
            None => match self.fleet.rows.get(row) {
                Some(Row::Computer(c)) => match self.computers.get(*c) {
                    Some(c) => super::fleet::group_of(c.label.as_deref()),
                    None => return,
                },
                _ => return,
            },
        };
        let collapse = collapse.unwrap_or(!self.fleet.collapsed.contains(&name));
        if collapse {
            self.fleet.collapsed.insert(name.clone());
        } else {
            self.fleet.collapsed.remove(&name);
        }
        self.refresh_fleet();
        if let Some(r) = self.fleet.group_row(&name) {
            self.select_index(r);
        }
    }

    /// The traposIds of the online computers among these indices.
    fn online_ids(&self, indices: impl Iterator<Item = usize>) -> Vec<String> {
        indices
            .filter_map(|i| self.computers.get(i))
            .filter(|c| c.online)
            .map(|c| c.trapos_id.clone())
            .collect()
    }

    /// Marks all of `ids`, or unmarks them when all are marked already.
    fn toggle_marks(&mut self, ids: Vec<String>) -> bool {
        let all = ids.iter().all(|id| self.marked.contains(id));
        for id in ids {
            if all {
                self.marked.remove(&id);
            } else {
                self.marked.insert(id);
            }
        }
        !all
    }

    /// `a`: marks every online computer the filter shows (every one without a filter), so that
    /// F5 and F6 broadcast to the filtered set; again unmarks them.
    fn mark_shown(&mut self) {
        let shown: Vec<usize> = (0..self.computers.len())
            .filter(|&i| self.computers.get(i).is_some_and(|c| self.fleet.shows(c)))
            .collect();
        let ids = self.online_ids(shown.into_iter());
        let n = ids.len();
        if n == 0 {
            self.notify("no online computer matches the filter", true);
            return;
        }
        let what = self.shown_words();
        if self.toggle_marks(ids) {
            self.notify(
                format!(
                    "marked {n} ({what}); F5 / F6 run on all {} marked",
                    self.marked.len()
                ),
                false,
            );
        } else {
            self.notify(format!("unmarked {n} ({what})"), false);
        }
    }

    /// "every online computer matching miner*", or "every online computer".
    fn shown_words(&self) -> String {
        if self.fleet.filtering() {
            format!(
                "every online computer matching {}",
                self.fleet.filter.trim()
            )
        } else {
            "every online computer".to_owned()
        }
    }

    /// A key while the filter line is open: typing filters at once, Enter keeps the filter,
    /// Esc clears it.
    pub(crate) fn filter_key(&mut self, mut p: Prompt, key: KeyEvent) -> Vec<Intent> {
        match key.code {
            KeyCode::Esc => {
                self.popup = None;
                self.set_filter("");
                return Vec::new();
            }
            KeyCode::Enter => {
                self.popup = None;
                let (n, m) = (self.fleet.shown.total, self.fleet.counts.total);
                if self.fleet.filtering() {
                    self.notify(
                        format!("{n} of {m} shown; a marks them, Esc (in Computers) clears"),
                        false,
                    );
                }
                return Vec::new();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => p.text.push(c),
            KeyCode::Backspace => {
                p.text.pop();
            }
            _ => {}
        }
        self.set_filter(&p.text.clone());
        self.popup = Some(Popup::Prompt(p));
        Vec::new()
    }

    /// Sets the Computers pane's filter (empty clears it) and keeps the cursor on the selected
    /// computer when the filter still shows it.
    pub fn set_filter(&mut self, text: &str) {
        self.fleet.set_filter(text);
        self.refresh_fleet();
    }

    /// Starts `intent` now when it goes to one computer; one for several waits for `y` in a
    /// popup that says how many and which.
    pub(crate) fn run_or_confirm(&mut self, intent: Intent) -> Vec<Intent> {
        let Intent::Start { targets, .. } = &intent else {
            return vec![intent];
        };
        if targets.len() <= 1 {
            return vec![intent];
        }
        let who = self.describe_targets(targets);
        self.popup = Some(Popup::ConfirmRun(Box::new(intent), who));
        Vec::new()
    }

    /// Who a broadcast goes to, in words: the filtered set when that is what is marked.
    fn describe_targets(&self, targets: &[String]) -> String {
        let set: HashSet<&str> = targets.iter().map(String::as_str).collect();
        let shown_online: Vec<&str> = self
            .computers
            .iter()
            .filter(|c| c.online && self.fleet.shows(c))
            .map(|c| c.trapos_id.as_str())
            .collect();
        let hidden = targets.len() - shown_online.iter().filter(|t| set.contains(*t)).count();
        if hidden == 0 && shown_online.len() == targets.len() {
            self.shown_words()
        } else if hidden > 0 && self.fleet.filtering() {
            format!(
                "marked computers; {hidden} of them not shown by the filter {}",
                self.fleet.filter.trim()
            )
        } else {
            "marked computers".to_owned()
        }
    }

    /// A key while a run on several computers waits for confirmation.
    pub(crate) fn confirm_run_key(&mut self, intent: Intent, key: KeyEvent) -> Vec<Intent> {
        match key.code {
            KeyCode::Char('y' | 'Y') | KeyCode::Enter => {
                self.popup = None;
                if let Intent::Start { targets, .. } = &intent {
                    self.show_all_after_broadcast(targets.len());
                }
                vec![intent]
            }
            KeyCode::Char('n' | 'N' | 'q') | KeyCode::Esc => {
                self.popup = None;
                self.notify("not run", false);
                Vec::new()
            }
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.popup = None;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }
}

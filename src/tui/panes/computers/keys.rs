//! Keys of the Computers pane: moving over computers and group headers, marking, the filter
//! line (`/`), marking everything the filter shows (`a`), grouping (`z`), collapsing groups,
//! and the words a run on several computers is confirmed with.

use std::collections::HashSet;

use super::{Computers, Row, group_of};
use crate::tui::component::PromptKind;
use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::component::{Focus, Open};
use crate::tui::keymap::{Action, Scope, key_for};
use crate::tui::panes::list_page;

impl Component for Computers {
    fn scope(&self) -> Scope {
        Scope::Computers
    }

    fn act(&mut self, action: Action, cx: Cx) -> Outcome {
        let i = self.selected_index(cx.selected);
        let last = self.rows.len().saturating_sub(1);
        let page = list_page(cx.size);
        match action {
            Action::Up => self.select_index(i.saturating_sub(1)),
            Action::Down => self.select_index((i + 1).min(last)),
            Action::Top => self.select_index(0),
            Action::Bottom => self.select_index(last),
            Action::PageUp => self.select_index(i.saturating_sub(page)),
            Action::PageDown => self.select_index((i + page).min(last)),
            Action::Mark => self.mark(i, cx.selected),
            Action::Fold if self.group_at(i).is_some() => self.fold(i, None),
            Action::Fold => Outcome::Focus(Focus::Editor),
            Action::Left => self.fold(i, Some(true)),
            Action::Right => self.fold(i, Some(false)),
            // Opening the filter again edits the one in force.
            Action::Filter => Outcome::Open(Open::Prompt(PromptKind::Filter, self.filter.clone())),
            Action::MarkShown => self.mark_shown(),
            Action::Group => self.toggle_grouping(),
            // In Computers, Esc first clears the filter; the next one leaves the pane.
            Action::ClearFilter if self.filtering() => {
                self.set_filter("");
                Outcome::Done
            }
            _ => Outcome::Ignored,
        }
    }

    fn draw(
        &self,
        area: ratatui::layout::Rect,
        buf: &mut ratatui::buffer::Buffer,
        cx: &DrawCx,
    ) -> Option<(u16, u16)> {
        super::draw::render(self, area, buf, cx);
        None
    }
}

impl Computers {
    /// Space: marks or unmarks the computer on row `i` (on a group header, its online
    /// computers), then moves down.
    fn mark(&mut self, i: usize, selected: Option<&str>) -> Outcome {
        if let Some(g) = self.group_at(i) {
            let ids = self.online_ids(g.members.iter().copied());
            self.toggle_marks(ids);
        } else if let Some(id) = selected {
            if !self.marked.remove(id) {
                self.marked.insert(id.to_owned());
            }
        } else {
            return Outcome::Done; // "All computers" is not a computer to mark.
        }
        let last = self.rows.len().saturating_sub(1);
        self.select_index((i + 1).min(last))
    }

    /// `z`: groups by label prefix, or back to one list.
    fn toggle_grouping(&mut self) -> Outcome {
        self.grouped = !self.grouped;
        self.cursor_group = None;
        self.rebuild();
        let key = |a| key_for(Scope::Computers, a);
        let how = if self.grouped {
            format!(
                "grouped by label prefix ({} or {} {} folds a group)",
                key(Action::Fold),
                key(Action::Left),
                key(Action::Right)
            )
        } else {
            "not grouped".to_owned()
        };
        Outcome::Notify(
            format!("computers {how}; {} toggles", key(Action::Group)),
            false,
        )
    }

    /// Collapses (`Some(true)`), expands (`Some(false)`) or toggles (`None`) the group of the
    /// cursor's row, and leaves the cursor on its header.
    fn fold(&mut self, row: usize, collapse: Option<bool>) -> Outcome {
        if !self.grouped {
            return Outcome::Done;
        }
        let name = match self.group_at(row) {
            Some(g) => g.name.clone(),
            None => match self.rows.get(row) {
                Some(Row::Computer(c)) => match self.list.get(*c) {
                    Some(c) => group_of(c.label.as_deref()),
                    None => return Outcome::Done,
                },
                _ => return Outcome::Done,
            },
        };
        let collapse = collapse.unwrap_or(!self.collapsed.contains(&name));
        if collapse {
            self.collapsed.insert(name.clone());
        } else {
            self.collapsed.remove(&name);
        }
        self.rebuild();
        match self.group_row(&name) {
            Some(r) => self.select_index(r),
            None => Outcome::Done,
        }
    }

    /// The traposIds of the online computers among these indices.
    fn online_ids(&self, indices: impl Iterator<Item = usize>) -> Vec<String> {
        indices
            .filter_map(|i| self.list.get(i))
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
    fn mark_shown(&mut self) -> Outcome {
        let shown: Vec<usize> = (0..self.list.len())
            .filter(|&i| self.list.get(i).is_some_and(|c| self.shows(c)))
            .collect();
        let ids = self.online_ids(shown.into_iter());
        let n = ids.len();
        if n == 0 {
            return Outcome::Notify("no online computer matches the filter".into(), true);
        }
        let what = self.shown_words();
        let text = if self.toggle_marks(ids) {
            format!(
                "marked {n} ({what}); {} / {} run on all {} marked",
                key_for(Scope::Global, Action::Run),
                key_for(Scope::Global, Action::RunFile),
                self.marked.len()
            )
        } else {
            format!("unmarked {n} ({what})")
        };
        Outcome::Notify(text, false)
    }

    /// "every online computer matching miner*", or "every online computer".
    fn shown_words(&self) -> String {
        if self.filtering() {
            format!("every online computer matching {}", self.filter.trim())
        } else {
            "every online computer".to_owned()
        }
    }

    /// Sets the filter (empty clears it); the cursor stays on the selected computer when the
    /// filter still shows it.
    pub fn set_filter(&mut self, text: &str) {
        self.set_filter_text(text);
        self.rebuild();
    }

    /// What Enter on the filter line says: how many it shows.
    pub fn filter_kept(&self) -> Outcome {
        if !self.filtering() {
            return Outcome::Done;
        }
        let (n, m) = (self.shown.total, self.counts.total);
        Outcome::Notify(
            format!(
                "{n} of {m} shown; {} marks them, {} (in Computers) clears",
                key_for(Scope::Computers, Action::MarkShown),
                key_for(Scope::Computers, Action::ClearFilter)
            ),
            false,
        )
    }

    /// Who a broadcast goes to, in words: the filtered set when that is what is marked.
    pub fn describe_targets(&self, targets: &[String]) -> String {
        let set: HashSet<&str> = targets.iter().map(String::as_str).collect();
        let shown_online: Vec<&str> = self
            .list
            .iter()
            .filter(|c| c.online && self.shows(c))
            .map(|c| c.trapos_id.as_str())
            .collect();
        let hidden = targets.len() - shown_online.iter().filter(|t| set.contains(*t)).count();
        if hidden == 0 && shown_online.len() == targets.len() {
            self.shown_words()
        } else if hidden > 0 && self.filtering() {
            format!(
                "marked computers; {hidden} of them not shown by the filter {}",
                self.filter.trim()
            )
        } else {
            "marked computers".to_owned()
        }
    }

    /// A wheel turn over the pane.
    pub fn wheel(&mut self, up: bool, selected: Option<&str>) -> Outcome {
        let i = self.selected_index(selected);
        let n = if up {
            i.saturating_sub(1)
        } else {
            (i + 1).min(self.rows.len().saturating_sub(1))
        };
        self.select_index(n)
    }

    /// A click on line `line` of the pane (`None` when it is past the last row).
    pub fn click(&mut self, line: usize) -> Option<Outcome> {
        let row = self.top.get() + line;
        (row < self.rows.len()).then(|| self.select_index(row))
    }
}

//! The Computers pane: the list of computers, the filter (a glob on traposId and label, the
//! same [`Glob`] that `probe-computers` and `exec-lua-many` use), grouping by label prefix, the
//! online / busy / offline counts, the marks, and the rows the pane shows. Its keys are in
//! `keys.rs`, its drawing in `draw.rs` (functions over the pane, which reads it and changes
//! nothing but the remembered top row).
//!
//! The rows are computed when the computers, the filter, the grouping or a group's collapse
//! change, never per frame: with a thousand computers the pane draws only the rows on screen,
//! and finds the selection by a map lookup instead of a walk.

mod draw;
mod keys;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::tui::component::Outcome;
use trapdesk_core::session::ComputerInfo;
use trapdesk_core::session::fleet::matches_computer;
use trapdesk_proto::glob::Glob;

/// One row of the Computers pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// "All computers": everyone's output.
    All,
    /// A group header (index into [`Computers::groups`]).
    Group(usize),
    /// A computer (index into [`Computers::list`]).
    Computer(usize),
}

/// Online, busy and offline computers. `busy` are online computers running or queueing
/// something, so `online + offline == total` and `busy <= online`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: usize,
    pub online: usize,
    pub busy: usize,
    pub offline: usize,
}

impl Counts {
    fn add(&mut self, c: &ComputerInfo) {
        self.total += 1;
        if c.online {
            self.online += 1;
            if c.running + c.queued > 0 {
                self.busy += 1;
            }
        } else {
            self.offline += 1;
        }
    }
}

/// A group of computers whose labels share a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    /// Of the computers in the group that the filter shows.
    pub counts: Counts,
    pub collapsed: bool,
    /// Indices into [`Computers::list`], in its order.
    pub members: Vec<usize>,
}

/// The group a computer falls in: its label up to the last `-` or `_` (`miner-north-3` →
/// `miner-north`), else without trailing digits (`miner12` → `miner`), else the whole label;
/// computers without a label go together under `(no label)`.
pub fn group_of(label: Option<&str>) -> String {
    let Some(label) = label.filter(|l| !l.is_empty()) else {
        return "(no label)".to_owned();
    };
    if let Some(i) = label.rfind(['-', '_'])
        && i > 0
    {
        return label[..i].to_owned();
    }
    let trimmed = label.trim_end_matches(|c: char| c.is_ascii_digit());
    if trimmed.is_empty() {
        label.to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// The pane's computers, filter, grouping, marks and the rows they give.
#[derive(Debug)]
pub struct Computers {
    /// Every computer, in the session's order.
    pub list: Vec<ComputerInfo>,
    /// Computers marked with Space: F5 sends to each of them.
    pub marked: BTreeSet<String>,
    /// Until the person presses a key, the selection follows the first online computer of
    /// the list (the lowest id), not the first to link: after a restart the computers link
    /// again in any order, and the one picked must not depend on which was fastest.
    pub auto_select: bool,
    /// First row on screen, kept by drawing for mouse hits.
    pub top: Cell<usize>,
    /// The filter's text ("" shows every computer).
    pub filter: String,
    glob: Option<Glob>,
    /// Group computers by label prefix (`z`).
    pub grouped: bool,
    /// Names of collapsed groups; kept while grouping is off, so toggling it back restores them.
    pub collapsed: BTreeSet<String>,
    /// The group header the cursor is on, if it is on one.
    pub cursor_group: Option<String>,
    /// The rows on the pane, top to bottom.
    pub rows: Vec<Row>,
    /// The height of the Computers area, the Device pane's rows included, as last laid out:
    /// whether computers get a second line is decided on it.
    pub whole: Cell<u16>,
    pub groups: Vec<Group>,
    /// Every computer in the list.
    pub counts: Counts,
    /// The computers the filter shows (all of them without a filter).
    pub shown: Counts,
    /// traposId → its row, for the computers on a row.
    row_of: HashMap<String, usize>,
    /// Group name → its header row.
    group_row: HashMap<String, usize>,
}

impl Default for Computers {
    fn default() -> Computers {
        let mut c = Computers {
            list: Vec::new(),
            marked: BTreeSet::new(),
            auto_select: true,
            top: Cell::new(0),
            filter: String::new(),
            glob: None,
            grouped: false,
            collapsed: BTreeSet::new(),
            cursor_group: None,
            rows: Vec::new(),
            whole: Cell::new(0),
            groups: Vec::new(),
            counts: Counts::default(),
            shown: Counts::default(),
            row_of: HashMap::new(),
            group_row: HashMap::new(),
        };
        c.rebuild();
        c
    }
}

impl Computers {
    /// A new list from the session. Returns the computer to select while the person has not
    /// pressed a key yet (the first online one of the list); marks of computers gone offline
    /// are dropped.
    pub fn set(&mut self, list: Vec<ComputerInfo>, selected: Option<&str>) -> Option<String> {
        let mut pick = None;
        if self.auto_select
            && let Some(first) = list.iter().find(|c| c.online)
            && selected != Some(first.trapos_id.as_str())
        {
            pick = Some(first.trapos_id.clone());
        }
        if !self.marked.is_empty() {
            // A set, so that a thousand marks against a thousand computers stays linear.
            let online: HashSet<&str> = list
                .iter()
                .filter(|c| c.online)
                .map(|c| c.trapos_id.as_str())
                .collect();
            self.marked.retain(|m| online.contains(m.as_str()));
        }
        self.list = list;
        self.rebuild();
        pick
    }

    /// Where F5 sends: the marked computers, else the selected one.
    pub fn targets(&self, selected: Option<&str>) -> Vec<String> {
        if !self.marked.is_empty() {
            return self.marked.iter().cloned().collect();
        }
        selected.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Row of the cursor (0 is "All computers", and where a selected computer the filter hides
    /// counts from).
    pub fn selected_index(&self, selected: Option<&str>) -> usize {
        self.cursor_row(selected).unwrap_or(0)
    }

    /// Moves the cursor to row `index`: "All computers", a group header (which shows
    /// everyone's output, so that F5 never goes to a computer off the cursor) or a computer.
    pub fn select_index(&mut self, index: usize) -> Outcome {
        self.cursor_group = None;
        let new = match self.rows.get(index) {
            Some(Row::Computer(i)) => self.list.get(*i).map(|c| c.trapos_id.clone()),
            Some(Row::Group(g)) => {
                self.cursor_group = self.groups.get(*g).map(|g| g.name.clone());
                None
            }
            Some(Row::All) | None => None,
        };
        self.auto_select = false;
        Outcome::Select(new)
    }

    /// Whether a filter is set.
    pub fn filtering(&self) -> bool {
        self.glob.is_some()
    }

    /// Sets the filter's text (empty clears it). The rows need a [`rebuild`](Self::rebuild).
    fn set_filter_text(&mut self, text: &str) {
        self.filter = text.to_owned();
        self.glob = (!text.trim().is_empty()).then(|| Glob::new(text));
    }

    /// Whether the filter shows this computer.
    pub fn shows(&self, c: &ComputerInfo) -> bool {
        self.glob.as_ref().is_none_or(|g| matches_computer(g, c))
    }

    /// Computes the rows again, after the list, the filter, the grouping or a fold changed.
    pub fn rebuild(&mut self) {
        let list = std::mem::take(&mut self.list);
        self.rebuild_from(&list);
        self.list = list;
    }

    fn rebuild_from(&mut self, computers: &[ComputerInfo]) {
        self.counts = Counts::default();
        self.shown = Counts::default();
        self.rows.clear();
        self.groups.clear();
        self.row_of.clear();
        self.group_row.clear();
        self.rows.push(Row::All);
        let mut shown = Vec::new();
        for (i, c) in computers.iter().enumerate() {
            self.counts.add(c);
            if self.shows(c) {
                self.shown.add(c);
                shown.push(i);
            }
        }
        if !self.grouped {
            for i in shown {
                if let Some(c) = computers.get(i) {
                    self.row_of.insert(c.trapos_id.clone(), self.rows.len());
                }
                self.rows.push(Row::Computer(i));
            }
            return;
        }
        let mut by_name: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for i in shown {
            if let Some(c) = computers.get(i) {
                by_name
                    .entry(group_of(c.label.as_deref()))
                    .or_default()
                    .push(i);
            }
        }
        for (name, members) in by_name {
            let mut counts = Counts::default();
            for &i in &members {
                if let Some(c) = computers.get(i) {
                    counts.add(c);
                }
            }
            let collapsed = self.collapsed.contains(&name);
            self.group_row.insert(name.clone(), self.rows.len());
            self.rows.push(Row::Group(self.groups.len()));
            if !collapsed {
                for &i in &members {
                    if let Some(c) = computers.get(i) {
                        self.row_of.insert(c.trapos_id.clone(), self.rows.len());
                    }
                    self.rows.push(Row::Computer(i));
                }
            }
            self.groups.push(Group {
                name,
                counts,
                collapsed,
                members,
            });
        }
        if let Some(g) = &self.cursor_group
            && !self.group_row.contains_key(g)
        {
            self.cursor_group = None;
        }
    }

    /// How many rows are group headers.
    pub fn rows_of_groups(&self) -> usize {
        self.groups.len()
    }

    /// Lines the list takes with each computer on two (its served types on the second).
    pub fn lines_twice(&self) -> usize {
        let computer_rows = self.rows.len().saturating_sub(1 + self.rows_of_groups());
        self.rows.len() + computer_rows
    }

    /// The pane's height, borders included, with each computer on two lines.
    pub fn height_twice(&self) -> u16 {
        u16::try_from(self.lines_twice() + 2).unwrap_or(u16::MAX)
    }

    /// The row of a computer, when it is on one.
    pub fn row_of(&self, trapos_id: &str) -> Option<usize> {
        self.row_of.get(trapos_id).copied()
    }

    /// The header row of a group.
    pub fn group_row(&self, name: &str) -> Option<usize> {
        self.group_row.get(name).copied()
    }

    /// The row the cursor is on: a group header, the selected computer, or "All computers";
    /// `None` when the selected computer is hidden (filtered out or in a collapsed group).
    pub fn cursor_row(&self, selected: Option<&str>) -> Option<usize> {
        if let Some(g) = &self.cursor_group {
            return self.group_row(g);
        }
        match selected {
            None => Some(0),
            Some(id) => self.row_of(id),
        }
    }

    /// The group of a header row.
    pub fn group_at(&self, row: usize) -> Option<&Group> {
        match self.rows.get(row) {
            Some(Row::Group(g)) => self.groups.get(*g),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn computer(id: u64, label: &str, online: bool, running: usize) -> ComputerInfo {
        let label = Some(label).filter(|l| !l.is_empty());
        ComputerInfo {
            running,
            ..trapdesk_core::session::fleet::test_computer(id, label, online)
        }
    }

    #[test]
    fn groups_are_the_label_before_its_last_separator_or_digits() {
        assert_eq!(group_of(Some("miner-1")), "miner");
        assert_eq!(group_of(Some("miner_12")), "miner");
        assert_eq!(group_of(Some("miner12")), "miner");
        assert_eq!(group_of(Some("miner-north-3")), "miner-north");
        assert_eq!(group_of(Some("farm-wheat")), "farm");
        assert_eq!(group_of(Some("reactor")), "reactor");
        assert_eq!(group_of(Some("42")), "42");
        assert_eq!(group_of(Some("-x")), "-x");
        assert_eq!(group_of(Some("")), "(no label)");
        assert_eq!(group_of(None), "(no label)");
    }

    #[test]
    fn filter_counts_and_rows() {
        let list = vec![
            computer(1, "miner-1", true, 0),
            computer(2, "miner-2", true, 1),
            computer(3, "farm-1", true, 0),
            computer(4, "miner-3", false, 0),
        ];
        let mut f = Computers {
            list,
            ..Computers::default()
        };
        f.rebuild();
        assert_eq!(f.rows.len(), 5);
        assert_eq!(
            f.counts,
            Counts {
                total: 4,
                online: 3,
                busy: 1,
                offline: 1
            }
        );
        f.set_filter_text("MINER-*");
        f.rebuild();
        assert_eq!(f.shown.total, 3);
        assert_eq!(f.counts.total, 4);
        assert_eq!(f.row_of("3:farm-1"), None);
        assert_eq!(f.row_of("2:miner-2"), Some(2));
        // traposId and bare id match too, like probe-computers' `match`.
        f.set_filter_text("3:*");
        f.rebuild();
        assert_eq!(f.rows, vec![Row::All, Row::Computer(2)]);
        f.set_filter_text("  ");
        assert!(!f.filtering());
    }

    #[test]
    fn grouping_collapses_and_keeps_the_order() {
        let list = vec![
            computer(1, "miner-1", true, 0),
            computer(2, "farm-1", true, 0),
            computer(3, "miner-2", true, 2),
        ];
        let mut f = Computers {
            list,
            grouped: true,
            ..Computers::default()
        };
        f.rebuild();
        assert_eq!(
            f.rows,
            vec![
                Row::All,
                Row::Group(0),
                Row::Computer(1),
                Row::Group(1),
                Row::Computer(0),
                Row::Computer(2)
            ]
        );
        assert_eq!(f.groups[1].name, "miner");
        assert_eq!(f.groups[1].counts.busy, 1);
        f.collapsed.insert("miner".into());
        f.cursor_group = Some("miner".into());
        f.rebuild();
        assert_eq!(f.rows.len(), 4);
        assert_eq!(f.cursor_row(Some("1:miner-1")), Some(3));
        f.cursor_group = None;
        assert_eq!(f.cursor_row(Some("1:miner-1")), None);
        assert_eq!(f.cursor_row(None), Some(0));
        // A group the filter empties loses its header, and the cursor leaves it.
        f.cursor_group = Some("miner".into());
        f.set_filter_text("farm*");
        f.rebuild();
        assert_eq!(f.cursor_group, None);
        assert_eq!(f.rows, vec![Row::All, Row::Group(0), Row::Computer(1)]);
    }
}

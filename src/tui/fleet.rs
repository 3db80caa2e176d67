//! The Computers pane for fleets: the filter (a glob on traposId and label, the same
//! [`Glob`] that `probe-computers` and `exec-lua-many` use), grouping by label prefix, the
//! online / busy / offline counts, and the list of rows the pane shows.
//!
//! The rows are computed when the computers, the filter, the grouping or a group's collapse
//! change, never per frame: with a thousand computers the pane draws only the rows on screen,
//! and finds the selection by a map lookup instead of a walk.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::glob::Glob;
use crate::session::ComputerInfo;
use crate::session::fleet::matches_computer;

/// One row of the Computers pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// "All computers": everyone's output.
    All,
    /// A group header (index into [`Fleet::groups`]).
    Group(usize),
    /// A computer (index into the app's computers).
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
    /// Indices into the app's computers, in the app's order.
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

/// The pane's filter, grouping and the rows they give.
#[derive(Debug, Default)]
pub struct Fleet {
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

impl Fleet {
    /// Whether a filter is set.
    pub fn filtering(&self) -> bool {
        self.glob.is_some()
    }

    /// Sets the filter's text (empty clears it). The rows need a [`rebuild`](Self::rebuild).
    pub fn set_filter(&mut self, text: &str) {
        self.filter = text.to_owned();
        self.glob = (!text.trim().is_empty()).then(|| Glob::new(text));
    }

    /// Whether the filter shows this computer.
    pub fn shows(&self, c: &ComputerInfo) -> bool {
        self.glob.as_ref().is_none_or(|g| matches_computer(g, c))
    }

    /// Computes the rows from `computers` (in the app's order).
    pub fn rebuild(&mut self, computers: &[ComputerInfo]) {
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
    use std::time::SystemTime;

    use super::*;

    fn computer(id: u64, label: &str, online: bool, running: usize) -> ComputerInfo {
        ComputerInfo {
            trapos_id: format!("{id}:{label}"),
            id,
            label: Some(label.to_owned()).filter(|l| !l.is_empty()),
            online,
            connected_at: SystemTime::UNIX_EPOCH,
            disconnected_at: None,
            serves: vec![],
            running,
            queued: 0,
            last_rtt_ms: None,
            client: None,
            host: None,
            max_message: 131_072,
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
        let mut f = Fleet::default();
        f.rebuild(&list);
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
        f.set_filter("MINER-*");
        f.rebuild(&list);
        assert_eq!(f.shown.total, 3);
        assert_eq!(f.counts.total, 4);
        assert_eq!(f.row_of("3:farm-1"), None);
        assert_eq!(f.row_of("2:miner-2"), Some(2));
        // traposId and bare id match too, like probe-computers' `match`.
        f.set_filter("3:*");
        f.rebuild(&list);
        assert_eq!(f.rows, vec![Row::All, Row::Computer(2)]);
        f.set_filter("  ");
        assert!(!f.filtering());
    }

    #[test]
    fn grouping_collapses_and_keeps_the_order() {
        let list = vec![
            computer(1, "miner-1", true, 0),
            computer(2, "farm-1", true, 0),
            computer(3, "miner-2", true, 2),
        ];
        let mut f = Fleet {
            grouped: true,
            ..Fleet::default()
        };
        f.rebuild(&list);
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
        f.rebuild(&list);
        assert_eq!(f.rows.len(), 4);
        assert_eq!(f.cursor_row(Some("1:miner-1")), Some(3));
        f.cursor_group = None;
        assert_eq!(f.cursor_row(Some("1:miner-1")), None);
        assert_eq!(f.cursor_row(None), Some(0));
        // A group the filter empties loses its header, and the cursor leaves it.
        f.cursor_group = Some("miner".into());
        f.set_filter("farm*");
        f.rebuild(&list);
        assert_eq!(f.cursor_group, None);
        assert_eq!(f.rows, vec![Row::All, Row::Group(0), Row::Computer(1)]);
    }
}

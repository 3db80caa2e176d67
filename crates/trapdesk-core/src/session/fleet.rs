//! Fleets: choosing computers by a glob and reading them in pages, for bases with thousands of
//! computers. The MCP tools (`probe-computers`, `exec-lua-many`) and the console's filter all
//! select through here, so a glob means the same thing to an agent and to the person.
//!
//! Paging is by key, not by offset: a cursor is the traposId of the last computer returned, and
//! the next page starts after it in `(id, traposId)` order. Computers that link or unlink
//! between pages therefore never shift the others: every computer linked for the whole walk is
//! returned exactly once, whatever happens around it.

use std::ops::Bound;

use super::Session;
use super::model::ComputerInfo;

pub use trapdesk_proto::glob::Glob;

/// Whether `glob` matches a computer: by its traposId, its bare id or its label.
pub fn matches_computer(glob: &Glob, c: &ComputerInfo) -> bool {
    glob.matches_computer(&c.trapos_id, c.id, c.label.as_deref())
}

/// What to page through.
#[derive(Debug, Clone, Default)]
pub struct PageQuery {
    /// Only computers this glob matches (all when `None`).
    pub glob: Option<Glob>,
    /// Most computers in the page.
    pub limit: usize,
    /// The previous page's `next_cursor`: start after this traposId.
    pub cursor: Option<String>,
    /// Include recently unlinked computers too (the console shows them; agents get linked ones).
    pub offline: bool,
}

/// One page of computers.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The computers of this page, in `(id, traposId)` order.
    pub computers: Vec<ComputerInfo>,
    /// How many computers match in all (every page, not only this one).
    pub matched: usize,
    /// How many computers are linked (matching or not).
    pub linked: usize,
    /// Cursor for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// The sort key of a cursor: a traposId is `"<id>:<label>"`, so the key needs no lookup and
/// still works after that computer unlinked.
fn cursor_key(cursor: &str) -> (u64, &str) {
    let id = cursor
        .split(':')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (id, cursor)
}

/// Pages `all` (any order) by `query`; the pure part of [`Session::computers_page`].
pub fn page<'a>(all: impl Iterator<Item = &'a ComputerInfo>, query: &PageQuery) -> Page {
    let after = query.cursor.as_deref().map(cursor_key);
    let mut linked = 0;
    let mut matched = 0;
    let mut rest: Vec<&ComputerInfo> = Vec::new();
    for c in all {
        if c.online {
            linked += 1;
        } else if !query.offline {
            continue;
        }
        if let Some(g) = &query.glob
            && !matches_computer(g, c)
        {
            continue;
        }
        matched += 1;
        if after.is_none_or(|a| (c.id, c.trapos_id.as_str()) > a) {
            rest.push(c);
        }
    }
    let limit = query.limit.max(1);
    // Only the page is sorted in full; the rest only needs to be after it. The comparison
    // borrows the traposIds: a key that cloned them made ~3 allocations per computer per
    // page, most of a page's time with 10,000 linked (BENCHMARKS.md, "Fleets and the floor").
    let order = |a: &&ComputerInfo, b: &&ComputerInfo| {
        (a.id, a.trapos_id.as_str()).cmp(&(b.id, b.trapos_id.as_str()))
    };
    if rest.len() > limit {
        rest.select_nth_unstable_by(limit, order);
        rest.truncate(limit + 1);
    }
    rest.sort_unstable_by(order);
    let more = rest.len() > limit;
    rest.truncate(limit);
    let computers: Vec<ComputerInfo> = rest.into_iter().cloned().collect();
    let next_cursor = more
        .then(|| computers.last().map(|c| c.trapos_id.clone()))
        .flatten();
    Page {
        computers,
        matched,
        linked,
        next_cursor,
    }
}

impl Session {
    /// One page of computers by glob and cursor (see the module docs for why the walk is exact).
    pub fn computers_page(&self, query: &PageQuery) -> Page {
        let st = self.lock();
        if query.glob.is_some() || query.offline {
            // The counts need every computer looked at anyway.
            return page(st.computers.values().map(|c| &c.info), query);
        }
        // Linked computers, no glob (an agent's walk): a range of the ordered keys, and the
        // counts are the number of connections (one per linked computer).
        let after = query.cursor.as_deref().map(cursor_key);
        let start = match after {
            Some((id, t)) => Bound::Excluded((id, t.to_owned())),
            None => Bound::Unbounded,
        };
        let limit = query.limit.max(1);
        let mut computers = Vec::new();
        let mut more = false;
        for c in st.computers.in_order(start).filter(|c| c.info.online) {
            if computers.len() == limit {
                more = true;
                break;
            }
            computers.push(c.info.clone());
        }
        let next_cursor = more
            .then(|| computers.last().map(|c: &ComputerInfo| c.trapos_id.clone()))
            .flatten();
        let linked = st.computers.linked();
        Page {
            computers,
            matched: linked,
            linked,
            next_cursor,
        }
    }

    /// How many computers are linked now.
    pub fn linked_count(&self) -> usize {
        self.lock().computers.linked()
    }

    /// The traposIds of the linked computers a glob matches, in `(id, traposId)` order.
    pub fn matching(&self, glob: &Glob) -> Vec<String> {
        let st = self.lock();
        let mut list: Vec<(u64, &str)> = st
            .computers
            .values()
            .filter(|c| c.conn.is_some() && matches_computer(glob, &c.info))
            .map(|c| (c.info.id, c.info.trapos_id.as_str()))
            .collect();
        list.sort_unstable();
        list.into_iter().map(|(_, t)| t.to_owned()).collect()
    }
}

/// A computer entry for tests: `id:label`, linked at the epoch, nothing served. The fronts'
/// unit tests reach it through the `test-support` feature (a dev-dependency's feature, never
/// in the product).
#[cfg(any(test, feature = "test-support"))]
pub fn test_computer(id: u64, label: Option<&str>, online: bool) -> ComputerInfo {
    ComputerInfo {
        trapos_id: format!("{id}:{}", label.unwrap_or("")),
        id,
        label: label.map(str::to_owned),
        online,
        connected_at: std::time::SystemTime::UNIX_EPOCH,
        disconnected_at: None,
        serves: vec![],
        running: 0,
        queued: 0,
        detached: 0,
        last_rtt_ms: None,
        client: None,
        host: None,
        max_message: 131_072,
        machine: Default::default(),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn computer(id: u64, label: Option<&str>, online: bool) -> ComputerInfo {
        test_computer(id, label, online)
    }

    #[test]
    fn glob_matches_trapos_id_label_or_bare_id() {
        let c = computer(12, Some("miner"), true);
        assert!(matches_computer(&Glob::new("12"), &c));
        assert!(matches_computer(&Glob::new("miner"), &c));
        assert!(matches_computer(&Glob::new("12:*"), &c));
        assert!(!matches_computer(&Glob::new("farm*"), &c));
    }

    #[test]
    fn pages_walk_every_computer_once_in_order() {
        let all: Vec<ComputerInfo> = (0..25)
            .rev()
            .map(|i| computer(i, Some(if i % 2 == 0 { "even" } else { "odd" }), true))
            .collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let p = page(
                all.iter(),
                &PageQuery {
                    glob: Some(Glob::new("odd")),
                    limit: 5,
                    cursor: cursor.clone(),
                    offline: false,
                },
            );
            assert_eq!(p.matched, 12);
            assert_eq!(p.linked, 25);
            seen.extend(p.computers.iter().map(|c| c.id));
            pages += 1;
            match p.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(seen, (0..25).filter(|i| i % 2 == 1).collect::<Vec<_>>());
    }

    #[test]
    fn last_page_has_no_cursor_and_offline_is_left_out() {
        let all = [
            computer(1, None, true),
            computer(2, None, false),
            computer(3, None, true),
        ];
        let q = PageQuery {
            limit: 2,
            ..Default::default()
        };
        let p = page(all.iter(), &q);
        assert_eq!(p.computers.len(), 2);
        assert_eq!(p.next_cursor, None, "exactly two linked: one page");
        assert_eq!(p.matched, 2);
        let p = page(all.iter(), &PageQuery { offline: true, ..q });
        assert_eq!(p.next_cursor.as_deref(), Some("2:"));
    }

    #[test]
    fn a_cursor_survives_its_computer_unlinking() {
        let mut all: Vec<ComputerInfo> = (1..=6).map(|i| computer(i, None, true)).collect();
        let q = |cursor| PageQuery {
            limit: 3,
            cursor,
            ..Default::default()
        };
        let first = page(all.iter(), &q(None));
        let cursor = first.next_cursor.clone();
        assert_eq!(cursor.as_deref(), Some("3:"));
        all.retain(|c| c.id != 3);
        all.push(computer(100, Some("late"), true));
        let second = page(all.iter(), &q(cursor));
        let ids: Vec<u64> = second.computers.iter().map(|c| c.id).collect();
        assert_eq!(ids, [4, 5, 6]);
        assert_eq!(second.next_cursor.as_deref(), Some("6:"));
    }
}

//! The computers the session knows, linked or recently unlinked: one table kept in step with
//! its two indexes, so that no caller can change one and forget the others.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use super::parts::Computer;

/// The computers by traposId, with every key in `(id, traposId)` order and each live
/// connection's computer. Invariants, kept by the operations below: `order` holds exactly the
/// keys of `by_name`, each with its computer's id; every traposId `conns` names is a key.
#[derive(Default)]
pub(crate) struct Computers {
    by_name: HashMap<String, Computer>,
    /// A page of linked computers is a range of this, where a scan of `by_name` read all of
    /// them for every page (10,000 computers of ~400 bytes each: 4 MB read per page of ~90).
    order: BTreeSet<(u64, String)>,
    /// Connection id → traposId.
    conns: HashMap<u64, String>,
}

impl Computers {
    pub(crate) fn get(&self, trapos_id: &str) -> Option<&Computer> {
        self.by_name.get(trapos_id)
    }

    pub(crate) fn get_mut(&mut self, trapos_id: &str) -> Option<&mut Computer> {
        self.by_name.get_mut(trapos_id)
    }

    pub(crate) fn contains_key(&self, trapos_id: &str) -> bool {
        self.by_name.contains_key(trapos_id)
    }

    /// How many computers are known, linked or not.
    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Computer> {
        self.by_name.values()
    }

    /// Adds `computer` under `trapos_id` (its own traposId), in its place in the order; one
    /// already there under that name is replaced.
    pub(crate) fn insert(&mut self, trapos_id: String, computer: Computer) {
        if let Some(old) = self.by_name.get(&trapos_id) {
            self.order.remove(&(old.info.id, trapos_id.clone()));
        }
        self.order.insert((computer.info.id, trapos_id.clone()));
        self.by_name.insert(trapos_id, computer);
    }

    /// Takes `trapos_id` out, with its place in the order. A connection naming it is the
    /// caller's to end or move (a relabel keeps the connection under the new name).
    pub(crate) fn remove(&mut self, trapos_id: &str) -> Option<Computer> {
        let c = self.by_name.remove(trapos_id)?;
        self.order.remove(&(c.info.id, trapos_id.to_owned()));
        Some(c)
    }

    /// Connection `conn_id` is `trapos_id`'s from now on.
    pub(crate) fn connect(&mut self, conn_id: u64, trapos_id: String) {
        self.conns.insert(conn_id, trapos_id);
    }

    /// Connection `conn_id` has ended: the traposId it was, if it was still live (a replaced
    /// connection was already ended by its successor).
    pub(crate) fn disconnect(&mut self, conn_id: u64) -> Option<String> {
        self.conns.remove(&conn_id)
    }

    /// Whether connection `conn_id` is still live.
    pub(crate) fn is_live(&self, conn_id: u64) -> bool {
        self.conns.contains_key(&conn_id)
    }

    /// How many computers are linked now (one live connection each).
    pub(crate) fn linked(&self) -> usize {
        self.conns.len()
    }

    /// The computers in `(id, traposId)` order, from `start` on.
    pub(crate) fn in_order(&self, start: Bound<(u64, String)>) -> impl Iterator<Item = &Computer> {
        self.order
            .range((start, Bound::Unbounded))
            .filter_map(|(_, t)| self.by_name.get(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::output::OutputRing;

    fn computer(id: u64, label: &str) -> Computer {
        let mut info = crate::session::fleet::test_computer(id, Some(label), true);
        info.trapos_id = format!("{id}:{label}");
        Computer {
            info,
            conn: None,
            output: OutputRing::new(10),
            off: None,
        }
    }

    fn names(t: &Computers) -> Vec<String> {
        t.in_order(Bound::Unbounded)
            .map(|c| c.info.trapos_id.clone())
            .collect()
    }

    #[test]
    fn the_order_follows_every_insert_and_remove() {
        let mut t = Computers::default();
        t.insert("10:b".into(), computer(10, "b"));
        t.insert("2:a".into(), computer(2, "a"));
        assert_eq!(names(&t), ["2:a", "10:b"]);
        // A relabel: out under the old name, in under the new one, in its place by id.
        let mut c = t.remove("2:a").expect("known");
        c.info.trapos_id = "2:z".into();
        t.insert("2:z".into(), c);
        assert_eq!(names(&t), ["2:z", "10:b"]);
        // The same name again replaces, never lists twice.
        t.insert("2:z".into(), computer(2, "z"));
        assert_eq!(names(&t), ["2:z", "10:b"]);
        assert_eq!(t.len(), 2);
        assert!(t.remove("2:a").is_none());
    }

    #[test]
    fn a_connection_is_live_until_it_ends() {
        let mut t = Computers::default();
        t.insert("1:m".into(), computer(1, "m"));
        t.connect(7, "1:m".into());
        assert!(t.is_live(7));
        assert_eq!(t.linked(), 1);
        assert_eq!(t.disconnect(7).as_deref(), Some("1:m"));
        assert_eq!(t.disconnect(7), None);
        assert_eq!(t.linked(), 0);
    }
}

//! A computer's output as readers get it: the in-memory scrollback first, and `history.db`
//! where a cursor reaches past it (after a restart, or past `scrollback_lines`). The database
//! is read apart from the session's lock, so the disk never holds up the session.

use std::sync::Arc;
use std::time::Duration;

use super::Session;
use super::history::History;
use super::model::{OutputEntry, OutputItem};

impl Session {
    /// Whether `request_id` is a request of this computer that the host still knows: pending,
    /// or with its start, output or end still in the computer's scrollback.
    pub fn knows_request(&self, trapos_id: &str, request_id: &str) -> bool {
        let st = self.lock();
        if st
            .pending
            .get(request_id)
            .is_some_and(|p| p.info.trapos_id == trapos_id)
        {
            return true;
        }
        let in_ring = st.computers.get(trapos_id).is_some_and(|c| {
            c.output.any(|item| match &item.entry {
                OutputEntry::Start(s) => s.request_id == request_id,
                OutputEntry::Line { request_id: r, .. } => r.as_deref() == Some(request_id),
                OutputEntry::End { request_id: r, .. } => r == request_id,
            })
        });
        let history = st.history().cloned();
        drop(st);
        // Read apart from the lock: the disk never holds up the session.
        in_ring || history.is_some_and(|h| h.has_request(trapos_id, request_id))
    }

    /// Output entries of a computer after the cursor `after`, oldest first: from the
    /// scrollback, and from the history where the cursor is older than the scrollback (after a
    /// restart, or past `scrollback_lines`). `after` 0 means "what is kept": the newest
    /// `scrollback_lines` entries, filled from the history when the scrollback has fewer (a
    /// console opening a computer after a restart sees its latest lines, not its first).
    /// Otherwise what comes from the history is at most `scrollback_lines` entries at a time,
    /// from the cursor on; a caller goes on from the last one's `seq`.
    pub fn output_since(&self, trapos_id: &str, after: u64) -> Vec<OutputItem> {
        let (items, oldest, history, cap) = {
            let st = self.lock();
            let c = st.computers.get(trapos_id);
            (
                c.map(|c| c.output.since(after)).unwrap_or_default(),
                c.map_or(u64::MAX, |c| c.output.oldest_seq()),
                st.history().cloned(),
                st.settings.scrollback_lines,
            )
        };
        let Some(history) = history else {
            return items;
        };
        if after.saturating_add(1) >= oldest {
            return items;
        }
        if after == 0 {
            let need = cap.saturating_sub(items.len());
            if need == 0 {
                return items;
            }
            let mut older = history.output_before(trapos_id, oldest, need);
            older.extend(items);
            return older;
        }
        let mut older = history.output_between(trapos_id, after, oldest, cap);
        if older.len() >= cap {
            return older;
        }
        older.extend(items);
        older
    }

    /// A page of a computer's output lines before `before` (newest page when `None`),
    /// optionally only one request's, with the cursor of the page before it.
    pub fn output_page(
        &self,
        trapos_id: &str,
        lines: usize,
        before: Option<u64>,
        request_id: Option<&str>,
    ) -> (Vec<OutputItem>, Option<u64>) {
        let (page, cursor, oldest, history) = {
            let st = self.lock();
            let (page, cursor, oldest) = match st.computers.get(trapos_id) {
                Some(c) => {
                    let (page, cursor) = c.output.page(lines, before, |item| match &item.entry {
                        OutputEntry::Line { request_id: r, .. } => {
                            request_id.is_none() || r.as_deref() == request_id
                        }
                        _ => false,
                    });
                    (page, cursor, c.output.oldest_seq())
                }
                None => (Vec::new(), None, u64::MAX),
            };
            (page, cursor, oldest, st.history().cloned())
        };
        // The scrollback has older lines, or there is no history: the page is all there is.
        let Some(history) = history.filter(|_| cursor.is_none()) else {
            return (page, cursor);
        };
        let until = before.map_or(oldest, |b| b.min(oldest));
        let need = lines.saturating_sub(page.len());
        let mut older = history.lines_before(trapos_id, until, request_id, need + 1);
        let more = older.len() > need;
        older.truncate(need);
        older.reverse();
        older.extend(page);
        let cursor = more.then(|| older.first().map(|i| i.seq)).flatten();
        (older, cursor)
    }

    /// Waits (at most `patience`) until what the history was handed is committed; `true` when
    /// it was, or when there is no history.
    pub fn flush_history(&self, patience: Duration) -> bool {
        let history = self.lock().history().cloned();
        history.is_none_or(|h| h.flush(patience))
    }

    /// The history's database, when the host keeps one.
    pub fn history(&self) -> Option<Arc<History>> {
        self.lock().history().cloned()
    }
}

//! The Output pane's side of one entry per put (`tui/puts.rs`): the pieces' rows folded into
//! the entry of the first, which says the file, its size so far, and how the put ended.

use std::sync::Arc;

use super::{Ending, Header, OutputModel, Row, RowKind, printable};
use crate::tui::puts::Put;
use trapdesk_core::session::{OutputEntry, OutputItem, StartEntry};

/// What becomes of a request's start or end that may be a piece of a put.
pub(super) enum Fold {
    /// Not a piece: its row as it is.
    Keep,
    /// A piece of a put shown by another entry: no row of its own.
    Skip,
}

impl OutputModel {
    /// Folds the pieces of a put into the entry of its first piece: that entry's header says
    /// the file and its size so far, and it ends when the put does. `again` is an item pulled
    /// before (after an unfinished line): a piece already counted.
    pub(super) fn fold(&mut self, trapos_id: &str, item: &OutputItem, again: bool) -> Fold {
        let (request_id, start) = match &item.entry {
            OutputEntry::Start(s) => (&s.request_id, Some(s)),
            OutputEntry::End { request_id, .. } => (request_id, None),
            OutputEntry::Line { .. } => return Fold::Keep,
        };
        if again {
            return if self.puts.member.contains_key(request_id)
                || self.puts.gone.contains(request_id)
            {
                Fold::Skip
            } else {
                Fold::Keep
            };
        }
        if let Some(start) = start {
            return self.fold_start(trapos_id, start);
        }
        let OutputEntry::End {
            status,
            summary,
            duration_ms,
            ..
        } = &item.entry
        else {
            return Fold::Keep;
        };
        let Some((key, piece)) = self.puts.member.get(request_id).cloned() else {
            return Fold::Keep;
        };
        let Some((head, put)) = self.puts.open.get_mut(&key) else {
            return Fold::Keep;
        };
        put.ended(&piece, *status, summary, *duration_ms);
        let (head, put) = (head.clone(), put.clone());
        if !put.by_part && put.pieces < 2 {
            // A write in place with nothing appended yet is just a write.
            return Fold::Keep;
        }
        self.show_put(trapos_id, &head, &put, item.seq);
        Fold::Skip
    }

    fn fold_start(&mut self, trapos_id: &str, start: &StartEntry) -> Fold {
        let piece = crate::tui::puts::piece(&start.kind.to_string(), &start.summary);
        let latest = self.puts.latest.remove(trapos_id).flatten();
        let looked = self.puts.looked.remove(trapos_id);
        let Some(piece) = piece else {
            self.puts.latest.insert(trapos_id.to_owned(), None);
            // Only the person's commands (`put`, `sync`) look before they write: an agent's
            // own look stays its own entry.
            if start.kind == trapdesk_proto::protocol::Kind::FileInfo
                && matches!(
                    start.origin,
                    trapdesk_core::session::Origin::Cli | trapdesk_core::session::Origin::Sync
                )
            {
                // Perhaps a put's look at its target (is it a folder?), right before its pieces.
                let look = (
                    start.request_id.clone(),
                    start.summary.clone(),
                    start.origin.clone(),
                );
                self.puts.looked.insert(trapos_id.to_owned(), look);
            }
            return Fold::Keep;
        };
        let key = (trapos_id.to_owned(), piece.key.clone());
        self.puts
            .latest
            .insert(trapos_id.to_owned(), Some(piece.key.clone()));
        // A piece in place joins only the put right before it; a part file's name is the put's.
        let joins = self.puts.open.get(&key).is_some_and(|(_, put)| {
            !(put.over && put.failed.is_some())
                && (piece.by_part || latest.as_deref() == Some(piece.key.as_str()))
        }) && !piece.may_start;
        self.puts
            .member
            .insert(start.request_id.clone(), (key.clone(), piece.clone()));
        if joins {
            if let Some((_, put)) = self.puts.open.get_mut(&key) {
                put.over = false;
            }
            return Fold::Skip;
        }
        if piece.by_part || piece.may_start {
            self.puts
                .open
                .insert(key, (start.request_id.clone(), Put::new(&piece)));
            // The put's look at its target right before it is part of it: its entry goes.
            if let Some((id, path, origin)) = looked
                && path == piece.target
                && origin == start.origin
            {
                let gone = |r: &Row| r.request() == Some(id.as_str());
                for rows in [self.per.get_mut(trapos_id), Some(&mut self.all)]
                    .into_iter()
                    .flatten()
                {
                    rows.rows.retain(|r| !gone(r));
                }
                // Pulled again after an unfinished line, its rows stay gone.
                self.puts.gone.insert(id);
            }
        } else {
            self.puts.member.remove(&start.request_id);
        }
        Fold::Keep
    }

    /// The put's entry as it now stands: its header's words, and its end once it has ended.
    fn show_put(&mut self, trapos_id: &str, head: &str, put: &Put, seq: u64) {
        let views = [self.per.get_mut(trapos_id), Some(&mut self.all)];
        let ending = put.ending().map(|(status, summary)| Ending {
            status,
            summary,
            duration_ms: put.duration_ms,
        });
        match &ending {
            Some(e) => {
                self.endings.insert(head.to_owned(), e.clone());
            }
            None => {
                self.endings.remove(head);
            }
        }
        for rows in views.into_iter().flatten() {
            let mut ended = false;
            for row in rows.rows.iter_mut().rev() {
                match &mut row.kind {
                    RowKind::Header(h) if h.request_id == head => {
                        let mut h2 = Header::clone(h);
                        h2.kind = "put".to_owned();
                        h2.summary = printable(&put.words());
                        *h = Arc::new(h2);
                        break;
                    }
                    RowKind::End {
                        request_id,
                        ending: e,
                    } if &**request_id == head => {
                        if let Some(new) = &ending {
                            *e = Arc::new(new.clone());
                        }
                        ended = true;
                    }
                    _ => {}
                }
            }
            if let (Some(new), false) = (&ending, ended) {
                rows.upsert(
                    Row {
                        trapos_id: Arc::from(trapos_id),
                        seq,
                        kind: RowKind::End {
                            request_id: Arc::from(head),
                            ending: Arc::new(new.clone()),
                        },
                    },
                    false,
                    self.cap,
                );
            }
        }
    }
}

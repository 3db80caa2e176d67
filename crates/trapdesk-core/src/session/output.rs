//! A computer's output ring: lines attributed to requests, with start and end markers, bounded
//! to the configured scrollback. Each entry has a sequence number that serves as a cursor.

use std::collections::VecDeque;

use super::history::Change;
use super::model::{OutputEntry, OutputItem, Stream};

/// Longest line kept in one entry, in bytes. A longer line (output without newlines) is
/// wrapped into several entries, so a computer's ring holds at most `cap` × `MAX_LINE` bytes
/// of text whatever it prints.
pub const MAX_LINE: usize = 16 * 1024;

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Bounded scrollback of one computer.
#[derive(Debug)]
pub struct OutputRing {
    items: VecDeque<OutputItem>,
    next_seq: u64,
    cap: usize,
}

impl OutputRing {
    pub fn new(cap: usize) -> Self {
        OutputRing::starting_at(cap, 1)
    }

    /// A ring whose first entry gets `first_seq`: after a restart, above every cursor an
    /// earlier start gave out (see `history`).
    pub fn starting_at(cap: usize, first_seq: u64) -> Self {
        OutputRing {
            items: VecDeque::new(),
            next_seq: first_seq.max(1),
            cap: cap.max(1),
        }
    }

    /// Sequence number the next entry will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The oldest entry's sequence number (the next one's when empty): anything older is only
    /// in the history, if anywhere.
    pub fn oldest_seq(&self) -> u64 {
        self.items.front().map_or(self.next_seq, |i| i.seq)
    }

    pub fn push(&mut self, entry: OutputEntry) {
        self.push_to(entry, None);
    }

    /// [`OutputRing::push`], noting the new entry in `journal` (for the history).
    pub fn push_to(&mut self, entry: OutputEntry, journal: Option<&mut Vec<Change>>) {
        let item = OutputItem {
            seq: self.next_seq,
            at_ms: super::model::epoch_ms(std::time::SystemTime::now()),
            entry,
        };
        if let Some(j) = journal {
            j.push(Change::New(item.clone()));
        }
        self.items.push_back(item);
        self.next_seq += 1;
        while self.items.len() > self.cap {
            self.items.pop_front();
        }
    }

    /// Appends text, continuing the last line when it is still open for the same request and
    /// stream, so that `write("a") write("b\n")` is one line.
    pub fn push_text(&mut self, request_id: Option<&str>, stream: Stream, text: &str) {
        self.push_text_to(request_id, stream, text, None);
    }

    /// [`OutputRing::push_text`], noting in `journal` what it did: the new entries and the
    /// pieces added to an open line (for the history, which copies only those pieces).
    pub fn push_text_to(
        &mut self,
        request_id: Option<&str>,
        stream: Stream,
        text: &str,
        mut journal: Option<&mut Vec<Change>>,
    ) {
        let mut parts = text.split('\n').peekable();
        while let Some(part) = parts.next() {
            let complete = parts.peek().is_some();
            if part.is_empty() && !complete {
                break;
            }
            if let Some(OutputItem {
                seq,
                entry:
                    OutputEntry::Line {
                        request_id: rid,
                        stream: s,
                        text: line,
                        complete: done,
                    },
                ..
            }) = self.items.back_mut()
                && !*done
                && rid.as_deref() == request_id
                && *s == stream
            {
                let room = MAX_LINE.saturating_sub(line.len());
                if part.len() <= room {
                    line.push_str(part);
                    *done = complete;
                    if let Some(j) = journal.as_deref_mut() {
                        j.push(Change::Append {
                            seq: *seq,
                            text: part.to_owned(),
                            complete,
                        });
                    }
                    continue;
                }
                // The open line is full: fill it, close it, and go on with the rest below.
                let cut = floor_char_boundary(part, room);
                line.push_str(&part[..cut]);
                *done = true;
                if let Some(j) = journal.as_deref_mut() {
                    j.push(Change::Append {
                        seq: *seq,
                        text: part[..cut].to_owned(),
                        complete: true,
                    });
                }
                self.push_long(
                    request_id,
                    stream,
                    &part[cut..],
                    complete,
                    journal.as_deref_mut(),
                );
                continue;
            }
            self.push_long(request_id, stream, part, complete, journal.as_deref_mut());
        }
    }

    /// Pushes one line, as several of at most [`MAX_LINE`] bytes when it is longer, so that a
    /// computer writing without newlines cannot grow one entry without bound.
    fn push_long(
        &mut self,
        request_id: Option<&str>,
        stream: Stream,
        mut part: &str,
        complete: bool,
        mut journal: Option<&mut Vec<Change>>,
    ) {
        loop {
            let cut = floor_char_boundary(part, MAX_LINE);
            let last = cut >= part.len();
            self.push_to(
                OutputEntry::Line {
                    request_id: request_id.map(str::to_owned),
                    stream,
                    text: part[..cut].to_owned(),
                    complete: complete || !last,
                },
                journal.as_deref_mut(),
            );
            if last || cut == 0 {
                return;
            }
            part = &part[cut..];
        }
    }

    /// Entries with `seq > after`, oldest first.
    pub fn since(&self, after: u64) -> Vec<OutputItem> {
        let start = self.items.partition_point(|i| i.seq <= after);
        self.items.range(start..).cloned().collect()
    }

    /// Up to `n` entries before the cursor `before` (exclusive; `None` = the newest), oldest
    /// first, filtered by `keep`. Returns the entries and the cursor for the page before them
    /// (`None` when nothing older is left).
    pub fn page(
        &self,
        n: usize,
        before: Option<u64>,
        keep: impl Fn(&OutputItem) -> bool,
    ) -> (Vec<OutputItem>, Option<u64>) {
        let end = match before {
            Some(b) => self.items.partition_point(|i| i.seq < b),
            None => self.items.len(),
        };
        let mut out = Vec::new();
        let mut idx = end;
        while idx > 0 && out.len() < n {
            idx -= 1;
            if let Some(item) = self.items.get(idx)
                && keep(item)
            {
                out.push(item.clone());
            }
        }
        out.reverse();
        let older_left = self.items.range(..idx).any(&keep);
        let cursor = if older_left {
            out.first().map(|i| i.seq)
        } else {
            None
        };
        (out, cursor)
    }

    /// Whether any kept entry matches `pred` (without copying the ring).
    pub fn any(&self, pred: impl Fn(&OutputItem) -> bool) -> bool {
        self.items.iter().any(pred)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(items: &[OutputItem]) -> Vec<String> {
        items
            .iter()
            .filter_map(|i| match &i.entry {
                OutputEntry::Line { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn partial_lines_join_per_request_and_stream() {
        let mut r = OutputRing::new(100);
        r.push_text(Some("a"), Stream::Out, "he");
        r.push_text(Some("a"), Stream::Out, "llo\nwor");
        r.push_text(Some("b"), Stream::Out, "other\n");
        r.push_text(Some("a"), Stream::Out, "ld\n");
        assert_eq!(texts(&r.since(0)), vec!["hello", "wor", "other", "ld"]);
        r.push_text(None, Stream::Err, "\n\nx");
        assert_eq!(texts(&r.since(4)), vec!["", "", "x"]);
    }

    #[test]
    fn output_without_newlines_is_wrapped_at_max_line() {
        let mut r = OutputRing::new(1000);
        for _ in 0..(3 * MAX_LINE / 7 + 5) {
            r.push_text(Some("a"), Stream::Out, "abcdéf");
        }
        let lines = texts(&r.since(0));
        assert!(lines.len() >= 3, "{}", lines.len());
        assert!(lines.iter().all(|l| l.len() <= MAX_LINE));
        // Nothing lost: the pieces join back to what was written.
        let total: usize = lines.iter().map(String::len).sum();
        assert_eq!(total, (3 * MAX_LINE / 7 + 5) * 7);
        let mut big = OutputRing::new(1000);
        big.push_text(None, Stream::Out, &"é".repeat(MAX_LINE));
        assert!(texts(&big.since(0)).iter().all(|l| l.len() <= MAX_LINE));
        assert_eq!(big.len(), 2);
    }

    #[test]
    fn the_journal_replays_to_what_the_ring_holds() {
        let mut r = OutputRing::starting_at(1000, 5);
        let mut journal = Vec::new();
        for piece in ["he", "llo\nwor", "ld\n\nx", &"y".repeat(MAX_LINE + 3), "\n"] {
            r.push_text_to(Some("a"), Stream::Out, piece, Some(&mut journal));
        }
        r.push_to(
            OutputEntry::End {
                request_id: "a".into(),
                status: crate::session::model::Status::Ok,
                summary: "ok".into(),
                duration_ms: 1,
            },
            Some(&mut journal),
        );
        let mut replay: Vec<OutputItem> = Vec::new();
        for change in journal {
            match change {
                Change::New(item) => replay.push(item),
                Change::Append {
                    seq,
                    text,
                    complete,
                } => {
                    let Some(OutputItem {
                        entry:
                            OutputEntry::Line {
                                text: line,
                                complete: done,
                                ..
                            },
                        ..
                    }) = replay.iter_mut().find(|i| i.seq == seq)
                    else {
                        unreachable!("an append to an entry never noted: {seq}");
                    };
                    line.push_str(&text);
                    *done = complete;
                }
            }
        }
        assert_eq!(replay, r.since(0));
        assert_eq!(replay.first().map(|i| i.seq), Some(5));
    }

    #[test]
    fn ring_is_bounded_and_pages_backwards() {
        let mut r = OutputRing::new(10);
        for i in 0..25 {
            r.push_text(None, Stream::Out, &format!("{i}\n"));
        }
        assert_eq!(r.len(), 10);
        let (page, cursor) = r.page(4, None, |_| true);
        assert_eq!(texts(&page), vec!["21", "22", "23", "24"]);
        let (page, cursor) = r.page(4, cursor, |_| true);
        assert_eq!(texts(&page), vec!["17", "18", "19", "20"]);
        let (page, cursor) = r.page(4, cursor, |_| true);
        assert_eq!(texts(&page), vec!["15", "16"]);
        assert_eq!(cursor, None);
    }
}

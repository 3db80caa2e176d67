//! The console's copy of computers' output: display rows per computer and for "All computers",
//! pulled from the session's rings with a cursor each, plus scrolling, follow mode and search.
//!
//! The session's ring can extend its last line in place while it has no newline yet, under the
//! same sequence number; so a pulled row with a sequence number already held replaces it, and
//! the cursor never moves past an incomplete line.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::SystemTime;

use crate::tui::puts::Puts;
use trapdesk_core::session::{OutputEntry, OutputItem, StartEntry, Status, Stream};

mod fold;
use fold::Fold;

/// Text from a computer made safe and readable for the terminal: one function for the console
/// and the CLI ([`trapdesk_proto::text`]).
pub use trapdesk_proto::text::printable;

/// How a request ended, kept to finish its header line.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    pub status: Status,
    pub summary: String,
    pub duration_ms: u64,
}

/// One display row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The computer it came from (shown as a prefix in "All computers").
    /// Shared by every row of the computer and by the "All computers" copy of the row.
    pub trapos_id: Arc<str>,
    pub seq: u64,
    pub kind: RowKind,
}

/// Header of a request: who ran what, when.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub request_id: String,
    pub who: trapdesk_core::session::Origin,
    pub kind: String,
    pub summary: String,
    pub at: SystemTime,
}

/// What a row shows. Everything but the stream is behind an `Arc`: rows are held twice (the
/// computer's view and "All computers") and there are up to scrollback × computers of them, so
/// a row stays two words of payload however rich its variant.
#[derive(Debug, Clone, PartialEq)]
pub enum RowKind {
    Header(Arc<Header>),
    Line {
        stream: Stream,
        text: Arc<str>,
    },
    /// The end of a request.
    End {
        request_id: Arc<str>,
        ending: Arc<Ending>,
    },
}

impl Row {
    /// The request a header or an end belongs to.
    pub fn request(&self) -> Option<&str> {
        match &self.kind {
            RowKind::Header(h) => Some(&h.request_id),
            RowKind::End { request_id, .. } => Some(request_id),
            RowKind::Line { .. } => None,
        }
    }

    /// The row's text for search.
    pub fn text(&self) -> &str {
        match &self.kind {
            RowKind::Header(h) => &h.summary,
            RowKind::Line { text, .. } => text,
            RowKind::End { ending, .. } => &ending.summary,
        }
    }
}

/// Rows of one view (one computer, or all), bounded.
#[derive(Debug, Default)]
pub struct Rows {
    pub rows: VecDeque<Row>,
    /// Rows appended in total, so scrolled views stay put while rows arrive.
    pub appended: u64,
}

impl Rows {
    /// Adds `row`, or replaces the row it extends when `replaces` (a sequence number already
    /// held: a partial line that grew). Only then is there a row to look for, so a flood of new
    /// lines costs one push each.
    fn upsert(&mut self, row: Row, replaces: bool, cap: usize) {
        // An extended partial line is within the last few rows; look no further.
        if replaces
            && let Some(old) = self
                .rows
                .iter_mut()
                .rev()
                .take(256)
                .find(|r| r.seq == row.seq && r.trapos_id == row.trapos_id)
        {
            *old = row;
            return;
        }
        self.rows.push_back(row);
        self.appended += 1;
        while self.rows.len() > cap {
            self.rows.pop_front();
        }
    }
}

#[derive(Debug, Default)]
struct Source {
    /// Items with a sequence number up to this are final.
    cursor: u64,
    /// The highest sequence number ingested: an item at or below it replaces a row.
    seen: u64,
}

/// All output the console holds.
#[derive(Debug)]
pub struct OutputModel {
    cap: usize,
    sources: HashMap<String, Source>,
    per: HashMap<String, Rows>,
    all: Rows,
    endings: HashMap<String, Ending>,
    /// The puts folded into one entry each (`tui/puts.rs`).
    puts: Puts,
}

impl OutputModel {
    /// `cap` is the scrollback, in rows, per computer (and for the combined view).
    pub fn new(cap: usize) -> Self {
        OutputModel {
            cap: cap.max(100),
            sources: HashMap::new(),
            per: HashMap::new(),
            all: Rows::default(),
            endings: HashMap::new(),
            puts: Puts::default(),
        }
    }

    /// Where the next pull of this computer starts.
    pub fn cursor(&self, trapos_id: &str) -> u64 {
        self.sources.get(trapos_id).map_or(0, |s| s.cursor)
    }

    /// Takes in items pulled with `output_since(trapos_id, self.cursor(trapos_id))`.
    pub fn ingest(&mut self, trapos_id: &str, items: Vec<OutputItem>) {
        let src = self.sources.entry(trapos_id.to_owned()).or_default();
        let mut open_from: Option<u64> = None;
        let mut last = src.cursor;
        let seen = src.seen;
        let src_key = trapos_id.to_owned();
        let mut rows = Vec::with_capacity(items.len());
        let shared_id: Arc<str> = Arc::from(trapos_id);
        for item in items {
            last = last.max(item.seq);
            if let Fold::Skip = self.fold(trapos_id, &item, item.seq <= seen) {
                continue;
            }
            let kind = match item.entry {
                OutputEntry::Start(start) => header_row(*start),
                OutputEntry::Line {
                    stream,
                    text,
                    complete,
                    ..
                } => {
                    if !complete && open_from.is_none() {
                        open_from = Some(item.seq);
                    }
                    RowKind::Line {
                        stream,
                        text: Arc::from(printable(&text)),
                    }
                }
                OutputEntry::End {
                    request_id,
                    status,
                    summary,
                    duration_ms,
                } => {
                    let ending = Ending {
                        status,
                        summary: printable(&summary),
                        duration_ms,
                    };
                    self.endings.insert(request_id.clone(), ending.clone());
                    RowKind::End {
                        request_id: Arc::from(request_id),
                        ending: Arc::new(ending),
                    }
                }
            };
            rows.push((
                item.seq <= seen,
                Row {
                    trapos_id: shared_id.clone(),
                    seq: item.seq,
                    kind,
                },
            ));
        }
        let src = self.sources.entry(src_key).or_default();
        src.seen = src.seen.max(last);
        src.cursor = match open_from {
            Some(seq) => seq.saturating_sub(1),
            None => last,
        };
        let per = self.per.entry(trapos_id.to_owned()).or_default();
        for (replaces, row) in rows {
            // A look a put took in within this same pull.
            if row.request().is_some_and(|id| self.puts.gone.contains(id)) {
                continue;
            }
            per.upsert(row.clone(), replaces, self.cap);
            self.all.upsert(row, replaces, self.cap);
        }
        self.puts.trim(self.cap * 2);
        if self.endings.len() > self.cap * 2 {
            // Forget endings of requests whose rows have scrolled away long ago.
            self.endings.clear();
        }
    }

    /// The rows of one computer, or of all when `None`.
    pub fn rows(&self, trapos_id: Option<&str>) -> Option<&Rows> {
        match trapos_id {
            Some(id) => self.per.get(id),
            None => Some(&self.all),
        }
    }

    /// How a request ended, once it has.
    pub fn ending(&self, request_id: &str) -> Option<&Ending> {
        self.endings.get(request_id)
    }
}

/// Scroll position of the output pane: rows from the bottom, and whether new rows follow.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scroll {
    /// Rows between the bottom of the view and the newest row.
    pub from_bottom: usize,
    /// `appended` of the rows when `from_bottom` was last set, to keep the view still.
    pub anchor: u64,
    /// The current search, and the row (index from the bottom) of the current match.
    pub search: Option<String>,
    pub hit: Option<usize>,
}

impl Scroll {
    pub fn following(&self) -> bool {
        self.from_bottom == 0
    }

    /// Keeps a scrolled view on the same rows while new ones arrive below.
    pub fn settle(&mut self, rows: &Rows) {
        if self.from_bottom > 0 {
            let grew = rows.appended.saturating_sub(self.anchor) as usize;
            self.from_bottom = (self.from_bottom + grew).min(rows.rows.len().saturating_sub(1));
        }
        self.anchor = rows.appended;
    }

    /// Moves by `delta` rows (positive is up, into the past).
    pub fn by(&mut self, delta: isize, rows: &Rows) {
        self.settle(rows);
        let max = rows.rows.len().saturating_sub(1);
        let v = self.from_bottom as isize + delta;
        self.from_bottom = v.clamp(0, max as isize) as usize;
    }

    pub fn to_end(&mut self, rows: &Rows) {
        self.from_bottom = 0;
        self.anchor = rows.appended;
    }

    pub fn to_top(&mut self, rows: &Rows) {
        self.anchor = rows.appended;
        self.from_bottom = rows.rows.len().saturating_sub(1);
    }

    /// Finds the next match of the search above (older than) the current one, or from the
    /// bottom when there is none; shows it. Returns whether something matched.
    pub fn find(&mut self, rows: &Rows, older: bool) -> bool {
        self.settle(rows);
        let Some(q) = self.search.as_ref().map(|s| s.to_lowercase()) else {
            return false;
        };
        if q.is_empty() {
            return false;
        }
        let n = rows.rows.len();
        let matches = |from_bottom: usize| {
            n.checked_sub(from_bottom + 1)
                .and_then(|i| rows.rows.get(i))
                .is_some_and(|r| r.text().to_lowercase().contains(&q))
        };
        let found = match (self.hit, older) {
            (Some(h), true) => (h + 1..n).find(|&i| matches(i)),
            (Some(h), false) => (0..h).rev().find(|&i| matches(i)),
            (None, _) => (0..n).find(|&i| matches(i)),
        };
        if let Some(h) = found {
            self.hit = Some(h);
            // Put the match a few rows above the bottom so its context shows.
            self.from_bottom = h.saturating_sub(2);
            true
        } else {
            false
        }
    }
}

/// A request's header row, from its start entry.
fn header_row(start: StartEntry) -> RowKind {
    let StartEntry {
        request_id,
        origin,
        kind,
        summary,
        at,
    } = start;
    RowKind::Header(Arc::new(Header {
        request_id,
        who: origin,
        kind: kind.to_string(),
        summary: printable(&summary),
        at,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64, text: &str, complete: bool) -> OutputItem {
        OutputItem {
            seq,
            at_ms: 0,
            entry: OutputEntry::Line {
                request_id: None,
                stream: Stream::Out,
                text: text.into(),
                complete,
            },
        }
    }

    #[test]
    fn computer_text_is_made_printable() {
        assert_eq!(printable("a\t1\tnil"), "a   1   nil");
        assert_eq!(printable("abcd\te"), "abcd    e");
        assert_eq!(printable("\u{1b}[2Jx"), "\u{fffd}[2Jx");
        assert_eq!(printable("plain"), "plain");
    }

    #[test]
    fn partial_lines_are_replaced_not_duplicated() {
        let mut m = OutputModel::new(100);
        m.ingest("1:", vec![line(1, "a", true), line(2, "he", false)]);
        assert_eq!(m.cursor("1:"), 1);
        m.ingest("1:", vec![line(2, "hello", true), line(3, "x", true)]);
        let texts: Vec<&str> = m
            .rows(Some("1:"))
            .map(|r| r.rows.iter().map(Row::text).collect())
            .unwrap_or_default();
        assert_eq!(texts, vec!["a", "hello", "x"]);
        assert_eq!(m.cursor("1:"), 3);
    }
}

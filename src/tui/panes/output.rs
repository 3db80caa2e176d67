//! The Output pane: the selected computer's rows (or everyone's, prefixed by name), only the
//! visible ones, each request under a header saying who ran what, when and how it ended; its
//! scrolling (up, down, sideways, following the end) and the search in it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::component::{Open, PromptKind};
use crate::tui::draw::{clock, cut, millis, name_of, width};
use crate::tui::keymap::{Action, Scope, key_for};
use crate::tui::layout::areas;
use crate::tui::output::{Ending, Header, OutputModel, Row, RowKind, Rows, Scroll};
use crate::tui::theme::Theme;
use trapdesk_core::session::{Origin, OutputItem, Status, Stream};

/// Columns one ← or → moves the output.
const HSCROLL_STEP: usize = 16;

pub struct Output {
    /// Every computer's rows.
    pub model: OutputModel,
    pub scroll: Scroll,
    /// Columns the output is scrolled right (← →), to read long lines that are cut with `…`.
    pub hscroll: usize,
}

impl Output {
    pub fn new(scrollback: usize) -> Output {
        Output {
            model: OutputModel::new(scrollback),
            scroll: Scroll::default(),
            hscroll: 0,
        }
    }

    /// Takes a computer's new output.
    pub fn ingest(&mut self, trapos_id: &str, items: Vec<OutputItem>) {
        self.model.ingest(trapos_id, items);
    }

    /// The rows of `selected` (`None`: everyone's).
    pub fn rows(&self, selected: Option<&str>) -> Option<&Rows> {
        self.model.rows(selected)
    }

    /// Another computer is shown: its rows from the end, following.
    pub fn reselect(&mut self, selected: Option<&str>) {
        self.scroll = Scroll::default();
        if let Some(rows) = self.model.rows(selected) {
            self.scroll.anchor = rows.appended;
        }
    }

    /// Rows of output on a screen of `size` (inside the border).
    pub fn height(size: Rect) -> usize {
        areas(size).map_or(10, |a| a.output.height.saturating_sub(2) as usize)
    }

    /// A wheel turn over the pane.
    pub fn wheel(&mut self, up: bool, selected: Option<&str>) {
        if let Some(rows) = self.model.rows(selected) {
            self.scroll.by(if up { 3 } else { -3 }, rows);
        }
    }

    /// Searches for `q` from the end (an empty `q` ends the search).
    pub fn search(&mut self, q: &str, selected: Option<&str>) -> Outcome {
        self.scroll.hit = None;
        if q.is_empty() {
            self.scroll.search = None;
            return Outcome::Done;
        }
        self.scroll.search = Some(q.to_owned());
        let found = match self.model.rows(selected) {
            Some(rows) => self.scroll.find(rows, true),
            None => false,
        };
        if found {
            Outcome::Done
        } else {
            Outcome::Notify(format!("no match for {q:?}"), true)
        }
    }

    fn row_line<'a>(&self, cx: &DrawCx, r: &'a Row, prefix: bool, width: usize) -> Line<'a> {
        let mut spans = Vec::new();
        if prefix {
            spans.push(Span::styled(
                format!("{} ", cut(&name_of(&r.trapos_id), 12)),
                cx.theme.dim,
            ));
        }
        match &r.kind {
            RowKind::Header(h) => {
                let Header {
                    request_id,
                    who,
                    kind,
                    summary,
                    at,
                } = &**h;
                spans.push(Span::styled("▶ ", cx.theme.accent));
                spans.push(Span::styled(clock(*at, cx.utc_offset), cx.theme.dim));
                spans.push(Span::raw(" "));
                spans.push(Span::styled(
                    who.label().to_owned(),
                    who_style(cx.theme, who).add_modifier(Modifier::BOLD),
                ));
                spans.push(Span::styled(format!(" {kind} "), cx.theme.dim));
                let status = match self.model.ending(request_id) {
                    Some(e) => {
                        Span::styled(format!(" · {}", ending_words(e)), cx.theme.status(e.status))
                    }
                    None => Span::styled(" · running…", cx.theme.accent),
                };
                let used: usize = spans.iter().map(|s| s.width()).sum::<usize>() + status.width();
                spans.push(Span::styled(
                    cut(summary, width.saturating_sub(used).max(8)),
                    cx.theme.text.add_modifier(Modifier::BOLD),
                ));
                spans.push(status);
            }
            RowKind::Line { stream, text } => {
                let style = match stream {
                    Stream::Err => cx.theme.error,
                    Stream::Out => cx.theme.text,
                };
                let room = width.saturating_sub(spans.iter().map(|s| s.width()).sum::<usize>());
                let shown = shift_line(text, self.hscroll, room);
                if shown != **text {
                    spans.push(Span::styled(shown, style));
                } else {
                    spans.push(Span::styled(&**text, style));
                }
            }
            RowKind::End { ending, .. } => {
                let (mark, text) = match ending.status {
                    Status::Ok if ending.summary.is_empty() => ("└ ", "ok".to_owned()),
                    Status::Ok => ("└ → ", ending.summary.clone()),
                    Status::Error | Status::Failed => ("└ ✗ error: ", ending.summary.clone()),
                    // The session's line says who or what cancelled it ("cancelled by the
                    // removal of agent x after 1.1 s"), which the person needs more than
                    // the bare word.
                    Status::Cancelled if ending.summary.starts_with("cancelled by ") => {
                        ("└ ✗ ", ending.summary.clone())
                    }
                    s => (
                        "└ ✗ ",
                        format!("{} after {}", s.as_str(), millis(ending.duration_ms)),
                    ),
                };
                let style = cx.theme.status(ending.status);
                spans.push(Span::styled(mark, style));
                spans.push(Span::styled(text, style));
            }
        }
        Line::from(spans)
    }
}

impl Component for Output {
    fn scope(&self) -> Scope {
        Scope::Output
    }

    fn act(&mut self, action: Action, cx: Cx) -> Outcome {
        let page = Self::height(cx.size).max(2) as isize - 1;
        // A new `/` starts a new search (the old one is still there with n / N until Enter).
        let search = || Outcome::Open(Open::Prompt(PromptKind::Search, String::new()));
        let Some(rows) = self.model.rows(cx.selected) else {
            return if action == Action::Search {
                search()
            } else {
                Outcome::Done
            };
        };
        let scroll = &mut self.scroll;
        match action {
            Action::Up => scroll.by(1, rows),
            Action::Down => scroll.by(-1, rows),
            Action::PageUp => scroll.by(page, rows),
            Action::PageDown => scroll.by(-page, rows),
            Action::Top => scroll.to_top(rows),
            Action::Bottom => scroll.to_end(rows),
            Action::FindNext => {
                scroll.find(rows, true);
            }
            Action::FindPrev => {
                scroll.find(rows, false);
            }
            Action::Search => return search(),
            Action::Left => self.hscroll = self.hscroll.saturating_sub(HSCROLL_STEP),
            Action::Right => self.hscroll = (self.hscroll + HSCROLL_STEP).min(100_000),
            _ => return Outcome::Ignored,
        }
        Outcome::Done
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let name = cx
            .selected
            .map_or_else(|| "all computers".to_owned(), name_of);
        let mut title = vec![Span::raw(format!(" Output · {name} "))];
        if !self.scroll.following() {
            title.push(Span::styled(
                format!(
                    "↑{} ({} follows) ",
                    self.scroll.from_bottom,
                    key_for(Scope::Output, Action::Bottom)
                ),
                cx.theme.warn,
            ));
        }
        if let Some(q) = &self.scroll.search {
            let key = key_for(Scope::Output, Action::Search);
            title.push(Span::styled(format!("{key}{q} "), cx.theme.accent));
        }
        let block = cx.frame(Line::from(title));
        let inner = block.inner(area);
        block.render(area, buf);
        let Some(rows) = self.model.rows(cx.selected).filter(|r| !r.rows.is_empty()) else {
            let hint = if cx.selected.is_some() {
                format!(
                    "No output yet. Type Lua in the editor below and press {}.",
                    key_for(Scope::Global, Action::Run)
                )
            } else {
                "No output yet from any computer.".to_owned()
            };
            Paragraph::new(Line::from(Span::styled(hint, cx.theme.dim)))
                .wrap(Wrap { trim: true })
                .render(inner, buf);
            return None;
        };
        let h = inner.height as usize;
        let n = rows.rows.len();
        let end = n.saturating_sub(self.scroll.from_bottom.min(n.saturating_sub(1)));
        // Scrolled to the top (Home), the screen is filled from the first row down, not one row
        // and blanks.
        let end = end.max(h.min(n));
        let start = end.saturating_sub(h);
        let prefix = cx.selected.is_none();
        let query = self.scroll.search.as_ref().map(|q| q.to_lowercase());
        let hit_index = self.scroll.hit.and_then(|h| n.checked_sub(h + 1));
        let width = inner.width as usize;
        let lines: Vec<Line> = (start..end)
            .filter_map(|i| rows.rows.get(i).map(|r| (i, r)))
            .map(|(i, r)| {
                let mut line = self.row_line(cx, r, prefix, width);
                let is_match = query
                    .as_ref()
                    .is_some_and(|q| r.text().to_lowercase().contains(q));
                if hit_index == Some(i) {
                    line = line.style(cx.theme.selection);
                } else if is_match {
                    line = line.style(Style::default().add_modifier(Modifier::UNDERLINED));
                }
                line
            })
            .collect();
        Paragraph::new(lines).render(inner, buf);
        None
    }
}

fn who_style(theme: &Theme, who: &Origin) -> Style {
    match who {
        Origin::Person | Origin::Cli | Origin::Sync | Origin::Host => theme.person,
        Origin::Agent(_) => theme.agent,
    }
}

/// The outcome words of an ending: `ok 12 ms`, `timeout after 30.0 s`, ...
fn ending_words(e: &Ending) -> String {
    format!("{} {}", e.status.as_str(), millis(e.duration_ms))
}

/// A line of output as it fits `room` columns when scrolled `skip` columns right: a line cut
/// on the right ends in `…`, one scrolled past its start begins with `…`, so no cut is silent.
pub fn shift_line(text: &str, skip: usize, room: usize) -> String {
    // Never scroll a line further than shows its end: → past the longest line still shows
    // each line's last columns.
    let skip = skip.min((width(text) + 1).saturating_sub(room));
    if skip == 0 && width(text) <= room {
        return text.to_owned();
    }
    let mut used = 0;
    let rest: String = text
        .chars()
        .skip_while(|c| {
            let w = unicode_width::UnicodeWidthChar::width(*c).unwrap_or(0);
            used += w;
            used <= skip
        })
        .collect();
    if skip == 0 {
        return cut(&rest, room);
    }
    if rest.is_empty() {
        return "…".to_owned();
    }
    format!("…{}", cut(&rest, room.saturating_sub(1)))
}

//! The Lua editor: the text (a `TextArea`), the history of sent chunks, and its drawing with
//! line numbers, syntax colours for the visible lines and the cursor.
//!
//! The textarea keeps the text and its editing; this draws it, because the highlighted spans
//! come from syntect and the textarea widget has no hook for them.

use std::cell::Cell;

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use ratatui_textarea::TextArea;

use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::draw::{cut, name_of};
use crate::tui::highlight::Highlight;
use crate::tui::history::History;
use crate::tui::keymap::{Action, Scope, key_for};

pub struct Editor {
    pub area: TextArea<'static>,
    pub history: History,
    pub highlight: Highlight,
    /// First line on screen, kept by drawing so the cursor stays visible.
    top: Cell<usize>,
}

impl Editor {
    /// An editor holding `draft`, with the `history` of sent chunks.
    pub fn new(history: History, draft: &str) -> Editor {
        Editor {
            area: editor_with(draft),
            history,
            highlight: Highlight::new(),
            top: Cell::new(0),
        }
    }

    /// The text.
    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    /// Replaces the text (history browsing), cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        self.area = editor_with(text);
    }

    /// Saves history and draft.
    ///
    /// # Errors
    /// When the history file cannot be written.
    pub fn save(&self) -> std::io::Result<()> {
        self.history.save(&self.text())
    }

    /// A wheel turn over the editor moves the cursor.
    pub fn wheel(&mut self, up: bool) {
        self.area.move_cursor(if up {
            ratatui_textarea::CursorMove::Up
        } else {
            ratatui_textarea::CursorMove::Down
        });
    }
}

impl Component for Editor {
    fn scope(&self) -> Scope {
        Scope::Editor
    }

    fn act(&mut self, action: Action, _cx: Cx) -> Outcome {
        match action {
            Action::HistoryOlder => {
                let current = self.text();
                if let Some(text) = self.history.older(&current) {
                    self.set_text(&text);
                }
            }
            Action::HistoryNewer => {
                if let Some(text) = self.history.newer() {
                    self.set_text(&text);
                }
            }
            Action::Undo => {
                self.area.undo();
            }
            Action::Redo => {
                self.area.redo();
            }
            // Esc stays here: the editor is where Esc leads.
            Action::Leave => {}
            _ => return Outcome::Ignored,
        }
        Outcome::Done
    }

    /// Every other key edits (the textarea's Emacs-like bindings).
    fn input(&mut self, key: KeyEvent, _cx: Cx) -> Outcome {
        self.area.input(key);
        Outcome::Done
    }

    /// Draws the editor; returns the cursor position when the editor has focus.
    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let title = title(cx);
        let block = cx.frame(title);
        let inner = block.inner(area);
        block.render(area, buf);
        let lines = self.area.lines();
        let ratatui_textarea::DataCursor(row, col) = self.area.cursor();
        let h = inner.height as usize;
        if h == 0 {
            return None;
        }
        // Scroll just enough to keep the cursor line visible.
        let mut top = self.top.get();
        if row < top {
            top = row;
        } else if row >= top + h {
            top = row + 1 - h;
        }
        self.top.set(top);
        let gutter = lines.len().to_string().len().max(2);
        let visible_end = (top + h).min(lines.len());
        let styled = if cx.theme.color {
            Some(self.highlight.lines(lines, top, visible_end))
        } else {
            None
        };
        let text_w = (inner.width as usize).saturating_sub(gutter + 1);
        let hscroll = col.saturating_sub(text_w.saturating_sub(1));
        let mut out = Vec::with_capacity(h);
        for i in top..visible_end {
            let mut spans = vec![Span::styled(
                format!("{:>gutter$} ", i + 1),
                if i == row {
                    cx.theme.accent
                } else {
                    cx.theme.line_number
                },
            )];
            let pieces: Vec<Span> = match styled.as_ref().and_then(|s| s.get(i - top)) {
                Some(s) => s.clone(),
                None => vec![Span::raw(lines.get(i).cloned().unwrap_or_default())],
            };
            spans.extend(skip_chars(pieces, hscroll));
            out.push(Line::from(spans));
        }
        if lines.len() == 1 && lines.first().is_some_and(String::is_empty) {
            out = vec![Line::from(vec![
                Span::styled(format!("{:>gutter$} ", 1), cx.theme.accent),
                Span::styled(
                    "type Lua here, e.g. print(os.getComputerLabel())",
                    cx.theme.dim.add_modifier(Modifier::ITALIC),
                ),
            ])];
        }
        Paragraph::new(out).render(inner, buf);
        let focused = cx.focused;
        focused.then(|| {
            let line = lines.get(row).map_or("", String::as_str);
            let before: usize = line
                .chars()
                .take(col)
                .skip(hscroll)
                .map(|c| if c == '\t' { 2 } else { 1 })
                .sum();
            (
                inner.x + (gutter + 1 + before) as u16,
                inner.y + (row - top) as u16,
            )
        })
    }
}

/// The title: where a run goes, then the keys that run the editor and a file.
fn title(cx: &DrawCx) -> Line<'static> {
    let targets = cx.targets;
    let to = match targets {
        [] => "no computer selected".to_owned(),
        [one] => name_of(one),
        many => format!("{} marked computers", many.len()),
    };
    Line::from(vec![
        Span::raw(" Lua → "),
        Span::styled(cut(&to, 30), cx.theme.accent),
        Span::raw(" "),
        Span::styled(key_for(Scope::Global, Action::Run), cx.theme.key),
        Span::raw(" run "),
        Span::styled(key_for(Scope::Global, Action::RunFile), cx.theme.key),
        Span::raw(" run file "),
    ])
}

/// Drops the first `n` chars of a run of spans (horizontal scrolling).
fn skip_chars(spans: Vec<Span<'static>>, mut n: usize) -> Vec<Span<'static>> {
    let mut out = Vec::with_capacity(spans.len());
    for s in spans {
        let len = s.content.chars().count();
        if n >= len {
            n -= len;
            continue;
        }
        let rest: String = s.content.chars().skip(n).collect();
        n = 0;
        out.push(Span::styled(rest, s.style));
    }
    out
}

fn editor_with(text: &str) -> TextArea<'static> {
    let lines: Vec<String> = if text.is_empty() {
        vec![String::new()]
    } else {
        text.split('\n').map(str::to_owned).collect()
    };
    let mut ta = TextArea::new(lines);
    ta.set_max_histories(200);
    ta.set_tab_length(2);
    ta.move_cursor(ratatui_textarea::CursorMove::Bottom);
    ta.move_cursor(ratatui_textarea::CursorMove::End);
    ta
}

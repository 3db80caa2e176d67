//! Keys and mouse → state changes and [`Intent`]s. No terminal and no session here, so every
//! binding is unit-testable.

use ratatui::crossterm::event::{
    Event as CtEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent,
    MouseEventKind,
};
use serde_json::json;

use super::app::{App, Focus, Intent, Popup, PromptKind};
use super::layout::{areas, hit};
use super::prompt;

/// Columns one ← or → moves the output.
const HSCROLL_STEP: usize = 16;

impl App {
    /// Any terminal event.
    pub fn on_terminal(&mut self, ev: CtEvent) -> Vec<Intent> {
        match ev {
            CtEvent::Key(k) => self.on_key(k),
            CtEvent::Mouse(m) => self.on_mouse(m),
            CtEvent::Resize(w, h) => {
                self.size = ratatui::layout::Rect::new(0, 0, w, h);
                Vec::new()
            }
            CtEvent::Paste(text) if self.attached && self.popup.is_none() => {
                self.attached_paste(text)
            }
            CtEvent::Paste(text) if self.focus == Focus::Editor && self.popup.is_none() => {
                self.editor.insert_str(text);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// A key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.notice = None;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(intents) = self.approval_key(key) {
            return intents;
        }
        if let Some(popup) = self.popup.clone() {
            return self.popup_key(popup, key);
        }
        if self.attached {
            return self.attached_key(key);
        }
        match key.code {
            super::screen::TOGGLE_KEY => {
                self.toggle_screen();
                return Vec::new();
            }
            super::screen::ATTACH_KEY => {
                self.toggle_attach();
                return Vec::new();
            }
            KeyCode::Char('c') if ctrl => return self.ask_quit(),
            KeyCode::F(5) => return self.send_editor(),
            KeyCode::F(6) => {
                prompt::open(self, PromptKind::RunFile);
                return Vec::new();
            }
            KeyCode::F(1) => {
                self.popup = Some(Popup::Help);
                return Vec::new();
            }
            KeyCode::F(7) => {
                self.open_policy();
                return Vec::new();
            }
            KeyCode::Tab => {
                self.cycle_focus(1);
                return Vec::new();
            }
            KeyCode::BackTab => {
                self.cycle_focus(-1);
                return Vec::new();
            }
            _ => {}
        }
        if self.focus != Focus::Editor {
            match key.code {
                KeyCode::Char('q') => return self.ask_quit(),
                KeyCode::Char('?') => {
                    self.popup = Some(Popup::Help);
                    return Vec::new();
                }
                KeyCode::Char('s') => {
                    self.popup = Some(Popup::Link);
                    return Vec::new();
                }
                KeyCode::Char('t') => {
                    prompt::open(self, PromptKind::Deadline);
                    return Vec::new();
                }
                // In Computers, Esc first clears the filter; the next one leaves the pane.
                KeyCode::Esc if self.focus == Focus::Computers && self.fleet.filtering() => {
                    self.set_filter("");
                    return Vec::new();
                }
                KeyCode::Esc => {
                    self.focus = Focus::Editor;
                    return Vec::new();
                }
                _ => {}
            }
        }
        match self.focus {
            Focus::Editor => self.editor_key(key),
            Focus::Computers => self.computers_key(key),
            Focus::Output => self.output_key(key),
            Focus::Requests => self.requests_key(key),
            Focus::Activity => self.activity_key(key),
        }
    }

    fn cycle_focus(&mut self, step: isize) {
        let n = Focus::ORDER.len() as isize;
        let i = Focus::ORDER
            .iter()
            .position(|f| *f == self.focus)
            .unwrap_or(0) as isize;
        let next = (i + step).rem_euclid(n) as usize;
        self.focus = Focus::ORDER.get(next).copied().unwrap_or(Focus::Editor);
    }

    /// `q` or Ctrl-C: quit at once, or ask first while requests are pending.
    fn ask_quit(&mut self) -> Vec<Intent> {
        if self.pending.is_empty() {
            self.quit = true;
            vec![Intent::Quit]
        } else {
            self.popup = Some(Popup::ConfirmQuit(self.pending.len()));
            Vec::new()
        }
    }

    /// F5: the editor's text as `exec-lua` to the marked computers, else the selected one.
    pub fn send_editor(&mut self) -> Vec<Intent> {
        let code = self.editor_text();
        if code.trim().is_empty() {
            self.notify("the editor is empty: type some Lua first", true);
            return Vec::new();
        }
        let targets = self.targets();
        if targets.is_empty() {
            self.notify(
                "no computer selected: select one in Computers, or mark several with Space",
                true,
            );
            return Vec::new();
        }
        self.history.push(&code);
        self.run_or_confirm(Intent::Start {
            targets,
            kind: "exec-lua".into(),
            payload: json!({ "code": code }),
            deadline: self.run_deadline,
        })
    }

    fn popup_key(&mut self, popup: Popup, key: KeyEvent) -> Vec<Intent> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match popup {
            Popup::Prompt(p) => return prompt::key(self, p, key),
            Popup::Policy => return self.policy_key(key),
            Popup::ConfirmRun(intent, _) => return self.confirm_run_key(*intent, key),
            Popup::ConfirmQuit(_) => match key.code {
                KeyCode::Char('y' | 'Y') | KeyCode::Enter => {
                    self.popup = None;
                    self.quit = true;
                    return vec![Intent::Quit];
                }
                KeyCode::Char('c') if ctrl => {
                    self.popup = None;
                    self.quit = true;
                    return vec![Intent::Quit];
                }
                KeyCode::Char('n' | 'N' | 'q') | KeyCode::Esc => self.popup = None,
                _ => {}
            },
            Popup::Help | Popup::Link | Popup::Detail(_) => match key.code {
                KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q' | '?' | 's') | KeyCode::F(1) => {
                    self.popup = None;
                }
                KeyCode::Up | KeyCode::Char('k') => self.scroll_popup(-1),
                KeyCode::Down | KeyCode::Char('j') => self.scroll_popup(1),
                KeyCode::PageUp => self.scroll_popup(-self.page()),
                KeyCode::PageDown | KeyCode::Char(' ') => self.scroll_popup(self.page()),
                KeyCode::Home | KeyCode::Char('g') => self.popup_scroll = 0,
                KeyCode::End | KeyCode::Char('G') => self.scroll_popup(i32::MAX),
                _ => {}
            },
        }
        Vec::new()
    }

    /// Rows a page key moves a popup.
    fn page(&self) -> i32 {
        i32::from(self.size.height.saturating_sub(8).max(2)) - 1
    }

    /// Scrolls the open popup by `delta` lines, within its text.
    fn scroll_popup(&mut self, delta: i32) {
        let max = i32::from(super::view::popup_max_scroll(self, self.size));
        let top = (i32::from(self.popup_scroll).saturating_add(delta)).clamp(0, max);
        self.popup_scroll = u16::try_from(top).unwrap_or(0);
    }

    fn editor_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Up if ctrl => {
                let current = self.editor_text();
                if let Some(text) = self.history.older(&current) {
                    self.set_editor_text(&text);
                }
            }
            KeyCode::Down if ctrl => {
                if let Some(text) = self.history.newer() {
                    self.set_editor_text(&text);
                }
            }
            KeyCode::Char('z') if ctrl => {
                self.editor.undo();
            }
            KeyCode::Char('y') if ctrl => {
                self.editor.redo();
            }
            KeyCode::Esc => {}
            _ => {
                self.editor.input(key);
            }
        }
        Vec::new()
    }

    fn output_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        let page = self.output_height().max(2) as isize - 1;
        let Some(rows) = self.output.rows(self.selected.as_deref()) else {
            if key.code == KeyCode::Char('/') {
                prompt::open(self, PromptKind::Search);
            }
            return Vec::new();
        };
        let scroll = &mut self.scroll;
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => scroll.by(1, rows),
            KeyCode::Down | KeyCode::Char('j') => scroll.by(-1, rows),
            KeyCode::PageUp => scroll.by(page, rows),
            KeyCode::PageDown => scroll.by(-page, rows),
            KeyCode::Home | KeyCode::Char('g') => scroll.to_top(rows),
            KeyCode::End | KeyCode::Char('G') | KeyCode::Char('f') => scroll.to_end(rows),
            KeyCode::Char('n') => {
                scroll.find(rows, true);
            }
            KeyCode::Char('N') => {
                scroll.find(rows, false);
            }
            KeyCode::Char('/') => prompt::open(self, PromptKind::Search),
            KeyCode::Left | KeyCode::Char('h') => {
                self.output_hscroll = self.output_hscroll.saturating_sub(HSCROLL_STEP);
            }
            KeyCode::Right | KeyCode::Char('l') => {
                self.output_hscroll = (self.output_hscroll + HSCROLL_STEP).min(100_000);
            }
            _ => {}
        }
        Vec::new()
    }

    fn requests_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        let last = self.pending.len().saturating_sub(1);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => {
                self.request_sel = self.request_sel.saturating_sub(1)
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.request_sel = (self.request_sel + 1).min(last)
            }
            KeyCode::Home | KeyCode::Char('g') => self.request_sel = 0,
            KeyCode::End | KeyCode::Char('G') => self.request_sel = last,
            KeyCode::PageUp => self.request_sel = self.request_sel.saturating_sub(self.list_page()),
            KeyCode::PageDown => self.request_sel = (self.request_sel + self.list_page()).min(last),
            KeyCode::Char('c') | KeyCode::Delete => {
                if let Some(p) = self.pending.get(self.request_sel) {
                    return vec![Intent::Cancel(p.request_id.clone())];
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn activity_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        let last = self.calls.len().saturating_sub(1);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.call_sel = self.call_sel.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.call_sel = (self.call_sel + 1).min(last),
            KeyCode::Home | KeyCode::Char('g') => self.call_sel = 0,
            // The last call again: new calls are followed from here on.
            KeyCode::End | KeyCode::Char('G') => self.call_sel = last,
            KeyCode::PageUp => self.call_sel = self.call_sel.saturating_sub(self.list_page()),
            KeyCode::PageDown => self.call_sel = (self.call_sel + self.list_page()).min(last),
            KeyCode::Enter => {
                if let Some(c) = self.calls.get(self.call_sel) {
                    self.popup = Some(Popup::Detail(c.call_id));
                    self.popup_scroll = 0;
                }
            }
            _ => {}
        }
        Vec::new()
    }

    /// Rows a page key moves a list selection.
    pub(crate) fn list_page(&self) -> usize {
        areas(self.size).map_or(5, |a| a.requests.height.saturating_sub(3).max(1) as usize)
    }

    /// Rows of output on screen (inside the border).
    pub fn output_height(&self) -> usize {
        areas(self.size).map_or(10, |a| a.output.height.saturating_sub(2) as usize)
    }

    /// Mouse: a click focuses the pane under it and selects the row; the wheel scrolls.
    pub fn on_mouse(&mut self, m: MouseEvent) -> Vec<Intent> {
        let Some(a) = areas(self.size) else {
            return Vec::new();
        };
        if self.popup.is_some() {
            match m.kind {
                MouseEventKind::ScrollUp => self.scroll_popup(-3),
                MouseEventKind::ScrollDown => self.scroll_popup(3),
                _ => {}
            }
            if matches!(m.kind, MouseEventKind::Down(_))
                && !matches!(self.popup, Some(Popup::Prompt(_)))
            {
                self.popup = None;
            }
            return Vec::new();
        }
        let (col, row) = (m.column, m.row);
        // A click on a key hint in the status line presses that key.
        if matches!(m.kind, MouseEventKind::Down(MouseButton::Left))
            && hit(a.status, col, row)
            && let Some(b) = super::view::statusbar::hint_at(self, col - a.status.x)
        {
            // A hint without a key (the filter's glob) only explains.
            return match b.keys.first() {
                Some(k) => self.on_key(k.event()),
                None => Vec::new(),
            };
        }
        let pane = [
            (a.computers, Focus::Computers),
            (a.requests, Focus::Requests),
            (a.activity, Focus::Activity),
            (a.output, Focus::Output),
            (a.editor, Focus::Editor),
        ]
        .into_iter()
        .find(|(r, _)| hit(*r, col, row));
        let Some((rect, focus)) = pane else {
            return Vec::new();
        };
        let line = row.saturating_sub(rect.y + 1) as usize;
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus = focus;
                match focus {
                    Focus::Computers
                        if row > rect.y
                            && self.computers_top.get() + line < self.fleet.rows.len() =>
                    {
                        self.select_index(self.computers_top.get() + line);
                    }
                    Focus::Requests if row > rect.y => {
                        self.request_sel = line.min(self.pending.len().saturating_sub(1));
                    }
                    Focus::Activity if row > rect.y => {
                        let first = self.calls.len().saturating_sub(rect.height as usize - 2);
                        self.call_sel = (first + line).min(self.calls.len().saturating_sub(1));
                    }
                    _ => {}
                }
            }
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let up = m.kind == MouseEventKind::ScrollUp;
                match focus {
                    Focus::Output => {
                        if let Some(rows) = self.output.rows(self.selected.as_deref()) {
                            self.scroll.by(if up { 3 } else { -3 }, rows);
                        }
                    }
                    Focus::Computers => {
                        let i = self.selected_index();
                        let n = if up {
                            i.saturating_sub(1)
                        } else {
                            (i + 1).min(self.fleet.rows.len().saturating_sub(1))
                        };
                        self.select_index(n);
                    }
                    Focus::Requests => {
                        let last = self.pending.len().saturating_sub(1);
                        self.request_sel = if up {
                            self.request_sel.saturating_sub(1)
                        } else {
                            (self.request_sel + 1).min(last)
                        };
                    }
                    Focus::Activity => {
                        let last = self.calls.len().saturating_sub(1);
                        self.call_sel = if up {
                            self.call_sel.saturating_sub(1)
                        } else {
                            (self.call_sel + 1).min(last)
                        };
                    }
                    Focus::Editor => {
                        let mv = if up {
                            ratatui_textarea::CursorMove::Up
                        } else {
                            ratatui_textarea::CursorMove::Down
                        };
                        self.editor.move_cursor(mv);
                    }
                }
            }
            _ => {}
        }
        Vec::new()
    }
}

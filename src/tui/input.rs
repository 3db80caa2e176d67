//! Keys and mouse → actions → the panes, and what the panes ask for → the app. No terminal and
//! no session here, so every binding is unit-testable.
//!
//! A key goes through the layers of [`App::layers`], top first. In each, the keymap's row for
//! it names an action, which the layer's owner carries out: a pane, a popup, or the app itself
//! for the global keys. A pane that declines (`Outcome::Ignored`) lets the key through to the
//! layer below.

use ratatui::crossterm::event::{
    Event as CtEvent, KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind,
};

use super::app::{App, Popup};
use super::component::{Component, Cx, Focus, Intent, Open, Outcome, PromptKind, Submitted};
use super::keymap::{self, Action, Scope};
use super::layout::{areas, hit};
use trapdesk_proto::protocol::kind::ExecLua;

impl App {
    /// Any terminal event.
    pub fn on_terminal(&mut self, ev: CtEvent) -> Vec<Intent> {
        if let CtEvent::Resize(w, h) = ev {
            self.size = ratatui::layout::Rect::new(0, 0, w, h);
            return Vec::new();
        }
        // Only "Terminal too small" is on screen: nothing acts but quitting (docs/console.md).
        if self.too_small() {
            return match ev {
                CtEvent::Key(k) => events::key_too_small(self, k),
                _ => Vec::new(),
            };
        }
        match ev {
            CtEvent::Key(k) => self.on_key(k),
            CtEvent::Mouse(m) => self.on_mouse(m),
            CtEvent::Paste(text) => events::paste(self, &text),
            _ => Vec::new(),
        }
    }

    /// Terminal events that came together, in order (`events.rs`: a run of keys that only
    /// type into the editor goes in as one insert).
    pub fn on_terminal_batch(&mut self, events: Vec<CtEvent>) -> Vec<Intent> {
        events::batch(self, events)
    }

    /// Whether the terminal is below the smallest size the console draws in.
    pub fn too_small(&self) -> bool {
        areas(self.size).is_none()
    }

    /// The scopes a key is looked up in, top first. The last layer that takes unbound keys
    /// (the approval prompt, a popup, attach mode, the editor) ends the list.
    pub fn layers(&self) -> Vec<Scope> {
        let mut layers = Vec::new();
        // Ctrl-C under an approval asks to quit over it: the question is answered first.
        if matches!(self.popup, Some(Popup::ConfirmQuit(_))) {
            return vec![Scope::ConfirmQuit];
        }
        if self.approval().is_some() {
            layers.push(Scope::Approval);
        }
        if let Some(p) = &self.popup {
            layers.push(self.popups.view(p).scope());
            return layers;
        }
        if self.screen.attached {
            layers.push(Scope::Attached);
            return layers;
        }
        layers.push(Scope::Global);
        layers.push(self.focus.scope());
        if self.focus != Focus::Editor {
            layers.push(Scope::Panes);
        }
        layers
    }

    /// The row a key reaches now, if any (what [`on_key`](Self::on_key) acts on).
    pub fn binding_for(&self, key: &KeyEvent) -> Option<&'static keymap::Binding> {
        self.layers()
            .into_iter()
            .filter_map(|s| keymap::lookup(s, key))
            .find(|b| b.action != Action::Pass)
    }

    /// A key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.notice = None;
        // From the first key on, the selection is the person's: a computer linking later
        // never moves it (F5 must go where the person saw it would).
        self.computers.auto_select = false;
        let targets = self.targets();
        let layers = self.layers();
        for (i, &scope) in layers.iter().enumerate() {
            let bound = keymap::lookup(scope, &key);
            let outcome = match bound {
                Some(b) if b.action == Action::Pass => continue,
                Some(b) => self.act(scope, b.action, &targets),
                None => Outcome::Ignored,
            };
            if outcome != Outcome::Ignored {
                return self.apply(outcome);
            }
            // Unbound here: the approval prompt and popups keep the key (a prompt types it);
            // attach mode sends it; the editor types it.
            let last = i + 1 == layers.len();
            if bound.is_none() && (last || scope == Scope::Approval) {
                let o = self.input(scope, key, &targets);
                return self.apply(o);
            }
        }
        Vec::new()
    }

    /// Carries out `action` of `scope`.
    fn act(&mut self, scope: Scope, action: Action, targets: &[String]) -> Outcome {
        let cx = Cx {
            selected: self.selected.as_deref(),
            targets,
            size: self.size,
            theme: &self.theme,
            settings: &self.settings,
            utc_offset: self.utc_offset,
        };
        match scope {
            Scope::Global | Scope::Panes => self.global(action),
            Scope::Editor => self.editor.act(action, cx),
            // CC's terminate without attaching: input like attach mode's, so the app sends it.
            Scope::Computers if action == Action::Terminate => {
                super::panes::screen::terminate(self.selected.as_deref())
            }
            Scope::Computers => self.computers.act(action, cx),
            Scope::Output => self.output.act(action, cx),
            Scope::Requests => self.requests.act(action, cx),
            Scope::Activity => self.activity.act(action, cx),
            Scope::Approval => self.approvals.act(action, cx),
            Scope::Attached => self.screen.act(action, cx),
            Scope::Prompt
            | Scope::Filter
            | Scope::Scroll
            | Scope::ConfirmQuit
            | Scope::ConfirmRun
            | Scope::Menu
            | Scope::Policy => match self.popup.as_mut() {
                Some(p) => self.popups.of(p).act(action, cx),
                None => Outcome::Ignored,
            },
        }
    }

    /// A key the keymap has no row for in the layer that keeps it.
    fn input(&mut self, scope: Scope, key: KeyEvent, targets: &[String]) -> Outcome {
        let cx = Cx {
            selected: self.selected.as_deref(),
            targets,
            size: self.size,
            theme: &self.theme,
            settings: &self.settings,
            utc_offset: self.utc_offset,
        };
        match scope {
            Scope::Approval => self.approvals.input(key, cx),
            Scope::Attached => self.screen.input(key, cx),
            Scope::Editor => self.editor.input(key, cx),
            // A popup keeps the keys it has no row for (a prompt types them).
            _ => match self.popup.as_mut() {
                Some(p) => self.popups.of(p).input(key, cx),
                None => Outcome::Done,
            },
        }
    }

    /// The keys that work in every pane (and, for `Panes`, every one but the editor).
    fn global(&mut self, action: Action) -> Outcome {
        match action {
            Action::ToggleScreen => {
                self.screen.toggle();
                if self.screen.on {
                    self.device.opened();
                }
                Outcome::Done
            }
            Action::NextDisplay => {
                let opening = !self.screen.on;
                let monitors = self.selected_status().map(|s| s.monitors.clone());
                let o = self
                    .screen
                    .next_display(self.selected.as_deref(), monitors.as_deref());
                if opening && self.screen.on {
                    self.device.opened();
                }
                o
            }
            Action::Attach => self.screen.toggle_attach(self.selected.as_deref()),
            Action::Quit => self.ask_quit(),
            Action::Run => self.send_editor(),
            Action::RunFile => Outcome::Open(Open::Prompt(PromptKind::RunFile, String::new())),
            Action::Help => Outcome::Open(Open::Help),
            Action::Policy => Outcome::Open(Open::Policy),
            Action::Link => Outcome::Open(Open::Link),
            Action::Messages => Outcome::Open(Open::Messages),
            Action::Deadline => {
                let text = self
                    .run_deadline
                    .map(|d| format!("{}", d.as_secs()))
                    .unwrap_or_default();
                Outcome::Open(Open::Prompt(PromptKind::Deadline, text))
            }
            Action::FocusNext => {
                self.cycle_focus(1);
                Outcome::Done
            }
            Action::FocusPrev => {
                self.cycle_focus(-1);
                Outcome::Done
            }
            Action::Leave => Outcome::Focus(Focus::Editor),
            Action::Pause => Outcome::Intents(vec![Intent::Pause(!self.paused)]),
            _ => Outcome::Ignored,
        }
    }

    /// Does what an outcome asks; returns the intents for the session.
    pub(crate) fn apply(&mut self, outcome: Outcome) -> Vec<Intent> {
        match outcome {
            Outcome::Ignored | Outcome::Done => {}
            Outcome::Intents(intents) => return intents,
            Outcome::Run(intent) => return self.run_or_confirm(intent),
            Outcome::Notify(text, error) => self.notify(text, error),
            Outcome::Open(o) => {
                match &o {
                    // What these show is re-read when they open (a rotated secret).
                    Open::Link | Open::Help => self.secret_at = None,
                    Open::Messages => self.popups.messages.opened(),
                    _ => {}
                }
                self.popup = Some(Popup::from(o));
            }
            Outcome::Focus(f) => self.focus = f,
            Outcome::Close => self.popup = None,
            Outcome::Quit => {
                self.popup = None;
                self.quit = true;
                return vec![Intent::Quit];
            }
            Outcome::Confirmed(intent) => {
                if let Intent::Start { targets, .. } = &intent {
                    self.show_all_after_broadcast(targets.len());
                }
                return vec![intent];
            }
            Outcome::Many(outcomes) => {
                return outcomes.into_iter().flat_map(|o| self.apply(o)).collect();
            }
            Outcome::Select(new) => self.select(new),
            Outcome::Submit(s) => return self.submitted(s),
        }
        Vec::new()
    }

    /// A prompt's text, handed to whom it is for.
    fn submitted(&mut self, s: Submitted) -> Vec<Intent> {
        match s {
            Submitted::FilterTyped(text) => {
                self.computers.set_filter(&text);
                return Vec::new();
            }
            Submitted::FilterCleared => self.computers.set_filter(""),
            _ => {}
        }
        self.popup = None;
        let o = match s {
            Submitted::Search(q) => self.output.search(&q, self.selected.as_deref()),
            Submitted::FilterKept => self.computers.filter_kept(),
            Submitted::Deadline(d) => {
                self.run_deadline = d;
                let runs = format!(
                    "your runs ({}, {})",
                    keymap::key_for(Scope::Global, Action::Run),
                    keymap::key_for(Scope::Global, Action::RunFile)
                );
                let text = match d {
                    Some(d) => format!("{runs} now stop after {} s", d.as_secs()),
                    None => format!(
                        "{runs} have no deadline; cancel one with {} in Requests",
                        keymap::key_for(Scope::Requests, Action::Cancel)
                    ),
                };
                Outcome::Notify(text, false)
            }
            Submitted::RunFile(rf) => Outcome::Run(Intent::Start {
                targets: self.targets(),
                body: rf.into(),
                deadline: self.run_deadline,
            }),
            Submitted::FilterTyped(_) | Submitted::FilterCleared => Outcome::Done,
        };
        self.apply(o)
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

    /// `q` or Ctrl-C: quit at once, or ask first while requests are pending. An attached
    /// console (`trapdesk attach`) detaches at once: the host keeps running and with it every
    /// request, so there is nothing to lose by leaving.
    fn ask_quit(&mut self) -> Outcome {
        let n = self.requests.worth_asking();
        if n == 0 || self.attached.is_some() {
            Outcome::Quit
        } else {
            Outcome::Open(Open::ConfirmQuit(n))
        }
    }

    /// F5: the editor's text as `exec-lua` to the marked computers, else the selected one.
    pub fn send_editor(&mut self) -> Outcome {
        let code = self.editor_text();
        if code.trim().is_empty() {
            return Outcome::Notify("the editor is empty: type some Lua first".into(), true);
        }
        let targets = self.targets();
        if targets.is_empty() {
            return Outcome::Notify(
                format!(
                    "no computer selected: select one in Computers, or mark several with {}",
                    keymap::key_for(Scope::Computers, Action::Mark)
                ),
                true,
            );
        }
        self.editor.history.push(&code);
        Outcome::Run(Intent::Start {
            targets,
            body: ExecLua { code, name: None }.into(),
            deadline: self.run_deadline,
        })
    }

    /// Starts `intent` now when it goes to one computer; one for several waits for `y` in a
    /// popup that says how many and which.
    fn run_or_confirm(&mut self, intent: Intent) -> Vec<Intent> {
        let Intent::Start { targets, .. } = &intent else {
            return vec![intent];
        };
        if targets.len() <= 1 {
            return vec![intent];
        }
        let who = self.computers.describe_targets(targets);
        self.apply(Outcome::Open(Open::ConfirmRun(Box::new(intent), who)))
    }

    /// Mouse: a click focuses the pane under it and selects the row; the wheel scrolls.
    pub fn on_mouse(&mut self, m: MouseEvent) -> Vec<Intent> {
        let Some(a) = areas(self.size) else {
            return Vec::new();
        };
        if let Some(p) = self.popup.as_mut() {
            let cx = Cx {
                selected: self.selected.as_deref(),
                targets: &[],
                size: self.size,
                theme: &self.theme,
                settings: &self.settings,
                utc_offset: self.utc_offset,
            };
            let o = self.popups.of(p).mouse(m.kind, cx);
            return self.apply(o);
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
        // A click on a monitor shown in the Screen view touches it there.
        if self.screen.on
            && matches!(m.kind, MouseEventKind::Down(MouseButton::Left))
            && let Some(intents) = self.click_monitor(a.output, col, row)
        {
            return intents;
        }
        // The device pane under the Computers list takes no clicks of its own.
        let (list, device) = super::panes::device::Device::split(
            a.computers,
            self.selected
                .as_deref()
                .and_then(|id| self.computers.list.iter().find(|c| c.trapos_id == id)),
            self.computers.height_twice(),
        );
        if device.is_some_and(|d| hit(d, col, row)) {
            if matches!(m.kind, MouseEventKind::Down(MouseButton::Left)) {
                self.focus = Focus::Computers;
            }
            return Vec::new();
        }
        let pane = [
            (list, Focus::Computers),
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
                if row > rect.y {
                    self.click(focus, line, rect.height);
                }
            }
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                self.wheel(focus, m.kind == MouseEventKind::ScrollUp);
            }
            _ => {}
        }
        Vec::new()
    }

    /// A left click at (`col`, `row`) on a monitor the Screen view shows in `output`: what it
    /// did, or `None` when no monitor is there.
    fn click_monitor(
        &mut self,
        output: ratatui::layout::Rect,
        col: u16,
        row: u16,
    ) -> Option<Vec<Intent>> {
        let monitors = self.selected_status().map_or(&[][..], |s| &s.monitors[..]);
        let (_, scr) = self
            .screen
            .split(output, self.selected.as_deref(), monitors);
        if !hit(scr, col, row) {
            return None;
        }
        let o = self.screen.click(scr, col, row, self.selected.as_deref())?;
        self.focus = Focus::Output;
        Some(self.apply(o))
    }

    /// A click on line `line` inside pane `focus` (`height` rows high).
    fn click(&mut self, focus: Focus, line: usize, height: u16) {
        match focus {
            Focus::Computers => {
                if let Some(o) = self.computers.click(line) {
                    self.apply(o);
                }
            }
            Focus::Requests => self.requests.click(line),
            Focus::Activity => self.activity.click(line, height),
            Focus::Output | Focus::Editor => {}
        }
    }

    /// A wheel turn over pane `focus`.
    fn wheel(&mut self, focus: Focus, up: bool) {
        match focus {
            Focus::Output => self.output.wheel(up, self.selected.as_deref()),
            Focus::Computers => {
                let o = self.computers.wheel(up, self.selected.as_deref());
                self.apply(o);
            }
            Focus::Requests => self.requests.wheel(up),
            Focus::Activity => self.activity.wheel(up),
            Focus::Editor => self.editor.wheel(up),
        }
    }

    /// Rows of output on screen (inside the border).
    pub fn output_height(&self) -> usize {
        super::panes::output::Output::height(self.size)
    }
}

mod events;
#[cfg(test)]
mod tests;

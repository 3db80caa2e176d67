//! The console's state: snapshots pulled from the session, what is selected, focused and
//! scrolled, the editor, and open popups. Key handlers (`keys.rs`) change it and return
//! [`Intent`]s; views (`view/`) only read it.

use std::cell::Cell;
use std::collections::{BTreeSet, HashSet};
use std::time::SystemTime;

use ratatui::layout::Rect;
use ratatui_textarea::TextArea;
use serde_json::Value;
use tokio::time::Instant;

use super::fleet::{Fleet, Row};
use super::highlight::Highlight;
use super::history::History;
use super::hub::{Hold, Hub};
use super::output::{OutputModel, Rows, Scroll};
use super::theme::Theme;
use crate::config::Settings;
use crate::session::{self, ComputerInfo, PendingInfo, ToolCall};

/// Which pane takes keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Editor,
    Computers,
    Output,
    Requests,
    Activity,
}

impl Focus {
    /// Tab order: the editor first, then the panes left to right, top to bottom.
    pub const ORDER: [Focus; 5] = [
        Focus::Editor,
        Focus::Computers,
        Focus::Requests,
        Focus::Activity,
        Focus::Output,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Focus::Editor => "editor",
            Focus::Computers => "computers",
            Focus::Output => "output",
            Focus::Requests => "requests",
            Focus::Activity => "activity",
        }
    }
}

/// A one-line prompt over the screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
    /// Completion candidates or a parse error, shown under the prompt.
    pub hint: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// F6: `path args...` to run with `run-file`.
    RunFile,
    /// `/` in the output pane.
    Search,
    /// `/` in the computers pane: a glob on traposId and label, applied as it is typed.
    Filter,
    /// `t`: the deadline for the person's own runs (F5, F6); empty means none.
    Deadline,
}

/// What covers part of the screen and takes keys first.
#[derive(Debug, Clone, PartialEq)]
pub enum Popup {
    Help,
    /// `s`: the secret and the line to type on a computer to link it.
    Link,
    /// Quit while this many requests are pending?
    ConfirmQuit(usize),
    /// Full arguments and result of a tool call.
    Detail(u64),
    /// The policy in force (F7), with `r` to reload it from the config file.
    Policy,
    /// A run on several computers, waiting for `y`: the request, and who the targets are
    /// ("every online computer matching miner*").
    ConfirmRun(Box<Intent>, String),
    Prompt(Prompt),
}

/// What the person asked for that needs the session; the event loop carries these out, tests
/// inspect them.
#[derive(Debug, Clone, PartialEq)]
pub enum Intent {
    /// Start one request of `kind` with `payload` on each target.
    Start {
        targets: Vec<String>,
        kind: String,
        payload: Value,
        /// `None`: no deadline; the person cancels with `c`.
        deadline: Option<std::time::Duration>,
    },
    /// List `dir` on `target` to complete the last word of the run-file prompt.
    Complete {
        target: String,
        dir: String,
    },
    Cancel(String),
    /// Input for a computer's terminal (attach mode).
    Input {
        target: String,
        steps: Vec<Value>,
    },
    /// Answer the approval prompt of this request.
    Answer(String, session::Answer),
    /// Read the policy again from the config file.
    ReloadPolicy,
    Quit,
}

/// Results of work the loop did for the app, delivered back as events.
#[derive(Debug, Clone, PartialEq)]
pub enum AppMsg {
    /// A message for the status line (an error when `error`).
    Notice { text: String, error: bool },
    /// `list-files` of `dir` answered with these entries (`name`, is a directory).
    Completion {
        dir: String,
        entries: Vec<(String, bool)>,
    },
}

/// The whole console state.
pub struct App {
    pub settings: Settings,
    /// Seconds east of UTC for the clock times shown. The console sets the local offset at
    /// start; tests keep 0 so that snapshots do not depend on the machine's time zone.
    pub utc_offset: i32,
    pub theme: Theme,
    pub computers: Vec<ComputerInfo>,
    pub pending: Vec<PendingInfo>,
    pub calls: Vec<ToolCall>,
    /// Requests waiting for the person's answer; the first is the prompt on screen.
    pub approvals: Vec<session::Approval>,
    /// First line of the approval prompt's code on screen.
    pub approval_scroll: u16,
    /// Its own highlighter, so that showing an agent's code does not churn the editor's cache.
    pub approval_highlight: Highlight,
    /// The policy in force, as lines (F7).
    pub policy_lines: Vec<String>,
    pub output: OutputModel,
    /// The computer the screen is about; `None` is "All computers".
    pub selected: Option<String>,
    /// Until the person picks, the first computer to link gets selected.
    pub auto_select: bool,
    /// Computers marked with Space: F5 sends to each of them.
    pub marked: BTreeSet<String>,
    /// The Computers pane's filter, grouping, counts and rows.
    pub fleet: Fleet,
    /// First row of the Computers pane on screen, kept by drawing for mouse hits.
    pub computers_top: Cell<usize>,
    pub scroll: Scroll,
    pub focus: Focus,
    pub popup: Option<Popup>,
    /// First line of a scrollable popup (the tool call details) on screen.
    pub popup_scroll: u16,
    pub editor: TextArea<'static>,
    pub history: History,
    pub highlight: Highlight,
    /// First editor line on screen, kept by drawing so the cursor stays visible.
    pub editor_top: Cell<usize>,
    pub request_sel: usize,
    pub call_sel: usize,
    /// The deadline of the person's own runs (F5, F6), set with `t`; `None` (the default) runs
    /// until the program ends or the person cancels it: a mining program may take hours.
    pub run_deadline: Option<std::time::Duration>,
    /// Columns the output is scrolled right (← →), to read long lines that are cut with `…`.
    pub output_hscroll: usize,
    pub notice: Option<(String, bool)>,
    /// Clocks the views use, set by the loop (fixed in tests).
    pub now: SystemTime,
    pub now_i: Instant,
    /// Last terminal size, for mouse hit testing.
    pub size: Rect,
    pub quit: bool,
    /// Increments per tick, for the spinner.
    pub ticks: u64,
    /// The Screen view is shown (F9).
    pub screen_on: bool,
    /// Attach mode: keys go to the selected computer (F8 toggles).
    pub attached: bool,
    /// The latest frame of the selected computer's terminal, while the Screen view is shown.
    pub screen: Option<session::screen::ScreenFrame>,
    /// Whether the person's terminal shows 24-bit colour (else the nearest of 256).
    pub truecolor: bool,
    /// The computer whose screen is watched, and the hold that keeps it watched.
    pub(crate) screen_watch: Option<(String, Hold)>,
    pub(crate) dirty_screen: bool,
    dirty_computers: bool,
    dirty_pending: bool,
    dirty_calls: bool,
    dirty_approvals: bool,
    dirty_output: HashSet<String>,
    /// Computers whose earlier output has been pulled once.
    seen: HashSet<String>,
}

impl App {
    /// A fresh console; the editor gets the saved draft and history from the data directory
    /// when `persist`.
    pub fn new(settings: Settings, theme: Theme, persist: bool) -> App {
        let (history, draft) = History::load(persist.then_some(settings.data_dir.as_path()));
        let output = OutputModel::new(settings.scrollback_lines);
        let mut fleet = Fleet::default();
        fleet.rebuild(&[]);
        App {
            theme,
            computers: Vec::new(),
            pending: Vec::new(),
            calls: Vec::new(),
            approvals: Vec::new(),
            approval_scroll: 0,
            approval_highlight: Highlight::new(),
            policy_lines: settings.policy.describe(),
            output,
            selected: None,
            auto_select: true,
            marked: BTreeSet::new(),
            fleet,
            computers_top: Cell::new(0),
            scroll: Scroll::default(),
            focus: Focus::Editor,
            popup: None,
            popup_scroll: 0,
            editor: editor_with(&draft),
            history,
            highlight: Highlight::new(),
            editor_top: Cell::new(0),
            request_sel: 0,
            call_sel: 0,
            run_deadline: None,
            output_hscroll: 0,
            notice: None,
            now: SystemTime::now(),
            now_i: Instant::now(),
            size: Rect::new(0, 0, 80, 24),
            quit: false,
            ticks: 0,
            screen_on: false,
            attached: false,
            screen: None,
            truecolor: true,
            screen_watch: None,
            dirty_screen: false,
            dirty_computers: true,
            dirty_pending: true,
            dirty_calls: true,
            dirty_approvals: true,
            dirty_output: HashSet::new(),
            seen: HashSet::new(),
            utc_offset: 0,
            settings,
        }
    }

    /// The editor's text.
    pub fn editor_text(&self) -> String {
        self.editor.lines().join("\n")
    }

    /// Replaces the editor's text (history browsing), cursor at the end.
    pub fn set_editor_text(&mut self, text: &str) {
        self.editor = editor_with(text);
    }

    /// Saves history and draft.
    ///
    /// # Errors
    /// When the history file cannot be written.
    pub fn save(&self) -> std::io::Result<()> {
        self.history.save(&self.editor_text())
    }

    /// Notes a session event: marks what to pull before the next frame.
    pub fn note(&mut self, ev: &session::Event) {
        use session::Event as E;
        match ev {
            E::Linked { .. } | E::Unlinked { .. } | E::ComputerChanged { .. } => {
                self.dirty_computers = true;
            }
            E::RequestStarted { info } => {
                self.dirty_pending = true;
                self.dirty_computers = true;
                self.dirty_output.insert(info.trapos_id.clone());
            }
            E::Output { trapos_id, .. } => {
                self.dirty_output.insert(trapos_id.clone());
            }
            E::RequestFinished { trapos_id, .. } => {
                self.dirty_pending = true;
                self.dirty_computers = true;
                self.dirty_output.insert(trapos_id.clone());
            }
            E::ToolCallStarted { .. } | E::ToolCallFinished { .. } => self.dirty_calls = true,
            E::ScreenChanged { trapos_id } => {
                if self.selected.as_deref() == Some(trapos_id.as_str()) {
                    self.dirty_screen = true;
                }
            }
            E::ApprovalAsked { .. } | E::ApprovalAnswered { .. } | E::PolicyChanged => {
                self.dirty_approvals = true;
                self.dirty_pending = true;
            }
            // A computer turned away at the door: the person must see it, or a wrong secret
            // looks like a computer that never tried.
            E::Logged { entry } if entry.event == "refused" => {
                let who = entry.who.as_deref().unwrap_or("a computer");
                self.notify(
                    format!(
                        "link refused: {who} {}; press s for the secret and the install line",
                        entry.detail
                    ),
                    true,
                );
            }
            E::Logged { .. } => {}
        }
    }

    /// After a lagged broadcast: pull everything again.
    pub fn mark_all_dirty(&mut self) {
        self.dirty_computers = true;
        self.dirty_pending = true;
        self.dirty_calls = true;
        self.dirty_approvals = true;
        let ids: Vec<String> = self.computers.iter().map(|c| c.trapos_id.clone()).collect();
        self.dirty_output.extend(ids);
    }

    /// Pulls the snapshots that changed since the last frame.
    pub fn pull<H: Hub>(&mut self, session: &H) {
        self.pull_screen(session);
        if self.dirty_computers {
            self.dirty_computers = false;
            let list = session.computers();
            for c in &list {
                // A computer seen for the first time may have output from before we looked.
                // Only the first time: a thousand quiet computers would otherwise cost a
                // thousand output pulls each time any computer changed.
                if !self.seen.contains(&c.trapos_id) {
                    self.seen.insert(c.trapos_id.clone());
                    self.dirty_output.insert(c.trapos_id.clone());
                }
            }
            self.set_computers(list);
        }
        if self.dirty_pending {
            self.dirty_pending = false;
            self.set_pending(session.pending());
        }
        if self.dirty_calls {
            self.dirty_calls = false;
            self.set_calls(session.tool_calls());
        }
        if self.dirty_approvals {
            self.dirty_approvals = false;
            self.set_approvals(session.approvals());
            self.policy_lines = session.policy_lines();
        }
        for id in std::mem::take(&mut self.dirty_output) {
            let items = session.output_since(&id, self.output.cursor(&id));
            if !items.is_empty() {
                self.output.ingest(&id, items);
            }
        }
        if let Some(rows) = self.output.rows(self.selected.as_deref()) {
            self.scroll.settle(rows);
        }
    }

    fn rows_ptr(&self) -> Option<&Rows> {
        self.output.rows(self.selected.as_deref())
    }

    /// The rows of the selected view.
    pub fn rows(&self) -> Option<&Rows> {
        self.rows_ptr()
    }

    pub fn set_computers(&mut self, list: Vec<ComputerInfo>) {
        if self.auto_select
            && self.selected.is_none()
            && let Some(first) = list.iter().find(|c| c.online)
        {
            self.selected = Some(first.trapos_id.clone());
            self.auto_select = false;
        }
        if !self.marked.is_empty() {
            // A set, so that a thousand marks against a thousand computers stays linear.
            let online: HashSet<&str> = list
                .iter()
                .filter(|c| c.online)
                .map(|c| c.trapos_id.as_str())
                .collect();
            self.marked.retain(|m| online.contains(m.as_str()));
        }
        self.computers = list;
        self.fleet.rebuild(&self.computers);
    }

    /// Recomputes the Computers pane's rows after the filter or grouping changed.
    pub fn refresh_fleet(&mut self) {
        self.fleet.rebuild(&self.computers);
    }

    pub fn set_pending(&mut self, list: Vec<PendingInfo>) {
        self.pending = list;
        self.request_sel = self.request_sel.min(self.pending.len().saturating_sub(1));
    }

    pub fn set_calls(&mut self, list: Vec<ToolCall>) {
        let at_end = self.call_sel + 1 >= self.calls.len();
        self.calls = list;
        if at_end {
            // Follow new calls unless the person moved up to look at an older one.
            self.call_sel = self.calls.len().saturating_sub(1);
        }
    }

    /// Whether anything on screen moves by itself (countdowns, spinners).
    pub fn needs_tick(&self) -> bool {
        // An offline computer shows how long it has been gone, so its age moves too.
        !self.pending.is_empty() || self.computers.iter().any(|c| c.running > 0 || !c.online)
    }

    /// Row of the cursor in the computers pane (0 is "All computers", and where a selected
    /// computer the filter hides counts from).
    pub fn selected_index(&self) -> usize {
        self.fleet.cursor_row(self.selected.as_deref()).unwrap_or(0)
    }

    /// After a run on several computers, shows "All computers" so that every result lands in
    /// the pane the person is looking at, not only the selected computer's.
    pub fn show_all_after_broadcast(&mut self, targets: usize) {
        if targets > 1 {
            self.select_index(0);
        }
    }

    /// Moves the cursor to row `index` of the computers pane: "All computers", a group header
    /// (which shows everyone's output, so that F5 never goes to a computer off the cursor) or
    /// a computer.
    pub fn select_index(&mut self, index: usize) {
        self.fleet.cursor_group = None;
        let new = match self.fleet.rows.get(index) {
            Some(Row::Computer(i)) => self.computers.get(*i).map(|c| c.trapos_id.clone()),
            Some(Row::Group(g)) => {
                self.fleet.cursor_group = self.fleet.groups.get(*g).map(|g| g.name.clone());
                None
            }
            Some(Row::All) | None => None,
        };
        self.auto_select = false;
        if new != self.selected {
            self.selected = new;
            self.scroll = Scroll::default();
            if let Some(rows) = self.rows_ptr() {
                let appended = rows.appended;
                self.scroll.anchor = appended;
            }
        }
    }

    /// Where F5 sends: the marked computers, else the selected one.
    pub fn targets(&self) -> Vec<String> {
        if !self.marked.is_empty() {
            return self.marked.iter().cloned().collect();
        }
        self.selected.iter().cloned().collect()
    }

    pub fn notify(&mut self, text: impl Into<String>, error: bool) {
        self.notice = Some((text.into(), error));
    }

    /// Applies a result the loop delivered.
    pub fn on_msg(&mut self, msg: AppMsg) {
        match msg {
            AppMsg::Notice { text, error } => self.notify(text, error),
            AppMsg::Completion { dir, entries } => super::prompt::complete(self, &dir, &entries),
        }
    }
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

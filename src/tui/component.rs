//! What every pane and popup is: it owns its state, handles the actions the keymap gives it,
//! and draws itself. A pane never reaches into another: what it reads of the rest comes in a context,
//! and what it wants of the rest (a popup, the focus, a new selection, work for the session)
//! goes out as an [`Outcome`] that the app carries out.

use std::time::SystemTime;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Borders};
use tokio::time::Instant;

use serde_json::Value;

use super::keymap::{Action, Scope};
use super::theme::Theme;
use trapdesk_core::config::Settings;
use trapdesk_core::session::{self, ToolCall};

/// What a pane reads while it handles a key: the selection (owned by the app, since every pane
/// shows something of it), where runs go, the screen size (for page keys), and what a popup
/// needs to know how far its text scrolls (the theme, settings and time zone it is drawn with).
#[derive(Debug, Clone, Copy)]
pub struct Cx<'a> {
    pub selected: Option<&'a str>,
    /// Where F5 and F6 send: the marked computers, else the selected one.
    pub targets: &'a [String],
    pub size: Rect,
    pub theme: &'a Theme,
    pub settings: &'a Settings,
    pub utc_offset: i32,
}

/// What a pane reads while it draws.
pub struct DrawCx<'a> {
    pub theme: &'a Theme,
    pub settings: &'a Settings,
    pub now: SystemTime,
    pub now_i: Instant,
    pub ticks: u64,
    pub utc_offset: i32,
    pub truecolor: bool,
    pub selected: Option<&'a str>,
    /// Which pane has the keys (its selected row is lit even under a popup).
    pub focus: Focus,
    /// The selected computer, when it is in the list.
    pub selected_computer: Option<&'a trapdesk_core::session::ComputerInfo>,
    /// Where F5 sends: the marked computers, else the selected one.
    pub targets: &'a [String],
    /// The Computers pane's filter line is open for typing.
    pub filter_open: bool,
    /// Whether this pane's frame is lit (it has the keys and no popup covers them).
    pub focused: bool,
}

impl DrawCx<'_> {
    /// A pane's frame, thick and lit when focused.
    pub fn frame<'b>(&self, title: impl Into<Line<'b>>) -> Block<'b> {
        let t = self.theme;
        Block::default()
            .borders(Borders::ALL)
            .border_type(if self.focused {
                BorderType::Thick
            } else {
                BorderType::Plain
            })
            .border_style(if self.focused {
                t.border_focus
            } else {
                t.border
            })
            .title(title.into().style(t.title))
    }
}

/// What handling an action asks of the app.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Not this pane's: the layer under it gets the key.
    Ignored,
    /// Handled inside the pane.
    Done,
    /// Work for the session.
    Intents(Vec<Intent>),
    /// A request to start now on one computer, or to confirm first on several.
    Run(Intent),
    Notify(String, bool),
    Open(Open),
    Focus(Focus),
    /// Close the popup this came from.
    Close,
    /// Quit now (the person said yes, or nothing is pending).
    Quit,
    /// A run the person confirmed for all its targets: it starts, and the screen shows all
    /// computers when there are several.
    Confirmed(Intent),
    /// Each of these, in order.
    Many(Vec<Outcome>),
    /// A prompt's text means this.
    Submit(Submitted),
    /// The cursor of the Computers pane moved: the screen is about this computer now (`None`:
    /// everyone's output).
    Select(Option<String>),
}

/// A pane or a popup.
pub trait Component {
    /// The keymap scope of the pane's own keys.
    fn scope(&self) -> Scope;
    /// An action the keymap found for a key in [`scope`](Self::scope).
    fn act(&mut self, action: Action, cx: Cx) -> Outcome;
    /// A key the keymap has no row for (typing); most panes ignore it.
    fn input(&mut self, _key: ratatui::crossterm::event::KeyEvent, _cx: Cx) -> Outcome {
        Outcome::Ignored
    }
    /// A mouse event while this is the open popup (panes take theirs from the app, which knows
    /// where they are).
    fn mouse(&mut self, _kind: ratatui::crossterm::event::MouseEventKind, _cx: Cx) -> Outcome {
        Outcome::Ignored
    }
    /// Draws the pane; returns where the terminal cursor goes, if it goes here.
    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)>;
}

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
    /// The keymap scope of the focused pane's own keys.
    pub fn scope(self) -> Scope {
        match self {
            Focus::Editor => Scope::Editor,
            Focus::Computers => Scope::Computers,
            Focus::Output => Scope::Output,
            Focus::Requests => Scope::Requests,
            Focus::Activity => Scope::Activity,
        }
    }

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

/// What the person asked for that needs the session; the event loop carries these out, tests
/// inspect them.
#[derive(Debug, Clone, PartialEq)]
pub enum Intent {
    /// Start one request of `body` on each target.
    Start {
        targets: Vec<String>,
        body: trapdesk_proto::protocol::RequestBody,
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
    /// A touch on a monitor of a computer at a cell (1-based), as a player's right-click
    /// (CC's `monitor_touch`): a click on the Screen view while it shows that monitor.
    Touch {
        target: String,
        monitor: String,
        x: u32,
        y: u32,
    },
    /// Answer the approval prompt of this request.
    Answer(String, session::Answer),
    /// Read the policy again from the config file.
    ReloadPolicy,
    /// Stop all agents (`true`), or let them run again (`false`).
    Pause(bool),
    Quit,
}

/// A popup a pane asks the app to open, named by plain data: the app makes its component
/// (`Popup::from`), so no pane depends on another's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Open {
    Help,
    Link,
    Policy,
    /// The message log.
    Messages,
    /// Quit while this many requests are pending?
    ConfirmQuit(usize),
    /// A run on several computers (which, in words), waiting for `y`.
    ConfirmRun(Box<Intent>, String),
    /// A tool call's full arguments and result.
    Detail(Box<ToolCall>),
    /// A prompt of this kind, with this text in it.
    Prompt(PromptKind, String),
    /// The computer menu of attach mode (terminate, reboot, shut down).
    Menu,
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

/// What a prompt's text asks for, once it means something.
#[derive(Debug, Clone, PartialEq)]
pub enum Submitted {
    /// Search the output for this (empty: end the search).
    Search(String),
    /// The deadline of the person's runs.
    Deadline(Option<std::time::Duration>),
    /// Run this file on the targets.
    RunFile(RunFile),
    /// The filter line's text, as typed so far (the filter follows every key).
    FilterTyped(String),
    /// Enter on the filter line: it stays in force.
    FilterKept,
    /// Esc on the filter line: no filter.
    FilterCleared,
}

/// A parsed run-file line is the request's own payload: one type for both.
pub use trapdesk_proto::protocol::kind::RunFile;

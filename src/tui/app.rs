//! The console's state: the panes and popups (each owning its state, keys and drawing), which
//! pane has the keys, the open popup, and what every pane shares (the selection, the theme and settings,
//! the clocks, the status line's notice). Input is dispatched in `input.rs`, the frame is laid
//! out in `view/`; what needs the session goes out as [`Intent`]s. The popups' own types
//! ([`Popup`], [`Popups`]) are in `app/popups.rs`.

use std::time::SystemTime;

use ratatui::layout::Rect;
use tokio::time::Instant;

pub use super::component::{Focus, Intent};
use super::history::History;
use super::hub::Hub;
use super::output::Rows;
use super::panes::activity::Activity;
use super::panes::approval::Approvals;
use super::panes::computers::Computers;
use super::panes::device::Device;
use super::panes::editor::Editor;
use super::panes::output::Output;
use super::panes::policy::Policy;
use super::panes::requests::Requests;
use super::panes::screen::Screen;
use super::theme::Theme;
use trapdesk_core::config::Settings;
use trapdesk_core::session::{self, ComputerInfo, PendingInfo, ToolCall};

pub use super::component::PromptKind;
pub use super::panes::prompt::Prompt;

mod dirty;
mod popups;

use dirty::Dirty;
pub use popups::{Popup, Popups};

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

/// How often a secret on screen is read again.
const SECRET_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The whole console state.
pub struct App {
    pub settings: Settings,
    /// Seconds east of UTC for the clock times shown. The console sets the local offset at
    /// start; tests keep 0 so that snapshots do not depend on the machine's time zone.
    pub utc_offset: i32,
    pub theme: Theme,
    /// The computer the screen is about; `None` is "All computers". Shared by every pane, so
    /// the app owns it and the Computers pane moves it (with [`Outcome::Select`]).
    ///
    /// [`Outcome::Select`]: super::component::Outcome::Select
    pub selected: Option<String>,
    pub focus: Focus,
    pub popup: Option<Popup>,
    pub popups: Popups,
    /// The deadline of the person's own runs (F5, F6), set with `t`; `None` (the default) runs
    /// until the program ends or the person cancels it: a mining program may take hours.
    pub run_deadline: Option<std::time::Duration>,
    pub notice: Option<(String, bool)>,
    /// Clocks the views use, set by the loop (fixed in tests).
    pub now: SystemTime,
    pub now_i: Instant,
    /// Last terminal size, for mouse hit testing.
    pub size: Rect,
    pub quit: bool,
    /// Increments per tick, for the spinner.
    pub ticks: u64,
    /// Whether the person's terminal shows 24-bit colour (else the nearest of 256).
    pub truecolor: bool,
    pub computers: Computers,
    pub output: Output,
    pub requests: Requests,
    pub activity: Activity,
    pub editor: Editor,
    pub screen: Screen,
    /// The selected computer's device, under the Computers list (and its status kept fresh).
    pub device: Device,
    pub approvals: Approvals,
    /// When the secret shown (the `s` popup, the help, the empty screen) was last read; `None`
    /// reads it at the next pull. Another process may rotate it (`trapdesk secret rotate`),
    /// so it is read again while shown, at most once a second.
    pub secret_at: Option<Instant>,
    /// All agents are stopped (F4, `trapdesk pause`): shown on the status line until resumed.
    pub paused: bool,
    /// The name this console answers approvals under ([`Hub::name`]): another console's
    /// answer is said on the status line, this one's own is not.
    pub me: String,
    /// The host this console is attached to (`trapdesk attach`), shown on the editor's
    /// border; `None` in the host's own process.
    pub attached: Option<String>,
    dirty: Dirty,
}

impl App {
    /// A fresh console; the editor gets the saved draft and history from the data directory
    /// when `persist`.
    pub fn new(settings: Settings, theme: Theme, persist: bool) -> App {
        let (history, draft) = History::load(persist.then_some(settings.data_dir.as_path()));
        App {
            theme,
            selected: None,
            focus: Focus::Editor,
            popup: None,
            popups: Popups {
                policy: Policy::new(settings.policy.describe()),
                ..Popups::default()
            },
            run_deadline: None,
            notice: None,
            now: SystemTime::now(),
            now_i: Instant::now(),
            size: Rect::new(0, 0, 80, 24),
            quit: false,
            ticks: 0,
            truecolor: true,
            computers: Computers::default(),
            output: Output::new(settings.scrollback_lines),
            requests: Requests::default(),
            activity: Activity::default(),
            editor: Editor::new(history, &draft),
            screen: Screen::default(),
            device: Device::default(),
            approvals: Approvals::default(),
            secret_at: None,
            paused: false,
            me: super::words::LOCAL_CONSOLE.to_owned(),
            attached: None,
            dirty: Dirty::new(),
            utc_offset: 0,
            settings,
        }
    }

    /// Draws a frame and places the terminal cursor in the editor or prompt (`view/`).
    pub fn draw(&self, frame: &mut ratatui::Frame) {
        super::view::draw(self, frame);
    }

    /// The editor's text.
    pub fn editor_text(&self) -> String {
        self.editor.text()
    }

    /// Replaces the editor's text (history browsing), cursor at the end.
    pub fn set_editor_text(&mut self, text: &str) {
        self.editor.set_text(text);
    }

    /// Saves history and draft.
    ///
    /// # Errors
    /// When the history file cannot be written.
    pub fn save(&self) -> std::io::Result<()> {
        self.editor.save()
    }

    /// Notes a session event: marks what to pull before the next frame.
    pub fn note(&mut self, ev: &session::Event) {
        use session::Event as E;
        let d = &mut self.dirty;
        match ev {
            E::Linked { trapos_id, .. } => {
                d.computers = true;
                // A relinked computer is a new connection that does not know it is watched:
                // the view watches it again and drops the old connection's last frame.
                self.screen.relinked(trapos_id);
            }
            E::Unlinked { .. } | E::ComputerChanged { .. } => {
                d.computers = true;
            }
            E::RequestStarted { info } => {
                self.screen.note_input(info, self.now_i);
                d.pending = true;
                d.computers = true;
                d.output.insert(info.trapos_id.clone());
            }
            E::Output { trapos_id, .. } => {
                d.output.insert(trapos_id.clone());
            }
            E::RequestFinished {
                trapos_id,
                request_id,
                status,
                ..
            } => {
                d.pending = true;
                d.computers = true;
                d.output.insert(trapos_id.clone());
                // Noted before the pull: the request is still in the Requests pane.
                let said = self.notice.as_ref().map(|(text, _)| text.as_str());
                if let Some(text) = self.requests.cancel_ended(request_id, *status, said) {
                    self.notify(text, false);
                }
            }
            E::ToolCallStarted { .. } | E::ToolCallFinished { .. } => d.calls = true,
            E::ScreenChanged { trapos_id, display } => self.screen.changed(trapos_id, display),
            E::ApprovalAsked { .. } | E::ApprovalAnswered { .. } | E::PolicyChanged => {
                d.approvals = true;
                d.pending = true;
            }
            E::Logged { entry } => self.note_logged(entry),
            // With several consoles attached, the first answer wins; the others hear who gave
            // it (their prompt closes on `ApprovalAnswered`).
            E::AnsweredBy {
                by,
                answer,
                what,
                at_ms,
                ..
            } if *by != self.me => {
                let at = super::draw::clock(
                    std::time::UNIX_EPOCH + std::time::Duration::from_millis(*at_ms),
                    self.utc_offset,
                );
                let words = super::words::answer_words(*answer);
                self.notify(format!("{words} by {by} at {at}: {what}"), false);
            }
            E::AnsweredBy { .. } => {}
            E::PauseChanged => d.pause = true,
            // The Screen view's title says when the person has the keyboard; nothing to pull.
            E::KeyboardChanged { .. } => {}
        }
    }

    /// A log entry the person must hear of at once.
    fn note_logged(&mut self, entry: &session::LogEntry) {
        // A computer turned away at the door: the person must see it, or a wrong secret
        // looks like a computer that never tried.
        if entry.is_turned_away() {
            // The secret was perhaps rotated: what `s` shows is read again.
            self.secret_at = None;
            let who = entry.who.as_deref().unwrap_or("a computer");
            self.notify(
                format!(
                    "link refused: {who} {}; press {} for the secret and the install line",
                    entry.detail,
                    super::keymap::key_for(
                        super::keymap::Scope::Panes,
                        super::keymap::Action::Link
                    )
                ),
                true,
            );
        // A computer shut down by CC's hard abort stays off until a player turns it on:
        // the person must hear of it, and of its coming back. (Only that unlink is
        // logged as failed.)
        } else if entry.event == session::LogEvent::Unlinked
            && entry.status == Some(session::Status::Failed)
        {
            self.notify(entry.detail.clone(), true);
        } else if entry.event == session::LogEvent::Back {
            let who = entry.trapos_id.as_deref().unwrap_or("a computer");
            self.notify(format!("{who} is {}", entry.detail), false);
        }
    }

    /// After a lagged broadcast: pull everything again.
    pub fn mark_all_dirty(&mut self) {
        let ids = self.computers.list.iter().map(|c| c.trapos_id.clone());
        self.dirty.all(ids);
    }

    /// Pulls the snapshots that changed since the last frame.
    pub fn pull<H: Hub>(&mut self, hub: &H) {
        if self.shows_secret()
            && self
                .secret_at
                .is_none_or(|t| self.now_i.saturating_duration_since(t) >= SECRET_EVERY)
        {
            self.secret_at = Some(self.now_i);
            self.settings.secret = hub.secret();
        }
        if self.dirty.computers {
            self.dirty.computers = false;
            let list = hub.computers();
            for c in &list {
                // A computer seen for the first time may have output from before we looked.
                // Only the first time: a thousand quiet computers would otherwise cost a
                // thousand output pulls each time any computer changed.
                if !self.dirty.seen.contains(&c.trapos_id) {
                    self.dirty.seen.insert(c.trapos_id.clone());
                    self.dirty.output.insert(c.trapos_id.clone());
                }
            }
            self.set_computers(list);
        }
        // After the list: a status that just came names the monitors the view can show.
        let selected = self.selected.as_deref();
        self.device.pull(hub, selected, self.screen.on, self.now_i);
        let monitors = selected
            .and_then(|id| self.computers.list.iter().find(|c| c.trapos_id == id))
            .and_then(|c| c.status.as_ref())
            .map(|s| s.monitors.as_slice());
        self.screen.pull(hub, selected, monitors);
        if self.screen.went() {
            // The monitor shown was taken away: which are left is asked at the next pull.
            self.device.recheck(self.now_i);
        }
        if self.dirty.pending {
            self.dirty.pending = false;
            self.set_pending(hub.pending());
            // An open Quit question counts what is pending now, not when it opened (a call
            // refused with `n` under it is no longer pending).
            let n = self.requests.worth_asking();
            if let Some(Popup::ConfirmQuit(q)) = &mut self.popup {
                q.pending = n;
            }
        }
        if self.dirty.pause {
            self.dirty.pause = false;
            self.paused = hub.paused();
        }
        if self.dirty.calls {
            self.dirty.calls = false;
            self.set_calls(hub.tool_calls());
        }
        if self.dirty.approvals {
            self.dirty.approvals = false;
            self.set_approvals(hub.approvals());
            self.popups.policy.lines = hub.policy_lines();
            self.popups.policy.source = Some(hub.policy_source());
        }
        for id in std::mem::take(&mut self.dirty.output) {
            let items = hub.output_since(&id, self.output.model.cursor(&id));
            if !items.is_empty() {
                self.output.ingest(&id, items);
            }
        }
        let output = &mut self.output;
        if let Some(rows) = output.model.rows(self.selected.as_deref()) {
            output.scroll.settle(rows);
        }
    }

    /// The selected computer's last status (peripherals, monitors, a turtle's fuel), if one
    /// came.
    pub fn selected_status(&self) -> Option<&session::DeviceStatus> {
        let id = self.selected.as_deref()?;
        self.computers
            .list
            .iter()
            .find(|c| c.trapos_id == id)?
            .status
            .as_ref()
    }

    /// Whether the secret is on screen: the `s` popup, the help, or the empty screen that
    /// says how to link.
    pub fn shows_secret(&self) -> bool {
        matches!(self.popup, Some(Popup::Link | Popup::Help)) || self.computers.list.is_empty()
    }

    /// The rows of the selected view.
    pub fn rows(&self) -> Option<&Rows> {
        self.output.rows(self.selected.as_deref())
    }

    pub fn set_computers(&mut self, list: Vec<ComputerInfo>) {
        if let Some(first) = self.computers.set(list, self.selected.as_deref()) {
            self.select(Some(first));
        }
    }

    /// Recomputes the Computers pane's rows after the filter or grouping changed.
    pub fn refresh_computers(&mut self) {
        self.computers.rebuild();
    }

    /// Sets the Computers pane's filter (empty clears it).
    pub fn set_filter(&mut self, text: &str) {
        self.computers.set_filter(text);
    }

    pub fn set_pending(&mut self, list: Vec<PendingInfo>) {
        self.requests.set(list);
    }

    pub fn set_calls(&mut self, list: Vec<ToolCall>) {
        if let Some(Popup::Detail(d)) = &mut self.popup {
            d.refresh(&list);
        }
        self.activity.set(list);
    }

    pub fn set_approvals(&mut self, list: Vec<session::Approval>) {
        self.approvals.set(list);
    }

    /// The approval prompt on screen, if any.
    pub fn approval(&self) -> Option<&session::Approval> {
        self.approvals.first()
    }

    /// Whether anything on screen moves by itself (countdowns, spinners).
    pub fn needs_tick(&self) -> bool {
        // An offline computer shows how long it has been gone, so its age moves too.
        !self.requests.pending.is_empty()
            // The Screen view asks the status again every few seconds (its monitors).
            || self.screen.on
            // The secret shown is read again while it is on screen.
            || self.shows_secret()
            || self
                .computers
                .list
                .iter()
                .any(|c| c.running > 0 || !c.online)
    }

    /// Row of the cursor in the computers pane (0 is "All computers", and where a selected
    /// computer the filter hides counts from).
    pub fn selected_index(&self) -> usize {
        self.computers.selected_index(self.selected.as_deref())
    }

    /// After a run on several computers, shows "All computers" so that every result lands in
    /// the pane the person is looking at, not only the selected computer's.
    pub fn show_all_after_broadcast(&mut self, targets: usize) {
        if targets > 1 {
            self.select_index(0);
        }
    }

    /// Moves the cursor to row `index` of the computers pane.
    pub fn select_index(&mut self, index: usize) {
        let o = self.computers.select_index(index);
        self.apply(o);
    }

    /// The computer the screen is about is now `new`: the output shows its rows.
    pub(crate) fn select(&mut self, new: Option<String>) {
        if new != self.selected {
            self.selected = new;
            self.output.reselect(self.selected.as_deref());
        }
    }

    /// Whether the Computers pane's filter line is open for typing.
    pub fn editing_filter(&self) -> bool {
        matches!(&self.popup, Some(Popup::Prompt(p)) if p.kind == PromptKind::Filter)
    }

    /// Where F5 sends: the marked computers, else the selected one.
    pub fn targets(&self) -> Vec<String> {
        self.computers.targets(self.selected.as_deref())
    }

    /// Shows a message on the status line, and keeps it whole in the message log.
    pub fn notify(&mut self, text: impl Into<String>, error: bool) {
        let text = text.into();
        self.popups.messages.push(self.now, text.clone(), error);
        self.notice = Some((text, error));
    }

    /// Applies a result the loop delivered.
    pub fn on_msg(&mut self, msg: AppMsg) {
        match msg {
            AppMsg::Notice { text, error } => self.notify(text, error),
            AppMsg::Completion { dir, entries } => {
                if let Some(Popup::Prompt(p)) = self.popup.as_mut() {
                    p.complete(&dir, &entries);
                }
            }
        }
    }
}

impl ratatui::widgets::Widget for &App {
    fn render(self, area: Rect, buf: &mut ratatui::buffer::Buffer) {
        super::view::render(self, area, buf);
    }
}

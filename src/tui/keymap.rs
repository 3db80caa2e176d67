//! Every key binding of the console, one row each: the key, where it applies, the action it
//! stands for, its line in the help, and its hint on the status bar. Key handling, the help
//! popup (`?` / F1) and the status bar all read [`BINDINGS`], so a key is spelled once.
//!
//! A key is looked up in the layers on top of each other (an approval prompt, a popup, attach
//! mode, then the global keys, the focused pane's, and those of every pane but the editor), and
//! the first row that matches wins; a pane may decline an action (`Outcome::Ignored`) so the
//! layer under it gets the key.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

mod bindings;
pub use bindings::BINDINGS;

/// Where a row applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Anywhere outside popups, attach mode and the approval prompt.
    Global,
    /// Every pane but the editor, where these letters would be typed.
    Panes,
    Editor,
    Computers,
    Output,
    Requests,
    Activity,
    /// The approval prompt, over everything.
    Approval,
    /// The help, the link popup and a tool call's details: read and close.
    Scroll,
    ConfirmQuit,
    ConfirmRun,
    Policy,
    /// The run-file, search and deadline prompts.
    Prompt,
    /// The Computers pane's filter line.
    Filter,
    /// Attach mode: every key but these goes to the computer.
    Attached,
    /// The computer menu (Esc while attached): terminate, reboot, shut down.
    Menu,
}

/// What a key does; the scope it was found in says to whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Run,
    RunFile,
    ToggleScreen,
    /// The Screen view's next display: the terminal, then each monitor, then the terminal.
    NextDisplay,
    Attach,
    FocusNext,
    FocusPrev,
    Quit,
    Help,
    Policy,
    /// The message log: every status-line message, whole.
    Messages,
    Link,
    Deadline,
    /// Leave a pane for the editor.
    Leave,
    HistoryOlder,
    HistoryNewer,
    Undo,
    Redo,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Left,
    Right,
    Mark,
    MarkShown,
    Group,
    Fold,
    Filter,
    ClearFilter,
    Search,
    FindNext,
    FindPrev,
    Cancel,
    Details,
    Yes,
    No,
    Always,
    Close,
    Reload,
    Complete,
    Submit,
    Erase,
    /// A prompt: erase the word before the cursor (Ctrl-W).
    EraseWord,
    /// A prompt: erase from the start of the line to the cursor (Ctrl-U).
    EraseLine,
    /// CC's terminate (Ctrl-T held) to the attached or selected computer.
    Terminate,
    Reboot,
    Shutdown,
    /// Esc while attached: the computer menu.
    Menu,
    /// Stop all agents, or let them run again.
    Pause,
    /// Characters typed into a prompt (no key of its own: every character).
    Type,
    /// The approval prompt lets this key through to the layers under it.
    Pass,
    /// Clicks and the wheel (no key).
    Mouse,
}

/// A key: its code, and whether Ctrl must be held. A key without Ctrl matches whatever else is
/// held, so `G` (Shift-g) is just `G`; a Ctrl row is listed before the plain one of its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
}

impl Key {
    pub fn matches(self, key: &KeyEvent) -> bool {
        key.code == self.code && (!self.ctrl || key.modifiers.contains(KeyModifiers::CONTROL))
    }

    /// The key event a click on this key's hint stands for.
    pub fn event(self) -> KeyEvent {
        let mods = if self.ctrl {
            KeyModifiers::CONTROL
        } else {
            KeyModifiers::NONE
        };
        KeyEvent::new(self.code, mods)
    }
}

impl Key {
    /// The key as the console writes it in titles and hint lines: `F5`, `Esc`, `↑`, `y`,
    /// `Ctrl-C`.
    pub fn name(self) -> String {
        let base = match self.code {
            KeyCode::F(n) => format!("F{n}"),
            KeyCode::Char(' ') => "Space".to_owned(),
            KeyCode::Char(c) if self.ctrl => c.to_ascii_uppercase().to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Esc => "Esc".to_owned(),
            KeyCode::Enter => "Enter".to_owned(),
            KeyCode::Tab => "Tab".to_owned(),
            KeyCode::BackTab => "Shift-Tab".to_owned(),
            KeyCode::Backspace => "Backspace".to_owned(),
            KeyCode::Delete => "Del".to_owned(),
            KeyCode::Up => "↑".to_owned(),
            KeyCode::Down => "↓".to_owned(),
            KeyCode::Left => "←".to_owned(),
            KeyCode::Right => "→".to_owned(),
            KeyCode::PageUp => "PgUp".to_owned(),
            KeyCode::PageDown => "PgDn".to_owned(),
            KeyCode::Home => "Home".to_owned(),
            KeyCode::End => "End".to_owned(),
            other => format!("{other:?}"),
        };
        if self.ctrl {
            format!("Ctrl-{base}")
        } else {
            base
        }
    }
}

/// A line of the help: the keys as written there, and what they do. Several rows share one.
pub type Help = (&'static str, &'static str);

/// A status bar hint: the key as written there, what it does, and on which bars it shows.
#[derive(Debug, Clone)]
pub struct Hint {
    pub key: &'static str,
    pub what: &'static str,
    pub on: &'static [Scope],
}

/// One binding.
#[derive(Debug, Clone)]
pub struct Binding {
    pub keys: &'static [Key],
    pub scope: Scope,
    pub action: Action,
    pub help: Help,
    pub hint: Option<Hint>,
}

#[cfg(test)]
thread_local! {
    /// A table a unit test put in place of [`BINDINGS`] on its own thread, to show that what
    /// is on screen follows the table.
    static TEST_TABLE: std::cell::Cell<Option<&'static [Binding]>> =
        const { std::cell::Cell::new(None) };
}

/// The table every lookup reads: [`BINDINGS`] (or, in a unit test, the one it put in place).
fn table() -> &'static [Binding] {
    #[cfg(test)]
    if let Some(t) = TEST_TABLE.with(std::cell::Cell::get) {
        return t;
    }
    BINDINGS
}

/// Runs `f` with `rows` in place of [`BINDINGS`] on this thread.
#[cfg(test)]
pub(crate) fn with_table<R>(rows: Vec<Binding>, f: impl FnOnce() -> R) -> R {
    let rows: &'static [Binding] = Box::leak(rows.into_boxed_slice());
    TEST_TABLE.with(|t| t.set(Some(rows)));
    let r = f();
    TEST_TABLE.with(|t| t.set(None));
    r
}

/// The names of the keys of `action` in `scope`, in the order of the rows and their keys: what
/// titles and hint lines write, so that a binding changed in the table changes them too. A
/// capital that only repeats its small letter (`Y` beside `y`) is left out, as the screen
/// never spells both.
pub fn keys_for(scope: Scope, action: Action) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let keys = table()
        .iter()
        .filter(|b| b.scope == scope && b.action == action)
        .flat_map(|b| b.keys.iter());
    for key in keys {
        let twin = match key.code {
            KeyCode::Char(c) if !key.ctrl && c.is_ascii_uppercase() => {
                names.contains(&c.to_ascii_lowercase().to_string())
            }
            _ => false,
        };
        let name = key.name();
        if !twin && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The first key of `action` in `scope`, as titles write it (empty when the table has none,
/// which shows as a gap on screen rather than a key that does nothing).
pub fn key_for(scope: Scope, action: Action) -> String {
    keys_for(scope, action)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// The first `n` keys of `action` in `scope` (`y`, `Enter`), for a line that names two.
pub fn first_keys(scope: Scope, action: Action, n: usize) -> Vec<String> {
    keys_for(scope, action).into_iter().take(n).collect()
}

/// The first row of `scope` that `key` matches.
pub fn lookup(scope: Scope, key: &KeyEvent) -> Option<&'static Binding> {
    table()
        .iter()
        .filter(|b| b.scope == scope)
        .find(|b| b.keys.iter().any(|k| k.matches(key)))
}

/// The help's lines: each line once, in the order of the rows.
pub fn help() -> Vec<Help> {
    let mut lines: Vec<Help> = Vec::new();
    for b in table() {
        if !lines.contains(&b.help) {
            lines.push(b.help);
        }
    }
    lines
}

/// The rows the status bar shows on `bar`, in order.
pub fn hints(bar: Scope) -> impl Iterator<Item = &'static Binding> {
    table()
        .iter()
        .filter(move |b| b.hint.as_ref().is_some_and(|h| h.on.contains(&bar)))
}

#[cfg(test)]
mod tests;

//! The binding table itself: [`BINDINGS`], one row a key, with the help lines and hints its
//! rows carry and the short constructors that keep each row on a few lines. What reads the
//! table (lookups, key names, the help and the status bar) is in `src/tui/keymap.rs`.

use ratatui::crossterm::event::KeyCode;

use super::{Action, Binding, Help, Hint, Key, Scope};

pub(super) const fn k(code: KeyCode) -> Key {
    Key { code, ctrl: false }
}
pub(super) const fn c(ch: char) -> Key {
    k(KeyCode::Char(ch))
}
pub(super) const fn ctrl(code: KeyCode) -> Key {
    Key { code, ctrl: true }
}

const fn row(keys: &'static [Key], scope: Scope, action: Action, help: Help) -> Binding {
    Binding {
        keys,
        scope,
        action,
        help,
        hint: None,
    }
}

const fn hinted(
    keys: &'static [Key],
    scope: Scope,
    action: Action,
    help: Help,
    hint: (&'static str, &'static str, &'static [Scope]),
) -> Binding {
    Binding {
        keys,
        scope,
        action,
        help,
        hint: Some(Hint {
            key: hint.0,
            what: hint.1,
            on: hint.2,
        }),
    }
}

const RUN: Help = (
    "F5",
    "run the editor's Lua on the selected (or marked) computers",
);
const FILE: Help = (
    "F6",
    "run a file with arguments (\"a b\" is one); Tab completes",
);
const SCREEN: Help = (
    "F9",
    "Screen view: the selected computer's own terminal, live",
);
const NEXT_DISPLAY: Help = (
    "F3",
    "Screen view: next display (terminal, monitors); clicks touch a monitor",
);
const ATTACH: Help = (
    "F8",
    "attach: keys go to the computer (CC has no Esc); F8 again detaches",
);
const TERMINATE: Help = (
    "Ctrl-T / Esc",
    "attached: terminate · Esc: menu (terminate, reboot, shut down)",
);
const TERMINATE_SELECTED: Help = (
    "T",
    "computers: terminate the selected one's program, not attached",
);
const PAUSE: Help = (
    "F4",
    "stop all agents: refuse their runs and writes; F4 again resumes",
);
const PROMPT_EDIT: Help = (
    "Ctrl-A Ctrl-E ← →",
    "prompts: start, end, move; Ctrl-U Ctrl-W erase; Ctrl-C closes",
);
const TAB: Help = ("Tab / Shift-Tab", "move focus between panes");
const HISTORY: Help = ("Ctrl-↑ / Ctrl-↓", "editor: older / newer sent chunk");
const UNDO: Help = ("Ctrl-Z / Ctrl-Y", "editor: undo / redo");
const MOVE: Help = (
    "↑ ↓ j k",
    "move the selection; scroll output and tool call details",
);
const MARK: Help = (
    "Space",
    "computers: mark / unmark for F5 (on a group: all of it)",
);
const FILTER: Help = (
    "/  a  z",
    "computers: filter (* ? globs), mark all shown, group (← → fold)",
);
const PAGE: Help = (
    "PgUp PgDn Home End",
    "output: scroll; End (or f) follows new output again",
);
const SEARCH: Help = ("/  n  N", "output: search, next older, next newer match");
const CANCEL: Help = ("c / Delete", "requests: cancel the selected request");
const DETAILS: Help = ("Enter", "activity: a tool call's full arguments and result");
const POLICY: Help = ("F7", "the policy (who may do what where); r reloads it");
const APPROVAL: Help = (
    "y / n / a",
    "approval prompt: run, refuse, allow that agent there for the session",
);
const LINK: Help = (
    "s",
    "the secret and the line that links a computer (outside the editor)",
);
const DEADLINE: Help = (
    "t",
    "deadline for your F5/F6 runs (default none: c cancels)",
);
const MESSAGES: Help = (
    "F2 / m",
    "messages: every status-line message whole (m outside the editor)",
);
const ESC: Help = ("Esc", "close a popup; leave a pane for the editor");
const HELP: Help = ("F1 / ?", "this help (? outside the editor)");
const QUIT: Help = (
    "Ctrl-C / q",
    "quit (q outside the editor); asks if requests pending",
);
const MOUSE: Help = (
    "mouse",
    "click: select, focus, press a key hint; wheel scrolls",
);

use Action as A;
use KeyCode as K;
use Scope as S;

/// The bindings. The help lists their lines in the order they first appear here, and each bar
/// shows its hints in the order of the rows, so the order of rows is the order on screen.
pub static BINDINGS: &[Binding] = &[
    hinted(
        &[k(K::F(5))],
        S::Global,
        A::Run,
        RUN,
        ("F5", "run", &[S::Editor]),
    ),
    hinted(
        &[k(K::F(6))],
        S::Global,
        A::RunFile,
        FILE,
        ("F6", "file", &[S::Editor]),
    ),
    row(&[k(K::F(9))], S::Global, A::ToggleScreen, SCREEN),
    // F3 is free in every scope and no terminal or CC program the console runs beside wants
    // it; attached, it goes to the computer like every key but F8 and Esc. Its hint shows only
    // while the Screen view is open (view/statusbar.rs).
    hinted(
        &[k(K::F(3))],
        S::Global,
        A::NextDisplay,
        NEXT_DISPLAY,
        (
            "F3",
            "display",
            &[S::Editor, S::Computers, S::Output, S::Requests, S::Activity],
        ),
    ),
    row(&[k(K::F(8))], S::Global, A::Attach, ATTACH),
    row(&[k(K::F(8))], S::Attached, A::Attach, ATTACH),
    row(&[k(K::Esc)], S::Attached, A::Menu, TERMINATE),
    // One Ctrl-T is CC's terminate: a terminal reports no held keys, so the game's "hold
    // Ctrl-T for a second" cannot be asked for. Ctrl-R and Ctrl-S go to the computer as they
    // are (`edit` opens its menu on Ctrl); reboot and shutdown are in the menu.
    row(&[ctrl(c('t').code)], S::Attached, A::Terminate, TERMINATE),
    row(&[c('t'), c('T')], S::Menu, A::Terminate, TERMINATE),
    row(&[c('r'), c('R')], S::Menu, A::Reboot, TERMINATE),
    row(&[c('s'), c('S')], S::Menu, A::Shutdown, TERMINATE),
    row(&[k(K::Esc), c('q')], S::Menu, A::Close, TERMINATE),
    row(&[k(K::BackTab)], S::Global, A::FocusPrev, TAB),
    hinted(
        &[ctrl(K::Up)],
        S::Editor,
        A::HistoryOlder,
        HISTORY,
        ("^↑↓", "history", &[S::Editor]),
    ),
    row(&[ctrl(K::Down)], S::Editor, A::HistoryNewer, HISTORY),
    hinted(
        &[k(K::Tab)],
        S::Global,
        A::FocusNext,
        TAB,
        ("Tab", "panes", &[S::Editor]),
    ),
    row(&[ctrl(c('z').code)], S::Editor, A::Undo, UNDO),
    row(&[ctrl(c('y').code)], S::Editor, A::Redo, UNDO),
    // Computers.
    row(&[k(K::Up), c('k')], S::Computers, A::Up, MOVE),
    hinted(
        &[k(K::Down), c('j')],
        S::Computers,
        A::Down,
        MOVE,
        ("↑↓", "select", &[S::Computers]),
    ),
    hinted(
        &[c(' ')],
        S::Computers,
        A::Mark,
        MARK,
        ("Space", "mark", &[S::Computers]),
    ),
    hinted(
        &[c('/')],
        S::Computers,
        A::Filter,
        FILTER,
        ("/", "filter", &[S::Computers]),
    ),
    hinted(
        &[c('a')],
        S::Computers,
        A::MarkShown,
        FILTER,
        ("a", "mark shown", &[S::Computers]),
    ),
    hinted(
        &[c('z')],
        S::Computers,
        A::Group,
        FILTER,
        ("z", "group", &[S::Computers]),
    ),
    // Enter folds a group header; on a computer it goes back to the editor.
    row(&[k(K::Enter)], S::Computers, A::Fold, FILTER),
    row(&[k(K::Left), c('h')], S::Computers, A::Left, FILTER),
    row(&[k(K::Right), c('l')], S::Computers, A::Right, FILTER),
    row(&[c('T')], S::Computers, A::Terminate, TERMINATE_SELECTED),
    // The filter line (it takes every character typed).
    hinted(
        &[],
        S::Filter,
        A::Type,
        FILTER,
        ("* ?", "glob", &[S::Filter]),
    ),
    hinted(
        &[k(K::Enter)],
        S::Filter,
        A::Submit,
        FILTER,
        ("Enter", "keep", &[S::Filter]),
    ),
    hinted(
        &[k(K::Esc)],
        S::Filter,
        A::ClearFilter,
        FILTER,
        ("Esc", "clear", &[S::Filter]),
    ),
    row(&[k(K::Backspace)], S::Filter, A::Erase, FILTER),
    // Output.
    row(&[k(K::Up), c('k')], S::Output, A::Up, MOVE),
    row(&[k(K::Down), c('j')], S::Output, A::Down, MOVE),
    hinted(
        &[k(K::PageUp)],
        S::Output,
        A::PageUp,
        PAGE,
        ("↑↓ PgUp", "scroll", &[S::Output]),
    ),
    row(&[k(K::PageDown)], S::Output, A::PageDown, PAGE),
    row(&[k(K::Home), c('g')], S::Output, A::Top, PAGE),
    hinted(
        &[k(K::End), c('G'), c('f')],
        S::Output,
        A::Bottom,
        PAGE,
        ("End", "follow", &[S::Output]),
    ),
    row(&[k(K::Left), c('h')], S::Output, A::Left, PAGE),
    row(&[k(K::Right), c('l')], S::Output, A::Right, PAGE),
    hinted(
        &[c('/')],
        S::Output,
        A::Search,
        SEARCH,
        ("/", "search", &[S::Output]),
    ),
    hinted(
        &[c('n')],
        S::Output,
        A::FindNext,
        SEARCH,
        ("n N", "next", &[S::Output]),
    ),
    row(&[c('N')], S::Output, A::FindPrev, SEARCH),
    // The page keys of the lists.
    row(&[k(K::Home), c('g')], S::Computers, A::Top, PAGE),
    row(&[k(K::End), c('G')], S::Computers, A::Bottom, PAGE),
    row(&[k(K::PageUp)], S::Computers, A::PageUp, PAGE),
    row(&[k(K::PageDown)], S::Computers, A::PageDown, PAGE),
    // Requests.
    row(&[k(K::Up), c('k')], S::Requests, A::Up, MOVE),
    hinted(
        &[k(K::Down), c('j')],
        S::Requests,
        A::Down,
        MOVE,
        ("↑↓", "select", &[S::Requests]),
    ),
    row(&[k(K::Home), c('g')], S::Requests, A::Top, PAGE),
    row(&[k(K::End), c('G')], S::Requests, A::Bottom, PAGE),
    row(&[k(K::PageUp)], S::Requests, A::PageUp, PAGE),
    row(&[k(K::PageDown)], S::Requests, A::PageDown, PAGE),
    hinted(
        &[c('c'), k(K::Delete)],
        S::Requests,
        A::Cancel,
        CANCEL,
        ("c Del", "cancel", &[S::Requests]),
    ),
    // Activity.
    row(&[k(K::Up), c('k')], S::Activity, A::Up, MOVE),
    hinted(
        &[k(K::Down), c('j')],
        S::Activity,
        A::Down,
        MOVE,
        ("↑↓", "select", &[S::Activity]),
    ),
    row(&[k(K::Home), c('g')], S::Activity, A::Top, PAGE),
    // The last call again: new calls are followed from here on.
    row(&[k(K::End), c('G')], S::Activity, A::Bottom, PAGE),
    row(&[k(K::PageUp)], S::Activity, A::PageUp, PAGE),
    row(&[k(K::PageDown)], S::Activity, A::PageDown, PAGE),
    hinted(
        &[k(K::Enter)],
        S::Activity,
        A::Details,
        DETAILS,
        ("Enter", "details", &[S::Activity]),
    ),
    // The policy popup.
    row(&[k(K::F(7))], S::Global, A::Policy, POLICY),
    row(&[c('r'), c('R')], S::Policy, A::Reload, POLICY),
    row(&[k(K::F(4))], S::Global, A::Pause, PAUSE),
    // Under an approval prompt too: a flood of asks is when a stop is wanted most.
    row(&[k(K::F(4))], S::Approval, A::Pass, PAUSE),
    // The approval prompt: modal, so nothing typed for the editor can answer it by accident.
    row(&[c('y'), c('Y')], S::Approval, A::Yes, APPROVAL),
    row(&[c('n'), c('N')], S::Approval, A::No, APPROVAL),
    row(&[c('a'), c('A')], S::Approval, A::Always, APPROVAL),
    row(&[k(K::Up), c('k')], S::Approval, A::Up, MOVE),
    row(&[k(K::Down), c('j')], S::Approval, A::Down, MOVE),
    row(&[k(K::PageUp)], S::Approval, A::PageUp, PAGE),
    row(&[k(K::PageDown), c(' ')], S::Approval, A::PageDown, PAGE),
    // The message log: the status line has one row, and cuts what does not fit.
    row(&[k(K::F(2))], S::Global, A::Messages, MESSAGES),
    row(&[c('m')], S::Panes, A::Messages, MESSAGES),
    // Outside the editor.
    row(&[c('s')], S::Panes, A::Link, LINK),
    row(&[c('t')], S::Panes, A::Deadline, DEADLINE),
    // In Computers, Esc first clears the filter; the next one leaves the pane.
    row(&[k(K::Esc)], S::Computers, A::ClearFilter, ESC),
    row(&[k(K::Esc)], S::Panes, A::Leave, ESC),
    // So that Esc is not typed into the editor.
    row(&[k(K::Esc)], S::Editor, A::Leave, ESC),
    // Popups.
    row(
        &[
            k(K::Esc),
            k(K::Enter),
            c('q'),
            c('?'),
            c('s'),
            c('m'),
            k(K::F(1)),
            k(K::F(2)),
        ],
        S::Scroll,
        A::Close,
        ESC,
    ),
    row(&[k(K::Up), c('k')], S::Scroll, A::Up, MOVE),
    row(&[k(K::Down), c('j')], S::Scroll, A::Down, MOVE),
    row(&[k(K::PageUp)], S::Scroll, A::PageUp, PAGE),
    row(&[k(K::PageDown), c(' ')], S::Scroll, A::PageDown, PAGE),
    row(&[k(K::Home), c('g')], S::Scroll, A::Top, PAGE),
    row(&[k(K::End), c('G')], S::Scroll, A::Bottom, PAGE),
    row(
        &[k(K::Esc), k(K::Enter), c('q'), k(K::F(7))],
        S::Policy,
        A::Close,
        ESC,
    ),
    row(&[c('y'), c('Y'), k(K::Enter)], S::ConfirmRun, A::Yes, RUN),
    // Esc before q: the popup names the first two keys.
    row(
        &[c('n'), c('N'), k(K::Esc), c('q')],
        S::ConfirmRun,
        A::No,
        ESC,
    ),
    row(&[k(K::Esc)], S::Prompt, A::Close, ESC),
    // A prompt is a line editor (readline's keys), so Ctrl letters never type their letter.
    row(&[ctrl(c('c').code)], S::Prompt, A::Close, PROMPT_EDIT),
    row(
        &[ctrl(c('a').code), k(K::Home)],
        S::Prompt,
        A::Top,
        PROMPT_EDIT,
    ),
    row(
        &[ctrl(c('e').code), k(K::End)],
        S::Prompt,
        A::Bottom,
        PROMPT_EDIT,
    ),
    row(
        &[ctrl(c('b').code), k(K::Left)],
        S::Prompt,
        A::Left,
        PROMPT_EDIT,
    ),
    row(
        &[ctrl(c('f').code), k(K::Right)],
        S::Prompt,
        A::Right,
        PROMPT_EDIT,
    ),
    row(&[ctrl(c('u').code)], S::Prompt, A::EraseLine, PROMPT_EDIT),
    row(&[ctrl(c('w').code)], S::Prompt, A::EraseWord, PROMPT_EDIT),
    row(&[ctrl(c('h').code)], S::Prompt, A::Erase, PROMPT_EDIT),
    row(&[k(K::Enter)], S::Prompt, A::Submit, FILE),
    row(&[k(K::Tab)], S::Prompt, A::Complete, FILE),
    row(&[k(K::Backspace)], S::Prompt, A::Erase, FILE),
    row(&[], S::Prompt, A::Type, FILE),
    hinted(
        &[k(K::F(1))],
        S::Global,
        A::Help,
        HELP,
        ("F1", "help", &[S::Editor]),
    ),
    hinted(
        &[c('?')],
        S::Panes,
        A::Help,
        HELP,
        ("?", "help", &[S::Computers, S::Requests, S::Activity]),
    ),
    hinted(
        &[ctrl(c('c').code)],
        S::Global,
        A::Quit,
        QUIT,
        ("^C", "quit", &[S::Editor]),
    ),
    hinted(
        &[c('q')],
        S::Panes,
        A::Quit,
        QUIT,
        ("q", "quit", &[S::Output, S::Requests, S::Activity]),
    ),
    row(
        &[c('y'), c('Y'), k(K::Enter), ctrl(c('c').code)],
        S::ConfirmQuit,
        A::Yes,
        QUIT,
    ),
    row(
        &[c('n'), c('N'), c('q'), k(K::Esc)],
        S::ConfirmQuit,
        A::No,
        ESC,
    ),
    // Ctrl-C leaves the run on several computers unsent, without a word.
    row(&[ctrl(c('c').code)], S::ConfirmRun, A::Close, QUIT),
    // Ctrl-C still quits under the approval prompt (asking first while requests are pending).
    row(&[ctrl(c('c').code)], S::Approval, A::Pass, QUIT),
    row(&[], S::Global, A::Mouse, MOUSE),
];

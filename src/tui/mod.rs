//! The console: a ratatui client of the session, like the MCP endpoint is.
//!
//! One [`Event`] enum comes in (terminal input, session notifications, ticks, results of work
//! done for the app); keys become actions that the panes carry out, returning [`Intent`]s
//! that the loop carries out against the session; drawing is an immutable pass over the app.
//!
//! Session events are only notifications ("notify, then pull"): the loop drains them, marks
//! what changed, and pulls fresh snapshots once per frame, so a flood of output costs one pull
//! per frame, never one redraw per line, and a lagged broadcast just means pulling everything.
//!
//! # Layout
//!
//! - [`hub`]: the one interface to the session ([`Hub`]), implemented for the in-process
//!   [`Session`](trapdesk_core::session::Session); `exec.rs` carries intents out through it.
//! - [`app`]: [`App`], the panes and popups plus what they share (selection, focus, the open
//!   [`Popup`], theme, settings, clocks, notice), pulling snapshots through the hub.
//! - [`keymap`]: every key binding, one row each (keys, scope, action, help line, status bar
//!   hint). Key handling, the help popup and the status bar read it, and every key name on
//!   screen (titles, hint lines, notices) is looked up in it ([`keymap::key_for`]), so a
//!   binding changed there changes everywhere it is shown.
//! - `input.rs`: a key's way through the layers (approval prompt, popup, attach mode, global,
//!   focused pane, every pane but the editor) to the action of its row, and the mouse.
//! - [`component`]: what a pane or popup is ([`component::Component`]: `act`, `input`,
//!   `mouse`, `draw`), the [`component::Outcome`] through which it asks the app for what is
//!   not its own, and the words both sides share: [`Focus`], [`Intent`], the popup to open
//!   ([`component::Open`], plain data the app turns into a [`Popup`]), the prompts' kinds and
//!   what a prompt's text means. Beneath the panes and the app, so no pane imports the app.
//! - [`panes`]: one module per pane or popup, owning its state, keys and drawing: `computers/`,
//!   `output`, `requests`, `activity`, `editor`, `screen/` (the Screen view: a computer's
//!   terminal or monitors), `device` (the selected computer's device, under Computers); the popups `prompt`, `approval`,
//!   `help`, `link`, `detail` (a tool call), `policy`, `confirm` (quit, run on several). A
//!   popup that shows one thing is held by its [`Popup`] value; the help (which keeps its
//!   place), the link popup and the policy (whose lines are pulled while it is closed) live
//!   in [`app::Popups`].
//! - [`view`]: the frame (where each pane and the open popup draw, the status line, the empty
//!   state, the too-small case); [`draw`]: the drawing helpers the panes and the frame share;
//!   [`layout`]: the rectangles.
//! - Models the panes draw from: [`output`] (rows, scroll, search), [`highlight`], [`history`].
//!
//! **A new key** is one row in [`keymap::BINDINGS`] (with its help line and, if the status bar
//! should show it, its hint), and an arm for its [`keymap::Action`] in the `act` of the pane
//! its scope names (`Global` and `Panes` keys: `App::global` in `input.rs`). The test in
//! `input.rs` fails until the key reaches that row and the action has a handler.
//!
//! **A new popup** is a module in `panes/` with an `impl Component` (its keys in a
//! [`keymap::Scope`] of its own), a variant of [`Popup`] (holding it, or naming a field of
//! [`app::Popups`] if it outlives its opening), an arm in `Popups::of` / `Popups::view`, and
//! the scope in `App::act` (`input.rs`); a variant of [`component::Open`] and its arm in
//! `Popup::from`; something returns `Outcome::Open` for it.
//!
//! **A new pane** is a module in `panes/` with its state and an `impl Component`, a
//! [`keymap::Scope`] for its keys, a field of [`App`], an arm in `App::act` / `App::input`
//! (`input.rs`) and in `App::layers` if it takes keys, and its rectangle in [`layout`] drawn
//! from `view/mod.rs`.

pub mod app;
pub mod component;
pub mod draw;
mod exec;
pub mod highlight;
pub mod history;
pub mod hub;
mod input;
pub mod keymap;
pub mod layout;
pub mod output;
pub mod panes;
pub mod puts;
mod terminal;
pub mod theme;
pub mod view;
pub mod words;

use std::time::Duration;

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

pub use app::{App, AppMsg, Popup};
pub use component::{Focus, Intent};
pub use draw::clock;
pub use exec::execute;
pub use hub::Hub;

use trapdesk_core::config::Settings;
use trapdesk_core::session;

/// Everything the loop reacts to.
#[derive(Debug)]
pub enum Event {
    /// Countdowns and spinners moved (only while something is pending).
    Tick,
    Crossterm(ratatui::crossterm::event::Event),
    Session(session::Event),
    App(AppMsg),
}

/// Why the console stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("terminal error: {0}")]
    Terminal(#[from] std::io::Error),
}

/// Shortest time between two frames (at most 60 per second).
const FRAME: Duration = Duration::from_millis(16);
/// Spinner and countdown rate while something is pending.
const TICK: Duration = Duration::from_millis(250);

/// Runs the console until the person quits (which cancels `shutdown`) or `shutdown` is
/// cancelled elsewhere. The terminal is restored on every path, panics included.
///
/// # Errors
/// When the terminal cannot be set up or written.
pub async fn run<H: Hub>(
    session: H,
    settings: Settings,
    shutdown: CancellationToken,
) -> Result<(), TuiError> {
    // While the console runs, a person can answer the policy's `ask`.
    let _approver = session.attach_approver();
    let mut term = terminal::Guard::enter()?;
    let mut app = App::new(settings, theme::Theme::from_env(), true);
    app.me = session.name();
    app.attached = session.attached_to();
    app.truecolor = panes::screen::terminal_truecolor();
    // Taken once: a daylight-saving change during a session shifts shown times by an hour.
    app.utc_offset = chrono::Local::now().offset().local_minus_utc();
    let size = term.terminal.size()?;
    app.size = ratatui::layout::Rect::new(0, 0, size.width, size.height);
    let input = terminal::spawn_input();
    let result = event_loop(&mut term, &mut app, &session, input, &shutdown).await;
    if let Err(e) = app.save() {
        tracing::warn!("could not save the editor history: {e}");
    }
    drop(term);
    if app.quit {
        shutdown.cancel();
    }
    result
}

async fn event_loop<H: Hub>(
    term: &mut terminal::Guard,
    app: &mut App,
    session: &H,
    mut input: terminal::Input,
    shutdown: &CancellationToken,
) -> Result<(), TuiError> {
    let mut events = session.subscribe();
    let (msg_tx, mut msg_rx) = mpsc::unbounded_channel::<AppMsg>();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut dirty = true;
    let mut last_draw = tokio::time::Instant::now() - FRAME;
    loop {
        if dirty && last_draw.elapsed() >= FRAME {
            app.now = std::time::SystemTime::now();
            app.now_i = tokio::time::Instant::now();
            app.pull(session);
            term.terminal.draw(|f| app.draw(f))?;
            dirty = false;
            last_draw = tokio::time::Instant::now();
        }
        let wait = FRAME.saturating_sub(last_draw.elapsed());
        let ev = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            ev = input.rx.recv() => match ev {
                Some(Ok(e)) => Event::Crossterm(e),
                Some(Err(e)) => return Err(TuiError::Terminal(e)),
                None => return Ok(()),
            },
            ev = events.recv() => match ev {
                Ok(e) => Event::Session(e),
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    app.mark_all_dirty();
                    dirty = true;
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
            Some(msg) = msg_rx.recv() => Event::App(msg),
            _ = tick.tick(), if app.needs_tick() => Event::Tick,
            _ = tokio::time::sleep(wait), if dirty => continue,
        };
        dirty = true;
        let mut typed = Vec::new();
        match ev {
            Event::Crossterm(e) => typed.push(e),
            ev => handle(app, session, &msg_tx, ev),
        }
        // Drain whatever else is already waiting, so a flood becomes one frame.
        for _ in 0..4096 {
            match events.try_recv() {
                Ok(e) => app.note(&e),
                Err(broadcast::error::TryRecvError::Lagged(_)) => app.mark_all_dirty(),
                Err(_) => break,
            }
        }
        // Every key already read goes in before the next frame, together: a paste of
        // thousands of keys is one insert and one frame, not a frame per key.
        while let Ok(e) = input.rx.try_recv() {
            typed.push(e.map_err(TuiError::Terminal)?);
        }
        if !typed.is_empty() {
            for intent in app.on_terminal_batch(typed) {
                execute(session, intent, &msg_tx);
            }
        }
        if app.quit {
            return Ok(());
        }
    }
}

/// One event: update the app, carry out the intents.
pub fn handle<H: Hub>(
    app: &mut App,
    session: &H,
    msg_tx: &mpsc::UnboundedSender<AppMsg>,
    ev: Event,
) {
    let intents = match ev {
        Event::Tick => {
            app.ticks += 1;
            Vec::new()
        }
        Event::Crossterm(e) => app.on_terminal(e),
        Event::Session(e) => {
            app.note(&e);
            Vec::new()
        }
        Event::App(m) => {
            app.on_msg(m);
            Vec::new()
        }
    };
    for intent in intents {
        execute(session, intent, msg_tx);
    }
}

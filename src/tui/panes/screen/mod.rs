//! The Screen view: which display of the selected computer is shown and watched (its terminal
//! or one of its monitors, F3), attach mode (keys go to the computer), a click on a monitor
//! as a touch, and the drawing of the display cell for cell, in its colours, with the cells
//! a monitor's shadow cannot know marked. How keys become input is in `keys.rs`, the held
//! combinations and the computer menu in `menu.rs`, characters and colours in `colour.rs`, the
//! title and the painting of the cells in `paint.rs`.

mod colour;
mod keys;
mod menu;
mod paint;

pub use colour::{cc_char, colour, terminal_truecolor};
pub use keys::key_step;
pub use menu::{Menu, esc_note, terminate};

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};
use serde_json::json;

use crate::tui::component::Intent;
use crate::tui::component::{Component, Cx, DrawCx, Outcome};
use crate::tui::draw::name_of;
use crate::tui::hub::{Hold, Hub};
use crate::tui::keymap::{Action, Scope, key_for};
use trapdesk_core::session::screen::input::MAX_PASTE;
use trapdesk_core::session::screen::{Display, ScreenFrame};

/// How long the Screen view's title says an agent is typing after its last input.
const TYPING_SHOWN: std::time::Duration = std::time::Duration::from_secs(3);

/// How a cell of a monitor that this computer never drew (or that another computer may have
/// drawn over) is shown: the MCP's unknown mark (U+2591), dim grey on black, whatever the
/// monitor's palette. A monitor cannot be read back, so the view never guesses such a cell.
pub const UNKNOWN_STYLE: Style = Style::new()
    .fg(Color::DarkGray)
    .bg(Color::Black)
    .add_modifier(Modifier::DIM);

#[derive(Default)]
pub struct Screen {
    /// The Screen view is shown (F9).
    pub on: bool,
    /// Attach mode: keys go to the selected computer (F8 toggles).
    pub attached: bool,
    /// The display shown: the selected computer's terminal, or one of its monitors (F3).
    pub display: Display,
    /// The computer `display` was chosen on: selecting another shows its terminal.
    shown_for: Option<String>,
    /// The latest frame of the display shown, while the view is shown.
    pub frame: Option<ScreenFrame>,
    /// The display watched (a computer's terminal or monitor), and the hold that keeps it
    /// watched: only the display shown is streamed.
    watch: Option<((String, Display), Hold)>,
    /// A new frame is waiting to be pulled.
    pub(crate) dirty: bool,
    /// While attached, the person's hand on the computer's keyboard (agents' input waits).
    keyboard: Option<(String, Hold)>,
    /// The last agent to type into a computer: who, where, when.
    typing: Option<(String, String, tokio::time::Instant)>,
    /// The monitor shown is gone: the computer said it is not attached (its frame was
    /// dropped), and the status has not said so yet.
    gone: bool,
    /// It went at the last pull (read once, by [`Screen::went`]).
    went: bool,
}

/// The order F3 goes through: the terminal, then each monitor (by name, as the status sorts
/// them), then the terminal again.
fn displays(monitors: &[String]) -> Vec<Display> {
    std::iter::once(Display::Terminal)
        .chain(monitors.iter().cloned().map(Display::Monitor))
        .collect()
}

/// A display as the title names it: `terminal`, or `monitor top 2x 29x12` (its text scale
/// and size in cells, once a frame of it has come).
pub fn display_words(display: &Display, frame: Option<&ScreenFrame>) -> String {
    match display {
        Display::Terminal => "terminal".to_owned(),
        Display::Monitor(m) => {
            let mut words = format!("monitor {}", crate::tui::output::printable(m));
            if let Some(f) = frame {
                if let Some(scale) = f.scale {
                    words.push_str(&format!(" {scale}x"));
                }
                words.push_str(&format!(" {}x{}", f.width, f.height));
            }
            words
        }
    }
}

impl Screen {
    /// F9: shows or hides the view (leaving attach mode with it).
    pub fn toggle(&mut self) {
        self.on = !self.on;
        if !self.on {
            self.attached = false;
        }
    }

    /// F3: the next display of the selected computer (opening the view): the terminal, each
    /// of `monitors` (`None`: its status has not come), the terminal again.
    pub fn next_display(&mut self, selected: Option<&str>, monitors: Option<&[String]>) -> Outcome {
        let Some(id) = selected else {
            return Outcome::Notify(
                "no computer selected: select one in Computers first".into(),
                true,
            );
        };
        let who = name_of(id);
        let monitors = match monitors {
            None => {
                return Outcome::Notify(
                    format!(
                        "no monitor known on {who} yet: its status comes when the Screen view opens ({}), from a client that serves peripherals",
                        key_for(Scope::Global, Action::ToggleScreen)
                    ),
                    true,
                );
            }
            Some([]) => {
                return Outcome::Notify(format!("{who} has no monitor attached"), true);
            }
            Some(m) => m,
        };
        self.on = true;
        if self.shown_for.as_deref() != Some(id) {
            self.display = Display::Terminal;
            self.shown_for = Some(id.to_owned());
        }
        let order = displays(monitors);
        let next = order
            .iter()
            .position(|d| *d == self.display)
            .map_or(0, |i| (i + 1) % order.len());
        self.display = order.into_iter().nth(next).unwrap_or_default();
        Outcome::Done
    }

    /// F8: attaches to the selected computer (opening the view), or detaches.
    pub fn toggle_attach(&mut self, selected: Option<&str>) -> Outcome {
        if self.attached {
            self.attached = false;
            return Outcome::Notify("detached: keys go to the console again".into(), false);
        }
        if selected.is_none() {
            return Outcome::Notify(
                "no computer selected: select one in Computers first".into(),
                true,
            );
        }
        self.on = true;
        self.attached = true;
        Outcome::Done
    }

    /// A paste while attached: one `paste` event when CC would take it, else typed text.
    pub fn paste(&mut self, text: String, selected: Option<&str>) -> Outcome {
        let Some(target) = selected else {
            return Outcome::Done;
        };
        let step = if text.chars().count() <= MAX_PASTE && !text.contains('\n') {
            json!({"paste": text})
        } else {
            json!({"text": text})
        };
        Outcome::Intents(vec![Intent::Input {
            target: target.to_owned(),
            steps: vec![step],
        }])
    }

    /// Notes an agent's input to a computer, for the view's title.
    pub fn note_input(
        &mut self,
        info: &trapdesk_core::session::PendingInfo,
        now: tokio::time::Instant,
    ) {
        if info.kind == trapdesk_proto::protocol::Kind::Input
            && matches!(info.origin, trapdesk_core::session::Origin::Agent(_))
        {
            self.typing = Some((info.origin.name().to_owned(), info.trapos_id.clone(), now));
        }
    }

    /// The agent typing into `trapos_id` now, if one did in the last few seconds.
    pub fn typing_into(&self, trapos_id: &str, now: tokio::time::Instant) -> Option<&str> {
        self.typing
            .as_ref()
            .filter(|(_, id, at)| id == trapos_id && now.duration_since(*at) < TYPING_SHOWN)
            .map(|(who, _, _)| who.as_str())
    }

    /// A display of `trapos_id` changed: a new frame to pull if it is the one shown.
    pub fn changed(&mut self, trapos_id: &str, display: &Display) {
        if self.on && self.shown_for.as_deref() == Some(trapos_id) && *display == self.display {
            self.dirty = true;
        }
    }

    /// Keeps the watch on the display the view shows, and takes its latest frame. `monitors`
    /// are the selected computer's as its last status said (`None`: no status yet).
    pub fn pull<H: Hub>(&mut self, hub: &H, selected: Option<&str>, monitors: Option<&[String]>) {
        // The keyboard is held exactly while attached, to the computer attached to.
        let hand = if self.attached { selected } else { None };
        if hand != self.keyboard.as_ref().map(|(id, _)| id.as_str()) {
            self.keyboard = None;
            self.keyboard = hand.map(|id| (id.to_owned(), hub.hold_keyboard(id)));
        }
        // Another computer shows its terminal first; a monitor gone from the status (detached)
        // gives way to the terminal.
        if selected != self.shown_for.as_deref() {
            self.display = Display::Terminal;
            self.shown_for = selected.map(str::to_owned);
        }
        if let (Display::Monitor(m), Some(list)) = (&self.display, monitors)
            && !list.contains(m)
        {
            self.display = Display::Terminal;
        }
        let want = match selected {
            Some(id) if self.on => Some((id.to_owned(), self.display.clone())),
            _ => None,
        };
        let have = self.watch.as_ref().map(|(k, _)| k);
        if want.as_ref() != have {
            // The old watch ends first, so switching computers or displays never streams
            // two at once (a monitor is only sent while it is shown).
            self.watch = None;
            self.frame = None;
            self.watch = want
                .clone()
                .and_then(|(id, d)| Some(((id.clone(), d.clone()), hub.watch_screen(&id, &d)?)));
            self.dirty = true;
            self.gone = false;
        }
        if self.dirty {
            self.dirty = false;
            let had = self.frame.is_some();
            self.frame = want.and_then(|(id, d)| hub.screen(&id, &d));
            if self.frame.is_some() {
                self.gone = false;
            } else if had && self.display.monitor().is_some() {
                // The frame of the monitor shown was dropped: the computer said it is not
                // attached.
                self.gone = true;
                self.went = true;
            }
        }
    }

    /// Whether the monitor shown went since this was last asked: the status is then asked at
    /// once, so the view moves to the terminal as soon as the computer says which monitors
    /// are left.
    pub fn went(&mut self) -> bool {
        std::mem::take(&mut self.went)
    }

    /// `trapos_id` linked again. Its new connection does not know it is watched (the watch was
    /// asked of the old one), so it would send no updates and the view would keep the old
    /// screen: the watch is let go and taken again at the next pull, which asks the new
    /// connection for a whole frame and its updates.
    pub fn relinked(&mut self, trapos_id: &str) {
        if self
            .watch
            .as_ref()
            .is_some_and(|((id, _), _)| id == trapos_id)
        {
            self.watch = None;
            self.dirty = true;
        }
    }

    /// What the title says after `Screen` (or `ATTACHED`): the computer, the display shown
    /// and, when the computer has monitors, which of how many (`7:miner · monitor top 2x
    /// 29x12 · 2 of 3`).
    pub fn heading(&self, selected: Option<&str>, monitors: &[String]) -> String {
        let who = selected.map(name_of).unwrap_or_default();
        let mut shown = display_words(&self.display, self.frame.as_ref());
        if !monitors.is_empty() {
            let order = displays(monitors);
            if let Some(i) = order.iter().position(|d| *d == self.display) {
                shown.push_str(&format!(" · {} of {}", i + 1, order.len()));
            }
        }
        format!("{who} · {shown}")
    }

    /// Where the view goes beside the Output pane: (output, screen). The screen takes its
    /// real width plus borders (a monitor's view at least as wide as its title, since a small
    /// monitor is a few columns) when the output keeps at least 20 columns, else all of it.
    pub fn split(&self, area: Rect, selected: Option<&str>, monitors: &[String]) -> (Rect, Rect) {
        let width = self.frame.as_ref().map_or(51, |f| f.width);
        let width = match self.display {
            Display::Terminal => width,
            Display::Monitor(_) => {
                // `┌ Screen ` and ` ┐` around the heading.
                let title = crate::tui::draw::width(&self.heading(selected, monitors)) + 10;
                width.max(title)
            }
        };
        let w = u16::try_from(width).unwrap_or(u16::MAX).saturating_add(2);
        if area.width >= w.saturating_add(20) {
            let out = Rect::new(area.x, area.y, area.width - w, area.height);
            let scr = Rect::new(area.x + area.width - w, area.y, w, area.height);
            (out, scr)
        } else {
            (Rect::new(area.x, area.y, 0, 0), area)
        }
    }

    /// A click at (`col`, `row`) of the terminal inside the view drawn at `area`: on a cell of
    /// a monitor shown, a touch there (1-based, as CC counts); `None` elsewhere (the terminal
    /// takes no clicks: CC's `mouse_click` is left to attach mode's keys).
    pub fn click(&self, area: Rect, col: u16, row: u16, selected: Option<&str>) -> Option<Outcome> {
        let Display::Monitor(monitor) = &self.display else {
            return None;
        };
        let (target, f) = (selected?, self.frame.as_ref()?);
        let (x0, y0) = (area.x + 1, area.y + 1);
        if col < x0 || row < y0 || col + 1 >= area.x + area.width || row + 1 >= area.y + area.height
        {
            return None;
        }
        let (x, y) = (usize::from(col - x0) + 1, usize::from(row - y0) + 1);
        if x > f.width || y > f.height {
            return None;
        }
        Some(Outcome::Intents(vec![Intent::Touch {
            target: target.to_owned(),
            monitor: monitor.clone(),
            x: x as u32,
            y: y as u32,
        }]))
    }
}

/// Attach mode: its keys are the detach key and Esc; every other key goes to the computer.
impl Component for Screen {
    fn scope(&self) -> Scope {
        Scope::Attached
    }

    fn act(&mut self, action: Action, cx: Cx) -> Outcome {
        match action {
            Action::Attach => self.toggle_attach(cx.selected),
            // The selection can change under attach mode (a click): then attach mode ends.
            _ if cx.selected.is_none() => {
                self.attached = false;
                Outcome::Done
            }
            Action::Menu => Outcome::Many(vec![
                Outcome::Open(crate::tui::component::Open::Menu),
                Outcome::Notify(esc_note(), false),
            ]),
            Action::Terminate => terminate(cx.selected),
            _ => Outcome::Ignored,
        }
    }

    fn input(&mut self, key: KeyEvent, cx: Cx) -> Outcome {
        let Some(target) = cx.selected else {
            self.attached = false;
            return Outcome::Done;
        };
        match key_step(key) {
            Some(step) => Outcome::Intents(vec![Intent::Input {
                target: target.to_owned(),
                steps: vec![step],
            }]),
            None => Outcome::Done,
        }
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        let monitors: &[String] = cx
            .selected_computer
            .and_then(|c| c.status.as_ref())
            .map_or(&[], |s| s.monitors.as_slice());
        let typing = cx
            .selected
            .and_then(|id| self.typing_into(id, cx.now_i))
            .map(|agent| {
                Span::styled(
                    format!(" {} is typing ", crate::tui::output::printable(agent)),
                    cx.theme.warn.add_modifier(Modifier::REVERSED),
                )
            });
        // Who, which display, and which of how many when the computer has monitors.
        let heading = self.heading(cx.selected, monitors);
        // The keys go on the bottom border: a monitor's title is long and the view is as
        // narrow as the display.
        let (mut title, keys) = paint::title(self.attached, &heading, !monitors.is_empty(), cx);
        title.spans.extend(typing);
        // Unlinked, the frame is the last one seen, not the computer's screen now: said so.
        if cx.selected_computer.is_some_and(|c| !c.online) && self.frame.is_some() {
            title.spans.push(Span::styled(
                " offline: its last screen ",
                cx.theme.warn.add_modifier(Modifier::REVERSED),
            ));
        }
        let block = cx
            .frame(title)
            .title_bottom(Line::from(Span::styled(keys, cx.theme.title)));
        let inner = block.inner(area);
        block.render(area, buf);
        let Some(f) = &self.frame else {
            let msg = paint::waiting(&self.display, self.gone, cx);
            Paragraph::new(msg)
                .style(cx.theme.dim)
                .wrap(Wrap { trim: true })
                .render(inner, buf);
            return None;
        };
        paint::cells(f, inner, buf, cx.truecolor);
        None
    }
}

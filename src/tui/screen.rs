//! The Screen view's logic: which computer's terminal is watched, attach mode, and how a key
//! of the person's terminal becomes input for the computer. Drawing is in `view/screen.rs`.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;
use serde_json::{Value, json};

use super::app::{App, Intent};
use super::hub::Hub;
use crate::session::screen::input::MAX_PASTE;

/// The key that toggles the Screen view.
pub const TOGGLE_KEY: KeyCode = KeyCode::F(9);
/// The key that attaches to the selected computer's terminal, and the one key that detaches.
pub const ATTACH_KEY: KeyCode = KeyCode::F(8);

/// Said on the status line when Esc is pressed while attached. CC has no Esc key: neither CC:
/// Tweaked's `keys` (GLFW codes, 256 left out) nor CraftOS-PC's (LWJGL code 1 left out) names
/// one, because in a world Esc closes the computer's screen and never reaches the computer. So
/// it is not sent, and the person is told why instead of the key vanishing.
pub const ESC_NOTE: &str =
    "Esc is not sent: CC computers have no Esc key (in a world it closes the screen) · F8 detaches";

impl App {
    /// F9: shows or hides the Screen view (leaving attach mode with it).
    pub fn toggle_screen(&mut self) {
        self.screen_on = !self.screen_on;
        if !self.screen_on {
            self.attached = false;
        }
    }

    /// F8: attaches to the selected computer (opening the Screen view), or detaches.
    pub fn toggle_attach(&mut self) {
        if self.attached {
            self.attached = false;
            self.notify("detached: keys go to the console again", false);
            return;
        }
        if self.selected.is_none() {
            self.notify("no computer selected: select one in Computers first", true);
            return;
        }
        self.screen_on = true;
        self.attached = true;
    }

    /// A key while attached: everything but the detach key goes to the computer.
    pub fn attached_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        if key.code == ATTACH_KEY {
            self.toggle_attach();
            return Vec::new();
        }
        let Some(target) = self.selected.clone() else {
            self.attached = false;
            return Vec::new();
        };
        if key.code == KeyCode::Esc {
            self.notify(ESC_NOTE, false);
            return Vec::new();
        }
        match key_step(key) {
            Some(step) => vec![Intent::Input {
                target,
                steps: vec![step],
            }],
            None => Vec::new(),
        }
    }

    /// A paste while attached: one `paste` event when CC would take it, else typed text.
    pub fn attached_paste(&mut self, text: String) -> Vec<Intent> {
        let Some(target) = self.selected.clone() else {
            return Vec::new();
        };
        let step = if text.chars().count() <= MAX_PASTE && !text.contains('\n') {
            json!({"paste": text})
        } else {
            json!({"text": text})
        };
        vec![Intent::Input {
            target,
            steps: vec![step],
        }]
    }

    /// Keeps the watch on the computer the Screen view shows, and takes its latest frame.
    pub(crate) fn pull_screen<H: Hub>(&mut self, session: &H) {
        let want = if self.screen_on {
            self.selected.clone()
        } else {
            None
        };
        let have = self.screen_watch.as_ref().map(|(id, _)| id.clone());
        if want != have {
            // The old watch ends first, so switching computers never watches two at once.
            self.screen_watch = None;
            self.screen = None;
            self.screen_watch = want
                .as_deref()
                .and_then(|id| Some((id.to_owned(), session.watch_screen(id)?)));
            self.dirty_screen = true;
        }
        if self.dirty_screen {
            self.dirty_screen = false;
            self.screen = want.as_deref().and_then(|id| session.screen(id));
        }
    }
}

/// One key of the person's terminal as an `input` step, or `None` for keys CC has no name for.
pub fn key_step(key: KeyEvent) -> Option<Value> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    let named = |base: &str| {
        let mut k = String::new();
        if ctrl {
            k.push_str("ctrl+");
        }
        if alt {
            k.push_str("alt+");
        }
        if shift {
            k.push_str("shift+");
        }
        k.push_str(base);
        json!({"key": k})
    };
    let base = match key.code {
        KeyCode::Char(c) if ctrl || alt => {
            let c = c.to_ascii_lowercase();
            if !c.is_ascii_alphanumeric() {
                return None;
            }
            let mut k = String::new();
            if ctrl {
                k.push_str("ctrl+");
            }
            if alt {
                k.push_str("alt+");
            }
            k.push(c);
            return Some(json!({"key": k}));
        }
        KeyCode::Char(c) => {
            if u32::from(c) > 0xFF {
                return None;
            }
            return Some(json!({"text": c.to_string()}));
        }
        KeyCode::Enter => "enter",
        KeyCode::Backspace => "backspace",
        KeyCode::Tab => "tab",
        KeyCode::BackTab => return Some(json!({"key": "shift+tab"})),
        KeyCode::Left => "left",
        KeyCode::Right => "right",
        KeyCode::Up => "up",
        KeyCode::Down => "down",
        KeyCode::Home => "home",
        KeyCode::End => "end",
        KeyCode::PageUp => "pageUp",
        KeyCode::PageDown => "pageDown",
        KeyCode::Delete => "delete",
        KeyCode::Insert => "insert",
        KeyCode::F(n) if (1..=12).contains(&n) => return Some(named(&format!("f{n}"))),
        _ => return None,
    };
    Some(named(base))
}

/// A palette entry as a terminal colour: itself on a true-colour terminal, else the nearest of
/// the 256 indexed colours (the 6x6x6 cube or the grey ramp).
pub fn colour(rgb: u32, truecolor: bool) -> Color {
    let (r, g, b) = ((rgb >> 16) as u8, (rgb >> 8) as u8, rgb as u8);
    if truecolor {
        return Color::Rgb(r, g, b);
    }
    Color::Indexed(nearest_256(r, g, b))
}

fn nearest_256(r: u8, g: u8, b: u8) -> u8 {
    const STEPS: [i32; 6] = [0, 95, 135, 175, 215, 255];
    let idx = |v: u8| -> usize {
        let v = i32::from(v);
        (0..6).min_by_key(|i| (STEPS[*i] - v).abs()).unwrap_or(0)
    };
    let (ri, gi, bi) = (idx(r), idx(g), idx(b));
    let cube = (STEPS[ri], STEPS[gi], STEPS[bi]);
    let dist = |c: (i32, i32, i32)| {
        let d = |a: i32, b: u8| (a - i32::from(b)).pow(2);
        d(c.0, r) + d(c.1, g) + d(c.2, b)
    };
    let avg = (i32::from(r) + i32::from(g) + i32::from(b)) / 3;
    let gi_ = ((avg - 8).max(0) / 10).min(23);
    let grey = 8 + gi_ * 10;
    if dist((grey, grey, grey)) < dist(cube) {
        (232 + gi_) as u8
    } else {
        (16 + 36 * ri + 6 * gi + bi) as u8
    }
}

/// Whether the person's terminal shows 24-bit colour (`COLORTERM` says so).
pub fn terminal_truecolor() -> bool {
    std::env::var("COLORTERM")
        .map(|v| v.contains("truecolor") || v.contains("24bit"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyEventKind;

    fn k(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent {
            code,
            modifiers: m,
            kind: KeyEventKind::Press,
            state: ratatui::crossterm::event::KeyEventState::NONE,
        }
    }

    #[test]
    fn keys_become_cc_input() {
        assert_eq!(
            key_step(k(KeyCode::Char('a'), KeyModifiers::NONE)),
            Some(json!({"text": "a"}))
        );
        assert_eq!(
            key_step(k(KeyCode::Char('s'), KeyModifiers::CONTROL)),
            Some(json!({"key": "ctrl+s"}))
        );
        assert_eq!(
            key_step(k(KeyCode::Enter, KeyModifiers::NONE)),
            Some(json!({"key": "enter"}))
        );
        assert_eq!(
            key_step(k(KeyCode::Up, KeyModifiers::SHIFT)),
            Some(json!({"key": "shift+up"}))
        );
        assert_eq!(
            key_step(k(KeyCode::F(5), KeyModifiers::NONE)),
            Some(json!({"key": "f5"}))
        );
        assert_eq!(key_step(k(KeyCode::Esc, KeyModifiers::NONE)), None);
        // Every key name produced here is one the host accepts.
        for code in [
            KeyCode::Backspace,
            KeyCode::Tab,
            KeyCode::Home,
            KeyCode::End,
            KeyCode::PageUp,
            KeyCode::Delete,
            KeyCode::Insert,
            KeyCode::F(12),
            KeyCode::BackTab,
        ] {
            let step = key_step(k(code, KeyModifiers::CONTROL)).expect("named");
            let name = step["key"].as_str().expect("a key");
            assert!(
                crate::session::screen::input::key_name(name, "k").is_ok(),
                "{name}"
            );
        }
    }

    #[test]
    fn palette_maps_to_the_terminal() {
        assert_eq!(colour(0xF0F0F0, true), Color::Rgb(0xF0, 0xF0, 0xF0));
        assert_eq!(colour(0x000000, false), Color::Indexed(16));
        assert_eq!(colour(0xFF0000, false), Color::Indexed(196));
        // CC's grey (4C4C4C) is nearer the grey ramp than the cube.
        assert!(matches!(colour(0x4C4C4C, false), Color::Indexed(n) if n >= 232));
    }
}

//! How a key of the person's terminal becomes input for the computer while attached.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};

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
                trapdesk_core::session::screen::input::key_name(name, "k").is_ok(),
                "{name}"
            );
        }
    }
}

//! Unit tests of the key binding table in `src/tui/keymap.rs`.

use super::bindings::{c, ctrl, k};
use super::*;

#[test]
fn help_lists_every_row() {
    let help = help();
    for b in BINDINGS {
        assert!(help.contains(&b.help), "{:?} {:?}", b.scope, b.action);
    }
}

#[test]
fn no_row_is_shadowed_in_its_own_scope() {
    // A key listed in two rows of one scope would reach only the first.
    for (i, b) in BINDINGS.iter().enumerate() {
        for key in b.keys {
            let first = lookup(b.scope, &key.event()).map(|f| f as *const Binding);
            assert_eq!(
                first,
                Some(&BINDINGS[i] as *const Binding),
                "{key:?} in {:?}",
                b.scope
            );
        }
    }
}

#[test]
fn every_hint_is_a_key_of_its_row() {
    for b in BINDINGS {
        if let Some(h) = &b.hint {
            assert!(!h.on.is_empty(), "{:?} {:?}", b.scope, b.action);
            // A hint without a key (the filter's glob) is not clickable, and says so by
            // being the typing row.
            assert!(!b.keys.is_empty() || b.action == Action::Type);
        }
    }
}

/// The whole frame as text, one line a row.
fn screen(app: &crate::tui::App) -> String {
    // The popups are drawn over the whole frame.
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    ratatui::widgets::Widget::render(app, area, &mut buf);
    (0..area.height)
        .map(|y| {
            (0..area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_rebinding_in_the_table_shows_in_the_titles() {
    let mut app = crate::tui::App::new(
        trapdesk_core::config::Settings::default(),
        crate::tui::theme::Theme::plain(),
        false,
    );
    app.screen.on = true;
    let before = screen(&app);
    assert!(before.contains("F5 run F6 run file"), "{before}");
    assert!(before.contains("F8 attach · F9 hide"), "{before}");
    // F5 becomes F2, F8 becomes F3 and F9 becomes F4: only the table changes.
    static F2: [Key; 1] = [k(KeyCode::F(2))];
    static F3: [Key; 1] = [k(KeyCode::F(3))];
    static F4: [Key; 1] = [k(KeyCode::F(4))];
    let rows = BINDINGS
        .iter()
        .cloned()
        .map(|mut b| {
            b.keys = match (b.scope, b.action) {
                (Scope::Global, Action::Run) => &F2,
                (Scope::Global, Action::Attach) => &F3,
                (Scope::Global, Action::ToggleScreen) => &F4,
                _ => b.keys,
            };
            b
        })
        .collect();
    let after = with_table(rows, || {
        let text = screen(&app);
        // And the key reaches its row under the new name only.
        assert!(lookup(Scope::Global, &k(KeyCode::F(2)).event()).is_some());
        assert!(lookup(Scope::Global, &k(KeyCode::F(5)).event()).is_none());
        text
    });
    assert!(after.contains("F2 run F6 run file"), "{after}");
    assert!(after.contains("F3 attach · F4 hide"), "{after}");
}

#[test]
fn a_rebinding_shows_in_a_popup_and_answers_it() {
    let mut app = crate::tui::App::new(
        trapdesk_core::config::Settings::default(),
        crate::tui::theme::Theme::plain(),
        false,
    );
    app.popup = Some(crate::tui::Popup::Policy);
    static U: [Key; 1] = [c('u')];
    let rows = BINDINGS
        .iter()
        .cloned()
        .map(|mut b| {
            if (b.scope, b.action) == (Scope::Policy, Action::Reload) {
                b.keys = &U;
            }
            b
        })
        .collect();
    with_table(rows, || {
        let text = screen(&app);
        assert!(text.contains("u reloads the file"), "{text}");
        assert_eq!(
            app.on_key(c('u').event()),
            vec![crate::tui::Intent::ReloadPolicy]
        );
    });
}

#[test]
fn key_names_are_what_the_screen_writes() {
    assert_eq!(k(KeyCode::F(5)).name(), "F5");
    assert_eq!(ctrl(KeyCode::Char('c')).name(), "Ctrl-C");
    assert_eq!(c(' ').name(), "Space");
    assert_eq!(keys_for(Scope::ConfirmRun, Action::Yes), ["y", "Enter"]);
    assert_eq!(first_keys(Scope::ConfirmRun, Action::No, 2), ["n", "Esc"]);
    assert_eq!(key_for(Scope::Approval, Action::Always), "a");
}

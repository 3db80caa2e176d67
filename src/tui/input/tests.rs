//! Unit tests of the keys and mouse to actions to panes in `src/tui/input.rs`.

use super::*;
use crate::tui::theme::Theme;
use trapdesk_core::config::Settings;

/// An app in the state where the keys of `scope` are live.
fn app_in(scope: Scope) -> App {
    let mut app = App::new(Settings::default(), Theme::plain(), false);
    app.selected = Some("7:miner".into());
    match scope {
        Scope::Global | Scope::Editor => app.focus = Focus::Editor,
        // Output binds none of the keys every pane but the editor has.
        Scope::Panes | Scope::Output => app.focus = Focus::Output,
        Scope::Computers => app.focus = Focus::Computers,
        Scope::Requests => app.focus = Focus::Requests,
        Scope::Activity => app.focus = Focus::Activity,
        Scope::Approval => app.set_approvals(vec![trapdesk_core::session::Approval {
            request_id: "h-1".into(),
            trapos_id: "7:miner".into(),
            origin: trapdesk_core::session::Origin::Agent("a".into()),
            kind: trapdesk_proto::protocol::Kind::ExecLua,
            action: trapdesk_core::policy::Action::Exec,
            detail: "return 1".into(),
            size: 8,
            because: "ask".into(),
            deadline: app.now_i,
        }]),
        Scope::Scroll => app.popup = Some(Popup::Help),
        Scope::ConfirmQuit => app.popup = Some(Popup::from(Open::ConfirmQuit(1))),
        Scope::ConfirmRun => {
            app.popup = Some(Popup::from(Open::ConfirmRun(
                Box::new(Intent::Quit),
                "x".into(),
            )));
        }
        Scope::Policy => app.popup = Some(Popup::Policy),
        Scope::Prompt => {
            app.popup = Some(Popup::from(Open::Prompt(
                PromptKind::RunFile,
                String::new(),
            )))
        }
        Scope::Filter => {
            app.popup = Some(Popup::from(Open::Prompt(PromptKind::Filter, String::new())))
        }
        Scope::Attached => app.screen.attached = true,
        Scope::Menu => {
            app.screen.attached = true;
            app.popup = Some(Popup::from(Open::Menu));
        }
    }
    app
}

/// The help keeps its place between openings; a tool call's details open at their top.
#[test]
fn the_help_keeps_its_place() {
    let mut app = App::new(Settings::default(), Theme::plain(), false);
    app.size = ratatui::layout::Rect::new(0, 0, 100, 20);
    app.focus = Focus::Output;
    let key = |c| KeyEvent::new(c, ratatui::crossterm::event::KeyModifiers::NONE);
    app.on_key(key(ratatui::crossterm::event::KeyCode::Char('?')));
    app.on_key(key(ratatui::crossterm::event::KeyCode::Down));
    assert_eq!(app.popups.help.scroll, 1);
    app.on_key(key(ratatui::crossterm::event::KeyCode::Esc));
    assert_eq!(app.popup, None);
    app.on_key(key(ratatui::crossterm::event::KeyCode::Char('?')));
    assert_eq!(app.popup, Some(Popup::Help));
    assert_eq!(app.popups.help.scroll, 1);
}

/// Every row of the keymap is reached by its keys in its scope (no layer above takes them
/// first), and its action has a handler there.
#[test]
fn every_action_in_the_keymap_is_reachable() {
    for b in keymap::BINDINGS {
        let app = app_in(b.scope);
        let layers = app.layers();
        assert!(layers.contains(&b.scope), "{:?} is not live", b.scope);
        for key in b.keys {
            let ev = key.event();
            let reached = if b.action == Action::Pass {
                // Passing rows are found, then skipped for the layers below.
                layers
                    .iter()
                    .find_map(|s| keymap::lookup(*s, &ev))
                    .map(|r| r as *const _)
            } else {
                app.binding_for(&ev).map(|r| r as *const _)
            };
            assert_eq!(
                reached,
                Some(b as *const _),
                "{key:?} in {:?} reaches another row",
                b.scope
            );
        }
        if b.keys.is_empty() {
            // Typing and the mouse have no key: typing reaches the layer that keeps
            // unbound keys, the mouse goes to on_mouse.
            assert!(
                b.action == Action::Mouse || layers.last() == Some(&b.scope),
                "{:?} {:?}",
                b.scope,
                b.action
            );
            continue;
        }
        if b.action == Action::Pass {
            continue; // on_key itself moves on to the layer below.
        }
        let mut app = app;
        let handled = app.act(b.scope, b.action, &["7:miner".to_owned()]);
        // Esc in Computers without a filter is declined on purpose: it leaves the pane.
        let declines = b.scope == Scope::Computers && b.action == Action::ClearFilter;
        assert!(
            declines || handled != Outcome::Ignored,
            "{:?} {:?} has no handler",
            b.scope,
            b.action
        );
    }
}

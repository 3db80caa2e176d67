//! Attach mode's keys that are not typing: CC's held combinations (terminate, reboot, shut
//! down) a terminal cannot hold, sent from the computer menu (Esc while attached), Ctrl-T, or
//! `T` in Computers; and why Esc itself is not sent.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use serde_json::{Value, json};

use crate::tui::component::{Component, Cx, DrawCx, Intent, Outcome};
use crate::tui::draw::name_of;
use crate::tui::keymap::{Action, Scope, key_for};

/// Said on the status line when Esc is pressed while attached. CC has no Esc key: neither CC:
/// Tweaked's `keys` (GLFW codes, 256 left out) nor CraftOS-PC's (LWJGL code 1 left out) names
/// one, because in a world Esc closes the computer's screen and never reaches the computer. So
/// it is not sent, and the person is told why instead of the key vanishing.
pub fn esc_note() -> String {
    format!(
        "{} is not sent: CC computers have no Esc key (in a world it closes the screen); it opens this menu · {} detaches",
        key_for(Scope::Attached, Action::Menu),
        key_for(Scope::Attached, Action::Attach)
    )
}

/// A step that sends one of CC's held combinations (terminate, reboot, shutdown).
fn held(name: &str) -> Value {
    json!({ "key": name })
}

/// The input intent for `target`.
fn input(target: &str, step: Value) -> Outcome {
    Outcome::Intents(vec![Intent::Input {
        target: target.to_owned(),
        steps: vec![step],
    }])
}

/// CC's terminate for the selected computer, attached or not (`T` in Computers).
pub fn terminate(selected: Option<&str>) -> Outcome {
    match selected {
        Some(t) => Outcome::Many(vec![
            input(t, held("terminate")),
            Outcome::Notify(format!("terminate sent to {}", name_of(t)), false),
        ]),
        None => Outcome::Notify(
            "no computer selected: select one in Computers first".into(),
            true,
        ),
    }
}

/// The computer menu (Esc while attached): the held combinations a terminal cannot send, so
/// that Ctrl-R and Ctrl-S stay the program's (`edit` opens its menu on Ctrl).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Menu;

impl Component for Menu {
    fn scope(&self) -> Scope {
        Scope::Menu
    }

    fn act(&mut self, action: Action, cx: Cx) -> Outcome {
        let step = match action {
            Action::Terminate => "terminate",
            Action::Reboot => "reboot",
            Action::Shutdown => "shutdown",
            _ => return Outcome::Close,
        };
        let Some(target) = cx.selected else {
            return Outcome::Close;
        };
        Outcome::Many(vec![
            Outcome::Close,
            input(target, held(step)),
            Outcome::Notify(format!("{step} sent to {}", name_of(target)), false),
        ])
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, cx: &DrawCx) -> Option<(u16, u16)> {
        use ratatui::widgets::Clear;
        let t = cx.theme;
        let who = cx.selected.map(name_of).unwrap_or_default();
        let r = crate::tui::draw::centred(area, 56, 7);
        Clear.render(r, buf);
        let key = |a| key_for(Scope::Menu, a);
        let line = |a, what: &str| {
            Line::from(vec![
                Span::styled(format!(" {} ", key(a)), t.key),
                Span::raw(what.to_owned()),
            ])
        };
        let lines = vec![
            line(Action::Terminate, "terminate the running program (Ctrl-T)"),
            line(Action::Reboot, "reboot the computer (Ctrl-R held)"),
            line(Action::Shutdown, "shut the computer down (Ctrl-S held)"),
            line(Action::Close, "back to the computer (nothing sent)"),
        ];
        Paragraph::new(lines)
            .block(crate::tui::draw::popup_frame(t, &format!(" {who} ")))
            .render(r, buf);
        None
    }
}

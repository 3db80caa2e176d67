//! Terminal events other than an ordinary key press: a paste, and the keys that come while the
//! terminal is too small to draw the console.

use ratatui::crossterm::event::{Event as CtEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::tui::app::{App, Popup};
use crate::tui::component::{Focus, Intent};
use crate::tui::keymap::{self, Action, Scope};

/// A key while the terminal is too small: the quit key quits (asking first while requests are
/// pending, as always), and the question it asks takes its answer; every other key is dropped,
/// since what it would do is not on screen (docs/console.md, "Too small").
pub(super) fn key_too_small(app: &mut App, key: KeyEvent) -> Vec<Intent> {
    if key.kind == KeyEventKind::Release {
        return Vec::new();
    }
    if matches!(app.popup, Some(Popup::ConfirmQuit(_))) {
        return app.on_key(key);
    }
    match keymap::lookup(Scope::Global, &key) {
        Some(b) if b.action == Action::Quit => {
            let o = app.ask_quit();
            app.apply(o)
        }
        _ => Vec::new(),
    }
}

/// A paste (the terminal's bracketed paste, one event however long): whole into the editor in
/// one insert, as one `paste` or typed text to an attached computer, and in a popup as the keys
/// it would have been typed as. Never an answer to an approval prompt, whose keys are letters a
/// pasted text is full of. Terminals end pasted lines with CR; the editor's lines end with LF.
pub(super) fn paste(app: &mut App, text: &str) -> Vec<Intent> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    if app.approval().is_some() {
        app.notify(
            "paste dropped: an approval is waiting for your answer, and a paste is not one",
            true,
        );
        return Vec::new();
    }
    if app.popup.is_none() {
        if app.screen.attached {
            let o = app.screen.paste(text, app.selected.as_deref());
            return app.apply(o);
        }
        if app.focus == Focus::Editor {
            app.editor.area.insert_str(text);
            return Vec::new();
        }
    }
    let mut intents = Vec::new();
    for c in text.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\t' => KeyCode::Tab,
            c => KeyCode::Char(c),
        };
        intents.extend(app.on_key(KeyEvent::new(code, KeyModifiers::NONE)));
    }
    intents
}

/// Terminal events that came together, in order. A paste the terminal does not bracket comes
/// as thousands of keys at once: a run of keys that only type into the editor goes in as one
/// insert, so a long text costs one pass rather than one per character (the textarea goes over
/// all its lines after every edit). Every other event goes through as it came.
pub(super) fn batch(app: &mut App, events: Vec<CtEvent>) -> Vec<Intent> {
    let mut intents = Vec::new();
    let mut run = String::new();
    for ev in events {
        if let CtEvent::Key(k) = &ev
            && let Some(c) = typed(app, k)
        {
            run.push(c);
            continue;
        }
        type_run(app, &mut run);
        intents.extend(app.on_terminal(ev));
    }
    type_run(app, &mut run);
    intents
}

/// The character a key types into the editor (Enter: a new line), when that is all it does
/// now: no row of the keymap takes it and the editor is the layer that keeps unbound keys.
fn typed(app: &App, key: &KeyEvent) -> Option<char> {
    if key.kind == KeyEventKind::Release || app.too_small() {
        return None;
    }
    let c = match key.code {
        KeyCode::Char(c)
            if !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
        {
            c
        }
        KeyCode::Enter if key.modifiers.is_empty() => '\n',
        _ => return None,
    };
    let editor_keeps = app.layers().last() == Some(&Scope::Editor);
    (editor_keeps && app.binding_for(key).is_none()).then_some(c)
}

/// Types `run` into the editor as the keys would have, one by one.
fn type_run(app: &mut App, run: &mut String) {
    if run.is_empty() {
        return;
    }
    // What `App::on_key` does for every key.
    app.notice = None;
    app.computers.auto_select = false;
    app.editor.area.insert_str(std::mem::take(run));
}

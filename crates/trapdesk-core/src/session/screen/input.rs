//! Input for a computer's terminal or a monitor, checked before it is sent: `send-input`'s
//! text, keys and paste become the `input` request's steps, a touch a monitor's
//! (docs/protocol.md "Screen"); and the session's calls that send them.

use serde_json::{Value, json};

use super::{Display, SCREEN_TIMEOUT, ScreenError};
use crate::session::Session;
use crate::session::model::{Origin, RequestSpec};
use trapdesk_proto::protocol::{Kind, kind};

/// Characters of `text` in one call (each is one `char` event on the computer).
pub const MAX_TEXT: usize = 4096;
/// Bytes of one paste: CC's own clipboard limit.
pub const MAX_PASTE: usize = 512;
/// Key names in one call.
pub const MAX_KEYS: usize = 256;

/// Key names every CC runtime knows (CC: Tweaked's GLFW table and the older LWJGL one that
/// CraftOS-PC still uses share these; the computer turns a name into its own code).
const KEYS: &[&str] = &[
    "space",
    "apostrophe",
    "comma",
    "minus",
    "period",
    "slash",
    "semicolon",
    "equals",
    "leftBracket",
    "backslash",
    "rightBracket",
    "grave",
    "enter",
    "tab",
    "backspace",
    "insert",
    "delete",
    "right",
    "left",
    "down",
    "up",
    "pageUp",
    "pageDown",
    "home",
    "end",
    "capsLock",
    "scrollLock",
    "numLock",
    "pause",
    "numPadDecimal",
    "numPadDivide",
    "numPadSubtract",
    "numPadAdd",
    "numPadEnter",
    "leftShift",
    "leftCtrl",
    "leftAlt",
    "rightShift",
    "rightCtrl",
    "rightAlt",
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
];

/// Other spellings accepted for a key.
const ALIASES: &[(&str, &str)] = &[
    ("ctrl", "leftCtrl"),
    ("control", "leftCtrl"),
    ("alt", "leftAlt"),
    ("shift", "leftShift"),
    ("return", "enter"),
    ("0", "zero"),
    ("1", "one"),
    ("2", "two"),
    ("3", "three"),
    ("4", "four"),
    ("5", "five"),
    ("6", "six"),
    ("7", "seven"),
    ("8", "eight"),
    ("9", "nine"),
];

/// Whole names that act as holding a ctrl combination, as CC does after a second.
const HELD: &[&str] = &["terminate", "reboot", "shutdown"];

/// Why input was refused, naming the argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InputError {
    pub field: String,
    pub message: String,
}

fn refuse(field: impl Into<String>, message: impl Into<String>) -> InputError {
    InputError {
        field: field.into(),
        message: message.into(),
    }
}

/// The canonical name of one base key (`"PageUp"` -> `"pageUp"`), or `None` when unknown.
fn base_key(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    if lower.len() == 1 && lower.as_bytes()[0].is_ascii_lowercase() {
        return Some(lower);
    }
    if let Some((_, to)) = ALIASES.iter().find(|(a, _)| *a == lower) {
        return Some((*to).to_owned());
    }
    if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok())
        && (1..=12).contains(&n)
    {
        return Some(format!("f{n}"));
    }
    if let Some(n) = lower
        .strip_prefix("numpad")
        .and_then(|n| n.parse::<u8>().ok())
        && n <= 9
    {
        return Some(format!("numPad{n}"));
    }
    KEYS.iter()
        .find(|k| k.to_ascii_lowercase() == lower)
        .map(|k| (*k).to_owned())
}

/// Checks one key name such as `enter`, `ctrl+s`, `shift+tab`, `F5` or `terminate`, and
/// returns it in the spelling the computer looks up.
///
/// # Errors
/// An unknown key or modifier, naming it and what is accepted.
pub fn key_name(spec: &str, field: &str) -> Result<String, InputError> {
    let trimmed = spec.trim();
    if HELD.contains(&trimmed.to_ascii_lowercase().as_str()) {
        return Ok(trimmed.to_ascii_lowercase());
    }
    let parts: Vec<&str> = trimmed.split('+').collect();
    let Some((base, mods)) = parts.split_last() else {
        return Err(refuse(field, "empty key name"));
    };
    let mut out = Vec::new();
    for m in mods {
        let m = m.trim().to_ascii_lowercase();
        if !matches!(m.as_str(), "ctrl" | "alt" | "shift") {
            return Err(refuse(
                field,
                format!(
                    "unknown modifier {m:?} in {spec:?} (ctrl, alt and shift combine with a key, as in ctrl+s)"
                ),
            ));
        }
        out.push(m);
    }
    let Some(base) = base_key(base.trim()) else {
        return Err(refuse(
            field,
            format!(
                "unknown key name {:?}: use CC key names such as enter, backspace, tab, up, down, left, right, home, end, delete, pageUp, f1..f12, a..z, zero..nine, space, ctrl, alt, shift, combinations such as ctrl+s, or terminate, reboot, shutdown",
                base.trim()
            ),
        ));
    };
    out.push(base);
    Ok(out.join("+"))
}

fn latin1(text: &str, field: &str) -> Result<(), InputError> {
    if let Some(c) = text.chars().find(|c| u32::from(*c) > 0xFF) {
        return Err(refuse(
            field,
            format!(
                "{c:?} (U+{:04X}) cannot be typed on a CC computer, whose characters are Latin-1 (U+0000..U+00FF)",
                u32::from(c)
            ),
        ));
    }
    Ok(())
}

/// The `input` request's steps for `send-input`'s arguments: the text first, then the paste,
/// then the keys, so that `text: "ls", keys: ["enter"]` runs `ls`.
///
/// # Errors
/// The first argument that cannot be sent, with the reason.
pub fn steps(
    text: Option<&str>,
    keys: &[String],
    paste: Option<&str>,
) -> Result<Vec<Value>, InputError> {
    let mut out = Vec::new();
    if let Some(t) = text.filter(|t| !t.is_empty()) {
        let n = t.chars().count();
        if n > MAX_TEXT {
            return Err(refuse(
                "text",
                format!(
                    "{n} characters; at most {MAX_TEXT} per call (write a file with write-file for more)"
                ),
            ));
        }
        latin1(t, "text")?;
        out.push(json!({"text": t}));
    }
    if let Some(p) = paste.filter(|p| !p.is_empty()) {
        latin1(p, "paste")?;
        let n = p.chars().count();
        if n > MAX_PASTE {
            return Err(refuse(
                "paste",
                format!("{n} characters; CC pastes at most {MAX_PASTE}"),
            ));
        }
        out.push(json!({"paste": p}));
    }
    if keys.len() > MAX_KEYS {
        return Err(refuse(
            "keys",
            format!("{} keys; at most {MAX_KEYS} per call", keys.len()),
        ));
    }
    for (i, k) in keys.iter().enumerate() {
        out.push(json!({"key": key_name(k, &format!("keys[{i}]"))?}));
    }
    if out.is_empty() {
        return Err(refuse("text", "nothing to send: give text, keys or paste"));
    }
    Ok(out)
}

/// Largest cell a touch may name: a monitor is at most 164 x 81 cells (an 8 x 6 block
/// monitor at text scale 0.5); larger is refused before it is sent.
pub const MAX_CELL: u32 = 512;

/// One touch coordinate as an agent gave it (a JSON number): a whole number from 1.
///
/// # Errors
/// A fraction, a number below 1 or above [`MAX_CELL`], naming `field`.
pub fn cell(v: f64, field: &str) -> Result<u32, InputError> {
    if !v.is_finite() || v.fract() != 0.0 {
        return Err(refuse(
            field,
            format!("{v} is not a whole cell: a touch names a cell by whole 1-based numbers"),
        ));
    }
    if v < 1.0 || v > f64::from(MAX_CELL) {
        return Err(refuse(
            field,
            format!("{v} is outside 1..{MAX_CELL}: cells are 1-based, the top left is 1,1"),
        ));
    }
    Ok(v as u32)
}

/// The `input` step of a touch at a 1-based cell (docs/protocol.md, "Payloads": `input`).
///
/// # Errors
/// A coordinate below 1 or above [`MAX_CELL`].
pub fn touch(x: u32, y: u32) -> Result<Value, InputError> {
    cell(f64::from(x), "touch.x")?;
    cell(f64::from(y), "touch.y")?;
    Ok(json!({"touch": {"x": x, "y": y}}))
}

/// Checks that a monitor is given with a touch and a touch alone: a monitor takes no keys,
/// and a terminal no touch (`send-input`'s rule).
///
/// # Errors
/// A touch without a monitor, or text, keys or paste with a monitor, naming the field.
pub fn check_display(
    monitor: Option<&str>,
    touch: bool,
    text: Option<&str>,
    keys: &[String],
    paste: Option<&str>,
) -> Result<(), InputError> {
    match monitor {
        None if touch => Err(refuse(
            "touch",
            "a touch is on a monitor: give monitor (its peripheral name, as list-peripherals shows it)",
        )),
        None => Ok(()),
        Some("") => Err(refuse("monitor", "empty monitor name")),
        Some(m) => {
            let typed = [
                ("text", text.is_some_and(|t| !t.is_empty())),
                ("keys", !keys.is_empty()),
                ("paste", paste.is_some_and(|p| !p.is_empty())),
            ];
            if let Some((field, _)) = typed.iter().find(|(_, given)| *given) {
                return Err(refuse(
                    *field,
                    format!(
                        "a monitor has no keyboard: input on monitor {m:?} is a touch alone (leave {field} out, or leave monitor out to type at the computer)"
                    ),
                ));
            }
            if !touch {
                return Err(refuse(
                    "touch",
                    format!("nothing to send to monitor {m:?}: give touch {{x, y}}"),
                ));
            }
            Ok(())
        }
    }
}

impl Session {
    /// Sends input steps (see [`steps`]) to a computer's terminal. Resolves once the
    /// computer has queued every event.
    ///
    /// An agent's input waits while the person is attached to the computer, or is refused
    /// with `person_typing` (the policy's `person_typing`).
    ///
    /// # Errors
    /// When the computer is unknown, offline, has no mirror, or refuses the input.
    pub async fn send_input(
        &self,
        target: &str,
        steps: Vec<Value>,
        origin: Origin,
    ) -> Result<Value, ScreenError> {
        // While the person is attached to it, the keyboard is theirs (see `pause.rs`).
        let trapos_id = self.resolve(target)?;
        self.wait_keyboard(&trapos_id, &origin, SCREEN_TIMEOUT)
            .await?;
        Ok(self.start_input(&trapos_id, steps, origin)?.wait().await?)
    }

    /// Touches a monitor attached to a computer at a cell (1-based `x`, `y`): the computer
    /// queues `monitor_touch` with the monitor's name and the cell, as CC does when a player
    /// right-clicks it. The person's keyboard is not waited for: a touch is not typing.
    ///
    /// # Errors
    /// A cell below 1 (refused before sending), an unknown or offline computer, a client
    /// without monitor shadows; the computer refuses a cell outside the monitor
    /// (`bad_request`) or a monitor not attached (`not_found`).
    pub async fn send_touch(
        &self,
        target: &str,
        monitor: &str,
        x: u32,
        y: u32,
        origin: Origin,
    ) -> Result<Value, ScreenError> {
        let step = touch(x, y)?;
        if monitor.is_empty() {
            return Err(ScreenError::Input(InputError {
                field: "monitor".into(),
                message: "a touch needs the monitor's name".into(),
            }));
        }
        let trapos_id = self.resolve(target)?;
        let display = Display::Monitor(monitor.to_owned());
        self.serves(&trapos_id, &display, Kind::Input)?;
        let spec = RequestSpec::of(kind::Input {
            steps: vec![step],
            request_id: None,
            monitor: Some(monitor.to_owned()),
        })
        .timeout(Some(SCREEN_TIMEOUT))
        .quiet();
        Ok(self.start(&trapos_id, spec, origin)?.wait().await?)
    }

    /// Sends input to one running chunk or program (`request_id`, an `exec-lua` or `run-file`
    /// request pending on `target`): the events reach that request alone, not the shell nor
    /// other programs (docs/protocol.md, "Payloads": `input`). The person's keyboard is not
    /// waited for: nothing reaches the terminal they are typing at.
    ///
    /// # Errors
    /// When the computer is unknown, offline or has no mirror, when its client cannot aim input
    /// (a client from before that), or when no such request is running there.
    pub async fn send_input_to(
        &self,
        target: &str,
        request_id: &str,
        steps: Vec<Value>,
        origin: Origin,
    ) -> Result<Value, ScreenError> {
        let trapos_id = self.resolve(target)?;
        self.serves(&trapos_id, &Display::Terminal, Kind::Input)?;
        let running = self.pending().into_iter().any(|r| {
            r.request_id == request_id
                && r.trapos_id == trapos_id
                && matches!(r.kind, Kind::ExecLua | Kind::RunFile)
        });
        if !running {
            return Err(ScreenError::NotRunning {
                trapos_id,
                request_id: request_id.to_owned(),
            });
        }
        let routes = self
            .computer(&trapos_id)
            .is_some_and(|c| c.machine.routes_input == Some(true));
        if !routes {
            return Err(ScreenError::NoRouting { trapos_id });
        }
        let spec = RequestSpec::of(kind::Input {
            steps,
            request_id: Some(request_id.to_owned()),
            monitor: None,
        })
        .timeout(Some(SCREEN_TIMEOUT))
        .quiet();
        Ok(self.start(&trapos_id, spec, origin)?.wait().await?)
    }

    /// Starts sending input and returns at once: requests to one computer go out in the
    /// order they were started, so keys typed one by one arrive in order.
    ///
    /// # Errors
    /// When the computer is unknown, offline or has no mirror.
    pub fn start_input(
        &self,
        target: &str,
        steps: Vec<Value>,
        origin: Origin,
    ) -> Result<crate::session::Ticket, ScreenError> {
        let trapos_id = self.resolve(target)?;
        self.serves(&trapos_id, &Display::Terminal, Kind::Input)?;
        let spec = RequestSpec::of(kind::Input {
            steps,
            request_id: None,
            monitor: None,
        })
        .timeout(Some(SCREEN_TIMEOUT))
        .quiet();
        Ok(self.start(&trapos_id, spec, origin)?)
    }
}

#[cfg(test)]
mod tests;

//! Arguments of the screen tools: `read-screen` and `send-input` (with its `touch`).

use schemars::JsonSchema;
use serde::Deserialize;

use super::computer;

/// Arguments of `read-screen`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadScreen {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Also return the colours: fg and bg rows in blit form (one hex digit per cell) and the
    /// palette (default false).
    #[serde(default)]
    pub colors: Option<bool>,
    /// A monitor attached to the computer, by its peripheral name ("top", "monitor_0"; see
    /// list-peripherals): read what this computer drew on it instead of its own terminal.
    #[serde(default)]
    pub monitor: Option<String>,
}

/// A cell of a monitor, 1-based (`send-input`'s `touch`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Touch {
    /// Column, from 1 at the left. (A number here, checked to be a whole one from 1, so that
    /// a fraction is refused by name rather than by the schema's parser.)
    #[schemars(with = "u32")]
    pub x: f64,
    /// Row, from 1 at the top.
    #[schemars(with = "u32")]
    pub y: f64,
}

/// Arguments of `send-input`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendInput {
    /// Computer: full traposId ("7:miner"), bare computer id ("7"), or a unique label ("miner").
    #[serde(deserialize_with = "computer")]
    pub trapos_id: String,
    /// Text typed as char events (a newline presses enter); at most 4096 characters.
    #[serde(default)]
    pub text: Option<String>,
    /// CC key names pressed in order after the text: "enter", "backspace", "up", "f5",
    /// "ctrl+s", "shift+tab", ...; "terminate", "reboot", "shutdown" hold ctrl+T/R/S.
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// Text sent as one paste event (at most 512 characters), after the text.
    #[serde(default)]
    pub paste: Option<String>,
    /// Milliseconds to wait before reading the screen back (default 300, at most 10000).
    #[serde(default)]
    #[schemars(range(max = 10_000))]
    pub wait_ms: Option<u64>,
    /// A running exec-lua or run-file request (its requestId): the input goes to that chunk
    /// alone (one waiting in read() or os.pullEvent("char")), not to the shell, and the answer
    /// is its newest output instead of the screen. Without it, input goes to the computer as
    /// typed at its keyboard: the shell or whatever program has the screen (running chunks see
    /// it too).
    #[serde(default)]
    pub request_id: Option<String>,
    /// A monitor attached to the computer, by its peripheral name ("top", "monitor_0"): the
    /// input is a touch on it (give touch; text, keys and paste are refused with a monitor),
    /// and the answer is the monitor's screen.
    #[serde(default)]
    pub monitor: Option<String>,
    /// Touch the monitor at this cell ({x, y}, 1-based, the top left is 1,1): the computer
    /// gets a monitor_touch event with the monitor's name and the cell. Needs monitor.
    #[serde(default)]
    pub touch: Option<Touch>,
}

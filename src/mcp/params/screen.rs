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
    /// Also fg and bg rows in blit form (a hex digit per cell) and the palette.
    #[serde(default)]
    pub colors: Option<bool>,
    /// A monitor's peripheral name ("top", "monitor_0"; see list-peripherals): read it instead.
    #[serde(default)]
    pub monitor: Option<String>,
}

/// A cell of a monitor, 1-based (`send-input`'s `touch`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Touch {
    /// Column, from 1 at the left.
    // A number here, checked to be a whole one from 1, so that a fraction is refused by
    // name rather than by the schema's parser.
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
    /// CC key names pressed in order after the text and paste: enter, backspace, tab, up,
    /// down, left, right, home, end, delete, pageUp, pageDown, f1..f12, a..z, zero..nine,
    /// space, ctrl, alt, shift, and combinations such as ctrl+s or shift+tab; terminate,
    /// reboot and shutdown hold ctrl+T, ctrl+R and ctrl+S.
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// Text sent as one paste event (at most 512 characters), after the text.
    #[serde(default)]
    pub paste: Option<String>,
    /// Milliseconds to wait before reading the screen back (default 300, at most 10000).
    #[serde(default)]
    #[schemars(range(max = 10_000))]
    pub wait_ms: Option<u64>,
    /// A running exec-lua or run-file request: the input goes to that chunk alone (in read()
    /// or os.pullEvent("char")). Without it, to the computer's keyboard (the shell or the
    /// program with the screen; running chunks see it too).
    #[serde(default)]
    pub request_id: Option<String>,
    /// A monitor's peripheral name ("top", "monitor_0"): the input is a touch on it (touch
    /// only; no text, keys or paste).
    #[serde(default)]
    pub monitor: Option<String>,
    /// The monitor's cell to touch, 1-based; needs monitor.
    #[serde(default)]
    pub touch: Option<Touch>,
}

//! `read-screen` and `send-input`: the terminal as text rows, cursor and size.
#![allow(dead_code)]

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::super::schemas::Common;

/// A terminal or a monitor, as read-screen shows it and send-input after its input.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Screen {
    #[serde(flatten)]
    common: Common,
    #[serde(skip_serializing_if = "Option::is_none")]
    width: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    height: Option<u64>,
    /// 1-based x, y (may lie off screen) and blink
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<Map<String, Value>>,
    /// one string per row, trailing blanks cut
    #[serde(skip_serializing_if = "Option::is_none")]
    rows: Option<Vec<String>>,
    /// text colour per cell in blit form (colors only)
    #[serde(skip_serializing_if = "Option::is_none")]
    fg: Option<Vec<String>>,
    /// background colour per cell in blit form (colors only)
    #[serde(skip_serializing_if = "Option::is_none")]
    bg: Option<Vec<String>>,
    /// the 16 colours as #rrggbb, by blit digit (colors only)
    #[serde(skip_serializing_if = "Option::is_none")]
    palette: Option<Vec<String>>,
    /// events queued (send-input)
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<u64>,
    /// send-input with requestId: whether that request still runs
    #[serde(skip_serializing_if = "Option::is_none")]
    running: Option<bool>,
    /// send-input with requestId: that request's newest output lines
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    /// the monitor shown (with monitor): its peripheral name
    #[serde(skip_serializing_if = "Option::is_none")]
    monitor: Option<String>,
    /// the monitor's text scale, 0.5 to 5 (with monitor)
    #[serde(skip_serializing_if = "Option::is_none")]
    scale: Option<f64>,
    /// a monitor with cells this computer never drew (or another computer drew over): per row, null when every cell is known, else one character per cell, 1 known, 0 unknown (an unknown cell's text in rows is a blank, shown as ░ (U+2591) in the text block)
    #[serde(skip_serializing_if = "Option::is_none")]
    known: Option<Vec<Option<String>>>,
    /// send-input with touch: the cell touched, {x, y}
    #[serde(skip_serializing_if = "Option::is_none")]
    touched: Option<Map<String, Value>>,
    /// true when the colours were left out to fit one result (a large monitor)
    #[serde(skip_serializing_if = "Option::is_none")]
    colors_cut: Option<bool>,
    /// when the rows did not all fit one result: how many are given, from the top (rows and known alike)
    #[serde(skip_serializing_if = "Option::is_none")]
    rows_shown: Option<u64>,
}

//! A computer's terminal as the host holds it: the whole frame the screen server answers with,
//! kept current by the `screen` updates (docs/protocol.md "Screen").

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// CC's default palette, used until a frame says otherwise.
pub const DEFAULT_PALETTE: [u32; 16] = [
    0xF0F0F0, 0xF2B233, 0xE57FD8, 0x99B2F2, 0xDEDE6C, 0x7FCC19, 0xF2B2CC, 0x4C4C4C, 0x999999,
    0x4C99B2, 0xB266E5, 0x3366CC, 0x7F664C, 0x57A64E, 0xCC4C4C, 0x111111,
];

/// Largest terminal accepted from a computer (monitors reach 164 x 81 at the smallest scale).
const MAX_SIDE: u64 = 512;

/// What an unknown cell of a monitor's shadow is shown as in text (read-screen's text block):
/// U+2591 LIGHT SHADE, outside CC's characters (U+0000-U+00FF), so never a character a
/// computer drew.
pub const UNKNOWN_CELL: char = '\u{2591}';

/// One row: its characters (CC's 0-255, as the chars U+0000-U+00FF) and one blit digit per
/// cell for text and background colour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenRow {
    pub text: Vec<char>,
    pub fg: Vec<u8>,
    pub bg: Vec<u8>,
    /// Which cells are known, one `1` (known) or `0` (unknown) per cell: a monitor's shadow
    /// holds only what this computer drew since its client started (docs/protocol.md,
    /// "Screen"). `None`: every cell is known (a terminal always is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known: Option<String>,
}

impl ScreenRow {
    fn blank(width: usize) -> ScreenRow {
        ScreenRow {
            text: vec![' '; width],
            fg: vec![b'0'; width],
            bg: vec![b'f'; width],
            known: None,
        }
    }

    /// The row as text.
    pub fn text_string(&self) -> String {
        self.text.iter().collect()
    }

    /// Whether the cell at `x` (0-based) is known. A mask shorter than the row leaves the
    /// cells past it unknown (the client sends one character per cell, so that is a cut mask,
    /// and unknown is the safe reading).
    pub fn is_known(&self, x: usize) -> bool {
        match &self.known {
            None => true,
            Some(mask) => mask.as_bytes().get(x) == Some(&b'1'),
        }
    }

    /// Whether any cell of the row is unknown.
    pub fn has_unknown(&self) -> bool {
        (0..self.text.len()).any(|x| !self.is_known(x))
    }

    /// The row as text with each unknown cell shown as [`UNKNOWN_CELL`].
    pub fn shown_string(&self) -> String {
        self.text
            .iter()
            .enumerate()
            .map(|(x, c)| if self.is_known(x) { *c } else { UNKNOWN_CELL })
            .collect()
    }
}

/// A row's `known` mask as the host keeps it: one `1`/`0` per cell of `width` (anything else
/// counts as unknown, a short mask is padded unknown), `None` when every cell is known.
fn mask(v: Option<&str>, width: usize) -> Option<String> {
    let v = v?;
    let mut out: String = v
        .bytes()
        .take(width)
        .map(|b| if b == b'1' { '1' } else { '0' })
        .collect();
    while out.len() < width {
        out.push('0');
    }
    if out.bytes().all(|b| b == b'1') {
        None
    } else {
        Some(out)
    }
}

/// The whole terminal of one computer, or the shadow of one of its monitors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenFrame {
    pub width: usize,
    pub height: usize,
    /// 1-based cursor, possibly off screen (CC allows it).
    pub cursor_x: i64,
    pub cursor_y: i64,
    pub blink: bool,
    /// Whether the computer has colour (an advanced computer).
    pub colour: bool,
    /// Palette entries as 0xRRGGBB, indexed by blit digit.
    pub palette: [u32; 16],
    pub rows: Vec<ScreenRow>,
    /// The update this frame is current to.
    pub seq: u64,
    /// The monitor this frame shows (its peripheral name), `None` for the terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
    /// A monitor's text scale (0.5 to 5 in steps of 0.5), `None` for the terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
}

/// Why a frame or update from a computer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad screen message: {0}")]
pub struct FrameError(pub String);

fn bad(msg: impl Into<String>) -> FrameError {
    FrameError(msg.into())
}

fn digits(s: &str, width: usize, default: u8) -> Vec<u8> {
    let mut out: Vec<u8> = s
        .bytes()
        .take(width)
        .map(|b| {
            let b = b.to_ascii_lowercase();
            if b.is_ascii_hexdigit() { b } else { default }
        })
        .collect();
    out.resize(width, default);
    out
}

impl ScreenFrame {
    /// A blank frame of the given size.
    pub fn blank(width: usize, height: usize) -> ScreenFrame {
        ScreenFrame {
            width,
            height,
            cursor_x: 1,
            cursor_y: 1,
            blink: false,
            colour: true,
            palette: DEFAULT_PALETTE,
            rows: vec![ScreenRow::blank(width); height],
            seq: 0,
            monitor: None,
            scale: None,
        }
    }

    /// Whether any cell is unknown (only a monitor's shadow has such cells).
    pub fn has_unknown(&self) -> bool {
        self.rows.iter().any(ScreenRow::has_unknown)
    }

    /// Builds a frame from a full one (`full: true`), or applies an update to `self`. An update
    /// that is not full and comes with another size than the current one is refused: the
    /// caller asks for a whole frame instead.
    ///
    /// # Errors
    /// When a field is missing or ill-typed.
    pub fn apply(current: Option<&ScreenFrame>, v: &Value) -> Result<ScreenFrame, FrameError> {
        let num = |k: &str| v.get(k).and_then(Value::as_u64);
        let width = num("width").ok_or_else(|| bad("width must be a number"))?;
        let height = num("height").ok_or_else(|| bad("height must be a number"))?;
        if width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE {
            return Err(bad(format!("size {width}x{height} out of range")));
        }
        let (width, height) = (width as usize, height as usize);
        let full = v.get("full").and_then(Value::as_bool).unwrap_or(false);
        let mut frame = match current {
            Some(c) if !full => {
                if c.width != width || c.height != height {
                    return Err(bad("an update of another size than the frame"));
                }
                c.clone()
            }
            Some(c) => {
                let mut f = ScreenFrame::blank(width, height);
                f.palette = c.palette;
                f.monitor.clone_from(&c.monitor);
                f.scale = c.scale;
                f
            }
            None if !full => return Err(bad("an update before any whole frame")),
            None => ScreenFrame::blank(width, height),
        };
        frame.seq = num("seq").unwrap_or(frame.seq);
        match v.get("monitor") {
            Some(Value::String(m)) => frame.monitor = Some(m.clone()),
            Some(_) => return Err(bad("monitor must be a string")),
            None => {}
        }
        if let Some(s) = v.get("scale") {
            let s = s
                .as_f64()
                .filter(|s| (0.5..=5.0).contains(s))
                .ok_or_else(|| bad("scale must be a number from 0.5 to 5"))?;
            frame.scale = Some(s);
        }
        if let Some(c) = v.get("colour").and_then(Value::as_bool) {
            frame.colour = c;
        }
        if let Some(cur) = v.get("cursor") {
            frame.cursor_x = cur.get("x").and_then(Value::as_i64).unwrap_or(1);
            frame.cursor_y = cur.get("y").and_then(Value::as_i64).unwrap_or(1);
            frame.blink = cur.get("blink").and_then(Value::as_bool).unwrap_or(false);
        }
        if let Some(p) = v.get("palette").and_then(Value::as_array) {
            for (i, hex) in p.iter().take(16).enumerate() {
                if let Some(n) = hex.as_str().and_then(|h| u32::from_str_radix(h, 16).ok()) {
                    frame.palette[i] = n & 0xFF_FFFF;
                }
            }
        }
        frame.set_rows(v, width, height)?;
        Ok(frame)
    }

    /// Takes the rows an update carries (each replaces the row at its `y`).
    fn set_rows(&mut self, v: &Value, width: usize, height: usize) -> Result<(), FrameError> {
        let rows = v
            .get("rows")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("rows must be an array"))?;
        for row in rows {
            let y = row
                .get("y")
                .and_then(Value::as_u64)
                .ok_or_else(|| bad("a row needs a number y"))?;
            if y == 0 || y as usize > height {
                return Err(bad(format!("row y {y} outside 1..{height}")));
            }
            let text = row.get("text").and_then(Value::as_str).unwrap_or("");
            let mut chars: Vec<char> = text.chars().take(width).collect();
            chars.resize(width, ' ');
            self.rows[y as usize - 1] = ScreenRow {
                text: chars,
                fg: digits(
                    row.get("fg").and_then(Value::as_str).unwrap_or(""),
                    width,
                    b'0',
                ),
                bg: digits(
                    row.get("bg").and_then(Value::as_str).unwrap_or(""),
                    width,
                    b'f',
                ),
                known: mask(row.get("known").and_then(Value::as_str), width),
            };
        }
        Ok(())
    }

    /// The rows as text, trailing blanks cut.
    pub fn text_rows(&self) -> Vec<String> {
        self.rows
            .iter()
            .map(|r| r.text_string().trim_end().to_owned())
            .collect()
    }

    /// The rows as text with unknown cells shown as [`UNKNOWN_CELL`], trailing blanks cut
    /// (an unknown cell is not blank, so a row of unknown cells keeps them).
    pub fn shown_rows(&self) -> Vec<String> {
        self.rows
            .iter()
            .map(|r| r.shown_string().trim_end().to_owned())
            .collect()
    }

    /// The frame as agents get it (`read-screen`'s structuredContent, less the traposId): a
    /// monitor's adds `monitor`, `scale` and, when a cell is unknown, `known` (one mask per
    /// row, `null` for a row whose every cell is known).
    pub fn to_json(&self, colors: bool) -> Value {
        let mut v = json!({
            "width": self.width,
            "height": self.height,
            "cursor": {"x": self.cursor_x, "y": self.cursor_y, "blink": self.blink},
            "rows": self.text_rows(),
        });
        if let Some(obj) = v.as_object_mut() {
            if let Some(m) = &self.monitor {
                obj.insert("monitor".into(), json!(m));
            }
            if let Some(s) = self.scale {
                obj.insert("scale".into(), json!(s));
            }
            if self.has_unknown() {
                let known: Vec<Option<&str>> =
                    self.rows.iter().map(|r| r.known.as_deref()).collect();
                obj.insert("known".into(), json!(known));
            }
        }
        if colors && let Some(obj) = v.as_object_mut() {
            let fg: Vec<String> = self
                .rows
                .iter()
                .map(|r| String::from_utf8_lossy(&r.fg).into_owned())
                .collect();
            let bg: Vec<String> = self
                .rows
                .iter()
                .map(|r| String::from_utf8_lossy(&r.bg).into_owned())
                .collect();
            let palette: Vec<String> = self.palette.iter().map(|p| format!("#{p:06x}")).collect();
            obj.insert("fg".into(), json!(fg));
            obj.insert("bg".into(), json!(bg));
            obj.insert("palette".into(), json!(palette));
            obj.insert("colour".into(), json!(self.colour));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Value {
        json!({"full": true, "seq": 1, "width": 5, "height": 2, "cursor": {"x": 3, "y": 2, "blink": true},
            "rows": [{"y": 1, "text": "ab", "fg": "e0", "bg": "ff"}, {"y": 2, "text": "> ", "fg": "44", "bg": "ff"}],
            "palette": ["ff0000"]})
    }

    #[test]
    fn a_full_frame_then_an_update() {
        let f = ScreenFrame::apply(None, &full()).expect("full frame");
        assert_eq!(f.text_rows(), vec!["ab", ">"]);
        assert_eq!(f.rows[0].fg, b"e0000".to_vec());
        assert_eq!(f.palette[0], 0xFF0000);
        assert_eq!(f.palette[1], DEFAULT_PALETTE[1]);
        assert!(f.blink);
        let u = json!({"seq": 2, "width": 5, "height": 2, "cursor": {"x": 4, "y": 2, "blink": true},
            "rows": [{"y": 2, "text": "> ls", "fg": "4400", "bg": "ffff"}]});
        let g = ScreenFrame::apply(Some(&f), &u).expect("update");
        assert_eq!(g.text_rows(), vec!["ab", "> ls"]);
        assert_eq!((g.cursor_x, g.seq), (4, 2));
        assert_eq!(g.palette[0], 0xFF0000, "palette kept across updates");
    }

    #[test]
    fn bad_updates_are_refused() {
        assert!(ScreenFrame::apply(None, &json!({"width": 5, "height": 2, "rows": []})).is_err());
        let f = ScreenFrame::apply(None, &full()).expect("full");
        let other = json!({"width": 6, "height": 2, "rows": []});
        assert!(ScreenFrame::apply(Some(&f), &other).is_err());
        let off = json!({"width": 5, "height": 2, "rows": [{"y": 3, "text": ""}]});
        assert!(ScreenFrame::apply(Some(&f), &off).is_err());
        assert!(
            ScreenFrame::apply(
                None,
                &json!({"full": true, "width": 0, "height": 2, "rows": []})
            )
            .is_err()
        );
    }

    #[test]
    fn cc_characters_stay_one_cell_each() {
        let v = json!({"full": true, "width": 3, "height": 1, "rows": [{"y": 1, "text": "\u{8f}\u{a9}x"}]});
        let f = ScreenFrame::apply(None, &v).expect("frame");
        assert_eq!(f.rows[0].text, vec!['\u{8f}', '\u{a9}', 'x']);
    }

    #[test]
    fn a_monitor_frame_keeps_its_known_masks_through_updates() {
        let v = json!({"full": true, "width": 4, "height": 2, "monitor": "top", "scale": 0.5,
            "rows": [{"y": 1, "text": "hi", "known": "1100"}, {"y": 2, "text": "", "known": "0000"}]});
        let f = ScreenFrame::apply(None, &v).expect("monitor frame");
        assert_eq!(f.monitor.as_deref(), Some("top"));
        assert_eq!(f.scale, Some(0.5));
        assert!(f.rows[0].is_known(1) && !f.rows[0].is_known(2));
        assert!(f.has_unknown());
        assert_eq!(
            f.shown_rows(),
            vec!["hi\u{2591}\u{2591}", "\u{2591}\u{2591}\u{2591}\u{2591}"]
        );
        // An update writes row 2 whole: it is known from then on; row 1 keeps its mask, and
        // the monitor and scale stay when the update does not repeat them.
        let u = json!({"width": 4, "height": 2, "rows": [{"y": 2, "text": "ok"}]});
        let g = ScreenFrame::apply(Some(&f), &u).expect("update");
        assert_eq!(g.rows[1].known, None);
        assert_eq!(g.rows[0].known.as_deref(), Some("1100"));
        assert_eq!((g.monitor.as_deref(), g.scale), (Some("top"), Some(0.5)));
        assert_eq!(g.shown_rows(), vec!["hi\u{2591}\u{2591}", "ok"]);
        // A mask all known is kept as none; a short one leaves the rest unknown.
        let w = json!({"width": 4, "height": 2, "scale": 2,
            "rows": [{"y": 1, "text": "abcd", "known": "1111"}, {"y": 2, "text": "x", "known": "1"}]});
        let h = ScreenFrame::apply(Some(&g), &w).expect("update");
        assert_eq!(h.rows[0].known, None);
        assert_eq!(h.rows[1].known.as_deref(), Some("1000"));
        assert_eq!(h.scale, Some(2.0));
        let j = h.to_json(false);
        assert_eq!(j["monitor"], "top");
        assert_eq!(j["known"], json!([null, "1000"]));
        assert!(
            ScreenFrame::apply(
                Some(&h),
                &json!({"width": 4, "height": 2, "scale": 9, "rows": []})
            )
            .is_err()
        );
        assert!(
            ScreenFrame::apply(
                Some(&h),
                &json!({"width": 4, "height": 2, "monitor": 3, "rows": []})
            )
            .is_err()
        );
    }

    #[test]
    fn a_terminal_frame_has_no_monitor_fields() {
        let f = ScreenFrame::apply(None, &full()).expect("full");
        assert!(!f.has_unknown());
        let j = f.to_json(true);
        assert!(j.get("known").is_none() && j.get("monitor").is_none() && j.get("scale").is_none());
    }

    #[test]
    fn json_for_agents_has_colours_only_when_asked() {
        let f = ScreenFrame::apply(None, &full()).expect("full");
        let plain = f.to_json(false);
        assert!(plain.get("fg").is_none());
        let coloured = f.to_json(true);
        assert_eq!(coloured["fg"][0], "e0000");
        assert_eq!(coloured["palette"][0], "#ff0000");
    }
}

//! An advanced monitor: a terminal with CC: Tweaked's `TermMethods` (core/apis/TermMethods.java)
//! plus `setTextScale`/`getTextScale` (shared/peripheral/monitor/MonitorPeripheral.java). Its
//! size follows the text scale as `ServerMonitor.rebuild` computes it from the monitor's extent,
//! and a size change clears it and queues `monitor_resize`, as there.

use mlua::{IntoLuaMulti, Lua, MultiValue};

use super::args::Args;
use crate::screen::Screen;

/// The methods a monitor answers (`getMethods`), sorted.
pub(crate) const METHODS: &[&str] = &[
    "blit",
    "clear",
    "clearLine",
    "getBackgroundColor",
    "getBackgroundColour",
    "getCursorBlink",
    "getCursorPos",
    "getPaletteColor",
    "getPaletteColour",
    "getSize",
    "getTextColor",
    "getTextColour",
    "getTextScale",
    "isColor",
    "isColour",
    "scroll",
    "setBackgroundColor",
    "setBackgroundColour",
    "setCursorBlink",
    "setCursorPos",
    "setPaletteColor",
    "setPaletteColour",
    "setTextColor",
    "setTextColour",
    "setTextScale",
    "write",
];

/// How large a monitor is, and so how many cells it has at each text scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MonitorSpec {
    /// The drawable extent in CC's monitor pixels (1/64 of a block): a monitor `w` blocks wide
    /// has `64 * w - 20` (`MonitorBlockEntity`: the block less twice `RENDER_BORDER +
    /// RENDER_MARGIN`, 2.5/16 of a block).
    pub extent: (f64, f64),
}

impl MonitorSpec {
    /// A monitor of `w` x `h` blocks (1..8 x 1..6 in CC: Tweaked), sized exactly as CC sizes it
    /// (a 1x1 monitor is 7x5 at scale 1, 15x10 at scale 0.5).
    pub fn blocks(w: u32, h: u32) -> Self {
        Self {
            extent: (
                64.0 * f64::from(w.max(1)) - 20.0,
                64.0 * f64::from(h.max(1)) - 20.0,
            ),
        }
    }

    /// A monitor that has `w` x `h` cells at text scale 1, as CraftOS-PC's
    /// `periphemu.create(side, "monitor", w, h)` makes one; other scales size it by CC's
    /// formula on that extent (6x9 pixels a cell at scale 1).
    pub fn cells(w: u32, h: u32) -> Self {
        Self {
            extent: (6.0 * f64::from(w.max(1)), 9.0 * f64::from(h.max(1))),
        }
    }
}

impl Default for MonitorSpec {
    /// CraftOS-PC's created monitor: 51x19 at scale 1.
    fn default() -> Self {
        Self::cells(51, 19)
    }
}

/// What a monitor shows, for tests and the host to read.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorView {
    /// Columns and rows now.
    pub size: (usize, usize),
    /// The text scale (0.5 .. 5).
    pub scale: f64,
    /// Each row's text (bytes above 0x7F as Latin-1).
    pub text: Vec<String>,
    /// Each row's text colours as blit digits.
    pub fg: Vec<String>,
    /// Each row's background colours as blit digits.
    pub bg: Vec<String>,
    /// The 1-based cursor (may lie off screen).
    pub cursor: (i64, i64),
    /// Whether the cursor blinks.
    pub blink: bool,
    /// The palette as 0xRRGGBB, by blit digit.
    pub palette: [u32; 16],
}

/// A monitor's state.
pub(crate) struct Monitor {
    pub(crate) screen: Screen,
    /// The text scale in half steps (1 = 0.5 .. 10 = 5), as CC keeps it.
    scale: u8,
    spec: MonitorSpec,
}

/// Java's `Math.round` for the positive values here: half rounds up.
fn java_round(x: f64) -> f64 {
    (x + 0.5).floor()
}

impl Monitor {
    pub(crate) fn new(spec: MonitorSpec) -> Self {
        let (w, h) = Self::size_at(spec, 2);
        Self {
            screen: Screen::new(w, h),
            scale: 2,
            spec,
        }
    }

    /// `ServerMonitor.rebuild`'s size for a scale in half steps.
    fn size_at(spec: MonitorSpec, half_steps: u8) -> (usize, usize) {
        let s = f64::from(half_steps) * 0.5;
        let w = java_round(spec.extent.0 / (s * 6.0)).max(1.0);
        let h = java_round(spec.extent.1 / (s * 9.0)).max(1.0);
        (w as usize, h as usize)
    }

    pub(crate) fn scale(&self) -> f64 {
        f64::from(self.scale) * 0.5
    }

    pub(crate) fn view(&self) -> MonitorView {
        let s = &self.screen;
        let rows = |g: &Vec<Vec<u8>>| -> Vec<String> {
            g.iter()
                .map(|r| r.iter().map(|b| char::from(*b)).collect())
                .collect()
        };
        MonitorView {
            size: s.size(),
            scale: self.scale(),
            text: rows(&s.text),
            fg: rows(&s.fg),
            bg: rows(&s.bg),
            cursor: (s.x, s.y),
            blink: s.blink,
            palette: s.palette,
        }
    }

    /// Sets the scale; true when the size changed (then the screen was cleared, as
    /// `ServerMonitor.rebuild` clears it, and the caller queues `monitor_resize`).
    fn set_scale(&mut self, half_steps: u8) -> bool {
        if half_steps == self.scale {
            return false;
        }
        self.scale = half_steps;
        let (w, h) = Self::size_at(self.spec, half_steps);
        if (w, h) == self.screen.size() {
            return false;
        }
        self.screen.resize(w, h);
        for r in 0..h {
            self.screen.clear_row(r);
        }
        true
    }
}

/// CC's `TermMethods.parseColour`: the highest set bit names the colour.
fn parse_colour(n: i64) -> Result<u8, String> {
    if n <= 0 {
        return Err("Colour out of range".into());
    }
    let bit = 63 - n.leading_zeros() as i64;
    if bit > 15 {
        return Err("Colour out of range".into());
    }
    Ok(b"0123456789abcdef"[bit as usize])
}

fn digit_colour(d: u8) -> f64 {
    let i = (d as char).to_digit(16).unwrap_or(0);
    f64::from(1u32 << i)
}

fn digit_index(d: u8) -> usize {
    (d as char).to_digit(16).unwrap_or(0) as usize
}

/// What a method call did beyond its answer.
pub(crate) enum Effect {
    None,
    /// The size changed: queue `monitor_resize`.
    Resized,
}

/// Calls `method` on the monitor. `Ok(None)` when it has no such method.
pub(crate) fn call(
    lua: &Lua,
    m: &mut Monitor,
    method: &str,
    a: &Args,
) -> Result<Option<(MultiValue, Effect)>, String> {
    match method {
        "getTextScale" => {
            let out = m.scale().into_lua_multi(lua).map_err(lua_err)?;
            Ok(Some((out, Effect::None)))
        }
        "setTextScale" => set_text_scale(m, a).map(Some),
        _ => {
            let out = match drawing(lua, &mut m.screen, method, a)? {
                Some(out) => Some(out),
                None => colours(lua, &mut m.screen, method, a)?,
            };
            Ok(out.map(|out| (out, Effect::None)))
        }
    }
}

fn lua_err(e: mlua::Error) -> String {
    e.to_string()
}

fn none() -> Result<MultiValue, String> {
    Ok(MultiValue::new())
}

/// `setTextScale`: half steps from 1 (0.5) to 10 (5); a new size is reported.
fn set_text_scale(m: &mut Monitor, a: &Args) -> Result<(MultiValue, Effect), String> {
    let scale = (a.number(1)? * 2.0) as i64;
    if !(1..=10).contains(&scale) {
        return Err("Expected number in range 0.5-5".into());
    }
    let resized = m.set_scale(scale as u8);
    Ok((
        MultiValue::new(),
        if resized {
            Effect::Resized
        } else {
            Effect::None
        },
    ))
}

/// The text, cursor, size and clearing methods. `Ok(None)` for any other.
fn drawing(
    lua: &Lua,
    s: &mut Screen,
    method: &str,
    a: &Args,
) -> Result<Option<MultiValue>, String> {
    Ok(Some(match method {
        "write" => {
            let text = a.coerced(1)?;
            s.put(&text, None, None);
            none()?
        }
        "blit" => {
            let (t, f, b) = (a.bytes(1)?, a.bytes(2)?, a.bytes(3)?);
            if f.len() != t.len() || b.len() != t.len() {
                return Err("Arguments must be the same length".into());
            }
            s.put(&t, Some(&f), Some(&b));
            none()?
        }
        "scroll" => {
            s.scroll(a.int(1)?);
            none()?
        }
        "getCursorPos" => (s.x as f64, s.y as f64)
            .into_lua_multi(lua)
            .map_err(lua_err)?,
        "setCursorPos" => {
            let (x, y) = (a.int(1)?, a.int(2)?);
            s.x = x;
            s.y = y;
            none()?
        }
        "getCursorBlink" => s.blink.into_lua_multi(lua).map_err(lua_err)?,
        "setCursorBlink" => {
            s.blink = a.boolean(1)?;
            none()?
        }
        "getSize" => {
            let (w, h) = s.size();
            (w as f64, h as f64).into_lua_multi(lua).map_err(lua_err)?
        }
        "clear" => {
            for r in 0..s.height {
                s.clear_row(r);
            }
            none()?
        }
        "clearLine" => {
            if s.y >= 1 {
                s.clear_row((s.y - 1) as usize);
            }
            none()?
        }
        _ => return Ok(None),
    }))
}

/// The colour and palette methods. `Ok(None)` for any other.
fn colours(
    lua: &Lua,
    s: &mut Screen,
    method: &str,
    a: &Args,
) -> Result<Option<MultiValue>, String> {
    Ok(Some(match method {
        "getTextColour" | "getTextColor" => digit_colour(s.text_colour)
            .into_lua_multi(lua)
            .map_err(lua_err)?,
        "setTextColour" | "setTextColor" => {
            s.text_colour = parse_colour(a.int(1)?)?;
            none()?
        }
        "getBackgroundColour" | "getBackgroundColor" => digit_colour(s.back_colour)
            .into_lua_multi(lua)
            .map_err(lua_err)?,
        "setBackgroundColour" | "setBackgroundColor" => {
            s.back_colour = parse_colour(a.int(1)?)?;
            none()?
        }
        "isColour" | "isColor" => true.into_lua_multi(lua).map_err(lua_err)?,
        "setPaletteColour" | "setPaletteColor" => {
            let i = digit_index(parse_colour(a.int(1)?)?);
            // (colour, 0xRRGGBB) or (colour, r, g, b) with each channel 0..1.
            let v = if a.is_nil(3) && a.is_nil(4) {
                (a.int(2)? as u32) & 0xFF_FFFF
            } else {
                let byte = |x: f64| ((x.clamp(0.0, 1.0) * 255.0).round() as u32) & 0xFF;
                (byte(a.number(2)?) << 16) | (byte(a.number(3)?) << 8) | byte(a.number(4)?)
            };
            s.palette[i] = v;
            none()?
        }
        "getPaletteColour" | "getPaletteColor" => {
            let v = s.palette[digit_index(parse_colour(a.int(1)?)?)];
            let ch = |shift: u32| f64::from((v >> shift) & 0xFF) / 255.0;
            (ch(16), ch(8), ch(0))
                .into_lua_multi(lua)
                .map_err(lua_err)?
        }
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn sizes_follow_cc_formula() {
        // A 1x1 monitor is 7x5 at scale 1 and 15x10 at 0.5 in CC: Tweaked.
        assert_eq!(Monitor::size_at(MonitorSpec::blocks(1, 1), 2), (7, 5));
        assert_eq!(Monitor::size_at(MonitorSpec::blocks(1, 1), 1), (15, 10));
        // The largest, 8x6, at 0.5: 164x81.
        assert_eq!(Monitor::size_at(MonitorSpec::blocks(8, 6), 1), (164, 81));
        // CraftOS-PC's 51x19 at 1, and as CC's formula scales that extent.
        let c = MonitorSpec::default();
        assert_eq!(Monitor::size_at(c, 2), (51, 19));
        assert_eq!(Monitor::size_at(c, 1), (102, 38));
        assert_eq!(Monitor::size_at(c, 4), (26, 10));
        assert_eq!(Monitor::size_at(c, 10), (10, 4));
    }

    #[test]
    fn a_size_change_clears_and_reports() {
        let mut m = Monitor::new(MonitorSpec::default());
        m.screen.put(b"hi", None, None);
        assert!(!m.set_scale(2), "same scale: nothing");
        assert!(m.set_scale(4));
        assert_eq!(m.screen.size(), (26, 10));
        assert!(m.view().text.iter().all(|r| r.trim().is_empty()));
    }

    #[test]
    fn colours_parse_as_cc() {
        assert_eq!(parse_colour(1), Ok(b'0'));
        assert_eq!(parse_colour(0x8000), Ok(b'f'));
        assert_eq!(parse_colour(3), Ok(b'1'), "the highest bit wins");
        assert!(parse_colour(0).is_err());
        assert!(parse_colour(0x10000).is_err());
    }
}

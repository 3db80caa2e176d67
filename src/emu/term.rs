//! The computer's screen: a grid of bytes with colours (51x19 on a computer, 39x13 on a turtle,
//! 26x20 on a pocket computer), drawn by the native `term` table. The handle reads it for
//! `screen_text` and resizes it as a monitor or window resize would; `run_lua` reads what was
//! written through `capture`.

use mlua::{Lua, Table};

use super::machine::{Ctx, lock};

/// The screen and cursor state.
pub(crate) struct Screen {
    width: usize,
    height: usize,
    text: Vec<Vec<u8>>,
    fg: Vec<Vec<u8>>,
    bg: Vec<Vec<u8>>,
    /// 1-based cursor, may lie off screen (as CC allows).
    x: i64,
    y: i64,
    /// Current colours as blit hex digits ('0' white .. 'f' black).
    text_colour: u8,
    back_colour: u8,
    blink: bool,
    /// The 16 palette entries as 0xRRGGBB, indexed by blit digit.
    palette: [u32; 16],
    /// While a `run_lua` coroutine runs, everything it writes is also appended here.
    pub capture: Option<Vec<u8>>,
}

impl Screen {
    pub(crate) fn new(width: usize, height: usize) -> Self {
        let mut s = Self {
            width: width.max(1),
            height: height.max(1),
            text: Vec::new(),
            fg: Vec::new(),
            bg: Vec::new(),
            x: 1,
            y: 1,
            text_colour: b'0',
            back_colour: b'f',
            blink: false,
            palette: DEFAULT_PALETTE,
            capture: None,
        };
        s.reset();
        s
    }

    /// Blank screen, cursor home, default colours: the state at boot.
    pub(crate) fn reset(&mut self) {
        let (w, h) = (self.width, self.height);
        self.text = vec![vec![b' '; w]; h];
        self.fg = vec![vec![b'0'; w]; h];
        self.bg = vec![vec![b'f'; w]; h];
        self.x = 1;
        self.y = 1;
        self.text_colour = b'0';
        self.back_colour = b'f';
        self.blink = false;
        self.palette = DEFAULT_PALETTE;
        self.capture = None;
    }

    /// The size in cells.
    pub(crate) fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// Changes the size as CC: Tweaked's terminal does: what fits stays where it was, new
    /// cells are blank in the current colours. The cursor stays put (it may now lie off screen).
    pub(crate) fn resize(&mut self, width: usize, height: usize) {
        let (width, height) = (width.max(1), height.max(1));
        let fit = |rows: &mut Vec<Vec<u8>>, fill: u8| {
            rows.truncate(height);
            for r in rows.iter_mut() {
                r.resize(width, fill);
            }
            while rows.len() < height {
                rows.push(vec![fill; width]);
            }
        };
        let (tc, bc) = (self.text_colour, self.back_colour);
        fit(&mut self.text, b' ');
        fit(&mut self.fg, tc);
        fit(&mut self.bg, bc);
        self.width = width;
        self.height = height;
    }

    /// The lines as text, trailing blanks kept (a fixed-size grid).
    pub(crate) fn lines(&self) -> Vec<String> {
        self.text
            .iter()
            .map(|row| row.iter().map(|b| char::from(*b)).collect())
            .collect()
    }

    fn put(&mut self, text: &[u8], fg: Option<&[u8]>, bg: Option<&[u8]>) {
        if let Some(c) = self.capture.as_mut() {
            c.extend_from_slice(text);
        }
        for (i, ch) in text.iter().enumerate() {
            let x = self.x + i as i64;
            if self.y >= 1 && self.y <= self.height as i64 && x >= 1 && x <= self.width as i64 {
                let (row, col) = ((self.y - 1) as usize, (x - 1) as usize);
                self.text[row][col] = *ch;
                self.fg[row][col] = fg
                    .and_then(|f| f.get(i).copied())
                    .unwrap_or(self.text_colour);
                self.bg[row][col] = bg
                    .and_then(|b| b.get(i).copied())
                    .unwrap_or(self.back_colour);
            }
        }
        self.x += text.len() as i64;
    }

    fn scroll(&mut self, n: i64) {
        let width = self.width;
        for _ in 0..n.unsigned_abs().min(self.height as u64) {
            if n > 0 {
                self.text.remove(0);
                self.fg.remove(0);
                self.bg.remove(0);
                self.text.push(vec![b' '; width]);
                self.fg.push(vec![self.text_colour; width]);
                self.bg.push(vec![self.back_colour; width]);
            } else {
                self.text.pop();
                self.fg.pop();
                self.bg.pop();
                self.text.insert(0, vec![b' '; width]);
                self.fg.insert(0, vec![self.text_colour; width]);
                self.bg.insert(0, vec![self.back_colour; width]);
            }
        }
    }

    fn clear_row(&mut self, row: usize) {
        if row < self.height {
            let width = self.width;
            self.text[row] = vec![b' '; width];
            self.fg[row] = vec![self.text_colour; width];
            self.bg[row] = vec![self.back_colour; width];
        }
    }
}

/// CC: Tweaked's default palette (`colours.white` .. `colours.black`), as 0xRRGGBB.
pub(crate) const DEFAULT_PALETTE: [u32; 16] = [
    0xF0F0F0, 0xF2B233, 0xE57FD8, 0x99B2F2, 0xDEDE6C, 0x7FCC19, 0xF2B2CC, 0x4C4C4C, 0x999999,
    0x4C99B2, 0xB266E5, 0x3366CC, 0x7F664C, 0x57A64E, 0xCC4C4C, 0x111111,
];

fn palette_index(c: f64) -> mlua::Result<usize> {
    let d = colour_digit(c)?;
    Ok((d as char).to_digit(16).unwrap_or(0) as usize)
}

fn rgb(v: u32) -> (f64, f64, f64) {
    let ch = |shift: u32| f64::from((v >> shift) & 0xFF) / 255.0;
    (ch(16), ch(8), ch(0))
}

/// A colour number (1, 2, 4 .. 32768) as its blit digit.
fn colour_digit(c: f64) -> mlua::Result<u8> {
    let n = c as u32;
    if n == 0 || !n.is_power_of_two() || n > 0x8000 {
        return Err(mlua::Error::RuntimeError(format!(
            "Invalid colour (got {c})"
        )));
    }
    Ok(b"0123456789abcdef"[n.trailing_zeros() as usize])
}

fn digit_colour(d: u8) -> f64 {
    let i = (d as char).to_digit(16).unwrap_or(0);
    f64::from(1u32 << i)
}

/// The native `term` table (what `term.native()` returns).
pub(crate) fn native(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    macro_rules! f {
        ($name:expr, |$s:ident, $args:tt : $ty:ty| $body:expr) => {{
            let screen = ctx.screen.clone();
            t.set(
                $name,
                lua.create_function(move |_, $args: $ty| {
                    #[allow(unused_mut)]
                    let mut $s = lock(&screen);
                    $body
                })?,
            )?;
        }};
    }
    f!("write", |s, text: mlua::Value| {
        let bytes = match text {
            mlua::Value::String(st) => st.as_bytes().to_vec(),
            mlua::Value::Number(n) => super::os_api::number_text(n).into_bytes(),
            mlua::Value::Integer(n) => n.to_string().into_bytes(),
            other => {
                return Err(mlua::Error::RuntimeError(format!(
                    "bad argument #1 (string expected, got {})",
                    other.type_name()
                )));
            }
        };
        s.put(&bytes, None, None);
        Ok(())
    });
    f!("blit", |s,
                (text, fg, bg): (
        mlua::LuaString,
        mlua::LuaString,
        mlua::LuaString
    )| {
        let (text, fg, bg) = (
            text.as_bytes().to_vec(),
            fg.as_bytes().to_vec(),
            bg.as_bytes().to_vec(),
        );
        if fg.len() != text.len() || bg.len() != text.len() {
            return Err(mlua::Error::RuntimeError(
                "Arguments must be the same length".into(),
            ));
        }
        s.put(&text, Some(&fg), Some(&bg));
        Ok(())
    });
    // The bios moves the cursor and scrolls through the ordinary (wrappable) functions; this
    // only tells the capture of `run_lua` that a line ended.
    f!("__newline", |s, (): ()| {
        if let Some(c) = s.capture.as_mut() {
            c.push(b'\n');
        }
        Ok(())
    });
    for name in ["setPaletteColour", "setPaletteColor"] {
        f!(name, |s,
                  (c, r, g, b): (
            f64,
            f64,
            Option<f64>,
            Option<f64>
        )| {
            let i = palette_index(c)?;
            let v = match (g, b) {
                (Some(g), Some(b)) => {
                    let byte = |x: f64| ((x.clamp(0.0, 1.0) * 255.0).round() as u32) & 0xFF;
                    (byte(r) << 16) | (byte(g) << 8) | byte(b)
                }
                _ => (r as u32) & 0xFF_FFFF,
            };
            s.palette[i] = v;
            Ok(())
        });
    }
    for name in ["getPaletteColour", "getPaletteColor"] {
        f!(name, |s, c: f64| Ok(rgb(s.palette[palette_index(c)?])));
    }
    for name in ["nativePaletteColour", "nativePaletteColor"] {
        f!(name, |_s, c: f64| Ok(rgb(
            DEFAULT_PALETTE[palette_index(c)?]
        )));
    }
    f!("clear", |s, (): ()| {
        for r in 0..s.height {
            s.clear_row(r);
        }
        Ok(())
    });
    f!("clearLine", |s, (): ()| {
        if s.y >= 1 {
            let row = (s.y - 1) as usize;
            s.clear_row(row);
        }
        Ok(())
    });
    f!("setCursorPos", |s, (x, y): (f64, f64)| {
        s.x = x.floor() as i64;
        s.y = y.floor() as i64;
        Ok(())
    });
    f!("getCursorPos", |s, (): ()| Ok((s.x as f64, s.y as f64)));
    f!("getSize", |s, (): ()| Ok((s.width as f64, s.height as f64)));
    f!("scroll", |s, n: f64| {
        s.scroll(n as i64);
        Ok(())
    });
    for name in ["setTextColour", "setTextColor"] {
        f!(name, |s, c: f64| {
            s.text_colour = colour_digit(c)?;
            Ok(())
        });
    }
    for name in ["setBackgroundColour", "setBackgroundColor"] {
        f!(name, |s, c: f64| {
            s.back_colour = colour_digit(c)?;
            Ok(())
        });
    }
    for name in ["getTextColour", "getTextColor"] {
        f!(name, |s, (): ()| Ok(digit_colour(s.text_colour)));
    }
    for name in ["getBackgroundColour", "getBackgroundColor"] {
        f!(name, |s, (): ()| Ok(digit_colour(s.back_colour)));
    }
    for name in ["isColour", "isColor"] {
        f!(name, |_s, (): ()| Ok(true));
    }
    f!("setCursorBlink", |s, b: bool| {
        s.blink = b;
        Ok(())
    });
    f!("getCursorBlink", |s, (): ()| Ok(s.blink));
    Ok(t)
}

//! The computer's screen: a grid of bytes with colours (51x19 on a computer, 39x13 on a turtle,
//! 26x20 on a pocket computer), drawn by the native `term` table. The handle reads it for
//! `screen_text` and resizes it as a monitor or window resize would; `run_lua` reads what was
//! written through `capture`.

use mlua::{Lua, Table};

use super::kernel::Ctx;
use super::number::number_text;
use super::screen::DEFAULT_PALETTE;
use super::sync::lock;

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

/// Sets `$name` on `$t` to a native function that runs `$body` with the screen locked as `$s`.
macro_rules! f {
    ($lua:ident, $t:ident, $ctx:ident, $name:expr, |$s:ident, $args:tt : $ty:ty| $body:expr) => {{
        let screen = $ctx.screen.clone();
        $t.set(
            $name,
            $lua.create_function(move |_, $args: $ty| {
                #[allow(unused_mut)]
                let mut $s = lock(&screen);
                $body
            })?,
        )?;
    }};
}

/// The native `term` table (what `term.native()` returns).
pub(crate) fn native(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    text(lua, &t, ctx)?;
    palette(lua, &t, ctx)?;
    layout(lua, &t, ctx)?;
    colours(lua, &t, ctx)?;
    blink(lua, &t, ctx)?;
    Ok(t)
}

/// `write`, `blit` and the bios's `__newline`: text onto the screen.
fn text(lua: &Lua, t: &Table, ctx: &Ctx) -> mlua::Result<()> {
    f!(lua, t, ctx, "write", |s, text: mlua::Value| {
        let bytes = match text {
            mlua::Value::String(st) => st.as_bytes().to_vec(),
            mlua::Value::Number(n) => number_text(n).into_bytes(),
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
    f!(lua, t, ctx, "blit", |s,
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
    f!(lua, t, ctx, "__newline", |s, (): ()| {
        if let Some(c) = s.capture.as_mut() {
            c.push(b'\n');
        }
        Ok(())
    });
    Ok(())
}

/// Setting, reading and the defaults of the 16 palette colours.
fn palette(lua: &Lua, t: &Table, ctx: &Ctx) -> mlua::Result<()> {
    for name in ["setPaletteColour", "setPaletteColor"] {
        f!(lua, t, ctx, name, |s,
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
        f!(lua, t, ctx, name, |s, c: f64| Ok(rgb(
            s.palette[palette_index(c)?]
        )));
    }
    for name in ["nativePaletteColour", "nativePaletteColor"] {
        f!(lua, t, ctx, name, |_s, c: f64| Ok(rgb(
            DEFAULT_PALETTE[palette_index(c)?]
        )));
    }
    Ok(())
}

/// Clearing, the cursor's position, the size and scrolling.
fn layout(lua: &Lua, t: &Table, ctx: &Ctx) -> mlua::Result<()> {
    f!(lua, t, ctx, "clear", |s, (): ()| {
        for r in 0..s.height {
            s.clear_row(r);
        }
        Ok(())
    });
    f!(lua, t, ctx, "clearLine", |s, (): ()| {
        if s.y >= 1 {
            let row = (s.y - 1) as usize;
            s.clear_row(row);
        }
        Ok(())
    });
    f!(lua, t, ctx, "setCursorPos", |s, (x, y): (f64, f64)| {
        s.x = x.floor() as i64;
        s.y = y.floor() as i64;
        Ok(())
    });
    f!(lua, t, ctx, "getCursorPos", |s, (): ()| Ok((
        s.x as f64, s.y as f64
    )));
    f!(lua, t, ctx, "getSize", |s, (): ()| Ok((
        s.width as f64,
        s.height as f64
    )));
    f!(lua, t, ctx, "scroll", |s, n: f64| {
        s.scroll(n as i64);
        Ok(())
    });
    Ok(())
}

/// The text and background colours, and whether the screen has colours.
fn colours(lua: &Lua, t: &Table, ctx: &Ctx) -> mlua::Result<()> {
    for name in ["setTextColour", "setTextColor"] {
        f!(lua, t, ctx, name, |s, c: f64| {
            s.text_colour = colour_digit(c)?;
            Ok(())
        });
    }
    for name in ["setBackgroundColour", "setBackgroundColor"] {
        f!(lua, t, ctx, name, |s, c: f64| {
            s.back_colour = colour_digit(c)?;
            Ok(())
        });
    }
    for name in ["getTextColour", "getTextColor"] {
        f!(lua, t, ctx, name, |s, (): ()| Ok(digit_colour(
            s.text_colour
        )));
    }
    for name in ["getBackgroundColour", "getBackgroundColor"] {
        f!(lua, t, ctx, name, |s, (): ()| Ok(digit_colour(
            s.back_colour
        )));
    }
    for name in ["isColour", "isColor"] {
        let advanced = ctx.advanced;
        f!(lua, t, ctx, name, |_s, (): ()| Ok(advanced));
    }
    Ok(())
}

/// The cursor's blink.
fn blink(lua: &Lua, t: &Table, ctx: &Ctx) -> mlua::Result<()> {
    f!(lua, t, ctx, "setCursorBlink", |s, b: bool| {
        s.blink = b;
        Ok(())
    });
    f!(lua, t, ctx, "getCursorBlink", |s, (): ()| Ok(s.blink));
    Ok(())
}

//! How a CC cell shows on the person's terminal: its character, and its palette colours in
//! 24-bit or the nearest of the 256 indexed colours.

use ratatui::style::Color;

/// How a CC character shows on the person's terminal: printable Latin-1 as itself, CC's
/// teletext block characters (0x80-0x9F) as a block, control characters as `?`.
pub fn cc_char(c: char) -> char {
    match u32::from(c) {
        0x20..=0x7E | 0xA1..=0xFF => c,
        0xA0 => ' ',
        0x80 => ' ',
        0x81..=0x9F => '▒',
        _ => '?',
    }
}

/// A palette entry as a terminal colour: itself on a true-colour terminal, else the nearest of
/// the 256 indexed colours (the 6x6x6 cube or the grey ramp).
pub fn colour(rgb: u32, truecolor: bool) -> Color {
    let (r, g, b) = ((rgb >> 16) as u8, (rgb >> 8) as u8, rgb as u8);
    if truecolor {
        return Color::Rgb(r, g, b);
    }
    Color::Indexed(nearest_256(r, g, b))
}

fn nearest_256(r: u8, g: u8, b: u8) -> u8 {
    const STEPS: [i32; 6] = [0, 95, 135, 175, 215, 255];
    let idx = |v: u8| -> usize {
        let v = i32::from(v);
        (0..6).min_by_key(|i| (STEPS[*i] - v).abs()).unwrap_or(0)
    };
    let (ri, gi, bi) = (idx(r), idx(g), idx(b));
    let cube = (STEPS[ri], STEPS[gi], STEPS[bi]);
    let dist = |c: (i32, i32, i32)| {
        let d = |a: i32, b: u8| (a - i32::from(b)).pow(2);
        d(c.0, r) + d(c.1, g) + d(c.2, b)
    };
    let avg = (i32::from(r) + i32::from(g) + i32::from(b)) / 3;
    let gi_ = ((avg - 8).max(0) / 10).min(23);
    let grey = 8 + gi_ * 10;
    if dist((grey, grey, grey)) < dist(cube) {
        (232 + gi_) as u8
    } else {
        (16 + 36 * ri + 6 * gi + bi) as u8
    }
}

/// Whether the person's terminal shows 24-bit colour (`COLORTERM` says so).
pub fn terminal_truecolor() -> bool {
    std::env::var("COLORTERM")
        .map(|v| v.contains("truecolor") || v.contains("24bit"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette_maps_to_the_terminal() {
        assert_eq!(colour(0xF0F0F0, true), Color::Rgb(0xF0, 0xF0, 0xF0));
        assert_eq!(colour(0x000000, false), Color::Indexed(16));
        assert_eq!(colour(0xFF0000, false), Color::Indexed(196));
        // CC's grey (4C4C4C) is nearer the grey ramp than the cube.
        assert!(matches!(colour(0x4C4C4C, false), Color::Indexed(n) if n >= 232));
    }
}

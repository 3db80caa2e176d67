//! Text that others control (a player's label, a computer's output, a file name, an error a
//! computer sends) made safe for the person's terminal: no ESC, CSI, OSC, C0 or C1 control and
//! no bidi override reaches it raw, since any of them can drive the terminal (an OSC 52 writes
//! the clipboard; a bidi override shows text other than what is there). The console and the CLI
//! print through these.

/// Replaced characters become this.
pub const REPLACEMENT: char = '\u{fffd}';

/// Whether `c` must not reach a terminal raw: a control character (C0, DEL, C1) or a bidi
/// control (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), which reorders what
/// follows it on screen.
pub fn unsafe_for_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// One line of text for a terminal: tabs expand to the next 4-column stop (`print(a, b)` joins
/// with tabs), every other unsafe character (line breaks included) becomes U+FFFD.
pub fn printable(text: &str) -> String {
    if !text.chars().any(unsafe_for_terminal) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut col = 0usize;
    for c in text.chars() {
        match c {
            '\t' => {
                let n = 4 - col % 4;
                out.extend(std::iter::repeat_n(' ', n));
                col += n;
            }
            c if unsafe_for_terminal(c) => {
                out.push(REPLACEMENT);
                col += 1;
            }
            c => {
                out.push(c);
                col += 1;
            }
        }
    }
    out
}

/// A program's output as a stream for a pipe or a terminal (`trapdesk exec`): line breaks and
/// tabs stay as they are, so the output still reads and pipes as lines; every other unsafe
/// character becomes U+FFFD.
pub fn printable_lines(text: &str) -> String {
    if !text
        .chars()
        .any(|c| unsafe_for_terminal(c) && !matches!(c, '\n' | '\t'))
    {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if unsafe_for_terminal(c) && !matches!(c, '\n' | '\t') {
                REPLACEMENT
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_overrides_never_pass() {
        let osc52 = "\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}miner";
        assert_eq!(
            printable(osc52),
            "\u{fffd}]52;c;ZWNobyBwd25lZA==\u{fffd}miner"
        );
        assert_eq!(printable("a\u{9b}31m\u{202e}b"), "a\u{fffd}31m\u{fffd}b");
        assert_eq!(printable("a\tb"), "a   b");
        assert_eq!(
            printable_lines("x\n\ty\r\u{1b}[2J"),
            "x\n\ty\u{fffd}\u{fffd}[2J"
        );
        assert_eq!(printable_lines("plain\n"), "plain\n");
    }
}

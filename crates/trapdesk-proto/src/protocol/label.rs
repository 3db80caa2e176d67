//! A computer's label as CC: Tweaked keeps it, whatever a peer sends.
//!
//! CC normalises every label it stores (`os.setComputerLabel`, `OSAPI.java` line 263) with
//! `StringUtil.normaliseLabel` (`projects/core/src/main/java/dan200/computercraft/core/util/
//! StringUtil.java`, lines 11-27): at most 32 characters, and each character outside
//! `' '..='~'`, `161..=172` and `174..=255` becomes `?`. Its characters are the bytes of the
//! computer's Lua string (one byte, one char). The host holds a label as UTF-8 text (the wire's
//! bytes read as UTF-8, `wire.rs`), so the same rule is applied to the text's characters: at
//! most 32 of them, and a character becomes `?` when one of its UTF-8 bytes is one CC would
//! have replaced (every control character, C0 and C1, DEL, the soft hyphen, and the invisible
//! and direction-changing marks of U+2000..U+206F among others).
//!
//! A label CC made passes unchanged: it holds at most 32 bytes, so at most 32 characters, and
//! none of the bytes CC replaces. Anything else a hostile or broken peer sends (a 200,000
//! character label, a terminal escape) is cut and cleaned the same way in `hello` and in the
//! `label` message, so a label is never longer than 32 characters (128 bytes) on the host and
//! never carries a control character to a terminal.

/// The most characters a label keeps (`StringUtil.normaliseLabel`'s 32).
pub const MAX_CHARS: usize = 32;

/// Whether CC keeps this byte of a label (`StringUtil.isAllowed`).
fn allowed(b: u8) -> bool {
    (b' '..=b'~').contains(&b) || (161..=172).contains(&b) || b >= 174
}

/// The label as CC would keep it; `None` for no label (absent, or empty: CC's `label clear`).
pub fn normalise(label: Option<&str>) -> Option<String> {
    let label = label?;
    let mut out = String::with_capacity(label.len().min(MAX_CHARS * 4));
    let mut buf = [0u8; 4];
    for c in label.chars().take(MAX_CHARS) {
        if c.encode_utf8(&mut buf).bytes().all(allowed) {
            out.push(c);
        } else {
            out.push('?');
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_cc_made_passes_unchanged() {
        for l in [
            "miner",
            "7:vault",
            "a b~",
            "héllo",
            "\u{fffd}?",
            &"x".repeat(32),
        ] {
            assert_eq!(normalise(Some(l)).as_deref(), Some(l), "{l:?}");
        }
        assert_eq!(normalise(None), None);
        assert_eq!(normalise(Some("")), None);
    }

    #[test]
    fn long_labels_are_cut_to_32_characters() {
        let long = "é".repeat(200_000);
        let n = normalise(Some(&long)).unwrap_or_default();
        assert_eq!(n.chars().count(), MAX_CHARS);
        assert!(n.len() <= MAX_CHARS * 4);
    }

    #[test]
    fn unprintable_characters_become_question_marks() {
        assert_eq!(
            normalise(Some("a\u{1b}]52;c;aGk=\u{7}b")).as_deref(),
            Some("a?]52;c;aGk=?b")
        );
        assert_eq!(
            normalise(Some("\t\n\u{7f}\u{9b}\u{ad}")).as_deref(),
            Some("?????")
        );
        // Bidi overrides and zero-width marks hold a byte CC replaces.
        assert_eq!(
            normalise(Some("a\u{202e}b\u{200b}")).as_deref(),
            Some("a?b?")
        );
        // Idempotent: what it gives, it keeps.
        let once = normalise(Some("\u{1}x\u{2066}")).unwrap_or_default();
        assert_eq!(normalise(Some(&once)), Some(once.clone()));
    }
}

//! The one glob of trapdesk: `*` is any run of characters, `?` is one character, everything
//! else is itself, ASCII case ignored. The console's filter, `probe-computers` and
//! `exec-lua-many` (`match`), `trapdesk computers --match`, `trapdesk transcript --computer`
//! and the policy's `computer` patterns all match through here, so a glob selects the same
//! computers wherever the person or an agent types it: the person can try a policy pattern in
//! the Computers filter and see what it covers.
//!
//! Case is ignored because labels are typed by people ("Miner" and "miner"); for the policy
//! that means a `deny` rule also catches the label someone spelled differently. Small enough
//! that a glob crate (with its path semantics and character classes) would be more to review.

/// A compiled glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    pattern: Vec<char>,
}

impl Glob {
    /// A glob from its text; an empty (or blank) pattern matches everything.
    pub fn new(pattern: &str) -> Glob {
        let pattern = pattern.trim();
        let pattern = if pattern.is_empty() { "*" } else { pattern };
        Glob {
            pattern: pattern.chars().map(|c| c.to_ascii_lowercase()).collect(),
        }
    }

    /// Whether the glob matches all of `text`.
    pub fn matches(&self, text: &str) -> bool {
        let t: Vec<char> = text.chars().map(|c| c.to_ascii_lowercase()).collect();
        let p = &self.pattern;
        // Iterative matcher with one backtrack point (the last `*`): O(len(p) * len(t)) at
        // worst, never exponential, whatever the pattern.
        let (mut pi, mut ti) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while ti < t.len() {
            if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
                pi += 1;
                ti += 1;
            } else if pi < p.len() && p[pi] == '*' {
                star = Some((pi, ti));
                pi += 1;
            } else if let Some((sp, st)) = star {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            } else {
                return false;
            }
        }
        p[pi..].iter().all(|&c| c == '*')
    }

    /// Whether a computer matches: by its traposId (`7:miner`), its bare id (`7`) or its
    /// label (`miner`).
    pub fn matches_computer(&self, trapos_id: &str, id: u64, label: Option<&str>) -> bool {
        self.matches(trapos_id)
            || self.matches(&id.to_string())
            || label.is_some_and(|l| self.matches(l))
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    fn m(p: &str, t: &str) -> bool {
        Glob::new(p).matches(t)
    }

    #[test]
    fn stars_questions_and_literals() {
        assert!(m("*", "") && m("*", "anything") && m("", "anything") && m("  ", "x"));
        assert!(m("reactor*", "reactor") && m("reactor*", "reactor-2"));
        assert!(!m("reactor*", "my-reactor") && m("*reactor*", "my-reactor-2"));
        assert!(m("test-?", "test-1") && !m("test-?", "test-12"));
        assert!(m("m?ner", "miner") && !m("m?ner", "mner"));
        assert!(m("7:*", "7:miner") && m("7:*", "7:") && !m("7:*", "17:x") && !m("7", "17"));
        assert!(m("a*b*c", "aXXbYYc") && !m("a*b*c", "aXXbYY"));
        assert!(m("ünï*", "ünïcode") && m("?", "ü"));
    }

    #[test]
    fn ascii_case_is_ignored_everywhere() {
        assert!(m("miner-*", "MINER-north") && m("Miner-*", "miner-1") && m("FARM", "farm"));
        // Only ASCII folds: CC labels are bytes, and a Unicode fold would guess.
        assert!(!m("Ü", "ü"));
    }

    #[test]
    fn no_pattern_makes_it_exponential() {
        let long = "a".repeat(200);
        assert!(m("*a*a*a*a*b", &format!("{long}b")));
        assert!(!m("*a*a*a*a*b", &long));
    }

    #[test]
    fn a_computer_matches_by_trapos_id_bare_id_or_label() {
        let g = |p: &str| Glob::new(p).matches_computer("12:miner", 12, Some("miner"));
        assert!(g("12") && g("miner") && g("12:*") && g("MIN*"));
        assert!(!g("farm*") && !g("1") && !g("2:*"));
        assert!(!Glob::new("miner").matches_computer("12", 12, None));
    }
}

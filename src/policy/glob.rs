//! The computer patterns of policy rules: `*` is any run of characters, `?` is one character,
//! everything else is itself. Small enough that a glob crate would be more code to review
//! than this.

/// Whether `text` matches `pattern` in full.
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Classic linear backtracking over the last `*`: O(len(p) * len(t)) at worst.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(c) if *c == '?' || *c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_and_questions() {
        assert!(matches("*", ""));
        assert!(matches("*", "anything"));
        assert!(matches("reactor*", "reactor"));
        assert!(matches("reactor*", "reactor-2"));
        assert!(!matches("reactor*", "my-reactor"));
        assert!(matches("*reactor*", "my-reactor-2"));
        assert!(matches("test-?", "test-1"));
        assert!(!matches("test-?", "test-12"));
        assert!(matches("7:*", "7:miner"));
        assert!(!matches("7", "17"));
        assert!(matches("a*b*c", "aXXbYYc"));
        assert!(!matches("a*b*c", "aXXbYY"));
        assert!(matches("ünï*", "ünïcode"));
    }
}

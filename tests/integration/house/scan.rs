//! A small Rust scanner: enough to find where each function's body ends and which type each
//! inherent `impl` block is for. Own code rather than `syn`: `syn` gives line numbers only with
//! `proc-macro2`'s `span-locations`, a feature that Cargo would unify into every proc macro of
//! the build, rebuilding them all for the tests.

/// One line of source with comments, strings and character literals blanked out (their
/// contents replaced by spaces), so braces inside them are not counted.
pub fn code_lines(source: &str) -> Vec<String> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let mut block_depth = 0usize;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if block_depth > 0 {
            if c == '*' && next == Some('/') {
                block_depth -= 1;
                out.push_str("  ");
                i += 2;
            } else if c == '/' && next == Some('*') {
                block_depth += 1;
                out.push_str("  ");
                i += 2;
            } else {
                out.push(if c == '\n' { '\n' } else { ' ' });
                i += 1;
            }
            continue;
        }
        match (c, next) {
            ('/', Some('/')) => {
                while i < chars.len() && chars[i] != '\n' {
                    out.push(' ');
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                block_depth = 1;
                out.push_str("  ");
                i += 2;
            }
            ('r', Some('"' | '#')) if raw_string_at(&chars, i).is_some() => {
                let hashes = raw_string_at(&chars, i).unwrap_or(0);
                i = blank_raw_string(&chars, i, hashes, &mut out);
            }
            ('"', _) => i = blank_string(&chars, i, &mut out),
            ('\'', _) => i = blank_char(&chars, i, &mut out),
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out.split('\n').map(str::to_owned).collect()
}

/// `r"`, `r#"`, `r##"`...: the number of `#`s, when a raw string starts at `i` (and `r` is not
/// the end of an identifier).
fn raw_string_at(chars: &[char], i: usize) -> Option<usize> {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    (chars.get(j) == Some(&'"')).then_some(j - i - 1)
}

fn blank_raw_string(chars: &[char], start: usize, hashes: usize, out: &mut String) -> usize {
    let mut i = start + hashes + 2;
    out.push_str(&" ".repeat(hashes + 2));
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            out.push_str(&" ".repeat(hashes + 1));
            return i + hashes + 1;
        }
        out.push(if chars[i] == '\n' { '\n' } else { ' ' });
        i += 1;
    }
    i
}

fn blank_string(chars: &[char], start: usize, out: &mut String) -> usize {
    out.push(' ');
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                out.push(' ');
                if let Some(&n) = chars.get(i + 1) {
                    out.push(if n == '\n' { '\n' } else { ' ' });
                }
                i += 2;
            }
            '"' => {
                out.push(' ');
                return i + 1;
            }
            c => {
                out.push(if c == '\n' { '\n' } else { ' ' });
                i += 1;
            }
        }
    }
    i
}

/// A character literal (`'{'`, `'\n'`, `'\u{7b}'`) is blanked; a lifetime (`'a`) is kept.
fn blank_char(chars: &[char], start: usize, out: &mut String) -> usize {
    let close = if chars.get(start + 1) == Some(&'\\') {
        (start + 2..chars.len().min(start + 12)).find(|&j| chars[j] == '\'')
    } else {
        (chars.get(start + 2) == Some(&'\'')).then_some(start + 2)
    };
    match close {
        Some(end) => {
            out.push_str(&" ".repeat(end - start + 1));
            end + 1
        }
        None => {
            out.push('\'');
            start + 1
        }
    }
}

/// A function found in a file: its name, first line (1-based) and length in lines.
#[derive(Debug)]
pub struct Function {
    pub name: String,
    pub line: usize,
    pub lines: usize,
}

/// Every function with a body, nested ones included, from the scanned lines.
pub fn functions(lines: &[String]) -> Vec<Function> {
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let mut depth = 0i64;
        let mut opened = false;
        for (offset, l) in lines[start..].iter().enumerate() {
            for c in l.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened && depth == 0 => break,
                    _ => {}
                }
            }
            if !opened && l.contains(';') && depth == 0 {
                break;
            }
            if opened && depth <= 0 {
                found.push(Function {
                    name: name.clone(),
                    line: start + 1,
                    lines: offset + 1,
                });
                break;
            }
        }
    }
    found
}

/// The name of a function declared on this line, if one is.
fn fn_name(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    let before_ok = words[..at].iter().all(|w| {
        matches!(
            *w,
            "pub" | "async" | "const" | "unsafe" | "extern" | "default"
        ) || w.starts_with("pub(")
            || w.starts_with('"')
    });
    let name: String = words
        .get(at + 1)?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (before_ok && !name.is_empty()).then_some(name)
}

/// The type an inherent `impl` block on this line is for (`impl<T> Foo<T> {` gives `Foo`); none
/// for a trait's `impl ... for ...`.
pub fn inherent_impl(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix("impl")?;
    if !(rest.starts_with(' ') || rest.starts_with('<')) || rest.contains(" for ") {
        return None;
    }
    let rest = skip_generics(rest.trim_start());
    let ty: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    let ty = ty.rsplit("::").next().unwrap_or_default().to_owned();
    (!ty.is_empty()).then_some(ty)
}

fn skip_generics(s: &str) -> &str {
    if !s.starts_with('<') {
        return s;
    }
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return &s[i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

#[test]
fn braces_in_strings_comments_and_chars_are_not_counted() {
    let src = "fn a() {\n    let s = \"{\"; // {\n    let c = '{';\n    let r = r#\"}\"#;\n    /* } */\n}\nfn b<'a>(x: &'a str) -> &'a str { x }\n";
    let found = functions(&code_lines(src));
    let got: Vec<(&str, usize, usize)> = found
        .iter()
        .map(|f| (f.name.as_str(), f.line, f.lines))
        .collect();
    assert_eq!(got, vec![("a", 1, 6), ("b", 7, 1)]);
}

#[test]
fn inherent_impls_are_told_from_trait_impls() {
    assert_eq!(inherent_impl("impl<T: Clone> Foo<T> {"), Some("Foo".into()));
    assert_eq!(inherent_impl("impl super::State {"), Some("State".into()));
    assert_eq!(inherent_impl("impl fmt::Display for Foo {"), None);
    assert_eq!(inherent_impl("    impl Session {"), Some("Session".into()));
    assert_eq!(inherent_impl("implements"), None);
}

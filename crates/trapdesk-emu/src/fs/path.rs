//! CC's path rules, the one place they live: what `disk.rs` resolves and `table.rs` combines.

/// Normalises a CC path to `a/b/c` (no leading slash; `""` is the root) as CC: Tweaked's
/// `FileSystem.sanitizePath` does: `\\` is `/`; control characters and `"*:<>?|` are dropped
/// (`*` and `?` are kept when `lenient`, for `fs.combine`, `getName` and `getDir`); each part is
/// trimmed; `.`, `...` and longer runs of dots are nothing; a part is cut to 255 characters.
/// `..` above the root is kept when `lenient` and refused otherwise.
pub(crate) fn normalize(path: &str, lenient: bool) -> Result<String, String> {
    let dropped: &[char] = if lenient {
        &['"', ':', '<', '>', '|']
    } else {
        &['"', '*', ':', '<', '>', '?', '|']
    };
    let clean: String = path
        .chars()
        .filter(|c| *c >= ' ' && !dropped.contains(c))
        .collect();
    let mut parts: Vec<String> = Vec::new();
    for part in clean.split(['/', '\\']) {
        let part = part.trim();
        if part.is_empty() || part.chars().all(|c| c == '.') && part != ".." {
            continue;
        }
        if part == ".." {
            match parts.last() {
                Some(p) if p != ".." => {
                    parts.pop();
                }
                _ if lenient => parts.push("..".to_owned()),
                _ => return Err(format!("/{}: Invalid Path", path.trim_start_matches('/'))),
            }
            continue;
        }
        let cut: String = part.chars().take(255).collect();
        parts.push(cut.trim().to_owned());
    }
    Ok(parts.join("/"))
}

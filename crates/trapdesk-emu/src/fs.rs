//! The computer's disk: a host directory seen through CC's path rules. Paths are normalised the
//! way CC does (`\` is `/`, `.` and `..` resolved), and a path that would climb above the root is
//! refused, so a program can never touch the host outside its computer's directory. `/rom` is an
//! empty read-only directory, as a stand-in for CC's ROM.
//!
//! Native functions answer `true, values...` or `false, message`; the bios turns the latter into
//! a Lua error with a string message (mlua's own errors are userdata, CC's are strings).

pub(crate) use super::quota::{MINIMUM_FILE_SIZE, OUT_OF_SPACE, Quota};

mod disk;
mod private;
mod table;

pub(crate) use private::{private_dir, private_file, private_folder, tighten, write_private};
pub(crate) use table::native;

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

#[cfg(test)]
mod tests;

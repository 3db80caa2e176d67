//! Unit tests of the computer's disk in `fs/path.rs`.

use super::path::normalize;

#[test]
fn paths_normalise_like_cc() {
    assert_eq!(normalize("/a//b/./c/", false).as_deref(), Ok("a/b/c"));
    assert_eq!(normalize("a\\b/../c", false).as_deref(), Ok("a/c"));
    assert_eq!(normalize("/", false).as_deref(), Ok(""));
    assert!(normalize("../etc/passwd", false).is_err());
    assert!(normalize("a/../../x", false).is_err());
    assert_eq!(normalize("a/../../x", true).as_deref(), Ok("../x"));
    // CC: Tweaked's sanitizePath: dropped characters, trimmed parts, runs of dots.
    assert_eq!(normalize("a:b*c?d", false).as_deref(), Ok("abcd"));
    assert_eq!(normalize("a:b*c?d", true).as_deref(), Ok("ab*c?d"));
    assert_eq!(normalize(" a / b ", true).as_deref(), Ok("a/b"));
    assert_eq!(normalize("a/.../b/.", false).as_deref(), Ok("a/b"));
    assert_eq!(normalize(&"x".repeat(300), false).map(|p| p.len()), Ok(255));
}

//! Unit tests of the computer's disk (`fs/path.rs`, `fs/disk.rs`).

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

#[test]
fn a_disk_whose_folder_is_gone_is_not_made_again() -> std::io::Result<()> {
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("computers/1");
    std::fs::create_dir_all(&root)?;
    let disk = super::disk::Disk {
        root: root.clone(),
        quota: Arc::new(crate::quota::Quota::measure(&root, 1_000_000)),
        drive: Arc::new(Mutex::new(None)),
        floppy_quota: Mutex::new(None),
    };
    assert_eq!(disk.make_dir("trapdesk", &root.join("trapdesk")), Ok(()));
    std::fs::remove_dir_all(dir.path().join("computers"))?;
    assert_eq!(
        disk.make_dir("trapdesk", &root.join("trapdesk")),
        Err("/trapdesk: Access denied".to_owned())
    );
    assert!(!dir.path().join("computers").exists());
    Ok(())
}

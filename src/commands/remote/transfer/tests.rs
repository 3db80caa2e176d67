//! Unit tests of the file transfers in `src/commands/remote/transfer.rs`.

use super::*;

/// A part is moved over the target only when the computer holds exactly the put's bytes.
#[test]
fn only_a_part_of_the_put_size_and_sum_is_moved() {
    let bytes = b"new content";
    let info = |v: Value| check_part(&v, "t.bin", bytes);
    let sum = crc32(bytes);
    assert_eq!(
        info(json!({"ok": true, "exists": true, "isDir": false, "size": 11, "crc32": sum})),
        Ok(())
    );
    let short = info(json!({"ok": true, "exists": true, "isDir": false, "size": 10, "crc32": sum}));
    assert_eq!(
        short,
        Err("the pieces of t.bin are incomplete on the computer (10 of 11 bytes)".into())
    );
    let torn =
        info(json!({"ok": true, "exists": true, "isDir": false, "size": 11, "crc32": sum ^ 1}));
    assert!(torn.is_err_and(|e| e.contains("differ")), "a torn piece");
    let gone = info(json!({"ok": true, "exists": false, "isDir": false, "size": 0}));
    assert_eq!(
        gone,
        Err("the pieces of t.bin are gone from the computer".into())
    );
    assert!(info(json!({"ok": true, "exists": true, "isDir": false, "size": 11})).is_err());
    assert!(info(json!({"ok": true, "exists": true, "isDir": true, "size": 0})).is_err());
}

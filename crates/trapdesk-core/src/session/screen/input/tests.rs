//! Unit tests of the checked terminal and monitor input in `session/screen/input.rs`.

use super::*;

#[test]
fn key_names_are_checked_and_spelled_for_the_computer() {
    assert_eq!(key_name("Enter", "k").as_deref(), Ok("enter"));
    assert_eq!(key_name("ctrl+S", "k").as_deref(), Ok("ctrl+s"));
    assert_eq!(key_name("shift+Tab", "k").as_deref(), Ok("shift+tab"));
    assert_eq!(key_name("pageup", "k").as_deref(), Ok("pageUp"));
    assert_eq!(key_name("F12", "k").as_deref(), Ok("f12"));
    assert_eq!(key_name("ctrl", "k").as_deref(), Ok("leftCtrl"));
    assert_eq!(key_name("7", "k").as_deref(), Ok("seven"));
    assert_eq!(key_name("Terminate", "k").as_deref(), Ok("terminate"));
    let e = key_name("enterr", "keys[1]").expect_err("unknown");
    assert_eq!(e.field, "keys[1]");
    assert!(e.message.contains("unknown key name \"enterr\""), "{e}");
    assert!(key_name("hyper+a", "k").is_err());
    assert!(key_name("f13", "k").is_err());
    assert!(key_name("", "k").is_err());
}

#[test]
fn steps_keep_text_paste_keys_order_and_limits() {
    let s = steps(Some("ls"), &["enter".into()], None).expect("steps");
    assert_eq!(s, vec![json!({"text": "ls"}), json!({"key": "enter"})]);
    let long = "x".repeat(MAX_PASTE + 1);
    assert_eq!(
        steps(None, &[], Some(&long)).expect_err("paste").field,
        "paste"
    );
    let huge = "x".repeat(MAX_TEXT + 1);
    assert_eq!(
        steps(Some(&huge), &[], None).expect_err("text").field,
        "text"
    );
    assert!(steps(None, &[], None).is_err());
    let euro = steps(Some("5 \u{20ac}"), &[], None).expect_err("not latin-1");
    assert!(euro.message.contains("U+20AC"), "{euro}");
    assert!(steps(Some("caf\u{e9}"), &[], None).is_ok());
}

#[test]
fn touches_are_whole_cells_from_one() {
    assert_eq!(cell(3.0, "touch.x"), Ok(3));
    let frac = cell(2.5, "touch.x").expect_err("fraction");
    assert_eq!(frac.field, "touch.x");
    assert!(frac.message.contains("not a whole cell"), "{frac}");
    assert_eq!(cell(0.0, "touch.y").expect_err("zero").field, "touch.y");
    assert!(cell(-1.0, "touch.y").is_err());
    assert!(cell(f64::NAN, "touch.y").is_err());
    assert!(cell(1e9, "touch.y").is_err());
    assert_eq!(touch(2, 3), Ok(json!({"touch": {"x": 2, "y": 3}})));
    assert_eq!(touch(0, 3).expect_err("zero").field, "touch.x");
}

#[test]
fn a_monitor_takes_touches_and_a_terminal_keys() {
    assert!(check_display(None, false, Some("ls"), &[], None).is_ok());
    assert!(check_display(Some("top"), true, None, &[], None).is_ok());
    assert_eq!(
        check_display(None, true, None, &[], None)
            .expect_err("touch alone")
            .field,
        "touch"
    );
    let keys = check_display(Some("top"), true, None, &["enter".into()], None)
        .expect_err("keys on a monitor");
    assert_eq!(keys.field, "keys");
    assert!(keys.message.contains("no keyboard"), "{keys}");
    assert_eq!(
        check_display(Some("top"), true, Some("x"), &[], None)
            .expect_err("text")
            .field,
        "text"
    );
    assert_eq!(
        check_display(Some("top"), false, None, &[], Some("x"))
            .expect_err("paste")
            .field,
        "paste"
    );
    assert_eq!(
        check_display(Some("top"), false, None, &[], None)
            .expect_err("nothing")
            .field,
        "touch"
    );
    assert_eq!(
        check_display(Some(""), true, None, &[], None)
            .expect_err("empty")
            .field,
        "monitor"
    );
}

//! Unit tests of the `screen` message in `protocol/mod.rs`.

use super::*;

fn json_of(m: &Message) -> Value {
    serde_json::to_value(m).unwrap_or(Value::Null)
}

#[test]
fn screen_updates_parse_with_their_body() {
    let m = Message::decode(r#"{"type":"screen","seq":3,"width":51,"height":19,"rows":[]}"#)
        .expect("screen message");
    let body = match m {
        Message::Screen(u) => u.body,
        other => serde_json::Map::from_iter([("unexpected".to_owned(), json_of(&other))]),
    };
    assert_eq!(body.get("seq"), Some(&Value::from(3)));
    assert!(!body.contains_key("type"));
}

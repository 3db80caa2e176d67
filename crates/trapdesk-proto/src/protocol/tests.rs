//! Unit tests of the wire protocol's messages and byte-string rule in `protocol/mod.rs`.

use super::*;
use serde_json::json;

#[test]
fn a_hello_says_what_the_computer_is_or_nothing() {
    let full = serde_json::json!({"type": "hello", "device": "turtle", "advanced": true,
        "command": false, "screen_width": 39, "screen_height": 13, "client_version": "abc",
        "input_to_request": true});
    let m = Hello::machine_of(&full);
    assert_eq!(m.device.as_deref(), Some("turtle"));
    assert_eq!((m.advanced, m.command), (Some(true), Some(false)));
    assert_eq!((m.screen_width, m.screen_height), (Some(39), Some(13)));
    assert_eq!(m.client_version.as_deref(), Some("abc"));
    assert_eq!(m.routes_input, Some(true));
    // A client from before these fields: nothing reported, nothing refused.
    let old = serde_json::json!({"type": "hello", "protocol": 1});
    assert_eq!(Hello::machine_of(&old), MachineInfo::default());
    // Ill-typed or unknown values are left out rather than believed.
    let odd = serde_json::json!({"device": "toaster", "advanced": "yes", "screen_width": -3,
        "screen_height": 1.5});
    assert_eq!(Hello::machine_of(&odd), MachineInfo::default());
}

#[test]
fn bytes_round_trip_through_wire_form() {
    let text = "héllo → ☃";
    let wire_form = wire::text_to_bytes(text);
    assert!(wire_form.chars().all(|c| (c as u32) <= 0xFF));
    assert_eq!(wire::bytes_to_text(&wire_form), text);
}

#[test]
fn encode_is_ascii_and_escapes_each_byte() {
    let m = Message::Output {
        id: "h-1".into(),
        stream: "out".into(),
        text: "é".into(),
    };
    let frame = m.encode();
    assert!(frame.is_ascii());
    assert!(frame.contains(r"\u00c3\u00a9"), "{frame}");
    assert_eq!(Message::decode(&frame), Ok(m));
}

#[test]
fn decode_takes_bytes_and_replaces_invalid_utf8() {
    let m = Message::decode(r#"{"type":"output","id":"x","stream":"out","text":"a\u00ffb"}"#);
    let Ok(Message::Output { text, .. }) = m else {
        unreachable!("{m:?}")
    };
    assert_eq!(text, "a\u{fffd}b");
}

#[test]
fn chars_above_latin1_count_as_their_utf8() {
    assert_eq!(wire::bytes_to_text("☃"), "☃");
}

#[test]
fn framing_errors_are_specific() {
    assert!(matches!(
        wire::decode("[1]"),
        Err(wire::DecodeError::NotObject)
    ));
    assert!(matches!(
        wire::decode(r#"{"t":1}"#),
        Err(wire::DecodeError::NoType)
    ));
    assert!(matches!(
        wire::decode("{"),
        Err(wire::DecodeError::NotJson(_))
    ));
}

#[test]
fn hello_checks_fields() {
    let good = json!({"type":"hello","protocol":1,"computer_id":7,"label":"miner","secret":"s",
        "serves":["exec-lua"],"max_message":131072});
    let h = Hello::from_value(&good).expect("good hello");
    assert_eq!(h.trapos_id(), "7:miner");
    assert_eq!(h.max_message, Some(131072));

    let unlabelled = json!({"type":"hello","protocol":1,"computer_id":3,"label":null,"secret":"s"});
    assert_eq!(
        Hello::from_value(&unlabelled).map(|h| h.trapos_id()),
        Ok("3:".into())
    );

    let v2 = json!({"type":"hello","protocol":2,"computer_id":7,"secret":"s"});
    assert!(matches!(
        Hello::from_value(&v2),
        Err(HelloError::Unsupported(_))
    ));
    let text_protocol = json!({"type":"hello","protocol":"1","computer_id":7,"secret":"s"});
    assert!(matches!(
        Hello::from_value(&text_protocol),
        Err(HelloError::Bad(_))
    ));
    let no_secret = json!({"type":"hello","protocol":1,"computer_id":7});
    assert!(matches!(
        Hello::from_value(&no_secret),
        Err(HelloError::Bad(_))
    ));
    let enrolling = json!({"type":"hello","protocol":1,"computer_id":7,"secret":"s","enrol":true});
    assert_eq!(Hello::enrol_of(&enrolling), Ok(true));
    assert_eq!(Hello::enrol_of(&good), Ok(false));
    let bad_enrol = json!({"type":"hello","protocol":1,"computer_id":7,"secret":"s","enrol":"yes"});
    assert!(matches!(
        Hello::enrol_of(&bad_enrol),
        Err(HelloError::Bad(_))
    ));
    assert_eq!(
        Message::decode(r#"{"type":"enrolled"}"#),
        Ok(Message::Enrolled)
    );
    let welcome = Message::Welcome {
        protocol: 1,
        trapos_id: "7:".into(),
        heartbeat_ms: 15000,
        max_message: 1 << 20,
        secret: None,
        client_version: None,
        binary: None,
    };
    assert!(
        !welcome.encode().contains("secret"),
        "no secret unless enrolled"
    );
    let wrong_first = json!({"type":"ping","t":1});
    assert!(matches!(
        Hello::from_value(&wrong_first),
        Err(HelloError::Bad(_))
    ));
}

#[test]
fn response_shapes_parse() {
    let ok = Message::decode(
        r#"{"type":"computer_response","id":"h-1","ok":true,"payload":{"pong":true}}"#,
    );
    assert!(matches!(
        ok,
        Ok(Message::ComputerResponse(Response { ok: true, .. }))
    ));
    let err = Message::decode(
        r#"{"type":"computer_response","id":"h-1","ok":false,"error":{"code":"unknown_type","message":"no"}}"#,
    );
    let Ok(Message::ComputerResponse(r)) = err else {
        unreachable!()
    };
    assert_eq!(r.error.map(|e| e.code), Some("unknown_type".into()));
}

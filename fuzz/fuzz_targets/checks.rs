//! What each fuzz target checks, shared with `tests/integration/host/fuzz_corpus.rs` so the seed
//! corpus runs as a plain test on stable. Each function must not panic for any input, and asserts
//! the properties that make a decoder safe to face the network: bounded output, round trips, clean
//! refusals.

use trapdesk::gateway::fragment::Reassembler;
use trapdesk::protocol::{Hello, Message, wire};
use trapdesk::session::summary;

/// Any frame text: decodes to a message or a reason; what decodes re-encodes to ASCII that
/// decodes to the same message.
pub fn frame(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = wire::decode(text);
    if let Ok(m) = Message::decode(text) {
        let again = m.encode();
        assert!(again.is_ascii());
        assert_eq!(Message::decode(&again).ok(), Some(m));
    }
}

/// Bytes as a script of fragment pieces: each 3-byte head picks the message id (of 4), the
/// sequence number, `last`, and how many of the following bytes are the data. Whatever the
/// script, the reassembler never holds or returns more than its limit.
pub fn fragments(data: &[u8]) {
    const LIMIT: usize = 256;
    let mut r = Reassembler::new(LIMIT);
    let mut rest = data;
    while let [mid, seq, flags, tail @ ..] = rest {
        let len = usize::from(flags >> 1).min(tail.len());
        let (piece, more) = tail.split_at(len);
        let text = String::from_utf8_lossy(piece);
        let mid = format!("m{}", mid % 4);
        if let Ok(Some(whole)) = r.push(&mid, u64::from(seq % 8), flags & 1 == 1, &text) {
            assert!(whole.len() <= LIMIT, "returned {} bytes", whole.len());
        }
        rest = more;
    }
}

/// Any JSON as a return descriptor: renders without panicking, and the one-line form is short.
pub fn descriptor(data: &[u8]) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = summary::descriptor(&v);
    let line = summary::returns_line(std::slice::from_ref(&v));
    assert!(line.chars().count() <= 200);
}

/// Any JSON as a hello: a Hello or a specific refusal; an accepted one has a traposId made of
/// its id and label.
pub fn hello(data: &[u8]) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok(h) = Hello::from_value(&v) {
        assert!(h.trapos_id().starts_with(&format!("{}:", h.computer_id)));
        if let Some(l) = &h.label {
            assert_label(l);
        }
    }
    // What a hello claims of its detached runs: never more read than the bound, whatever the
    // list holds.
    if let Ok(runs) = Hello::detached_of(&v) {
        assert!(runs.len() <= trapdesk::protocol::NAMED_READ);
    }
}

/// What a label may be on the host (docs/protocol.md, "Labels"): not empty, at most 32
/// characters, no control character, and normalising it again changes nothing.
fn assert_label(l: &str) {
    use trapdesk::protocol::label;
    assert!(!l.is_empty());
    assert!(l.chars().count() <= label::MAX_CHARS, "{l:?}");
    assert!(!l.chars().any(char::is_control), "{l:?}");
    assert_eq!(label::normalise(Some(l)).as_deref(), Some(l));
}

/// Any bytes as a label, the way a computer sends one (each byte one wire char, `\u00XX` above
/// 0x7F), in a `label` message and in a `hello`: both give the same normalised label, and the
/// traposId is the id, a colon and that label.
pub fn label(data: &[u8]) {
    let wire_form: String = data.iter().map(|&b| char::from(b)).collect();
    let frame = serde_json::json!({"type": "label", "label": wire_form}).to_string();
    let frame = wire::escape_non_ascii(&frame);
    let from_label = match Message::decode(&frame) {
        Ok(Message::Label { label }) => label,
        other => panic!("a label message did not decode: {other:?}"),
    };
    if let Some(l) = &from_label {
        assert_label(l);
    }
    let hello = wire::decode(&wire::escape_non_ascii(
        &serde_json::json!({"type": "hello", "protocol": 1, "computer_id": 7,
            "label": wire_form, "secret": "s"})
        .to_string(),
    ))
    .ok()
    .and_then(|v| Hello::from_value(&v).ok());
    let Some(h) = hello else {
        panic!("a hello with any label links");
    };
    assert_eq!(h.label, from_label);
    assert_eq!(
        h.trapos_id(),
        format!("7:{}", from_label.as_deref().unwrap_or(""))
    );
}

/// Any binary frame from a computer (docs/protocol.md, "Binary frames"): a blob piece, output
/// or a reason. Pieces held never exceed the holder's bound, and an answer naming the blob gets
/// exactly the bytes held for it, in the host's own shape (base64), or a failed read.
pub fn binary_frame(data: &[u8]) {
    use base64::Engine;
    use trapdesk::gateway::binary::{Blobs, Incoming, parse};
    use trapdesk::protocol::Response;
    const LIMIT: usize = 256;
    let mut blobs = Blobs::new(LIMIT);
    match parse(data) {
        Ok(Incoming::Blob {
            id,
            part,
            seq,
            body,
        }) => {
            let kept = blobs.push(&id, part, seq, body).is_ok() && part == 0;
            let mut resp = Response {
                id,
                ok: true,
                payload: Some(serde_json::json!({"ok": true, "encoding": "binary",
                    "bytes": body.len()})),
                error: None,
            };
            blobs.attach(&mut resp);
            let p = resp.payload.unwrap_or_default();
            if kept {
                let content = p["content"].as_str().unwrap_or_default();
                let back = base64::engine::general_purpose::STANDARD
                    .decode(content)
                    .unwrap_or_default();
                assert_eq!(back, body);
            } else {
                assert!(p["content"].is_null() || p["ok"] == false, "{p}");
            }
        }
        Ok(Incoming::Output(m)) => assert!(matches!(m, Message::Output { .. })),
        Err(_) => {}
    }
}

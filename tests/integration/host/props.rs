//! Property tests (proptest) for everything that decodes input from outside the process: frames,
//! fragment reassembly, return descriptors, traposId resolution and the config file. Each
//! property states what must hold for *any* input, not just the examples the unit tests pick.
//! Failing cases proptest finds are kept in `tests/props.proptest-regressions` and replayed.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use trapdesk::config::{ConfigError, resolve_with_env};
use trapdesk::gateway::fragment::{FragmentError, Reassembler, split};
use trapdesk::protocol::{Hello, Message, wire};
use trapdesk::session::{RequestError, Session, summary};

/// Any JSON value, a few levels deep, with strings that include non-ASCII and control chars.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
        "[\\x00-\\x1f\"\\\\]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::hash_map("[a-z_]{1,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Frames a computer might send: well-formed messages of every kind it sends, and objects with
/// a `type` and random fields.
fn message() -> impl Strategy<Value = Message> {
    let text = "\\PC{0,40}";
    prop_oneof![
        (text, "(out|err)", text).prop_map(|(id, stream, text)| Message::Output {
            id,
            stream,
            text
        }),
        text.prop_map(|id| Message::Cancel { id }),
        prop::collection::vec(text, 0..4).prop_map(|types| Message::Serve { types }),
        any::<u32>().prop_map(|t| Message::Ping { t: json!(t) }),
        (text, any::<u64>(), any::<bool>(), text).prop_map(|(mid, seq, last, data)| {
            Message::Fragment {
                mid,
                seq,
                last,
                data,
            }
        }),
        (text, text, prop::option::of(text)).prop_map(|(code, message, id)| Message::Error {
            code,
            message,
            id
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Decoding never panics, whatever the text: it is a message or a reason.
    #[test]
    fn decode_never_panics_on_any_text(s in "\\PC{0,200}") {
        let _ = Message::decode(&s);
        let _ = wire::decode(&s);
    }

    /// Any JSON object with any `type` decodes to a message or a reason, never a panic; a hello
    /// is either a Hello or a specific refusal.
    #[test]
    fn decode_never_panics_on_any_json(v in json_value(), kind in prop::sample::select(vec![
        "hello", "output", "fragment", "computer_response", "serve", "pong", "ping", "error", "x",
    ])) {
        let mut obj = match v { Value::Object(m) => m, other => {
            let mut m = serde_json::Map::new();
            m.insert("value".into(), other);
            m
        }};
        obj.insert("type".into(), json!(kind));
        let v = Value::Object(obj);
        let _ = Message::decode(&v.to_string());
        let _ = Hello::from_value(&v);
    }

    /// What the host encodes is ASCII and decodes back to the same message.
    #[test]
    fn encode_then_decode_is_identity(m in message()) {
        let frame = m.encode();
        prop_assert!(frame.is_ascii(), "{frame}");
        prop_assert_eq!(Message::decode(&frame).unwrap(), m);
    }

    /// The byte-string rule: any text goes on the wire as ASCII, one `\u00XX` per UTF-8 byte,
    /// and comes back as the same text.
    #[test]
    fn wire_strings_carry_any_text(text in "\\PC{0,40}") {
        let frame = wire::encode(&json!({"type": "output", "text": text}));
        prop_assert!(frame.is_ascii());
        let raw = serde_json::from_str::<Value>(&frame).unwrap();
        prop_assert_eq!(wire::wire_bytes(raw["text"].as_str().unwrap()), text.as_bytes().to_vec());
        let back = wire::decode(&frame).unwrap();
        prop_assert_eq!(back["text"].as_str().unwrap(), text.as_str());
    }

    /// Any bytes a computer sends (each as its `\u00XX`) decode to text without a panic, and
    /// valid UTF-8 comes back exactly.
    #[test]
    fn wire_bytes_from_a_computer_decode(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let wire_text: String = bytes.iter().map(|b| char::from(*b)).collect();
        let frame = json!({"type": "output", "text": wire_text}).to_string();
        let text = wire::decode(&frame).unwrap()["text"].as_str().unwrap().to_owned();
        if let Ok(valid) = std::str::from_utf8(&bytes) {
            prop_assert_eq!(text, valid);
        }
    }

    /// Split frames of several messages, interleaved in any order that keeps each message's own
    /// order, join back to exactly the original frames.
    #[test]
    fn interleaved_fragments_join_to_the_originals(
        texts in prop::collection::vec("\\PC{1,300}", 1..5),
        limit in 200usize..600,
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..400),
    ) {
        let frames: Vec<String> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Message::Output { id: format!("c-{i}"), stream: "out".into(), text: t.clone() }.encode())
            .collect();
        let mut queues: Vec<std::collections::VecDeque<String>> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| split(f.clone(), &format!("m{i}"), limit).into())
            .collect();
        let mut r = Reassembler::new(1 << 20);
        let mut joined = Vec::new();
        let mut picks = picks.into_iter();
        while queues.iter().any(|q| !q.is_empty()) {
            let open: Vec<usize> = (0..queues.len()).filter(|i| !queues[*i].is_empty()).collect();
            let which = picks.next().map_or(open[0], |ix| open[ix.index(open.len())]);
            let piece = queues[which].pop_front().unwrap();
            if frames[which].len() > limit {
                prop_assert!(piece.len() <= limit, "piece of {} bytes over {limit}", piece.len());
            }
            match Message::decode(&piece).unwrap() {
                Message::Fragment { mid, seq, last, data } => {
                    if let Some(whole) = r.push(&mid, seq, last, &data).unwrap() {
                        joined.push(whole);
                    }
                }
                // Small enough to go whole.
                _ => joined.push(piece),
            }
        }
        let mut want = frames.clone();
        want.sort();
        joined.sort();
        prop_assert_eq!(joined, want);
    }

    /// Any sequence of pieces (random ids, gaps, repeats, endless messages) is bounded: the
    /// reassembler never hands back more than its limit, refuses a message past it, and after
    /// at most limit/piece pushes of a message that never ends, refuses it.
    #[test]
    fn any_piece_sequence_stays_within_the_limit(
        pieces in prop::collection::vec(
            ("[a-c]", 0u64..4, any::<bool>(), "[a-z]{0,40}"), 0..200),
        max_total in 16usize..400,
    ) {
        let mut r = Reassembler::new(max_total);
        for (mid, seq, last, data) in &pieces {
            match r.push(mid, *seq, *last, data) {
                Ok(Some(whole)) => prop_assert!(whole.len() <= max_total),
                Ok(None) => {}
                Err(FragmentError::OutOfOrder { expected, got, .. }) => prop_assert_ne!(expected, got),
                Err(FragmentError::TooLarge { limit, .. }) => prop_assert_eq!(limit, max_total),
                Err(FragmentError::TooMany(_)) => {}
            }
        }
        // An endless message is refused by the time it holds the limit.
        let mut refused = false;
        for seq in 0..=(max_total as u64 / 8 + 1) {
            if r.push("endless", seq, false, "12345678").is_err() {
                refused = true;
                break;
            }
        }
        prop_assert!(refused);
    }

    /// A missing piece (a gap in seq) drops that message and only that one.
    #[test]
    fn a_gap_drops_only_its_own_message(gap in 2u64..6) {
        let mut r = Reassembler::new(1 << 16);
        // `a` has piece 0; its next is 1, so any seq from 2 on skips a piece.
        prop_assert_eq!(r.push("a", 0, false, "a0"), Ok(None));
        prop_assert_eq!(r.push("b", 0, false, "b0"), Ok(None));
        let refused = matches!(r.push("a", gap, false, "a?"), Err(FragmentError::OutOfOrder { .. }));
        prop_assert!(refused);
        prop_assert_eq!(r.push("b", 1, true, "b1"), Ok(Some("b0b1".into())));
        // `a` starts over from 0.
        prop_assert_eq!(r.push("a", 0, true, "x"), Ok(Some("x".into())));
    }

    /// Descriptor rendering never panics and the one-line form stays short, whatever came back.
    #[test]
    fn descriptors_render_any_value(values in prop::collection::vec(json_value(), 0..8)) {
        for v in &values {
            let _ = summary::descriptor(v);
        }
        let line = summary::returns_line(&values);
        prop_assert!(line.chars().count() <= 200, "{}", line.len());
        let _ = summary::outcome(&Ok(json!({"ok": true, "returns": values, "n": 3})));
    }

    /// traposId resolution: a full id always resolves to itself; a bare number or a label
    /// resolves exactly when it names one linked computer, and is ambiguous or unknown otherwise.
    #[test]
    fn trapos_ids_resolve_exactly_when_unique(
        computers in prop::collection::vec((0u64..6, prop::option::of("[a-c]{1,2}")), 1..10),
        query_id in 0u64..7,
        query_label in "[a-c]{1,2}",
    ) {
        let session = Session::new(trapdesk::config::Settings::default(), false);
        let mut links = Vec::new();
        let mut by_trapos: HashMap<String, (u64, Option<String>)> = HashMap::new();
        for (id, label) in &computers {
            let hello = Hello {
                protocol: 1, computer_id: *id, label: label.clone(), secret: String::new(),
                serves: vec![], client: None, host: None, max_message: None,
            };
            let (tx, rx) = mpsc::channel(1024);
            links.push((session.link(&hello, tx), rx));
            by_trapos.insert(hello.trapos_id(), (*id, label.clone()));
        }
        for t in by_trapos.keys() {
            prop_assert_eq!(session.resolve(t).unwrap(), t.clone());
        }
        let with_id = by_trapos.values().filter(|(id, _)| *id == query_id).count();
        match session.resolve(&query_id.to_string()) {
            Ok(t) => { prop_assert_eq!(with_id, 1); prop_assert_eq!(by_trapos[&t].0, query_id); }
            Err(RequestError::UnknownComputer { .. }) => prop_assert_eq!(with_id, 0),
            Err(RequestError::Ambiguous { matches, .. }) => prop_assert_eq!(matches.len(), with_id),
            Err(e) => prop_assert!(false, "unexpected {e}"),
        }
        let with_label = by_trapos.values().filter(|(_, l)| l.as_deref() == Some(&query_label)).count();
        match session.resolve(&query_label) {
            Ok(t) => { prop_assert_eq!(with_label, 1); prop_assert_eq!(by_trapos[&t].1.as_deref(), Some(query_label.as_str())); }
            Err(RequestError::UnknownComputer { .. }) => prop_assert_eq!(with_label, 0),
            Err(RequestError::Ambiguous { matches, .. }) => prop_assert_eq!(matches.len(), with_label),
            Err(e) => prop_assert!(false, "unexpected {e}"),
        }
    }
}

proptest! {
    // Each case writes a file and resolves settings; fewer cases keep this quick.
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any config file text gives settings or an error naming the file, never a panic; numbers
    /// in range are taken as written.
    #[test]
    fn any_config_file_is_settings_or_a_named_error(
        text in "\\PC{0,120}",
        heartbeat in prop::option::of(0u64..100_000),
        max_in_flight in prop::option::of(0usize..64),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        let none = |_: &'static str| None;
        let args = |f: &std::path::Path| trapdesk::config::HostArgs {
            data_dir: Some(dir.path().to_owned()),
            config: Some(f.to_owned()),
            ..trapdesk::config::HostArgs::default()
        };
        std::fs::write(&file, &text).unwrap();
        match resolve_with_env(&args(&file), &none) {
            Ok(_) | Err(ConfigError::Parse { .. } | ConfigError::Invalid(_) | ConfigError::McpWithoutToken(_)) => {}
            Err(e) => prop_assert!(false, "config text gave an error about something else: {e}"),
        }
        let mut toml = String::new();
        if let Some(h) = heartbeat { toml.push_str(&format!("heartbeat_ms = {h}\n")); }
        if let Some(m) = max_in_flight { toml.push_str(&format!("max_in_flight = {m}\n")); }
        std::fs::write(&file, &toml).unwrap();
        // A value is either taken (raised to its floor: a 0 ms heartbeat would spin) or refused
        // with an error that names it.
        match resolve_with_env(&args(&file), &none) {
            Ok(s) => {
                if let Some(h) = heartbeat { prop_assert_eq!(s.heartbeat.as_millis() as u64, h.max(100)); }
                if let Some(m) = max_in_flight { prop_assert_eq!(s.max_in_flight, m.max(1)); }
            }
            Err(ConfigError::Invalid(msg)) => {
                prop_assert!(msg.contains("heartbeat_ms") || msg.contains("max_in_flight"), "{msg}");
            }
            Err(e) => prop_assert!(false, "unexpected {e}"),
        }
    }
}

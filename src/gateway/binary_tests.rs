//! The binary frames' conversions, each way.

use super::*;

fn write_req(content: &[u8]) -> Outgoing {
    Outgoing {
        id: "h-abc-7".into(),
        body: RequestBody::WriteFile(kind::WriteFile {
            path: "a.bin".into(),
            content: content.to_vec(),
            ..Default::default()
        }),
        timeout_ms: Some(1000),
        detach: None,
        as_written: None,
    }
}

#[test]
fn a_write_on_a_json_link_is_the_base64_frame_it_always_was() {
    let content: Vec<u8> = (0..=255u8).chain(b"\n\"\\".iter().copied()).collect();
    let mut req = write_req(&content);
    let before = Request {
        id: "h-abc-7".into(),
        request: super::super::protocol::Kind::WriteFile,
        payload: json!({"path": "a.bin", "encoding": "base64",
            "content": base64::engine::general_purpose::STANDARD.encode(&content)}),
        timeout_ms: Some(1000),
        detach: None,
    };
    let frame = |r: Request| Message::GatewayRequest(r).encode();
    assert_eq!(frame(req.to_wire()), frame(before.clone()));
    if let RequestBody::WriteFile(w) = &mut req.body {
        (w.append, w.in_place) = (true, true);
    }
    let mut after = before;
    after.payload["append"] = json!(true);
    after.payload["in_place"] = json!(true);
    assert_eq!(frame(req.to_wire()), frame(after));
}

/// Splits a frame the way the computer does: header line, then bytes.
fn split(f: &[u8]) -> (Value, &[u8]) {
    let nl = f.iter().position(|b| *b == b'\n').expect("a header line");
    let head: Value = serde_json::from_slice(&f[..nl]).expect("a JSON header");
    (head, &f[nl + 1..])
}

#[test]
fn a_write_goes_as_raw_bytes_in_frames_within_the_limit() {
    let content: Vec<u8> = (0..300_000u32).map(|i| (i % 256) as u8).collect();
    let Some((frames, req)) = outgoing(&write_req(&content), 4096) else {
        unreachable!("not converted")
    };
    let req: Value = serde_json::from_str(&req).unwrap_or_default();
    assert!(frames.len() > 70, "{}", frames.len());
    assert!(frames.iter().all(|f| f.len() <= 4096));
    let mut joined = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let (head, body) = split(f);
        assert_eq!(head["type"], "blob");
        assert_eq!(head["id"], "h-abc-7");
        assert_eq!(head["seq"], i);
        assert_eq!(head["last"], i + 1 == frames.len());
        joined.extend_from_slice(body);
    }
    assert_eq!(joined, content);
    assert_eq!(req["payload"]["encoding"], "binary");
    assert_eq!(req["payload"]["bytes"], content.len());
    assert!(req["payload"].get("content").is_none());
    assert_eq!(req["payload"]["path"], "a.bin");
    assert_eq!(req["id"], "h-abc-7");
}

#[test]
fn an_empty_write_still_sends_one_blob_frame() {
    let Some((frames, req)) = outgoing(&write_req(b""), 4096) else {
        unreachable!("not converted")
    };
    let req: Value = serde_json::from_str(&req).unwrap_or_default();
    assert_eq!(frames.len(), 1);
    let (head, body) = split(&frames[0]);
    assert_eq!((head["last"].clone(), body.len()), (json!(true), 0));
    assert_eq!(req["payload"]["bytes"], 0);
}

#[test]
fn other_kinds_go_as_they_are_and_reads_ask_for_bytes() {
    let mut r = write_req(b"x");
    r.body = RequestBody::ListFiles(kind::ListFiles { path: "a".into() });
    assert!(outgoing(&r, 4096).is_none());
    let mut read = write_req(b"");
    read.body = RequestBody::ReadFile(kind::ReadFile {
        path: "a".into(),
        offset: None,
        length: None,
    });
    let Some((frames, asked)) = outgoing(&read, 4096) else {
        unreachable!("read-file asks for binary")
    };
    assert!(frames.is_empty());
    let asked: Value = serde_json::from_str(&asked).unwrap_or_default();
    assert_eq!(asked["payload"], json!({"path": "a", "binary": true}));
    assert_eq!(asked["type"], "gateway_request");
    read.body = RequestBody::ExecLua(kind::ExecLua {
        code: "return 'h\u{e9}'".into(),
        name: None,
    });
    let Some((_, asked)) = outgoing(&read, 4096) else {
        unreachable!("exec-lua asks for binary returns")
    };
    // The byte-string rule still holds for the request's text.
    assert!(
        asked.is_ascii() && asked.contains(r"\u00c3\u00a9"),
        "{asked}"
    );
    let asked: Value = serde_json::from_str(&asked).unwrap_or_default();
    assert_eq!(asked["payload"]["binary"], true);
}

/// Parses each frame as a blob and keeps it, as the connection does.
fn push_all(blobs: &mut Blobs, frames: &[&Vec<u8>]) {
    for f in frames {
        let Ok(Incoming::Blob {
            id,
            part,
            seq,
            body,
        }) = parse(f)
        else {
            unreachable!("not a blob")
        };
        assert_eq!(blobs.push(&id, part, seq, body), Ok(()));
    }
}

#[test]
fn an_answer_gets_its_blob_back_as_base64() {
    let mut blobs = Blobs::new(1 << 20);
    let bytes: Vec<u8> = (0..=255u8).collect();
    let f1 = frame(&blob_header("h-1", 0, false), &bytes[..100]);
    let f2 = frame(&blob_header("h-1", 1, true), &bytes[100..]);
    push_all(&mut blobs, &[&f1, &f2]);
    let mut resp = Response {
        id: "h-1".into(),
        ok: true,
        payload: Some(json!({"ok": true, "encoding": "binary", "bytes": 256, "total": 256})),
        error: None,
    };
    blobs.attach(&mut resp);
    let p = resp.payload.unwrap_or_default();
    assert_eq!(p["encoding"], "base64");
    assert_eq!(
        p["content"],
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    );
    assert_eq!(blobs.held, 0);
}

#[test]
fn a_short_blob_fails_the_read_and_out_of_order_is_refused() {
    let mut blobs = Blobs::new(1 << 20);
    assert_eq!(blobs.push("h-2", 0, 0, b"abc"), Ok(()));
    let mut resp = Response {
        id: "h-2".into(),
        ok: true,
        payload: Some(json!({"ok": true, "encoding": "binary", "bytes": 4})),
        error: None,
    };
    blobs.attach(&mut resp);
    let p = resp.payload.unwrap_or_default();
    assert_eq!(p["ok"], false, "{p}");
    assert!(blobs.push("h-3", 0, 1, b"x").is_err());
    assert!(blobs.partial.is_empty());
    let mut small = Blobs::new(4);
    assert!(small.push("h-4", 0, 0, b"12345").is_err());
}

#[test]
fn large_returned_strings_come_back_as_the_hosts_descriptors() {
    let mut blobs = Blobs::new(1 << 20);
    let text = "héllo ".repeat(5000);
    let bytes: Vec<u8> = vec![0, 0xff, 0xa7];
    let mut h = json!({"type": "blob", "id": "h-5", "part": 0, "seq": 0, "last": true});
    let f0 = frame(&h, text.as_bytes());
    h["part"] = json!(1);
    let f1 = frame(&h, &bytes);
    push_all(&mut blobs, &[&f0, &f1]);
    let mut resp = Response {
        id: "h-5".into(),
        ok: true,
        payload: Some(json!({"ok": true, "n": 3, "returns": [
            {"type": "string", "blob": 0, "bytes": text.len()},
            {"type": "number", "value": 1},
            {"type": "string", "blob": 1, "bytes": 3}]})),
        error: None,
    };
    blobs.attach(&mut resp);
    let p = resp.payload.unwrap_or_default();
    assert_eq!(p["returns"][0], json!({"type": "string", "value": text}));
    assert_eq!(p["returns"][1], json!({"type": "number", "value": 1}));
    assert_eq!(
        p["returns"][2],
        json!({"type": "string", "encoding": "base64", "value": "AP+n"})
    );
    assert_eq!(blobs.held, 0);
}

#[test]
fn binary_output_is_its_bytes_as_text() {
    let f = frame(
        &json!({"type": "output", "id": "h-9", "stream": "err"}),
        b"a\xffb\n",
    );
    assert_eq!(
        parse(&f),
        Ok(Incoming::Output(Message::Output {
            id: "h-9".into(),
            stream: "err".into(),
            text: "a\u{fffd}b\n".into()
        }))
    );
    assert!(parse(b"no header").is_err());
    assert!(parse(b"{\"type\":\"ping\",\"t\":1}\n").is_err());
    assert!(parse(b"[1]\nx").is_err());
}

//! Binary frames (docs/protocol.md, "Binary frames"): file contents and output as raw bytes,
//! for a computer whose hello said `"binary": true`.
//!
//! A binary frame is one header line of JSON, `\n`, then bytes. The point is the computer's
//! CPU: CC: Tweaked runs every computer of a server on one Lua thread, and base64 or JSON
//! escaping of a 500 KB file is pure Lua work byte by byte, where a binary frame is one
//! `ws.send(data, true)` and one `h.write`. The host keeps its own shapes (a write-file's
//! payload holds base64, a read-file's answer too): only this edge converts, so the session
//! and everything above it never see the difference.

use std::collections::HashMap;

use base64::Engine;
use serde_json::{Map, Value, json};

use super::protocol::{Kind, Message, Request, Response, wire};

/// What a binary frame from a computer holds.
#[derive(Debug, PartialEq)]
pub enum Incoming<'a> {
    /// A piece of content `part` of the answer to request `id` (a read-file page is part 0; a
    /// large returned string is the part its descriptor names).
    Blob {
        id: String,
        part: u64,
        seq: u64,
        body: &'a [u8],
    },
    /// Live output whose text is the frame's bytes.
    Output(Message),
}

/// One binary frame: the header's JSON (ASCII, the wire's byte-string rule), `\n`, the bytes.
pub fn frame(header: &Value, body: &[u8]) -> Vec<u8> {
    let head = wire::encode(header);
    let mut out = Vec::with_capacity(head.len() + 1 + body.len());
    out.extend_from_slice(head.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

fn blob_header(id: &str, seq: u64, last: bool) -> Value {
    json!({"type": "blob", "id": id, "seq": seq, "last": last})
}

/// What a request becomes on a binary link: the blob frames to send before it (a write-file's
/// content, cut to `limit`) and the request's own text frame. `None` when it goes as it is.
pub fn outgoing(msg: &Message, limit: usize) -> Option<(Vec<Vec<u8>>, String)> {
    let Message::GatewayRequest(req) = msg else {
        return None;
    };
    match req.request {
        Kind::WriteFile => {
            let (frames, req) = write_file(req, limit)?;
            Some((frames, Message::GatewayRequest(req).encode()))
        }
        // The page comes back as raw bytes (a blob before the answer), not as base64; a large
        // returned string too. Added to the JSON being encoded anyway: no copy of the request.
        Kind::ReadFile | Kind::ExecLua | Kind::RunFile => {
            let mut v = serde_json::to_value(msg).ok()?;
            v.get_mut("payload")?
                .as_object_mut()?
                .insert("binary".into(), Value::Bool(true));
            Some((Vec::new(), wire::encode(&v)))
        }
        _ => None,
    }
}

fn write_file(req: &Request, limit: usize) -> Option<(Vec<Vec<u8>>, Request)> {
    let p = req.payload.as_object()?;
    if !matches!(
        p.get("encoding").and_then(Value::as_str),
        None | Some("base64")
    ) {
        return None;
    }
    // Content that is not base64 goes as it is: the computer answers the error it always did.
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(p.get("content")?.as_str()?)
        .ok()?;
    // Room for the header of the largest seq this content can need, so every frame fits.
    let worst = wire::encode(&blob_header(&req.id, u64::MAX, false)).len() + 1;
    let room = limit.saturating_sub(worst).max(1);
    let count = bytes.len().div_ceil(room).max(1);
    let frames = (0..count)
        .map(|seq| {
            let start = seq * room;
            let piece = &bytes[start..(start + room).min(bytes.len())];
            frame(&blob_header(&req.id, seq as u64, seq + 1 == count), piece)
        })
        .collect();
    // Every field but the content (already in the frames): copying the whole payload or the
    // whole request would copy the base64 text once more, hundreds of KB for a big file.
    let mut payload: Map<String, Value> = p
        .iter()
        .filter(|(k, _)| k.as_str() != "content")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    payload.insert("encoding".into(), json!("binary"));
    payload.insert("bytes".into(), json!(bytes.len()));
    Some((
        frames,
        Request {
            id: req.id.clone(),
            request: req.request,
            payload: Value::Object(payload),
            timeout_ms: req.timeout_ms,
            detach: req.detach.clone(),
        },
    ))
}

/// Reads one binary frame from a computer.
///
/// # Errors
/// A frame with no header line, a header that is not a JSON object with a known `type`, or a
/// header missing its fields: said in the `bad_message` the host answers.
pub fn parse(frame: &[u8]) -> Result<Incoming<'_>, String> {
    let Some(nl) = frame.iter().position(|b| *b == b'\n') else {
        return Err("binary frame without a header line".into());
    };
    let head = std::str::from_utf8(&frame[..nl])
        .map_err(|_| "binary frame header is not text".to_owned())?;
    let v = wire::decode(head).map_err(|e| format!("binary frame header: {e}"))?;
    let body = &frame[nl + 1..];
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match v.get("type").and_then(Value::as_str) {
        Some("blob") => {
            let (Some(id), Some(seq)) = (s("id"), v.get("seq").and_then(Value::as_u64)) else {
                return Err("blob header needs a string id and a number seq".into());
            };
            let part = match v.get("part") {
                None => 0,
                Some(p) => p.as_u64().ok_or("blob header's part must be a number")?,
            };
            Ok(Incoming::Blob {
                id,
                part,
                seq,
                body,
            })
        }
        Some("output") => {
            let Some(id) = s("id") else {
                return Err("output header needs a string id".into());
            };
            Ok(Incoming::Output(Message::Output {
                id,
                stream: s("stream").unwrap_or_else(|| "out".into()),
                // Shown as text, invalid sequences replaced, as a text frame's bytes are.
                text: String::from_utf8_lossy(body).into_owned(),
            }))
        }
        Some(other) => Err(format!("a binary frame cannot be a {other} message")),
        None => Err("binary frame header has no string type".into()),
    }
}

/// Blobs being received on one connection, by request id and part.
#[derive(Debug)]
pub struct Blobs {
    partial: HashMap<(String, u64), (u64, Vec<u8>)>,
    /// Bytes held across every blob, bounded as a whole (as fragments are).
    held: usize,
    max_total: usize,
}

/// Blobs being received at once on one connection.
const MAX_PARTIAL: usize = 16;

impl Blobs {
    pub fn new(max_total: usize) -> Self {
        Blobs {
            partial: HashMap::new(),
            held: 0,
            max_total,
        }
    }

    /// Adds a piece of request `id`'s blob.
    ///
    /// # Errors
    /// A piece out of order, a blob over the size bound or too many blobs at once: that blob
    /// is dropped (its answer then says its content is missing).
    pub fn push(&mut self, id: &str, part: u64, seq: u64, body: &[u8]) -> Result<(), String> {
        let key = (id.to_owned(), part);
        if !self.partial.contains_key(&key) && self.partial.len() >= MAX_PARTIAL {
            return Err(format!(
                "more than {MAX_PARTIAL} binary contents in progress"
            ));
        }
        let (next, buf) = self.partial.entry(key).or_default();
        if seq != *next {
            let want = *next;
            self.take(id, part);
            return Err(format!(
                "blob piece {seq} of {id:?} part {part} out of order (expected {want})"
            ));
        }
        if self.held + body.len() > self.max_total {
            self.take(id, part);
            return Err(format!(
                "binary content of {id:?} exceeds {} bytes",
                self.max_total
            ));
        }
        buf.extend_from_slice(body);
        *next += 1;
        self.held += body.len();
        Ok(())
    }

    /// Takes part `part` of request `id`'s blobs, if it came.
    pub fn take(&mut self, id: &str, part: u64) -> Option<Vec<u8>> {
        let (_, bytes) = self.partial.remove(&(id.to_owned(), part))?;
        self.held -= bytes.len();
        Some(bytes)
    }

    /// Drops whatever is left of request `id`'s blobs (parts its answer did not name).
    fn forget(&mut self, id: &str) {
        let keys: Vec<_> = self.partial.keys().filter(|k| k.0 == id).cloned().collect();
        for (id, part) in keys {
            self.take(&id, part);
        }
    }

    /// Puts the blob that came before an answer into the answer, as the host's own shape: a
    /// payload saying `"encoding":"binary"` gets its content back as base64. A blob that is
    /// missing or short (the computer dropped a piece) turns the answer into a failed read.
    pub fn attach(&mut self, resp: &mut Response) {
        let blob = self.take(&resp.id, 0);
        if let Some(Value::Object(p)) = resp.payload.as_mut() {
            if let Some(Value::Array(returns)) = p.get_mut("returns") {
                let mut first = blob;
                for d in returns.iter_mut() {
                    self.returned(&resp.id, d, &mut first);
                }
            } else if p.get("encoding").and_then(Value::as_str) == Some("binary") {
                content(p, blob.unwrap_or_default());
            }
        }
        self.forget(&resp.id);
    }

    /// A returned string sent as a blob (`{"type":"string","blob":K,"bytes":N}`) becomes the
    /// descriptor the host always had: its text when it is valid UTF-8, else its bytes in base64
    /// (docs/protocol.md, "Bytes in returned values"). The check and the base64 are the host's
    /// work now, not the computer's.
    fn returned(&mut self, id: &str, d: &mut Value, first: &mut Option<Vec<u8>>) {
        let Some(part) = d.get("blob").and_then(Value::as_u64) else {
            return;
        };
        let bytes = if part == 0 {
            first.take()
        } else {
            self.take(id, part)
        }
        .unwrap_or_default();
        let said = d.get("bytes").and_then(Value::as_u64);
        *d = if said.is_some_and(|n| n != bytes.len() as u64) {
            json!({"type": "string", "value": format!(
                "[trapdesk: the computer said {} bytes and sent {}: this string was cut short]",
                said.unwrap_or(0), bytes.len())})
        } else {
            match String::from_utf8(bytes) {
                Ok(text) => json!({"type": "string", "value": text}),
                Err(e) => json!({"type": "string", "encoding": "base64",
                    "value": base64::engine::general_purpose::STANDARD.encode(e.into_bytes())}),
            }
        };
    }
}

/// A read-file page that came as a blob put back as the host's own shape (base64 content).
fn content(p: &mut Map<String, Value>, bytes: Vec<u8>) {
    let said = p.get("bytes").and_then(Value::as_u64);
    if said.is_some_and(|n| n != bytes.len() as u64) {
        let message = format!(
            "the computer said {} bytes and sent {}: its binary content was cut short",
            said.unwrap_or(0),
            bytes.len()
        );
        p.clear();
        p.insert("ok".into(), json!(false));
        p.insert("error".into(), json!(message));
        return;
    }
    p.insert(
        "content".into(),
        json!(base64::engine::general_purpose::STANDARD.encode(&bytes)),
    );
    p.insert("encoding".into(), json!("base64"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_req(content: &[u8]) -> Request {
        Request {
            id: "h-abc-7".into(),
            request: Kind::WriteFile,
            payload: json!({"path": "a.bin", "encoding": "base64",
                "content": base64::engine::general_purpose::STANDARD.encode(content)}),
            timeout_ms: Some(1000),
            detach: None,
        }
    }

    fn msg(r: Request) -> Message {
        Message::GatewayRequest(r)
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
        let Some((frames, req)) = outgoing(&msg(write_req(&content)), 4096) else {
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
        let Some((frames, req)) = outgoing(&msg(write_req(b"")), 4096) else {
            unreachable!("not converted")
        };
        let req: Value = serde_json::from_str(&req).unwrap_or_default();
        assert_eq!(frames.len(), 1);
        let (head, body) = split(&frames[0]);
        assert_eq!((head["last"].clone(), body.len()), (json!(true), 0));
        assert_eq!(req["payload"]["bytes"], 0);
    }

    #[test]
    fn text_content_and_other_kinds_go_as_they_are() {
        let mut r = write_req(b"x");
        r.payload["encoding"] = json!("text");
        assert!(outgoing(&msg(r.clone()), 4096).is_none());
        r.request = Kind::ListFiles;
        assert!(outgoing(&msg(r), 4096).is_none());
        let mut read = write_req(b"");
        read.request = Kind::ReadFile;
        read.payload = json!({"path": "a"});
        let Some((frames, asked)) = outgoing(&msg(read.clone()), 4096) else {
            unreachable!("read-file asks for binary")
        };
        assert!(frames.is_empty());
        let asked: Value = serde_json::from_str(&asked).unwrap_or_default();
        assert_eq!(asked["payload"], json!({"path": "a", "binary": true}));
        assert_eq!(asked["type"], "gateway_request");
        read.request = Kind::ExecLua;
        read.payload = json!({"code": "return 'h\u{e9}'"});
        let Some((_, asked)) = outgoing(&msg(read), 4096) else {
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
}

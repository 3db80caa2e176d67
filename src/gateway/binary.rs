//! Binary frames (docs/protocol.md, "Binary frames"): file contents and output as raw bytes,
//! for a computer whose hello said `"binary": true`.
//!
//! A binary frame is one header line of JSON, `\n`, then bytes. The point is the computer's
//! CPU: CC: Tweaked runs every computer of a server on one Lua thread, and base64 or JSON
//! escaping of a 500 KB file is pure Lua work byte by byte, where a binary frame is one
//! `ws.send(data, true)` and one `h.write`. The host keeps its own shapes (a write-file's
//! content is bytes until a frame is made, a read-file's answer holds base64): only this edge
//! converts, so the session and everything above it never see the difference.

use std::collections::HashMap;

use base64::Engine;
use serde_json::{Map, Value, json};

use super::protocol::{Message, Outgoing, Payload, Request, RequestBody, Response, kind, wire};

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
/// content, cut to `limit`) and the request's own text frame. `None` when it goes as the JSON
/// frame any link gets.
pub fn outgoing(req: &Outgoing, limit: usize) -> Option<(Vec<Vec<u8>>, String)> {
    if req.as_written.is_some() {
        return None;
    }
    match &req.body {
        RequestBody::WriteFile(w) => {
            let (frames, req) = write_file(req, w, limit)?;
            Some((frames, Message::GatewayRequest(req).encode()))
        }
        // The page comes back as raw bytes (a blob before the answer), not as base64; a large
        // returned string too.
        RequestBody::ReadFile(_) | RequestBody::ExecLua(_) | RequestBody::RunFile(_) => {
            let mut wire = req.to_wire();
            wire.payload
                .as_object_mut()?
                .insert("binary".into(), Value::Bool(true));
            Some((Vec::new(), Message::GatewayRequest(wire).encode()))
        }
        _ => None,
    }
}

fn write_file(
    req: &Outgoing,
    w: &kind::WriteFile,
    limit: usize,
) -> Option<(Vec<Vec<u8>>, Request)> {
    let bytes = &w.content;
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
    // Every field but the content (already in the frames), made from an empty copy so that
    // the bytes are neither copied nor encoded once more.
    let head = kind::WriteFile {
        path: w.path.clone(),
        content: Vec::new(),
        append: w.append,
        in_place: w.in_place,
    };
    let mut payload = head.to_value();
    let p = payload.as_object_mut()?;
    p.remove("content");
    p.insert("encoding".into(), json!("binary"));
    p.insert("bytes".into(), json!(bytes.len()));
    Some((
        frames,
        Request {
            id: req.id.clone(),
            request: req.kind(),
            payload,
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
#[path = "binary_tests.rs"]
mod tests;

//! The byte-string rule: JSON strings carry bytes, written ASCII-only.
//!
//! CC: Tweaked's text frames are not byte-safe, so each side writes bytes 0x80..=0xFF as
//! `\u0080`..`\u00FF` and reads those escapes back as single bytes. The host holds text as
//! UTF-8; this module converts at the edge.

use serde_json::Value;

/// Why a frame could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("frame is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error("frame is not a JSON object")]
    NotObject,
    #[error("frame has no string field \"type\"")]
    NoType,
}

/// Turns one wire string (each char U+0000..=U+00FF one byte) into UTF-8 text, replacing
/// invalid sequences. A char above U+00FF, which a conforming peer never sends, counts as
/// its own UTF-8 bytes.
pub fn bytes_to_text(s: &str) -> String {
    if s.is_ascii() {
        return s.to_owned();
    }
    String::from_utf8_lossy(&wire_bytes(s)).into_owned()
}

/// The raw bytes a wire string stands for.
pub fn wire_bytes(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        let n = c as u32;
        if n <= 0xFF {
            out.push(n as u8);
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    out
}

/// Turns UTF-8 text into its wire form: each byte becomes the char of the same number.
pub fn text_to_bytes(s: &str) -> String {
    if s.is_ascii() {
        return s.to_owned();
    }
    s.bytes().map(char::from).collect()
}

/// Whether every string and key in `v` is ASCII: then both conversions leave it as it is,
/// and it need not be rebuilt string by string (an allocation per string and key, for every
/// frame each way).
fn ascii_only(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_ascii(),
        Value::Array(items) => items.iter().all(ascii_only),
        Value::Object(map) => map.iter().all(|(k, v)| k.is_ascii() && ascii_only(v)),
        _ => true,
    }
}

fn map_strings(v: Value, f: &impl Fn(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(f(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(|i| map_strings(i, f)).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (f(&k), map_strings(v, f)))
                .collect(),
        ),
        other => other,
    }
}

/// Parses one text frame into a JSON object whose strings are UTF-8 text.
///
/// # Errors
/// When the frame is not JSON, not an object, or has no string `type`.
pub fn decode(frame: &str) -> Result<Value, DecodeError> {
    let v: Value = serde_json::from_str(frame)?;
    let Value::Object(obj) = &v else {
        return Err(DecodeError::NotObject);
    };
    if !matches!(obj.get("type"), Some(Value::String(_))) {
        return Err(DecodeError::NoType);
    }
    if ascii_only(&v) {
        return Ok(v);
    }
    Ok(map_strings(v, &bytes_to_text))
}

/// Writes a JSON value as an ASCII-only wire frame.
pub fn encode(v: &Value) -> String {
    if ascii_only(v) {
        return v.to_string();
    }
    let wire = map_strings(v.clone(), &text_to_bytes);
    escape_non_ascii(&wire.to_string())
}

/// Replaces every non-ASCII char of serialized JSON with its `\u` escape. Safe on whole
/// documents because JSON only allows non-ASCII chars inside strings.
pub fn escape_non_ascii(json: &str) -> String {
    if json.is_ascii() {
        return json.to_owned();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

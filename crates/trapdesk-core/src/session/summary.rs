//! One-line descriptions of requests and their outcomes, shared by the log, the console and the
//! MCP text blocks so that all three say the same thing.

use serde_json::Value;

use super::model::{RequestError, Status};
use trapdesk_proto::protocol::{RequestBody, kind};

/// Longest summary kept; the full data stays in the payloads.
const MAX: usize = 120;

/// Cuts text to one line of at most `max` chars, marking the cut with `…`.
pub fn one_line(text: &str, max: usize) -> String {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let more_lines = text.trim().lines().count() > 1;
    let mut out: String = first.trim().chars().take(max).collect();
    if first.trim().chars().count() > max || more_lines {
        out.push('…');
    }
    out
}

/// What a request asks, in one line: `print("hi")`, `programs/dig.lua 3 "deep shaft"`, ...
pub fn request(body: &RequestBody) -> String {
    match body {
        RequestBody::ExecLua(e) => one_line(&e.code, MAX),
        RequestBody::RunFile(r) => {
            let mut line = r.path.clone();
            for a in &r.args {
                line.push(' ');
                if a.is_empty() || a.contains(char::is_whitespace) || a.contains('"') {
                    line.push_str(&format!("{a:?}"));
                } else {
                    line.push_str(a);
                }
            }
            one_line(&line, MAX)
        }
        RequestBody::WriteFile(w) => {
            format!("{}{}", w.path, if w.append { " (append)" } else { "" })
        }
        RequestBody::MoveFile(m) => format!("{} -> {}", m.from, m.to),
        RequestBody::ReadFile(kind::ReadFile { path, .. })
        | RequestBody::ListFiles(kind::ListFiles { path })
        | RequestBody::DeleteFile(kind::DeleteFile { path })
        | RequestBody::FileInfo(kind::FileInfo { path })
        | RequestBody::MakeDir(kind::MakeDir { path }) => path.clone(),
        RequestBody::Peripherals(_) => "peripherals".to_owned(),
        RequestBody::Turtle(_) => "fuel and slots".to_owned(),
        // Their JSON is the shortest faithful line.
        RequestBody::Ping(_)
        | RequestBody::Screen(_)
        | RequestBody::Input(_)
        | RequestBody::ComputerOutput(_) => one_line(&body.to_value().to_string(), MAX),
    }
}

/// How a request ended, in one status and one line.
pub fn outcome(result: &Result<Value, RequestError>) -> (Status, String) {
    match result {
        Ok(payload) => {
            if payload.get("ok").and_then(Value::as_bool) == Some(false) {
                let err = payload
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("failed");
                (Status::Error, one_line(err, MAX))
            } else if let Some(returns) = payload.get("returns").and_then(Value::as_array) {
                (Status::Ok, returns_line(returns))
            } else if let Some(bytes) = payload.get("bytes").and_then(Value::as_u64) {
                (Status::Ok, format!("{bytes} bytes"))
            } else if let Some(entries) = payload.get("entries").and_then(Value::as_array) {
                let n = entries.len();
                (
                    Status::Ok,
                    format!("{n} {}", if n == 1 { "entry" } else { "entries" }),
                )
            } else if let Some(exists) = payload.get("exists").and_then(Value::as_bool) {
                let size = payload.get("size").and_then(Value::as_u64).unwrap_or(0);
                let line = match (exists, payload.get("isDir").and_then(Value::as_bool)) {
                    (false, _) => "no such file".to_owned(),
                    (true, Some(true)) => "directory".to_owned(),
                    (true, _) => format!("{size} bytes"),
                };
                (Status::Ok, line)
            } else if let Some(rtt) = payload.get("pong") {
                (Status::Ok, format!("pong {rtt}"))
            } else {
                (Status::Ok, String::new())
            }
        }
        Err(e) => {
            let status = match e {
                RequestError::Timeout { .. } => Status::Timeout,
                RequestError::Cancelled { .. } => Status::Cancelled,
                RequestError::Disconnected => Status::Disconnected,
                _ => Status::Failed,
            };
            (status, one_line(&e.to_string(), MAX))
        }
    }
}

/// Returned values, compactly: `3, "x", {a=1, …}`; empty when nothing was returned.
pub fn returns_line(returns: &[Value]) -> String {
    let parts: Vec<String> = returns.iter().map(descriptor).collect();
    one_line(&parts.join(", "), MAX)
}

/// One descriptor (`{"type":…,"value":…}` or `{"type":…,"repr":…}`) in Lua-like notation.
pub fn descriptor(d: &Value) -> String {
    let kind = d.get("type").and_then(Value::as_str).unwrap_or("?");
    if let Some(repr) = d.get("repr").and_then(Value::as_str) {
        return repr.to_owned();
    }
    if d.get("cut").and_then(Value::as_bool) == Some(true) {
        // Cut to fit a result: its type, its full size and its head.
        let len = d.get("length").and_then(Value::as_u64).unwrap_or(0);
        let head = d.get("value").and_then(Value::as_str).unwrap_or_default();
        return format!("<{kind} of {len} bytes: {}…>", one_line(head, 40));
    }
    match (kind, d.get("value")) {
        ("nil", _) => "nil".to_owned(),
        ("cycle", _) => "<cycle>".to_owned(),
        ("string", Some(Value::String(b64))) if is_bytes(d) => bytes_literal(b64),
        ("table", None) if d.get("entries").is_some() => entries(d),
        (_, Some(v)) => plain(v),
        (k, None) => format!("<{k}>"),
    }
}

/// Whether a descriptor is a string that is not valid UTF-8, its bytes in base64
/// (docs/protocol.md, "Result descriptors").
fn is_bytes(d: &Value) -> bool {
    d.get("encoding").and_then(Value::as_str) == Some("base64")
}

/// A byte string given in base64, as Lua source writes it ([`lua_quote_bytes`]).
fn bytes_literal(b64: &str) -> String {
    use base64::Engine;
    match base64::engine::general_purpose::STANDARD.decode(b64) {
        Ok(bytes) => lua_quote_bytes(&bytes),
        Err(_) => format!("<bytes, bad base64: {}>", one_line(b64, 40)),
    }
}

/// A string as Lua source writes it (`"\27[2J"`, `"a\nb"`), not as Rust does
/// (`"\u{1b}[2J"`): what is returned is Lua's, and the person may paste it back into Lua.
pub fn lua_quote(s: &str) -> String {
    lua_quote_bytes(s.as_bytes())
}

/// Bytes as a Lua string literal. Control characters, and every byte that is not part of valid
/// UTF-8, are decimal escapes (three digits when a digit follows: `"\0271"` is ESC then `1`),
/// so no byte is lost to UTF-8 replacement and any Lua reads the same bytes back; other
/// characters, UTF-8 included, stay as they are, readable.
pub fn lua_quote_bytes(bytes: &[u8]) -> String {
    fn escape(out: &mut String, b: u8, digit_next: bool) {
        if digit_next {
            out.push_str(&format!("\\{b:03}"));
        } else {
            out.push_str(&format!("\\{b}"));
        }
    }
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    let mut chunks = bytes.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        let mut chars = chunk.valid().chars().peekable();
        while let Some(c) = chars.next() {
            let digit_next = match chars.peek() {
                Some(n) => n.is_ascii_digit(),
                None => {
                    chunk.invalid().is_empty()
                        && chunks
                            .peek()
                            .is_some_and(|n| n.valid().starts_with(|d: char| d.is_ascii_digit()))
                }
            };
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_ascii_control() => escape(&mut out, c as u8, digit_next),
                // A C1 control (U+0080..U+009F) could drive a terminal too: its UTF-8 bytes.
                c if c.is_control() => {
                    let mut utf8 = [0u8; 4];
                    let encoded = c.encode_utf8(&mut utf8).as_bytes();
                    for (i, b) in encoded.iter().enumerate() {
                        escape(&mut out, *b, i + 1 == encoded.len() && digit_next);
                    }
                }
                c => out.push(c),
            }
        }
        let invalid = chunk.invalid();
        for (i, b) in invalid.iter().enumerate() {
            let digit_next = i + 1 == invalid.len()
                && chunks
                    .peek()
                    .is_some_and(|n| n.valid().starts_with(|d: char| d.is_ascii_digit()));
            escape(&mut out, *b, digit_next);
        }
    }
    out.push('"');
    out
}

/// A table with keys that are not valid UTF-8, written as its list of `[key, value]` pairs.
fn entries(d: &Value) -> String {
    let pairs = d
        .get("entries")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let inner: Vec<String> = pairs
        .iter()
        .take(8)
        .map(|kv| match kv.as_array().map(Vec::as_slice) {
            Some([k, v]) => format!("[{}] = {}", plain(k), plain(v)),
            _ => plain(kv),
        })
        .collect();
    let more = if pairs.len() > 8 { ", …" } else { "" };
    format!("{{{}{more}}}", inner.join(", "))
}

/// A table key as Lua source writes it, so that the table can be pasted back: a name as it is
/// (`andesite`), a number in brackets (`[5]`), any other text quoted (`["coal ore"]`). The
/// client sends every key as text (docs/protocol.md, "Result descriptors"): one that reads as
/// a number was a number key, far more often than a numeric string.
fn lua_key(k: &str) -> String {
    const KEYWORDS: [&str; 22] = [
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
        "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    ];
    let name = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&k);
    if name {
        k.to_owned()
    } else if k.parse::<f64>().is_ok_and(f64::is_finite) && !k.contains(char::is_alphabetic) {
        format!("[{k}]")
    } else {
        format!("[{}]", lua_quote(k))
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => lua_quote(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().take(8).map(plain).collect();
            let more = if items.len() > 8 { ", …" } else { "" };
            format!("{{{}{more}}}", inner.join(", "))
        }
        Value::Object(map) if map.contains_key("type") && map.len() <= 3 => descriptor(v),
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .take(8)
                .map(|(k, v)| format!("{} = {}", lua_key(k), plain(v)))
                .collect();
            let more = if map.len() > 8 { ", …" } else { "" };
            format!("{{{}{more}}}", inner.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;
    use trapdesk_proto::protocol::Kind;

    /// The summary of a payload written as JSON.
    fn request(kind: Kind, payload: &Value) -> String {
        let body = RequestBody::from_value(kind, payload.clone());
        super::request(&body.unwrap_or_else(|e| unreachable!("{e}")))
    }

    #[test]
    fn requests_read_like_what_was_typed() {
        assert_eq!(
            request(Kind::ExecLua, &json!({"code": "print(1)\nprint(2)"})),
            "print(1)…"
        );
        assert_eq!(
            request(
                Kind::RunFile,
                &json!({"path": "dig.lua", "args": ["3", "deep shaft"]})
            ),
            "dig.lua 3 \"deep shaft\""
        );
        assert_eq!(
            request(Kind::MoveFile, &json!({"from": "a.part", "to": "a"})),
            "a.part -> a"
        );
        assert_eq!(request(Kind::FileInfo, &json!({"path": "a"})), "a");
    }

    #[test]
    fn strings_are_quoted_as_lua_writes_them() {
        assert_eq!(lua_quote("\u{1b}[2J"), r#""\27[2J""#);
        assert_eq!(lua_quote("a\nb\t\"q\" \\"), r#""a\nb\t\"q\" \\""#);
        assert_eq!(lua_quote("\u{1b}1"), r#""\0271""#);
        assert_eq!(lua_quote("\u{0}x"), r#""\0x""#);
        assert_eq!(lua_quote("採掘 é"), r#""採掘 é""#);
        assert_eq!(lua_quote("\u{9b}2J"), r#""\194\1552J""#);
        let ret = json!({"ok": true, "returns": [{"type":"string","value":"\u{1b}[2J"}], "n": 1});
        assert_eq!(outcome(&Ok(ret)), (Status::Ok, r#""\27[2J""#.into()));
    }

    /// What a table shows is Lua that gives the same table back when pasted.
    #[test]
    fn tables_read_as_lua_source() {
        let table = |v: Value| {
            let ret = json!({"ok": true, "n": 1, "returns": [{"type": "table", "value": v}]});
            outcome(&Ok(ret)).1
        };
        assert_eq!(
            table(json!({"andesite": 3, "coal ore": 3, "end": true})),
            r#"{andesite = 3, ["coal ore"] = 3, ["end"] = true}"#
        );
        assert_eq!(table(json!({"5": "x"})), r#"{[5] = "x"}"#);
        assert_eq!(table(json!({"_n2": 1.5})), "{_n2 = 1.5}");
    }

    #[test]
    fn outcomes_are_compact() {
        let ok = json!({"ok": true, "returns": [{"type":"number","value":3},{"type":"nil"},
            {"type":"table","value":{"a":1}},{"type":"function","repr":"function: 1a"}], "n": 4});
        assert_eq!(
            outcome(&Ok(ok)),
            (Status::Ok, "3, nil, {a = 1}, function: 1a".into())
        );
        let bytes = json!({"ok": true, "n": 2, "returns": [
            {"type": "string", "encoding": "base64", "value": "AP+nIlw="},
            {"type": "table", "truncated": false, "value": [
                {"type": "string", "encoding": "base64", "value": "/w=="},
                {"type": "table", "entries": [[{"type": "string", "encoding": "base64", "value": "/w=="}, 1]]},
            ]},
        ]});
        assert_eq!(
            outcome(&Ok(bytes)),
            (
                Status::Ok,
                r#""\0\255\167\"\\", {"\255", {["\255"] = 1}}"#.into()
            )
        );
        let err = json!({"ok": false, "error": "exec:1: boom"});
        assert_eq!(outcome(&Ok(err)), (Status::Error, "exec:1: boom".into()));
        let (status, _) = outcome(&Err(RequestError::Disconnected));
        assert_eq!(status, Status::Disconnected);
    }
}

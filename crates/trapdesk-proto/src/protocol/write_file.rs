//! The `write-file` payload: the bytes themselves inside the host, base64 only on a JSON frame.

use std::ops::Not;

use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `write-file`: the bytes to write at `path`. A JSON frame carries them as base64 (with
/// `"encoding": "base64"`, as the host always sent them); a binary link sends them raw in
/// binary frames instead, which is the gateway's choice, so nothing before it encodes them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteFile {
    pub path: String,
    pub content: Vec<u8>,
    pub append: bool,
    /// Write over the file itself when old and new cannot both fit on the computer's disk:
    /// gives up atomicity (an interrupted write leaves the file torn). Left out when false, so
    /// a client before it sees the payload it always did.
    pub in_place: bool,
}

/// The JSON frame's shape of [`WriteFile`].
#[derive(Serialize)]
struct Framed<'a> {
    path: &'a str,
    #[serde(serialize_with = "base64")]
    content: &'a [u8],
    encoding: &'static str,
    #[serde(skip_serializing_if = "Not::not")]
    append: bool,
    #[serde(skip_serializing_if = "Not::not")]
    in_place: bool,
}

fn base64<S: Serializer>(bytes: &&[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

impl Serialize for WriteFile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Framed {
            path: &self.path,
            content: &self.content,
            encoding: "base64",
            append: self.append,
            in_place: self.in_place,
        }
        .serialize(s)
    }
}

/// What a `write-file` payload may say: the encodings the computer takes in a JSON frame.
#[derive(Deserialize)]
struct Read {
    path: String,
    content: String,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    append: bool,
    #[serde(default)]
    in_place: bool,
}

impl<'de> Deserialize<'de> for WriteFile {
    /// Reads content as the computer does: base64 when the encoding is absent or `base64`,
    /// the text's own bytes when it is `text`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WriteFile, D::Error> {
        use serde::de::Error;
        let r = Read::deserialize(d)?;
        let content = match r.encoding.as_deref() {
            None | Some("base64") => base64::engine::general_purpose::STANDARD
                .decode(&r.content)
                .map_err(|e| D::Error::custom(format!("content is not base64: {e}")))?,
            Some("text") => r.content.into_bytes(),
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "encoding must be base64 or text, not {other:?}"
                )));
            }
        };
        Ok(WriteFile {
            path: r.path,
            content,
            append: r.append,
            in_place: r.in_place,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Payload;
    use serde_json::json;

    #[test]
    fn bytes_go_as_the_base64_frame_they_always_did() {
        let all: Vec<u8> = (0..=255u8).collect();
        let w = WriteFile {
            path: "bin/all".into(),
            content: all.clone(),
            append: true,
            in_place: false,
        };
        let b64 = base64::engine::general_purpose::STANDARD.encode(&all);
        assert_eq!(
            w.to_value(),
            json!({"path": "bin/all", "content": b64, "encoding": "base64", "append": true})
        );
        let back: Result<WriteFile, _> = serde_json::from_value(w.to_value());
        assert_eq!(back.ok(), Some(w));
    }

    #[test]
    fn text_and_base64_are_read_as_the_computer_reads_them() {
        let read = |v| serde_json::from_value::<WriteFile>(v).map(|w| w.content);
        assert_eq!(
            read(json!({"path": "a", "content": "héllo", "encoding": "text"})).ok(),
            Some("héllo".as_bytes().to_vec())
        );
        assert_eq!(
            read(json!({"path": "a", "content": "eA=="})).ok(),
            Some(b"x".to_vec())
        );
        assert!(read(json!({"path": "a", "content": "x"})).is_err());
        assert!(read(json!({"path": "a", "content": "x", "encoding": "hex"})).is_err());
    }
}

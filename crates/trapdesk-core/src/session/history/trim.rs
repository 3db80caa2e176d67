//! What the transcript keeps of a request's payload or a tool call's arguments, so that it
//! lasts days rather than minutes: file contents as their size and SHA-256, any other string
//! past [`HEAD`] bytes as its head with its size and SHA-256 (docs/security.md, "The
//! transcript"). `transcript_full_text = true` keeps everything whole.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Bytes of a long string the transcript keeps: a chunk of code up to 4 KiB, which nearly every
/// agent's `exec-lua` is, is kept whole; a generated 1 MiB chunk is not.
pub const HEAD: usize = 4096;

/// Keys whose string is a file's contents (`write-file`'s `content`, the wire's and the tool's).
const CONTENT_KEYS: &[&str] = &["content"];

/// Whether `args` holds anything [`trim`] would change (checked first: nearly every line has
/// nothing to trim, and then nothing is copied).
pub fn needs_trim(args: &Value) -> bool {
    match args {
        Value::String(s) => s.len() > HEAD,
        Value::Array(a) => a.iter().any(needs_trim),
        Value::Object(o) => o
            .iter()
            .any(|(k, v)| (CONTENT_KEYS.contains(&k.as_str()) && v.is_string()) || needs_trim(v)),
        _ => false,
    }
}

/// `args` as the transcript keeps it.
pub fn trim(args: &Value) -> Value {
    match args {
        Value::String(s) if s.len() > HEAD => Value::String(head(s)),
        Value::Array(a) => Value::Array(a.iter().map(trim).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let kept = match v {
                        Value::String(s) if CONTENT_KEYS.contains(&k.as_str()) => json!({
                            "omitted": "file contents: size and SHA-256 only (transcript_full_text keeps them)",
                            "bytes": s.len(),
                            "sha256": sha256(s),
                        }),
                        other => trim(other),
                    };
                    (k.clone(), kept)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The first [`HEAD`] bytes of `s` (at a char boundary) and a note of what was left out.
fn head(s: &str) -> String {
    let mut cut = HEAD.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n… [cut by the transcript: {} bytes in all, sha256 {}]",
        &s[..cut],
        s.len(),
        sha256(s)
    )
}

fn sha256(s: &str) -> String {
    let digest = Sha256::digest(s.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_contents_become_size_and_hash_and_long_strings_their_head() {
        let small = json!({"code": "print(1)", "path": "a.lua"});
        assert!(!needs_trim(&small));
        assert_eq!(trim(&small), small);
        let file = json!({"path": "a.txt", "content": "hello"});
        assert!(needs_trim(&file));
        let t = trim(&file);
        assert_eq!(t["path"], "a.txt");
        assert_eq!(t["content"]["bytes"], 5);
        assert_eq!(
            t["content"]["sha256"],
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        let code = "é".repeat(HEAD);
        let long = json!({"code": code, "args": ["x"]});
        assert!(needs_trim(&long));
        let t = trim(&long);
        let kept = t["code"].as_str().unwrap_or_default();
        assert!(kept.len() < HEAD + 200, "{}", kept.len());
        assert!(
            kept.contains(&format!("{} bytes in all", 2 * HEAD)),
            "{kept}"
        );
        assert_eq!(t["args"], json!(["x"]));
    }
}

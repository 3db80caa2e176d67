//! The computer's answers as the MCP edge passes them on: each read by its wire names
//! (docs/protocol.md, "Payloads"; the Lua client's answers under `lua/`) and written with an
//! agent's camelCase names, by these types' serde attributes.
//!
//! What is the program's own stays as it came, below a typed field: a returned table's
//! `value`, a Lua error raised as a table. A field a newer client adds that no type here
//! names is passed on untouched, under the name the computer gave it (`rest`): nothing of an
//! answer is dropped, and nothing is renamed by guesswork.
//!
//! Numbers are [`Number`]s, so that an integer stays an integer and a fraction a fraction, as
//! the computer wrote them.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Number, Value};
use trapdesk_proto::protocol::Kind;

/// A field that may be any JSON, `null` included: present is `Some`, even when `null`
/// (serde's `Option` would read a `null` as absent and leave the field out).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// What every answer may say of itself: whether it worked, and why not.
#[derive(Deserialize, Serialize)]
struct Said {
    #[serde(skip_serializing_if = "Option::is_none")]
    ok: Option<bool>,
    /// A Lua error's message or value; a file refusal's message (`code` beside it).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    error: Option<Value>,
    /// A file refusal's code (`exists`, `no_space`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<String>,
}

/// Fields no type here names, as the computer sent them.
type Rest = Map<String, Value>;

/// A Result: `exec-lua` and `run-file` (docs/protocol.md, "Result descriptors").
#[derive(Deserialize, Serialize)]
#[serde(rename_all(serialize = "camelCase"))]
struct RunAnswer {
    #[serde(flatten)]
    said: Said,
    #[serde(skip_serializing_if = "Option::is_none")]
    returns: Option<Vec<Descriptor>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    n: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_truncated: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_bytes: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_lines: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_kept_bytes: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_output: Option<String>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    error_value: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    traceback: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<Number>,
    /// `reboot` or `shutdown`: the chunk ended the computer's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    power: Option<String>,
    #[serde(flatten)]
    rest: Rest,
}

/// One returned value: its type, and its value as the program made it (a table's keys are
/// its own) or its `repr`.
#[derive(Deserialize, Serialize)]
struct Descriptor {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    value: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated: Option<bool>,
    /// `base64`: a string's bytes that are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<String>,
    /// A table with a byte key, as its pairs.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    entries: Option<Value>,
    #[serde(flatten)]
    rest: Rest,
}

/// `write-file`'s answer.
#[derive(Deserialize, Serialize)]
#[serde(rename_all(serialize = "camelCase"))]
struct WriteAnswer {
    #[serde(flatten)]
    said: Said,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    needed: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    free: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    needed_in_place: Option<Number>,
    #[serde(flatten)]
    rest: Rest,
}

/// `read-file`'s answer: one piece of a file.
#[derive(Deserialize, Serialize)]
struct ReadAnswer {
    #[serde(flatten)]
    said: Said,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<Number>,
    #[serde(flatten)]
    rest: Rest,
}

/// `list-files`' answer.
#[derive(Deserialize, Serialize)]
struct ListAnswer {
    #[serde(flatten)]
    said: Said,
    #[serde(skip_serializing_if = "Option::is_none")]
    entries: Option<Vec<Entry>>,
    #[serde(flatten)]
    rest: Rest,
}

/// One entry of a directory.
#[derive(Deserialize, Serialize)]
struct Entry {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dir: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<Number>,
    #[serde(flatten)]
    rest: Rest,
}

/// `move-file`, `delete-file` and `make-dir`'s answers.
#[derive(Deserialize, Serialize)]
struct ChangeAnswer {
    #[serde(flatten)]
    said: Said,
    #[serde(skip_serializing_if = "Option::is_none")]
    deleted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    created: Option<bool>,
    #[serde(flatten)]
    rest: Rest,
}

/// `file-info`'s answer; the wire already says `isDir` and `readOnly`.
#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct InfoAnswer {
    #[serde(flatten)]
    said: Said,
    #[serde(skip_serializing_if = "Option::is_none")]
    exists: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_dir: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    modified: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    read_only: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    crc32: Option<Number>,
    #[serde(flatten)]
    rest: Rest,
}

/// `ping`'s answer; `status` is the computer's own report (what it has attached), passed on.
#[derive(Deserialize, Serialize)]
#[serde(rename_all(serialize = "camelCase"))]
struct PingAnswer {
    #[serde(flatten)]
    said: Said,
    #[serde(skip_serializing_if = "Option::is_none")]
    pong: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    epoch_ms: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uptime_s: Option<Number>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    status: Option<Value>,
    #[serde(flatten)]
    rest: Rest,
}

/// Reads a `kind` answer by its wire names and gives its fields as an agent reads them. An
/// answer no tool passes on through here (the screen's, a turtle's: typed where their tools
/// build their results) is given as it came.
pub(crate) fn passed_on(kind: Kind, answer: Map<String, Value>) -> serde_json::Result<Rest> {
    fn via<T: for<'de> Deserialize<'de> + Serialize>(
        answer: Map<String, Value>,
    ) -> serde_json::Result<Rest> {
        let typed: T = serde_json::from_value(Value::Object(answer))?;
        match serde_json::to_value(typed)? {
            Value::Object(map) => Ok(map),
            _ => Ok(Rest::new()),
        }
    }
    match kind {
        Kind::ExecLua | Kind::RunFile => via::<RunAnswer>(answer),
        Kind::WriteFile => via::<WriteAnswer>(answer),
        Kind::ReadFile => via::<ReadAnswer>(answer),
        Kind::ListFiles => via::<ListAnswer>(answer),
        Kind::MoveFile | Kind::DeleteFile | Kind::MakeDir => via::<ChangeAnswer>(answer),
        Kind::FileInfo => via::<InfoAnswer>(answer),
        Kind::Ping => via::<PingAnswer>(answer),
        Kind::Screen | Kind::Input | Kind::Peripherals | Kind::Turtle | Kind::ComputerOutput => {
            Ok(answer)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn passed(kind: Kind, v: Value) -> Value {
        let m = v.as_object().cloned().expect("an object");
        Value::Object(passed_on(kind, m).expect("reads"))
    }

    /// A Result's wire names become camelCase; a returned table's own keys, a number's form,
    /// a `null` and a field no type names stay as they came.
    #[test]
    fn a_result_reads_in_camel_case_and_the_program_s_own_stays() {
        let wire = json!({"ok": false, "error": "boom", "traceback": "t", "n": 1,
            "output": "a\n", "error_output": "a\n", "output_truncated": true,
            "output_bytes": 2, "output_lines": 1, "output_kept_bytes": 2, "duration_ms": 3.5,
            "error_value": {"type": "table", "value": {"my_key": 1}},
            "returns": [{"type": "table", "value": {"my_key": null}, "truncated": false}],
            "newer_field": 1});
        let want = json!({"ok": false, "error": "boom", "traceback": "t", "n": 1,
            "output": "a\n", "errorOutput": "a\n", "outputTruncated": true,
            "outputBytes": 2, "outputLines": 1, "outputKeptBytes": 2, "durationMs": 3.5,
            "errorValue": {"type": "table", "value": {"my_key": 1}},
            "returns": [{"type": "table", "value": {"my_key": null}, "truncated": false}],
            "newer_field": 1});
        assert_eq!(passed(Kind::ExecLua, wire), want);
        assert_eq!(
            passed(
                Kind::ExecLua,
                json!({"ok": true, "returns": [{"type": "nil"}], "n": 1})
            ),
            json!({"ok": true, "returns": [{"type": "nil"}], "n": 1})
        );
    }

    #[test]
    fn file_answers_read_in_camel_case() {
        let w = json!({"ok": false, "bytes": 0, "code": "no_space_to_replace", "needed": 3500,
            "free": 10, "needed_in_place": 0});
        assert_eq!(
            passed(Kind::WriteFile, w),
            json!({"ok": false, "bytes": 0, "code": "no_space_to_replace", "needed": 3500,
                "free": 10, "neededInPlace": 0})
        );
        let i = json!({"ok": true, "exists": true, "size": 0, "isDir": true, "readOnly": true});
        assert_eq!(passed(Kind::FileInfo, i.clone()), i);
        let l = json!({"ok": true, "entries": [{"name": "a", "dir": false, "size": 3}]});
        assert_eq!(passed(Kind::ListFiles, l.clone()), l);
        let p = json!({"pong": true, "epoch_ms": 5, "uptime_s": 1.5, "status": {"fuel": 3}});
        assert_eq!(
            passed(Kind::Ping, p),
            json!({"pong": true, "epochMs": 5, "uptimeS": 1.5, "status": {"fuel": 3}})
        );
    }
}

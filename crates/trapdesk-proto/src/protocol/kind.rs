//! Request types: one row each, with its wire name and its payload, and the payloads the
//! host builds.
//!
//! Everything that decides by request type (the policy, summaries, approvals, the fronts)
//! matches on [`Kind`], so a new request type is one row of [`requests!`] and the compiler
//! names every place that must decide what to do with it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::write_file::WriteFile;

/// Declares every request type once: its variant, its wire name and its payload type. From
/// the one list come [`Kind`] (serde by wire name), [`Kind::ALL`], [`Kind::as_str`], the
/// typed [`RequestBody`] and each payload's [`Payload`] impl, so a wire name is written once
/// and no list of kinds can miss a variant.
macro_rules! requests {
    ($( $(#[$doc:meta])* $variant:ident = $wire:literal => $payload:ident, )*) => {
        /// A request type, by its name on the wire (`docs/protocol.md`, "Payloads").
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Kind {
            $( $(#[$doc])* #[serde(rename = $wire)] $variant, )*
        }

        impl Kind {
            /// Every kind, in declaration order.
            pub const ALL: [Kind; [$(Kind::$variant),*].len()] = [$(Kind::$variant),*];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Kind::$variant => $wire, )*
                }
            }
        }

        /// A request's payload, typed by its kind.
        #[derive(Debug, Clone, PartialEq)]
        pub enum RequestBody {
            $( $(#[$doc])* $variant($payload), )*
        }

        impl RequestBody {
            /// The request type this payload is of.
            pub fn kind(&self) -> Kind {
                match self {
                    $( RequestBody::$variant(_) => Kind::$variant, )*
                }
            }

            /// The payload as the JSON the wire carries.
            pub fn to_value(&self) -> Value {
                match self {
                    $( RequestBody::$variant(p) => p.to_value(), )*
                }
            }

            /// A payload of `kind` with every field empty.
            pub fn empty(kind: Kind) -> RequestBody {
                match kind {
                    $( Kind::$variant => RequestBody::$variant(Default::default()), )*
                }
            }

            /// Reads a payload of `kind` from its JSON.
            pub fn from_value(kind: Kind, value: Value) -> Result<RequestBody, serde_json::Error> {
                Ok(match kind {
                    $( Kind::$variant => RequestBody::$variant(serde_json::from_value(value)?), )*
                })
            }
        }

        $(
            impl Payload for $payload {
                const KIND: Kind = Kind::$variant;
            }

            impl From<$payload> for RequestBody {
                fn from(p: $payload) -> RequestBody {
                    RequestBody::$variant(p)
                }
            }
        )*
    };
}

requests! {
    Ping = "ping" => Ping,
    ExecLua = "exec-lua" => ExecLua,
    RunFile = "run-file" => RunFile,
    WriteFile = "write-file" => WriteFile,
    ReadFile = "read-file" => ReadFile,
    ListFiles = "list-files" => ListFiles,
    MoveFile = "move-file" => MoveFile,
    DeleteFile = "delete-file" => DeleteFile,
    FileInfo = "file-info" => FileInfo,
    MakeDir = "make-dir" => MakeDir,
    /// The terminal mirror's frame (read-screen, the Screen view).
    Screen = "screen" => Screen,
    /// The terminal mirror's keys and text, and a monitor's touches (send-input).
    Input = "input" => Input,
    /// The peripherals attached to a computer, with their methods (list-peripherals).
    Peripherals = "peripherals" => Peripherals,
    /// A turtle's fuel and slots (turtle-info).
    Turtle = "turtle" => Turtle,
    /// Never sent to a computer: reading the output the host already holds, which the policy
    /// governs like a request, so its approval needs a kind of its own.
    ComputerOutput = "computer-output" => ComputerOutput,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no request type this host knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown request type {0:?}")]
pub struct UnknownKind(pub String);

impl FromStr for Kind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Kind, UnknownKind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

/// A payload the host sends: its kind and its JSON.
pub trait Payload: Serialize {
    const KIND: Kind;

    /// The payload as the JSON the wire carries.
    fn to_value(&self) -> Value {
        // These structs hold only strings, numbers, booleans, bytes (as base64) and JSON
        // values: serializing cannot fail, and an empty object is what the computer would
        // refuse plainly.
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Default::default()))
    }
}

/// `ping`; with `status`, the answer adds what the computer has attached and, on a turtle, its
/// fuel and selected slot (docs/protocol.md, "Payloads": `ping`). Left out when not asked, so
/// a plain ping stays as light as it always was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ping {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<bool>,
}

/// `exec-lua`: a chunk and its chunk name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecLua {
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `run-file`: a program and its arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFile {
    pub path: String,
    #[serde(default)]
    pub args: Vec<String>,
}

/// `read-file`: the whole file, or a page of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadFile {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
}

/// `list-files`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListFiles {
    pub path: String,
}

/// `move-file`: `from` to `to`; an existing file at `to` is replaced only with `overwrite`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MoveFile {
    pub from: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overwrite: bool,
}

/// `delete-file`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeleteFile {
    pub path: String,
}

/// `file-info`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileInfo {
    pub path: String,
}

/// `make-dir`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MakeDir {
    pub path: String,
}

/// `screen`: a frame, and whether updates should flow from now on; of the terminal, or of
/// the monitor `monitor` names (its shadow: what this computer drew on it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Screen {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
}

/// `input`: the steps, already checked by the session, and the running request they go to
/// (none: to the computer, as typed), or the monitor touched (its steps are all touches).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Input {
    pub steps: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
}

/// `peripherals`: every peripheral attached, with its types, methods and a short state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Peripherals {}

/// `turtle`: fuel, selected slot and (unless `slots: false`) the sixteen slots.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Turtle {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<bool>,
}

/// `computer-output`: never sent; it carries only the approval to read the output the host
/// already holds, so it asks nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ComputerOutput {}

/// The answer to `file-info`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileInfoAnswer {
    pub ok: bool,
    #[serde(default)]
    pub exists: bool,
    #[serde(default)]
    pub size: u64,
    #[serde(default)]
    pub is_dir: bool,
    /// IEEE CRC-32 of a file's bytes, computed on the computer; absent for a directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32: Option<u32>,
    /// When it was last modified, in milliseconds since the epoch (CC's `fs.attributes`);
    /// absent from a client before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<u64>,
    /// On a read-only mount (such as /rom); absent from a client before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The CRC-32 `file-info` answers (IEEE, as zlib's `crc32`), for comparing with local bytes.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_round_trips_by_its_wire_name() {
        for k in Kind::ALL {
            let name = k.as_str();
            assert_eq!(name.parse::<Kind>(), Ok(k));
            assert_eq!(serde_json::to_value(k).ok(), Some(json!(name)));
            assert_eq!(serde_json::from_value::<Kind>(json!(name)).ok(), Some(k));
            assert_eq!(k.to_string(), name);
        }
        let mut names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Kind::ALL.len(), "wire names are unique");
    }

    #[test]
    fn an_unknown_name_is_a_clear_error() {
        let e = "teleport".parse::<Kind>();
        assert_eq!(e, Err(UnknownKind("teleport".into())));
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("unknown request type \"teleport\"".into())
        );
        assert!("Exec-Lua".parse::<Kind>().is_err(), "names are exact");
    }

    #[test]
    fn payloads_keep_their_wire_form() {
        let exec = ExecLua {
            code: "return 1".into(),
            name: Some("=exec".into()),
        };
        assert_eq!(
            exec.to_value(),
            json!({"code": "return 1", "name": "=exec"})
        );
        let write = WriteFile {
            path: "a".into(),
            content: b"x".to_vec(),
            append: false,
            in_place: false,
        };
        assert_eq!(
            write.to_value(),
            json!({"path": "a", "content": "eA==", "encoding": "base64"})
        );
        let in_place = WriteFile {
            in_place: true,
            ..write
        };
        assert_eq!(
            in_place.to_value(),
            json!({"path": "a", "content": "eA==", "encoding": "base64", "in_place": true})
        );
        let mv = MoveFile {
            from: "a".into(),
            to: "b".into(),
            overwrite: true,
        };
        assert_eq!(
            mv.to_value(),
            json!({"from": "a", "to": "b", "overwrite": true})
        );
        assert_eq!(Ping::default().to_value(), json!({}));
        assert_eq!(
            Ping { status: Some(true) }.to_value(),
            json!({"status": true})
        );
        let terminal = Screen {
            watch: None,
            monitor: None,
        };
        assert_eq!(terminal.to_value(), json!({}));
        let monitor = Screen {
            watch: Some(true),
            monitor: Some("top".into()),
        };
        assert_eq!(monitor.to_value(), json!({"watch": true, "monitor": "top"}));
        let touch = Input {
            steps: vec![json!({"touch": {"x": 2, "y": 3}})],
            request_id: None,
            monitor: Some("monitor_0".into()),
        };
        assert_eq!(
            touch.to_value(),
            json!({"steps": [{"touch": {"x": 2, "y": 3}}], "monitor": "monitor_0"})
        );
        assert_eq!(Peripherals {}.to_value(), json!({}));
        assert_eq!(Turtle::default().to_value(), json!({}));
        assert_eq!(
            Turtle { slots: Some(false) }.to_value(),
            json!({"slots": false})
        );
    }

    #[test]
    fn a_body_knows_its_kind_and_keeps_its_wire_form() {
        let mv = json!({"from": "a", "to": "b"});
        let body = RequestBody::from_value(Kind::MoveFile, mv.clone());
        assert_eq!(
            body.as_ref().map(RequestBody::kind).ok(),
            Some(Kind::MoveFile)
        );
        assert_eq!(body.map(|b| b.to_value()).ok(), Some(mv));
        let exec = RequestBody::from(ExecLua {
            code: "return 1".into(),
            name: None,
        });
        assert_eq!(exec.kind(), ExecLua::KIND);
        assert_eq!(exec.to_value(), json!({"code": "return 1"}));
        assert!(
            RequestBody::from_value(Kind::MoveFile, json!({"from": "a"})).is_err(),
            "a payload missing a field is refused"
        );
        for k in Kind::ALL {
            let empty = RequestBody::from_value(k, json!({}));
            if let Ok(b) = empty {
                assert_eq!(b.kind(), k);
            }
        }
        assert_eq!(
            RequestBody::from(ComputerOutput {}).kind(),
            Kind::ComputerOutput
        );
    }

    #[test]
    fn crc32_is_zlibs() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }
}

//! The messages of the gateway wire protocol (`docs/protocol.md`), in one place.
//!
//! Two layers live here. [`wire`] handles the protocol's byte-string rule: every JSON string on
//! the wire is a Lua byte string written as ASCII JSON, one `\u00XX` per byte above 0x7F. The
//! typed [`Message`] enum then sits on top of plain UTF-8 text, so nothing above this file ever
//! sees the wire's encoding.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this host speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// Close code: `hello` missing or ill-typed, or another message before `welcome`.
pub const CLOSE_BAD_HELLO: u16 = 4000;
/// Close code: wrong secret.
pub const CLOSE_AUTH_FAILED: u16 = 4001;
/// Close code: a newer connection with the same traposId took this one's place.
pub const CLOSE_REPLACED: u16 = 4002;
/// Close code: `protocol` other than 1.
pub const CLOSE_UNSUPPORTED_PROTOCOL: u16 = 4003;
/// Close code: heartbeat missed three times.
pub const CLOSE_HEARTBEAT: u16 = 4005;
/// Close code: no `hello` within the deadline.
pub const CLOSE_HELLO_TIMEOUT: u16 = 4008;
/// Close code: a frame above our `max_message` (RFC 6455 "message too big").
pub const CLOSE_TOO_BIG: u16 = 1009;
/// Close code: the connection was still waiting to link (no `welcome` yet) when more than the
/// gateway's cap of such connections were open, and it was the oldest (RFC 6455 "try again
/// later"). Only a flood of connections that do not link gets it.
pub const CLOSE_TRY_AGAIN_LATER: u16 = 1013;
/// How long the host waits for a `received` before it fails a request as `lost`: longer than CC
/// lets one piece of Lua hold the computer (7 s, then the hard abort 1.5 s later), so that a
/// busy computer is not taken for one that lost the frame.
pub const RECEIPT_DEADLINE_MS: u64 = 10_000;
/// Close code: the host is shutting down.
pub const CLOSE_GOING_AWAY: u16 = 1001;

/// One frame of the protocol. Unknown fields are ignored so that peers can extend messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// First frame from a computer.
    Hello(Hello),
    /// The host's answer to a good `hello`.
    Welcome {
        protocol: u64,
        trapos_id: String,
        heartbeat_ms: u64,
        max_message: u64,
        /// The computer's new secret of its own, only when this hello enrolled it
        /// (docs/protocol.md, "Enrolment"). Never logged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        secret: Option<String>,
        /// The version of the client this host serves (`lua_files::version`); a client whose
        /// own differs fetches the new files (docs/protocol.md, "Upgrades").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client_version: Option<String>,
        /// The host takes binary frames from this computer (docs/protocol.md, "Binary
        /// frames"): sent only to a hello that said `"binary": true`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        binary: Option<bool>,
    },
    /// The computer stored the secret its `welcome` carried: the host makes its binding firm.
    Enrolled,
    /// A request from the host to the computer.
    GatewayRequest(Request),
    /// The computer's answer to a `gateway_request`.
    ComputerResponse(Response),
    /// A request from the computer to the host.
    ComputerRequest(ComputerRequest),
    /// The host's answer to a `computer_request`.
    GatewayResponse(Response),
    /// Live output of a running request.
    Output {
        id: String,
        #[serde(default = "default_stream")]
        stream: String,
        text: String,
    },
    /// Asks the computer to stop request `id`.
    Cancel { id: String },
    /// Replaces the set of request types the computer serves.
    Serve { types: Vec<String> },
    /// Application-level heartbeat.
    Ping { t: Value },
    /// Answer to `ping`, echoing `t`.
    Pong { t: Value },
    /// One piece of a message too large for the receiver's `max_message`.
    Fragment {
        mid: String,
        seq: u64,
        last: bool,
        data: String,
    },
    /// The largest frame the computer's socket takes both ways (its http rule's
    /// `max_websocket_message`, found by the computer): the host sends nothing larger from then
    /// on (docs/protocol.md, "Frame limit"). `pad`, when present, only makes the frame as large
    /// as the size it tries; it is ignored.
    Limit { max_message: u64 },
    /// The computer's daemon got `gateway_request` `id` (CC drops events beyond 256 queued
    /// ones, a frame's `websocket_message` too): a request with no receipt within
    /// [`RECEIPT_DEADLINE_MS`] is failed as `lost` (docs/protocol.md, "Receipts").
    Received { id: String },
    /// The computer's label changed while linked: its traposId becomes `<id>:<label>`
    /// (docs/protocol.md, "Labels"); `null` or `""` for no label.
    Label {
        #[serde(default)]
        label: Option<String>,
    },
    /// A change of the computer's terminal while the host watches it (docs/protocol.md
    /// "Screen"): size, cursor, changed rows in blit form, palette when it changed.
    Screen(ScreenUpdate),
    /// A protocol-level complaint about a frame (not an answer to a request).
    Error {
        code: String,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
}

/// The body of a `screen` message, kept as JSON: the session's screen module reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenUpdate {
    #[serde(flatten)]
    pub body: serde_json::Map<String, Value>,
}

fn default_stream() -> String {
    "out".to_owned()
}

/// The `hello` message. Its fields are checked by hand in [`Hello::from_value`] so that a bad one
/// gets a specific `bad_hello` reason rather than a serde message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u64,
    pub computer_id: u64,
    #[serde(default)]
    pub label: Option<String>,
    pub secret: String,
    #[serde(default)]
    pub serves: Vec<String>,
    #[serde(default)]
    pub client: Option<String>,
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub max_message: Option<u64>,
}

/// The kinds of computer a `hello`'s `device` may name.
pub const DEVICES: [&str; 3] = ["computer", "turtle", "pocket"];

/// What a computer is, as its `hello` reported it (docs/protocol.md, "Handshake"): `None`
/// where the client did not say (a client from before these fields).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineInfo {
    /// The installed client's version (the hash `welcome` names).
    pub client_version: Option<String>,
    /// `computer`, `turtle` or `pocket`.
    pub device: Option<String>,
    /// An advanced (colour) computer.
    pub advanced: Option<bool>,
    /// A command computer.
    pub command: Option<bool>,
    /// The terminal's columns and rows at boot.
    pub screen_width: Option<u64>,
    pub screen_height: Option<u64>,
    /// The client sends `input` with a `request_id` to that request alone (`input_to_request`).
    pub routes_input: Option<bool>,
    /// The client takes and sends binary frames (`binary`, docs/protocol.md "Binary frames"):
    /// file contents and output then travel as raw bytes.
    pub binary: Option<bool>,
}

/// Why a `hello` was refused before the secret was even looked at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelloError {
    #[error("{0}")]
    Bad(String),
    #[error("protocol {0} is not supported (this host speaks {PROTOCOL_VERSION})")]
    Unsupported(String),
}

impl Hello {
    /// Checks a decoded frame field by field.
    ///
    /// # Errors
    /// [`HelloError::Bad`] names the first missing or ill-typed field; [`HelloError::Unsupported`]
    /// when `protocol` is a number other than 1.
    pub fn from_value(v: &Value) -> Result<Hello, HelloError> {
        let obj = v
            .as_object()
            .ok_or_else(|| HelloError::Bad("hello must be a JSON object".into()))?;
        match obj.get("type").and_then(Value::as_str) {
            Some("hello") => {}
            Some(other) => {
                return Err(HelloError::Bad(format!(
                    "expected hello as the first message, got {other}"
                )));
            }
            None => return Err(HelloError::Bad("missing string field type".into())),
        }
        let protocol = match obj.get("protocol") {
            Some(Value::Number(n)) => match n.as_f64() {
                Some(p) if p == PROTOCOL_VERSION as f64 => PROTOCOL_VERSION,
                _ => return Err(HelloError::Unsupported(n.to_string())),
            },
            // A string or anything else is an ill-typed field, not another version.
            Some(_) => return Err(HelloError::Bad("protocol must be a number".into())),
            None => return Err(HelloError::Bad("missing field protocol".into())),
        };
        let computer_id = match obj.get("computer_id").and_then(Value::as_f64) {
            Some(id) if id >= 0.0 && id.fract() == 0.0 && id < 1e15 => id as u64,
            Some(_) => {
                return Err(HelloError::Bad(
                    "computer_id must be a non-negative integer".into(),
                ));
            }
            None => return Err(HelloError::Bad("missing or non-numeric computer_id".into())),
        };
        let label = match obj.get("label") {
            None | Some(Value::Null) => None,
            // Cut and cleaned as CC keeps a label: a peer's own is never believed as sent.
            Some(Value::String(s)) => label::normalise(Some(s)),
            Some(_) => return Err(HelloError::Bad("label must be a string or null".into())),
        };
        let secret = match obj.get("secret") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(HelloError::Bad("missing string field secret".into())),
        };
        let serves = match obj.get("serves") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| HelloError::Bad("serves must be an array of strings".into()))?,
            // CC's own JSON writes an empty table as {}: accept it as an empty list.
            Some(Value::Object(o)) if o.is_empty() => Vec::new(),
            Some(_) => return Err(HelloError::Bad("serves must be an array of strings".into())),
        };
        let opt_str = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
        let max_message = match obj.get("max_message") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64() {
                Some(n) if n >= 256.0 => Some(n as u64),
                _ => {
                    return Err(HelloError::Bad(
                        "max_message must be a number of at least 256".into(),
                    ));
                }
            },
        };
        Ok(Hello {
            protocol,
            computer_id,
            label,
            secret,
            serves,
            client: opt_str("client"),
            host: opt_str("host"),
            max_message,
        })
    }

    /// Whether a `hello` names its installed client's version (`client_version`): a client that
    /// does fetches a newer client by itself when `welcome` names another version
    /// (docs/protocol.md, "Client upgrades"). Read beside [`Hello::from_value`], as
    /// [`Hello::enrol_of`] is.
    pub fn upgrades_itself(v: &Value) -> bool {
        v.get("client_version").is_some_and(Value::is_string)
    }

    /// What the computer is, as its `hello` says (`device`, `advanced`, `command`,
    /// `screen_width`, `screen_height`, `client_version`): read beside [`Hello::from_value`],
    /// as [`Hello::enrol_of`] is. Every field is optional and an ill-typed one is left out
    /// rather than refused: a client from before them, or one that gets one wrong, still links,
    /// and the host says "not reported" rather than something untrue.
    pub fn machine_of(v: &Value) -> MachineInfo {
        let flag = |k: &str| v.get(k).and_then(Value::as_bool);
        let size = |k: &str| {
            v.get(k)
                .and_then(Value::as_f64)
                .filter(|n| *n >= 1.0 && n.fract() == 0.0 && *n <= 10_000.0)
                .map(|n| n as u64)
        };
        MachineInfo {
            client_version: v
                .get("client_version")
                .and_then(Value::as_str)
                .map(str::to_owned),
            device: v
                .get("device")
                .and_then(Value::as_str)
                .filter(|d| DEVICES.contains(d))
                .map(str::to_owned),
            advanced: flag("advanced"),
            command: flag("command"),
            screen_width: size("screen_width"),
            screen_height: size("screen_height"),
            routes_input: flag("input_to_request"),
            binary: flag("binary"),
        }
    }

    /// Whether a `hello` says `"enrol": true`: its client can store a secret of its own, so the
    /// shared secret may enrol it (docs/protocol.md, "Enrolment"). Read beside
    /// [`Hello::from_value`] rather than kept in [`Hello`], which the session holds for the
    /// link's life and every test builds by hand.
    ///
    /// # Errors
    /// [`HelloError::Bad`] when `enrol` is present and neither a boolean nor null.
    pub fn enrol_of(v: &Value) -> Result<bool, HelloError> {
        match v.get("enrol") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(HelloError::Bad("enrol must be a boolean".into())),
        }
    }

    /// The registry key: `"<computer_id>:<label>"`, `"7:"` when unlabelled.
    pub fn trapos_id(&self) -> String {
        format!(
            "{}:{}",
            self.computer_id,
            self.label.as_deref().unwrap_or("")
        )
    }
}

/// A request from the host (`gateway_request`): only kinds this host knows go out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub id: String,
    pub request: Kind,
    #[serde(default = "empty_object")]
    pub payload: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A detached run (docs/protocol.md, "Detached runs"): the computer keeps it running when
    /// the link drops, and names it in its next `hello`. Absent for ordinary requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detach: Option<Detach>,
}

/// A request from a computer (`computer_request`). Its type stays a name until the host
/// looks at it ([`ComputerRequest::kind`]), so an unknown one still gets an answer with its
/// id rather than failing the whole frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputerRequest {
    pub id: String,
    pub request: String,
    #[serde(default = "empty_object")]
    pub payload: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl ComputerRequest {
    /// The request's kind.
    ///
    /// # Errors
    /// [`UnknownKind`] naming a type this host does not know.
    pub fn kind(&self) -> Result<Kind, UnknownKind> {
        self.request.parse()
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// A response in either direction (`computer_response` or `gateway_response`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub id: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

/// The `error` of a failed response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    #[serde(default)]
    pub message: String,
    /// Output captured before the failure (for example a cancelled chunk's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

mod detached;
mod error_code;
pub mod kind;
pub mod label;
mod names;
mod outgoing;
pub mod wire;
mod write_file;

pub use detached::{Detach, DetachedRun, NAMED_READ};
pub use error_code::ErrorCode;
pub use kind::{Kind, Payload, RequestBody, UnknownKind};
pub use names::{UnknownName, docs_table_names};
pub use outgoing::Outgoing;

impl Message {
    /// Decodes a frame into a message.
    ///
    /// # Errors
    /// A [`wire::DecodeError`] message for a frame that breaks the framing rules, or serde's
    /// message for a known `type` with missing or ill-typed fields.
    pub fn decode(frame: &str) -> Result<Message, String> {
        let v = wire::decode(frame).map_err(|e| e.to_string())?;
        Message::from_value(v)
    }

    /// Converts an already-decoded object.
    ///
    /// # Errors
    /// serde's message for a known `type` with missing or ill-typed fields.
    pub fn from_value(v: Value) -> Result<Message, String> {
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut m: Message =
            serde_json::from_value(v).map_err(|e| format!("bad {kind} message: {e}"))?;
        if let Message::Label { label: l } = &mut m {
            // As a hello's: the `label` message is the other way a computer names itself.
            *l = label::normalise(l.as_deref());
        }
        Ok(m)
    }

    /// Encodes a message as one ASCII-only text frame.
    pub fn encode(&self) -> String {
        match serde_json::to_value(self) {
            Ok(v) => wire::encode(&v),
            // Serializing these plain structs cannot fail; keep a valid frame regardless.
            Err(e) => format!(
                "{{\"type\":\"error\",\"code\":\"internal\",\"message\":{:?}}}",
                e.to_string()
            ),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod screen_tests;

//! The approvals' state: the requests waiting for the person's answer, what the person
//! allowed for the session with `a`, and whether anyone can answer at all ([`Approvals`]).
//! It only holds and looks up; `gate.rs` decides with the policy and moves requests on.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::model::{Origin, PendingInfo, RequestError, RequestSpec};
use crate::policy::{Action, Decided, Party};
use trapdesk_proto::protocol::{ErrorCode, Kind, RequestBody, kind};

/// A request waiting for the person's answer, as the console shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Approval {
    pub request_id: String,
    pub trapos_id: String,
    pub origin: Origin,
    pub kind: Kind,
    pub action: Action,
    /// What would run or be touched, in full: the code, the path and arguments, the content.
    pub detail: String,
    /// Bytes of code or content.
    pub size: usize,
    /// How the policy is set for this call.
    pub because: String,
    /// Not serialized: the attach channel sends the time left instead.
    #[serde(skip, default = "Instant::now")]
    pub deadline: Instant,
}

impl Approval {
    /// What the console shows of a new request the policy says to ask about.
    pub(crate) fn of(info: &PendingInfo, spec: &RequestSpec, d: &Decided) -> Approval {
        let (detail, size) = detail(&spec.body);
        Approval {
            request_id: info.request_id.clone(),
            trapos_id: info.trapos_id.clone(),
            origin: info.origin.clone(),
            kind: spec.kind(),
            // What the policy decided on: a write to a boot path is asked (and granted) as exec.
            action: d.action,
            detail,
            size,
            because: d.because.clone(),
            deadline: info.deadline,
        }
    }
}

/// The person's answer to an [`Approval`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Run this one.
    Yes,
    /// Refuse this one.
    No,
    /// Run it, and allow this agent this kind of action on this computer for the session.
    Always,
}

/// Why an answer did nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("no request {0:?} is waiting for approval (it may have timed out or been cancelled)")]
    NotWaiting(String),
}

/// What the policy lets a request do.
pub(crate) enum Gate {
    Go,
    Ask(Decided),
}

/// Approvals the person gave with `a`, per agent name, computer and action.
type Grants = HashSet<(String, String, Action)>;

/// Everything about approvals the session keeps.
#[derive(Debug, Default)]
pub(crate) struct Approvals {
    /// Requests waiting for the person, by request id.
    waiting: HashMap<String, Approval>,
    /// What the person allowed for the session with `a`.
    grants: Grants,
    /// Consoles that can answer approvals.
    approvers: usize,
}

impl Approvals {
    pub(crate) fn get(&self, id: &str) -> Option<&Approval> {
        self.waiting.get(id)
    }

    /// Takes a request out of the waiting ones (answered, ended or refused).
    pub(crate) fn take(&mut self, id: &str) -> Option<Approval> {
        self.waiting.remove(id)
    }

    pub(crate) fn insert(&mut self, a: Approval) {
        self.waiting.insert(a.request_id.clone(), a);
    }

    /// The waiting requests, oldest deadline first.
    pub(crate) fn waiting(&self) -> Vec<Approval> {
        let mut list: Vec<Approval> = self.waiting.values().cloned().collect();
        list.sort_by_key(|a| a.deadline);
        list
    }

    /// The waiting requests of the same agent, computer and action as `a`.
    pub(crate) fn like(&self, a: &Approval) -> Vec<String> {
        self.waiting
            .values()
            .filter(|o| o.origin == a.origin && o.trapos_id == a.trapos_id && o.action == a.action)
            .map(|o| o.request_id.clone())
            .collect()
    }

    /// Allows `a`'s agent its action on its computer for the rest of the session.
    pub(crate) fn grant(&mut self, a: &Approval) {
        self.grants
            .insert((a.origin.name().to_owned(), a.trapos_id.clone(), a.action));
    }

    pub(crate) fn granted(&self, origin: &Origin, trapos_id: &str, action: Action) -> bool {
        self.grants
            .contains(&(origin.name().to_owned(), trapos_id.to_owned(), action))
    }

    /// Whether anyone can answer (a console runs).
    pub(crate) fn answerable(&self) -> bool {
        self.approvers > 0
    }

    pub(crate) fn approvers(&self) -> usize {
        self.approvers
    }

    pub(crate) fn attach(&mut self) {
        self.approvers += 1;
    }

    pub(crate) fn detach(&mut self) {
        self.approvers = self.approvers.saturating_sub(1);
    }

    /// The error a request gets when its approval times out.
    pub(crate) fn not_answered(&self, id: &str, timeout: Duration) -> Option<RequestError> {
        let a = self.waiting.get(id)?;
        Some(RequestError::Policy {
            code: ErrorCode::NotAnswered,
            message: format!(
                "nobody at the console answered within {} ms, so {} on {} did not run. Policy: {}",
                timeout.as_millis(),
                a.kind,
                a.trapos_id,
                a.because
            ),
        })
    }
}

impl Origin {
    /// The policy's view of who acts. `cli` and `sync` count as agents of those names: the
    /// host learns them from a clientInfo name any MCP client could send, so they must not
    /// get the person's policy.
    pub fn party(&self) -> Party<'_> {
        match self {
            // The host acts for the person who runs it (and upgraded it), under their policy.
            Origin::Person | Origin::Host => Party::Person,
            Origin::Agent(name) => Party::Agent(name),
            Origin::Cli | Origin::Sync => Party::Agent(self.name()),
        }
    }
}

/// The code, path or content a request would use, in full, and its size in bytes.
pub(crate) fn detail(body: &RequestBody) -> (String, usize) {
    let whole = |text: String| {
        let n = text.len();
        (text, n)
    };
    match body {
        RequestBody::ExecLua(e) => (e.code.clone(), e.code.len()),
        RequestBody::WriteFile(w) => {
            let append = if w.append { " (append)" } else { "" };
            let shown = match std::str::from_utf8(&w.content) {
                Ok(text) if !binary(text) => text.to_owned(),
                // Binary shown as text is mojibake: its size and a hex head say what it is.
                _ => hex_head(&w.content),
            };
            (format!("{}{append}\n{shown}", w.path), w.content.len())
        }
        RequestBody::RunFile(r) => {
            let line = if r.args.is_empty() {
                r.path.clone()
            } else {
                format!("{} {}", r.path, r.args.join(" "))
            };
            whole(line)
        }
        RequestBody::MoveFile(m) => {
            let over = if m.overwrite { " (replacing it)" } else { "" };
            whole(format!("{} -> {}{over}", m.from, m.to))
        }
        RequestBody::ReadFile(kind::ReadFile { path, .. })
        | RequestBody::ListFiles(kind::ListFiles { path })
        | RequestBody::DeleteFile(kind::DeleteFile { path })
        | RequestBody::FileInfo(kind::FileInfo { path })
        | RequestBody::MakeDir(kind::MakeDir { path }) => whole(path.clone()),
        RequestBody::Input(i) => whole(input_words(i)),
        RequestBody::Peripherals(_) => {
            whole("list the peripherals attached, with their methods".to_owned())
        }
        RequestBody::Turtle(_) => whole("read the turtle's fuel and slots".to_owned()),
        RequestBody::Ping(_) | RequestBody::Screen(_) | RequestBody::ComputerOutput(_) => {
            whole(body.to_value().to_string())
        }
    }
}

/// Whether text holds control characters other than line breaks and tabs (a binary file
/// that happens to be valid UTF-8).
fn binary(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
}

/// Bytes shown before the rest of a binary file is left out.
const HEX_HEAD: usize = 256;

/// `binary, 307200 bytes; the first 256:` and a hex dump of them (offset, 16 bytes, ASCII).
fn hex_head(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(HEX_HEAD)];
    let mut out = if head.len() < bytes.len() {
        format!("binary, {} bytes; the first {}:", bytes.len(), head.len())
    } else {
        format!("binary, {} bytes:", bytes.len())
    };
    for (i, row) in head.chunks(16).enumerate() {
        let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
        let ascii: String = row
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    char::from(b)
                } else {
                    '.'
                }
            })
            .collect();
        out.push_str(&format!(
            "\n{:08x}  {:<47}  |{ascii}|",
            i * 16,
            hex.join(" ")
        ));
    }
    if head.len() < bytes.len() {
        out.push_str(&format!("\n… {} more bytes", bytes.len() - head.len()));
    }
    out
}

/// An `input` request's steps as a person reads them: `type "ls"`, `press enter`,
/// `paste "…"`, one a line (a step of another shape as its JSON).
fn input_words(input: &kind::Input) -> String {
    let lines: Vec<String> = input
        .steps
        .iter()
        .map(|step| {
            let s = |k: &str| step.get(k).and_then(Value::as_str);
            if let Some(t) = s("text") {
                format!("type {}", super::summary::lua_quote(t))
            } else if let Some(p) = s("paste") {
                format!("paste {}", super::summary::lua_quote(p))
            } else if let Some(k) = s("key") {
                format!("press {k}")
            } else if let Some(t) = step.get("touch") {
                let n = |k: &str| t.get(k).and_then(Value::as_u64).unwrap_or(0);
                let monitor = input.monitor.as_deref().unwrap_or("?");
                format!("touch monitor {monitor} at {},{}", n("x"), n("y"))
            } else {
                step.to_string()
            }
        })
        .collect();
    if lines.is_empty() {
        "nothing to type".to_owned()
    } else {
        lines.join("\n")
    }
}

#[cfg(test)]
mod shown_tests {
    use super::*;
    use serde_json::json;

    /// The detail of a payload written as JSON.
    fn detail(kind: Kind, payload: &Value) -> (String, usize) {
        let body = RequestBody::from_value(kind, payload.clone());
        super::detail(&body.unwrap_or_else(|e| unreachable!("{e}")))
    }

    #[test]
    fn binary_content_shows_as_size_and_a_hex_head() {
        use base64::Engine;
        let mut bytes = vec![0x1b, b'L', b'u', b'a', 0x00, 0xff];
        bytes.resize(300_000, 0xab);
        let content = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let (text, size) = detail(
            Kind::WriteFile,
            &json!({"path": "a.bin", "content": content, "encoding": "base64"}),
        );
        assert_eq!(size, 300_000);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "a.bin");
        assert_eq!(lines[1], "binary, 300000 bytes; the first 256:");
        assert_eq!(
            lines[2],
            "00000000  1b 4c 75 61 00 ff ab ab ab ab ab ab ab ab ab ab  |.Lua............|"
        );
        assert_eq!(lines.len(), 2 + 16 + 1);
        assert_eq!(lines[18], "… 299744 more bytes");
        // Text stays text, also when it would decode as base64.
        let (text, _) = super::detail(&RequestBody::WriteFile(kind::WriteFile {
            path: "a".into(),
            content: b"abcd".to_vec(),
            ..Default::default()
        }));
        assert_eq!(text, "a\nabcd");
    }

    #[test]
    fn input_shows_as_keys_and_text() {
        let p = json!({"steps": [{"text": "ls"}, {"key": "enter"}, {"paste": "a\u{1b}"}]});
        assert_eq!(
            detail(Kind::Input, &p).0,
            "type \"ls\"\npress enter\npaste \"a\\27\""
        );
    }
}

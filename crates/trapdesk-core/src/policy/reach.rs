//! What a request really reaches on a computer's disk, so that the policy decides on that rather
//! than on the request type alone (docs/security.md, "Policy").
//!
//! Two kinds of path are more than files:
//! - `/.settings` holds the computer's secrets (`sandbox.password`, the shared secret the client
//!   enrols with, and `trapdesk.secret`, its own; `lua/install.lua`, `lua/servers/sandbox.lua`)
//!   and `sandbox.url`, where the client links at the next boot. Reading it, or changing it in
//!   any way, counts as `exec`: an agent allowed `exec` could read it with `settings.get` anyway,
//!   and one allowed only `read` or `write` gets neither the secrets nor the link.
//! - Boot paths: what CC: Tweaked's `rom/startup.lua` runs at boot (`/startup`, `/startup.lua`,
//!   `/startup/*`, and the same on each disk's mount, `disk`, `disk2`, ...), what the client's
//!   wrapper runs (`/startup.player.lua`) and the client itself (`/trapdesk/**`, and `/apis/**`
//!   and `/servers/**`, which the wrapper runs as the client once `/servers/sandbox.lua` is
//!   there). Writing, moving, deleting or making a directory at one of them (or at a folder
//!   holding them) runs code at the next boot, so it counts as `exec`.
//!
//! A path is compared as the computer will resolve it: the client passes every path through
//! `fs.combine(path, "")` and CC's `fs` then sanitises it again, both
//! `FileSystem.sanitizePath` (the `\` to `/`, dropped characters, stripped parts, `.`, `..` and
//! `...` rules), done here on the bytes a Lua string holds. Names are compared ignoring ASCII
//! case: a Minecraft server on Windows or macOS keeps a computer's disk on a case-insensitive
//! file system, where `/STARTUP.lua` is `/startup.lua`.
//!
//! Only agents are raised so: the person is the person (their console, CLI and sync), and their
//! own policy keeps `write` for writes (the console's editor saving `/startup.lua`, `trapdesk
//! put` of a startup program, are writes they chose).

use super::{Action, Party};
use trapdesk_proto::protocol::{Kind, RequestBody};

/// Characters CC's `sanitizePath` drops (besides those below 32), without and with wildcards.
const SPECIAL: &[u8] = b"\"*:<>?|";
const SPECIAL_WILDCARDS: &[u8] = b"\":<>|";

/// A part as Java's `String.strip` leaves it: of the bytes still there (32 and up), only the
/// space is whitespace.
fn strip(part: &[u8]) -> &[u8] {
    let start = part.iter().position(|b| *b != b' ').unwrap_or(part.len());
    let end = part
        .iter()
        .rposition(|b| *b != b' ')
        .map_or(start, |e| e + 1);
    part.get(start..end).unwrap_or_default()
}

/// CC: Tweaked's `FileSystem.sanitizePath(path, allowWildcards)`, on the bytes of a Lua string
/// (CC sees each byte as one character), as its parts.
fn sanitize(path: &[u8], wildcards: bool) -> Vec<Vec<u8>> {
    let dropped = if wildcards {
        SPECIAL_WILDCARDS
    } else {
        SPECIAL
    };
    let clean: Vec<u8> = path
        .iter()
        .map(|b| if *b == b'\\' { b'/' } else { *b })
        .filter(|b| *b >= 32 && !dropped.contains(b))
        .collect();
    let mut out: Vec<Vec<u8>> = Vec::new();
    for full in clean.split(|b| *b == b'/') {
        let part = strip(full);
        let dots = part.len() >= 3 && part.iter().all(|b| *b == b'.');
        if part.is_empty() || part == b"." || dots {
            continue;
        }
        if part == b".." {
            match out.last() {
                Some(top) if top.as_slice() != b".." => {
                    out.pop();
                }
                _ => out.push(b"..".to_vec()),
            }
        } else if part.len() >= 255 {
            out.push(strip(&part[..255]).to_vec());
        } else {
            out.push(part.to_vec());
        }
    }
    out
}

/// The path a request's `path` names on the computer, as parts in lower case: the client's
/// `fs.combine(path, "")`, then `fs`'s own sanitising.
pub fn resolve(path: &str) -> Vec<Vec<u8>> {
    let combined = sanitize(path.as_bytes(), true).join(&b'/');
    sanitize(&combined, false)
        .into_iter()
        .map(|p| p.to_ascii_lowercase())
        .collect()
}

/// What a guarded path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// `/.settings`: the computer's secrets and its link.
    Secrets,
    /// Runs at the next boot, or holds what does.
    Boot,
}

/// A disk's mount path: `disk`, then `disk2`, `disk3`, ... (CC: Tweaked's
/// `DiskDriveBlockEntity.mount`: `n == 1 ? "disk" : "disk" + n`).
fn is_mount(part: &[u8]) -> bool {
    match part.strip_prefix(b"disk") {
        Some([]) => true,
        Some(n) => {
            n.first().is_some_and(|d| (b'1'..=b'9').contains(d))
                && n.iter().all(u8::is_ascii_digit)
                && n != b"1"
        }
        None => false,
    }
}

/// The guard on a path within one base folder (the root, or a disk's mount).
fn boot_in_base(rest: &[Vec<u8>]) -> bool {
    match rest.first().map(Vec::as_slice) {
        // The base folder itself holds its boot paths.
        None => true,
        Some(b"startup") | Some(b"trapdesk") | Some(b"apis") | Some(b"servers") => true,
        Some(b"startup.lua") | Some(b"startup.player.lua") => rest.len() == 1,
        _ => false,
    }
}

/// The guard on resolved `parts` ([`resolve`]), with the client's write sidecars
/// (`.NAME.trapdesk-new`, `.NAME.trapdesk-old`, which a crashed write's recovery moves into
/// place) counted as `NAME`.
pub fn guard(parts: &[Vec<u8>]) -> Option<Guard> {
    if let Some((last, dir)) = parts.split_last() {
        let inner = last
            .strip_prefix(b".")
            .and_then(|n| {
                n.strip_suffix(b".trapdesk-new")
                    .or_else(|| n.strip_suffix(b".trapdesk-old"))
            })
            .filter(|n| !n.is_empty());
        if let Some(inner) = inner {
            let mut named = dir.to_vec();
            named.push(inner.to_vec());
            if let Some(g) = guard_exact(&named) {
                return Some(g);
            }
        }
    }
    guard_exact(parts)
}

fn guard_exact(parts: &[Vec<u8>]) -> Option<Guard> {
    if parts.first().is_some_and(|p| p == b"..") {
        // Above the root: the computer refuses it.
        return None;
    }
    if parts.len() == 1 && parts[0] == b".settings" {
        return Some(Guard::Secrets);
    }
    if boot_in_base(parts) {
        return Some(Guard::Boot);
    }
    match parts.split_first() {
        Some((mount, rest)) if is_mount(mount) && boot_in_base(rest) => Some(Guard::Boot),
        _ => None,
    }
}

/// How a request counts for the policy: its action, and when the path raised it above the
/// request type's own, why (for the refusal and the approval).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    pub action: Action,
    pub because: Option<String>,
}

impl Reach {
    /// What `party` asking `body` counts as; `None` for housekeeping (`ping`).
    pub fn of(party: Party<'_>, body: &RequestBody) -> Option<Reach> {
        let kind = body.kind();
        let action = Action::of(kind)?;
        let plain = Some(Reach {
            action,
            because: None,
        });
        if party == Party::Person {
            return plain;
        }
        let paths: Vec<&str> = match body {
            RequestBody::ReadFile(r) => vec![r.path.as_str()],
            RequestBody::WriteFile(w) => vec![w.path.as_str()],
            RequestBody::DeleteFile(d) => vec![d.path.as_str()],
            RequestBody::MakeDir(m) => vec![m.path.as_str()],
            RequestBody::MoveFile(m) => vec![m.from.as_str(), m.to.as_str()],
            _ => Vec::new(),
        };
        for p in paths {
            let why = match (guard(&resolve(p)), kind) {
                (Some(Guard::Secrets), _) => format!(
                    "{p} is the computer's /.settings, which holds its secrets and its link, so {kind} of it counts as exec"
                ),
                // Reading a boot path is only reading.
                (Some(Guard::Boot), Kind::ReadFile) | (None, _) => continue,
                (Some(Guard::Boot), _) => format!(
                    "{p} runs at the computer's next boot (or holds what does), so {kind} there counts as exec"
                ),
            };
            return Some(Reach {
                action: Action::Exec,
                because: Some(why),
            });
        }
        plain
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn g(path: &str) -> Option<Guard> {
        guard(&resolve(path))
    }

    #[test]
    fn paths_resolve_as_cc_resolves_them() {
        let joined = |p: &str| {
            resolve(p)
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect::<Vec<_>>()
                .join("/")
        };
        assert_eq!(joined("/startup.lua"), "startup.lua");
        assert_eq!(joined("//startup.lua"), "startup.lua");
        assert_eq!(joined("./startup.lua"), "startup.lua");
        assert_eq!(joined("a/../startup.lua"), "startup.lua");
        assert_eq!(joined("a/b/.../../../startup.lua"), "startup.lua");
        assert_eq!(joined("\\STARTUP.lua "), "startup.lua");
        assert_eq!(joined(" start:up.lua"), "startup.lua");
        assert_eq!(joined("start\u{1}up*.lua"), "startup.lua");
        // `fs.combine` keeps `*`, resolves `..`, then `fs` drops the `*`.
        assert_eq!(joined("*/../startup.lua"), "startup.lua");
        assert_eq!(joined("../startup.lua"), "../startup.lua");
        let long = format!("startup.lua{}x", " ".repeat(250));
        assert_eq!(joined(&long), "startup.lua");
    }

    #[test]
    fn boot_paths_and_the_settings_are_guarded_and_nothing_else() {
        for p in [
            "startup",
            "/startup.lua",
            "/startup/a.lua",
            "/startup/sub/b",
            "startup.player.lua",
            "/trapdesk",
            "/trapdesk/x.lua",
            "/apis/x.lua",
            "/servers/sandbox.lua",
            "disk/startup.lua",
            "/disk2/startup/x",
            "disk10/startup",
            "/",
            "",
            "disk",
            "/.startup.lua.trapdesk-new",
            "/trapdesk/.x.lua.trapdesk-old",
        ] {
            assert_eq!(g(p), Some(Guard::Boot), "{p}");
        }
        for p in [
            "/.settings",
            ".SETTINGS",
            "a/../.settings",
            "/..settings.trapdesk-old",
        ] {
            assert_eq!(g(p), Some(Guard::Secrets), "{p}");
        }
        for p in [
            "/startup.lua.bak",
            "/startup.player.2.lua",
            "/foo/startup.lua",
            "/disk1/startup.lua",
            "/disk02/startup.lua",
            "/diskette/startup.lua",
            "/disk/.settings",
            "/notes.txt",
            "/.settings.txt",
            "../startup.lua",
            "/..trapdesk-new",
        ] {
            assert_eq!(g(p), None, "{p}");
        }
    }

    #[test]
    fn an_agent_is_raised_to_exec_the_person_is_not() {
        let agent = Party::Agent("a");
        let body = |kind: Kind, payload| {
            RequestBody::from_value(kind, payload).unwrap_or_else(|e| unreachable!("{e}"))
        };
        let write = |p: &str| {
            let w = json!({"path": p, "content": ""});
            Reach::of(agent, &body(Kind::WriteFile, w))
        };
        assert_eq!(write("/startup.lua").map(|r| r.action), Some(Action::Exec));
        assert_eq!(write("/notes.txt").map(|r| r.action), Some(Action::Write));
        let mv = Reach::of(
            agent,
            &body(Kind::MoveFile, json!({"from": "/.settings", "to": "/x"})),
        );
        assert_eq!(mv.map(|r| r.action), Some(Action::Exec));
        let mv = Reach::of(
            agent,
            &body(Kind::MoveFile, json!({"from": "/x", "to": "STARTUP"})),
        );
        assert_eq!(mv.map(|r| r.action), Some(Action::Exec));
        let read = |p: &str| Reach::of(agent, &body(Kind::ReadFile, json!({"path": p})));
        assert_eq!(read("/.settings").map(|r| r.action), Some(Action::Exec));
        assert_eq!(read("/startup.lua").map(|r| r.action), Some(Action::Read));
        let person = Reach::of(
            Party::Person,
            &body(Kind::ReadFile, json!({"path": "/.settings"})),
        );
        assert_eq!(person.map(|r| r.action), Some(Action::Read));
        assert_eq!(Reach::of(agent, &body(Kind::Ping, json!({}))), None);
    }
}

//! Attacks on reach: an agent allowed to read or write doing more than that (docs/security.md,
//! "Policy covers what reads and writes really do"). Each runs a real host, an emulated
//! computer running the real client, and rmcp clients with named agent tokens under a policy
//! that gives `reader` only `read`, `writer` `write` and `read` but no `exec`, `runner`
//! everything and `blind` nothing to read.

use rmcp::model::{CallToolResult, ReadResourceRequestParams};
use serde_json::{Value, json};

use super::support::{self, TestHost};

use super::support::mcp_fake as fake;

use fake::{Client, call, connect, data, text};

const POLICY: &str = r#"
[policy.default]
agent = { exec = "deny", write = "deny", read = "allow" }

[[policy.rule]]
computer = "*"
agent_name = "writer"
agent = { write = "allow" }

[[policy.rule]]
computer = "*"
agent_name = "runner"
agent = { exec = "allow", write = "allow" }

[[policy.rule]]
computer = "*"
agent_name = "blind"
agent = { read = "deny" }
"#;

const VAULT: &str = "7:vault";

struct World {
    h: TestHost,
    _computer: trapdesk::emu::Computer,
}

impl World {
    async fn boot() -> World {
        let h = support::start_host_with(|s| {
            s.policy = trapdesk::policy::Policy::from_toml(POLICY).unwrap();
        })
        .await;
        let computer = support::emulated(&h, 7, Some("vault")).await;
        World {
            h,
            _computer: computer,
        }
    }

    /// An rmcp client presenting a named agent token.
    async fn agent(&self, name: &str) -> Client {
        let token = trapdesk::trust::agents::add(self.h.dir.path(), name).unwrap();
        connect(&self.h.mcp_url(), &token).await.0
    }

    /// The computer's disk, as the host keeps it.
    fn disk(&self) -> std::path::PathBuf {
        self.h.dir.path().join("computers").join("7")
    }

    /// Every secret the computer holds: the shared one, and its own when it has enrolled.
    fn secrets(&self) -> Vec<String> {
        let settings = std::fs::read_to_string(self.disk().join(".settings")).unwrap();
        let mut out = vec![support::SECRET.to_owned()];
        // `[ "trapdesk.secret" ] = "..."`, however the settings file spaces it.
        let own = settings
            .split_once("trapdesk.secret")
            .and_then(|(_, rest)| rest.split_once('='))
            .and_then(|(_, v)| v.trim_start().strip_prefix('"'))
            .and_then(|v| v.split('"').next());
        out.extend(own.map(str::to_owned));
        out
    }
}

fn code(r: &CallToolResult) -> String {
    let d = data(r);
    d.get("error")
        .and_then(|e| e.get("code").or(Some(e)))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn all_text(r: &CallToolResult) -> String {
    format!("{} {}", text(r), data(r))
}

/// Every spelling of `path` the computer resolves to the same file: CC's `fs.combine` drops
/// empty parts and `.`, resolves `..`, and the disk may be case-insensitive (docs/security.md).
fn spellings(path: &str) -> Vec<String> {
    let bare = path.trim_start_matches('/');
    vec![
        format!("/{bare}"),
        bare.to_owned(),
        format!("//{bare}"),
        format!("./{bare}"),
        format!("a/../{bare}"),
        format!("/{}", bare.to_uppercase()),
        format!("\\{bare} "),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_gets_no_secret_from_the_settings_file() {
    let w = World::boot().await;
    let secrets = w.secrets();
    let reader = w.agent("reader").await;

    // read-file, each spelling.
    for p in spellings(".settings") {
        let r = call(&reader, "read-file", json!({"traposId": VAULT, "path": p})).await;
        assert_eq!(r.is_error, Some(true), "{p}: {}", all_text(&r));
        assert_eq!(code(&r), "denied", "{p}: {}", all_text(&r));
        let said = all_text(&r);
        assert!(said.contains("counts as exec"), "{p}: {said}");
        for s in &secrets {
            assert!(
                !said.contains(s.as_str()),
                "{p}: a secret came back: {said}"
            );
        }
    }

    // The files resource.
    for p in [".settings", "%2F.settings", "a/../.settings", ".SETTINGS"] {
        let uri = format!("trapdesk://computer/{VAULT}/files/{p}");
        let got = reader
            .read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await;
        let said = format!("{got:?}");
        assert!(got.is_err(), "{uri}: {said}");
        for s in &secrets {
            assert!(
                !said.contains(s.as_str()),
                "{uri}: a secret came back: {said}"
            );
        }
    }

    // A writer moves it (or copies it by moving) where a reader could read it: refused, and
    // the file stays where it is.
    let writer = w.agent("writer").await;
    for (from, to) in [(".settings", "/copy.txt"), ("//.settings", "copy2.txt")] {
        let r = call(
            &writer,
            "move-file",
            json!({"traposId": VAULT, "from": from, "to": to}),
        )
        .await;
        assert_eq!(code(&r), "denied", "{from}: {}", all_text(&r));
    }
    assert!(w.disk().join(".settings").is_file());
    let r = call(
        &reader,
        "read-file",
        json!({"traposId": VAULT, "path": "/copy.txt"}),
    )
    .await;
    let said = all_text(&r);
    for s in &secrets {
        assert!(!said.contains(s.as_str()), "a secret came back: {said}");
    }

    // Files beside it still read, and the person reads it as they always could.
    std::fs::write(w.disk().join("notes.txt"), "plain").unwrap();
    let r = call(
        &reader,
        "read-file",
        json!({"traposId": VAULT, "path": "/notes.txt"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", all_text(&r));
    assert!(all_text(&r).contains("plain"), "{}", all_text(&r));
    let spec = trapdesk::session::RequestSpec::of(trapdesk::protocol::kind::ReadFile {
        path: "/.settings".into(),
        offset: None,
        length: None,
    });
    let person =
        w.h.session
            .start(VAULT, spec, trapdesk::session::Origin::Person)
            .unwrap()
            .wait()
            .await;
    assert!(person.is_ok(), "{person:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_without_exec_cannot_plant_code_that_runs_at_boot() {
    let w = World::boot().await;
    let writer = w.agent("writer").await;
    let before = std::fs::read(w.disk().join("startup.lua")).unwrap();
    let settings = std::fs::read(w.disk().join(".settings")).unwrap();

    // Something to move in.
    let r = call(
        &writer,
        "write-file",
        json!({"traposId": VAULT, "path": "/payload.lua", "content": "print('planted')"}),
    )
    .await;
    assert_ne!(
        r.is_error,
        Some(true),
        "an ordinary write works: {}",
        all_text(&r)
    );
    assert!(w.disk().join("payload.lua").is_file());

    let guarded = [
        "startup",
        "startup.lua",
        "startup/x.lua",
        "startup.player.lua",
        "trapdesk/x.lua",
        "trapdesk/servers/sandbox.lua",
        ".settings",
        "disk/startup.lua",
        "disk2/startup",
    ];
    for path in guarded {
        for p in spellings(path) {
            let args = |extra: Value| {
                let mut a = json!({"traposId": VAULT});
                a.as_object_mut()
                    .unwrap()
                    .extend(extra.as_object().unwrap().clone());
                a
            };
            let tries = [
                (
                    "write-file",
                    args(json!({"path": p, "content": "print('planted')"})),
                ),
                (
                    "write-file",
                    args(json!({"path": p, "content": "x", "append": true})),
                ),
                (
                    "move-file",
                    args(json!({"from": "/payload.lua", "to": p, "overwrite": true})),
                ),
                ("move-file", args(json!({"from": p, "to": "/moved"}))),
                ("delete-file", args(json!({"path": p}))),
                ("make-dir", args(json!({"path": p}))),
            ];
            for (tool, a) in tries {
                let r = call(&writer, tool, a.clone()).await;
                assert_eq!(code(&r), "denied", "{tool} {a}: {}", all_text(&r));
                assert!(
                    all_text(&r).contains("exec"),
                    "{tool} {a}: {}",
                    all_text(&r)
                );
            }
        }
    }

    // Nothing changed on the disk: the wrapper, the settings, no startup folder, no planted
    // player startup, the client untouched, the payload still where it was written.
    assert_eq!(std::fs::read(w.disk().join("startup.lua")).unwrap(), before);
    assert_eq!(std::fs::read(w.disk().join(".settings")).unwrap(), settings);
    for p in [
        "startup",
        "startup.player.lua",
        "trapdesk/x.lua",
        "moved",
        "disk",
    ] {
        assert!(!w.disk().join(p).exists(), "{p} appeared");
    }
    assert!(w.disk().join("payload.lua").is_file());

    // Ordinary writes, moves and folders still work.
    let ok = [
        (
            "move-file",
            json!({"traposId": VAULT, "from": "/payload.lua", "to": "/payload2.lua"}),
        ),
        ("make-dir", json!({"traposId": VAULT, "path": "/data"})),
        (
            "write-file",
            json!({"traposId": VAULT, "path": "/data/startup.lua", "content": "not at boot"}),
        ),
        (
            "delete-file",
            json!({"traposId": VAULT, "path": "/data/startup.lua"}),
        ),
    ];
    for (tool, a) in ok {
        let r = call(&writer, tool, a.clone()).await;
        assert_ne!(r.is_error, Some(true), "{tool} {a}: {}", all_text(&r));
    }
    assert!(w.disk().join("payload2.lua").is_file());
    assert!(w.disk().join("data").is_dir());

    // With exec, the same write goes through: the path made it exec, nothing more.
    let runner = w.agent("runner").await;
    let r = call(
        &runner,
        "write-file",
        json!({"traposId": VAULT, "path": "/startup/hello.lua", "content": "-- mine"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", all_text(&r));
    assert!(w.disk().join("startup/hello.lua").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_log_shows_an_agent_denied_read_no_returned_values() {
    let w = World::boot().await;
    let runner = w.agent("runner").await;
    let marker = "returned-7f3a9c";
    let r = call(
        &runner,
        "exec-lua",
        json!({"traposId": VAULT, "code": format!("print('printed-{marker}') return '{marker}'")}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", all_text(&r));
    std::fs::write(w.disk().join("diary.txt"), format!("content-{marker}")).unwrap();
    let r = call(
        &runner,
        "read-file",
        json!({"traposId": VAULT, "path": "/diary.txt"}),
    )
    .await;
    assert!(all_text(&r).contains(marker), "{}", all_text(&r));

    // A reader allowed read sees what came back (so the test can fail)...
    let reader = w.agent("reader").await;
    let seen = all_text(&call(&reader, "session-log", json!({})).await);
    assert!(seen.contains(marker), "a reader sees the values: {seen}");

    // ...one denied read sees that it happened, and nothing of what came back.
    let blind = w.agent("blind").await;
    let r = call(&blind, "session-log", json!({})).await;
    let seen = all_text(&r);
    assert!(
        !seen.contains(marker),
        "values shown to an agent denied read: {seen}"
    );
    assert!(seen.contains("exec-lua"), "the fact stays: {seen}");
    assert!(seen.contains("details withheld"), "{seen}");
}

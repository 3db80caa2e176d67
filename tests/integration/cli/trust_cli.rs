//! The trust commands as a person runs them: a bad policy is refused at start with its line,
//! SIGHUP reloads the policy, `agent` prints a token once, `secret rotate` explains itself,
//! `transcript --json` prints what was recorded.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn trapdesk() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trapdesk"))
}

#[test]
fn a_bad_policy_is_refused_at_start_with_its_line_and_what_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[policy.default]\nagent = { exec = \"allow\" }\n\n[[policy.rule]]\ncomputer = \"reactor*\"\nagent = { exec = \"never\" }\n",
    )
    .unwrap();
    let out = trapdesk()
        .args([
            "--mcp-only",
            "--gateway-bind",
            "127.0.0.1:0",
            "--mcp-bind",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 6"), "{err}");
    assert!(
        err.contains("never") && err.contains("`allow`, `ask`, `deny`"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    std::fs::write(&config, "[policy.default]\nrobot = { exec = \"allow\" }\n").unwrap();
    let out = trapdesk()
        .args(["--mcp-only"])
        .arg("--data-dir")
        .arg(dir.path())
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2") && err.contains("robot"), "{err}");
    assert!(
        err.contains("agent") && err.contains("person"),
        "lists what is allowed: {err}"
    );
}

#[test]
fn sighup_reloads_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[policy.default]\nagent = { exec = \"deny\" }\n").unwrap();
    let mut child = trapdesk()
        .args([
            "--mcp-only",
            "--gateway-bind",
            "127.0.0.1:0",
            "--mcp-bind",
            "127.0.0.1:0",
        ])
        .args(["--secret", "s3cret-for-the-cli-4k7q"])
        .arg("--data-dir")
        .arg(dir.path())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < Duration::from_secs(30), "no start line");
        if lines
            .next()
            .expect("stderr ended")
            .unwrap()
            .contains("gateway ws://")
        {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    std::fs::write(&config, "[policy.default]\nagent = { exec = \"ask\" }\n").unwrap();
    let kill = |sig: &str| {
        Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status()
            .unwrap()
    };
    let transcript = dir.path().join("transcript.jsonl");
    let recorded = || std::fs::read_to_string(&transcript).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        assert!(kill("-HUP").success());
        // A HUP before the host has set up its handler is lost: each gets a while to show in
        // the transcript, then another is sent.
        if crate::support::holds_within_blocking(Duration::from_millis(200), || {
            recorded().contains("exec = ask")
        }) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no reload recorded: {}",
            recorded()
        );
    }
    let text = recorded();
    assert!(text.contains("\"event\":\"policy\""), "{text}");
    assert!(kill("-TERM").success());
    crate::support::exit_within(&mut child, Duration::from_secs(15), "did not stop");
}

#[test]
fn agent_secret_and_transcript_commands() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = trapdesk()
            .args(args)
            .arg("--data-dir")
            .arg(dir.path())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, out, err) = run(&["agent", "add", "claude-code"]);
    assert!(ok, "{err}");
    let token = out
        .split_whitespace()
        .find(|w| w.starts_with("td_"))
        .unwrap()
        .to_owned();
    let (ok, out, _) = run(&["agent", "list"]);
    assert!(
        ok && out.contains("claude-code") && !out.contains(&token),
        "{out}"
    );
    let (ok, _, err) = run(&["agent", "add", "claude-code"]);
    assert!(!ok && err.contains("exists"), "{err}");
    let (ok, _, _) = run(&["agent", "remove", "claude-code"]);
    assert!(ok);
    let (ok, _, err) = run(&["agent", "remove", "claude-code"]);
    assert!(!ok && err.contains("no agent named"), "{err}");

    let (ok, out, _) = run(&["secret", "rotate"]);
    assert!(ok && out.contains("set sandbox.password"), "{out}");
    let (ok, out, _) = run(&["secret", "add", "7"]);
    assert!(ok && out.contains("computer 7"), "{out}");

    let (ok, _, err) = run(&["transcript"]);
    assert!(!ok && err.contains("no transcript"), "{err}");
    std::fs::write(
        dir.path().join("transcript.jsonl"),
        "{\"seq\":1,\"timeMs\":0,\"event\":\"request\",\"who\":\"person\",\"traposId\":\"7:miner\",\"what\":\"exec-lua\",\"detail\":\"x\",\"origin\":{\"kind\":\"person\"},\"args\":{\"code\":\"print(1)\"}}\n{\"seq\":2,\"timeMs\":0,\"event\":\"request\",\"who\":\"bot\",\"traposId\":\"8:farm\",\"what\":\"exec-lua\",\"detail\":\"y\",\"origin\":{\"kind\":\"agent\",\"name\":\"bot\"}}\n",
    )
    .unwrap();
    let (ok, out, _) = run(&["transcript", "--computer", "miner"]);
    assert!(
        ok && out.contains("print(1)") && !out.contains("8:farm"),
        "{out}"
    );
    let (ok, out, _) = run(&["transcript", "--json", "--origin", "bot"]);
    assert!(ok, "{out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["who"], "bot");
}

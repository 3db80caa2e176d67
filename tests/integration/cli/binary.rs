//! The binary as a person runs it: `trapdesk --mcp-only` starts, answers `/health`, and stops
//! cleanly on SIGTERM; bad flags and busy ports are one clear line and a non-zero exit.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn trapdesk() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trapdesk"))
}

#[test]
fn mcp_only_serves_health_and_exits_zero_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = trapdesk()
        .args([
            "--mcp-only",
            "--gateway-bind",
            "127.0.0.1:0",
            "--mcp-bind",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--secret", "s3cret-for-the-cli-4k7q"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let started = Instant::now();
    let addr = loop {
        assert!(started.elapsed() < Duration::from_secs(30), "no start line");
        let line = lines.next().expect("stderr ended").unwrap();
        if let Some(rest) = line.split("gateway ws://").nth(1) {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});

    let body = http_get(&addr, "/health");
    assert!(body.contains("\"ok\":true"), "{body}");
    assert!(body.contains("\"computers\":0"), "{body}");

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = crate::support::exit_within(
        &mut child,
        Duration::from_secs(15),
        "did not stop on SIGTERM",
    );
    assert_eq!(exit.code(), Some(0));
    assert!(dir.path().join("trapdesk.log").exists());
}

/// A minimal HTTP/1.0 GET, so this test needs no client library.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn a_bad_flag_is_one_clear_error() {
    let out = trapdesk()
        .args(["--gateway-bind", "nowhere"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--gateway-bind"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_busy_port_is_one_clear_error() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = trapdesk()
        .args([
            "--mcp-only",
            "--gateway-bind",
            &addr,
            "--mcp-bind",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot listen for computers on {addr}")),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // The OS's reason once, with what to do about it.
    assert_eq!(err.matches("in use").count(), 1, "{err}");
    assert!(!err.contains("os error"), "{err}");
    assert!(
        err.contains("pick another port with --gateway-bind"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// Starts `trapdesk --mcp-only` with these extra flags and returns the child, the gateway's
/// address from its start line, and every stderr line so far (the rest keeps draining).
fn start_headless(
    extra: &[&str],
    dir: &std::path::Path,
) -> (
    std::process::Child,
    String,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    let mut child = trapdesk()
        .arg("--mcp-only")
        .args(extra)
        .arg("--data-dir")
        .arg(dir)
        .args(["--secret", "s3cret-for-the-cli-4k7q"])
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let started = Instant::now();
    let addr = loop {
        assert!(started.elapsed() < Duration::from_secs(30), "no start line");
        let line = lines.next().expect("stderr ended").unwrap();
        seen.lock().unwrap().push(line.clone());
        if let Some(rest) = line.split("gateway ws://").nth(1) {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    let sink = seen.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    (child, addr, seen)
}

fn stop(mut child: std::process::Child) -> std::process::ExitStatus {
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    crate::support::exit_within(
        &mut child,
        Duration::from_secs(15),
        "did not stop on SIGTERM",
    )
}

#[test]
fn host_names_bind_and_the_root_page_says_how_to_link() {
    let dir = tempfile::tempdir().unwrap();
    let (child, addr, seen) = start_headless(
        &["--gateway-bind", "localhost:0", "--mcp-bind", "localhost:0"],
        dir.path(),
    );
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let body = http_get(&addr, "/");
    assert!(
        body.starts_with("HTTP/1.0 200") || body.starts_with("HTTP/1.1 200"),
        "{body}"
    );
    assert!(
        body.contains(&format!("wget run http://{addr}/install.lua <secret>")),
        "{body}"
    );
    assert!(body.contains("/health"), "{body}");
    assert!(
        !body.contains("s3cret-for-the-cli-4k7q"),
        "the page must not show the secret: {body}"
    );
    assert_eq!(stop(child).code(), Some(0));
    // stderr is a pipe here: no colour codes in what was logged to it.
    let seen = seen.lock().unwrap().join("\n");
    assert!(seen.contains("signal received"), "{seen}");
    assert!(!seen.contains('\u{1b}'), "{seen}");
}

/// stderr is a pipe here, as under systemd: the secret is not printed, how to show it is
/// (tests/integration/craftos/shared_world.rs checks the terminal case, where the install line is
/// shown).
#[test]
fn mcp_only_off_a_terminal_says_how_to_show_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let (child, _addr, seen) = start_headless(
        &["--gateway-bind", "127.0.0.1:0", "--mcp-bind", "127.0.0.1:0"],
        dir.path(),
    );
    let shown = || seen.lock().unwrap().join("\n");
    crate::support::wait_blocking(
        Duration::from_secs(15),
        || shown().contains("trapdesk secret show --data-dir"),
        || format!("never said how to show the secret: {}", shown()),
    );
    let text = shown();
    assert!(!text.contains("s3cret"), "{text}");
    assert!(text.contains("trapdesk secret show --data-dir"), "{text}");
    assert_eq!(stop(child).code(), Some(0));
}

/// Off a terminal (a pipe, as under systemd) `--mcp-only` writes no secret, so what the
/// gateway's page and the README's "Link a real computer" say about the install line must lead
/// there without it: each names `trapdesk secret show`, never says `--mcp-only` prints the line
/// without saying "in a terminal", and the command, run as the page says (with the host's
/// --data-dir), prints the line this host's computers need.
#[test]
fn the_page_and_the_readme_lead_to_the_install_line_off_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (child, addr, seen) = start_headless(
        &["--gateway-bind", "127.0.0.1:0", "--mcp-bind", "127.0.0.1:0"],
        dir.path(),
    );
    let shown = || seen.lock().unwrap().join("\n");
    crate::support::wait_blocking(
        Duration::from_secs(15),
        || shown().contains("trapdesk secret show"),
        || format!("never said how to show the secret: {}", shown()),
    );
    let page = http_get(&addr, "/");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let step = readme
        .split("2. Start trapdesk so that")
        .nth(1)
        .and_then(|r| r.split("3. On the computer").next())
        .expect("README's step 2 of linking a computer")
        .to_owned();
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    for (what, text) in [("the gateway's page", flat(&page)), ("README", flat(&step))] {
        assert!(
            text.contains("`trapdesk secret show`"),
            "{what} names no command that prints the install line off a terminal: {text}"
        );
        for sentence in text
            .split(". ")
            .filter(|s| s.contains("--mcp-only` prints"))
        {
            assert!(
                sentence.contains("terminal"),
                "{what} promises the line from --mcp-only wherever it runs: {sentence:?}"
            );
        }
    }
    let out = trapdesk()
        .args(["secret", "show", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{printed}");
    let line = format!("wget run http://{addr}/install.lua s3cret-for-the-cli-4k7q");
    assert!(printed.contains(&line), "{printed}");
    assert!(!shown().contains("s3cret"), "{}", shown());
    assert_eq!(stop(child).code(), Some(0));
}

#[test]
fn an_mcp_session_leaves_no_rmcp_structs_in_the_log() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let (child, _addr, seen) = start_headless(
        &["--gateway-bind", "127.0.0.1:0", "--mcp-bind", "127.0.0.1:0"],
        dir.path(),
    );
    let mcp = {
        let text = seen.lock().unwrap().join("\n");
        text.split("MCP http://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .unwrap()
            .to_owned()
    };
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#;
    let token = std::fs::read_to_string(dir.path().join("mcp-token")).unwrap();
    let mut s = std::net::TcpStream::connect(&mcp).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.0\r\nHost: {mcp}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        token.trim(),
        body.len()
    )
    .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.contains("serverInfo"), "{answer}");
    // The quiet period is the test: the lines looked for must not appear, and rmcp logs a
    // session's end after the answer, so the host runs on a while before it is stopped.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(stop(child).code(), Some(0));
    let log = std::fs::read_to_string(dir.path().join("trapdesk.log")).unwrap();
    let noisy: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" INFO ") && l.contains("rmcp"))
        .collect();
    assert!(noisy.is_empty(), "{noisy:#?}");
}

/// `trapdesk transcript | head` ends quietly when the reader goes away
/// (no "Broken pipe"), and a request's code is printed once, not as a summary and a body.
#[test]
fn transcript_into_a_closed_pipe_is_quiet_and_shows_code_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = String::new();
    for i in 0..5000 {
        let line = serde_json::json!({
            "timeMs": 1_700_000_000_000u64 + i, "seq": i, "event": "request", "who": "cli",
            "traposId": "1:miner", "what": "exec-lua", "requestId": format!("h-{i}"),
            "detail": "print('marker-code')", "args": {"code": "print('marker-code')"}
        });
        lines.push_str(&line.to_string());
        lines.push('\n');
    }
    std::fs::write(dir.path().join("transcript.jsonl"), lines).unwrap();

    let all = trapdesk()
        .arg("transcript")
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(all.status.success());
    let first = String::from_utf8_lossy(&all.stdout)
        .split(" h-1\n")
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(first.matches("marker-code").count(), 1, "{first}");

    let mut child = trapdesk()
        .arg("transcript")
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    // `head` has what it wanted and closes its end.
    drop(out);
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(!err.to_lowercase().contains("broken pipe"), "{err}");
    assert!(done.status.success(), "{:?} {err}", done.status);
}

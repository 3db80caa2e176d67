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
        .args(["--secret", "s3cret"])
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
    let deadline = Instant::now() + Duration::from_secs(15);
    let exit = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
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
}

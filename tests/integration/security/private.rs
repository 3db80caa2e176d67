//! Attacks on what the host keeps private (docs/security.md, "Files and processes are the
//! user's alone"): another local user reading the data dir or `ps`, a planted token in a data
//! dir others can write, a pipe that collects the secret, and a player's label that drives the
//! person's terminal.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::cli::{output, text};
use super::support::{FakeComputer, SECRET, emulated, hello, start_host};

const TOKEN: &str = "mcp-token-never-in-ps-4k7q9w";

fn trapdesk() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN")
        .env_remove("TRAPDESK_DATA_DIR")
        .env_remove("SANDBOX_PASSWORD");
    c
}

/// A headless host started on `dir` and waited for: what a refused start prints.
fn start_headless(dir: &std::path::Path) -> std::process::Output {
    trapdesk()
        .args(["--mcp-only", "--gateway-bind", "127.0.0.1:0"])
        .args([
            "--mcp-bind",
            "127.0.0.1:0",
            "--secret",
            SECRET,
            "--data-dir",
        ])
        .arg(dir)
        .output()
        .unwrap()
}

/// A headless host on `dir` with `extra` flags, and its MCP URL once it says it listens.
struct Running {
    child: Child,
    mcp: String,
}

impl Running {
    fn start(dir: &Path, extra: &[&str]) -> Running {
        let mut child = trapdesk()
            .args(["--mcp-only", "--gateway-bind", "127.0.0.1:0"])
            .args(["--mcp-bind", "127.0.0.1:0", "--data-dir"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let started = Instant::now();
        let mcp = loop {
            assert!(started.elapsed() < Duration::from_secs(30), "no start line");
            let line = lines
                .next()
                .expect("stderr ended before the start line")
                .unwrap();
            if let Some(rest) = line.split(", MCP ").nth(1) {
                break rest.trim().to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Running { child, mcp }
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        crate::support::exit_within(
            &mut self.child,
            Duration::from_secs(15),
            "did not stop on SIGTERM",
        );
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn chmod(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

/// Every entry under `dir` (itself included) whose mode has a group or other bit.
fn loose(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    if mode(dir) & 0o077 != 0 {
        out.push((dir.to_owned(), mode(dir)));
    }
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            if meta.file_type().is_symlink() {
                continue;
            }
            if meta.is_dir() {
                stack.push(e.path());
            }
            let m = meta.permissions().mode() & 0o7777;
            if m & 0o077 != 0 {
                out.push((e.path(), m));
            }
        }
    }
    out
}

#[test]
fn another_user_finds_nothing_readable_in_a_fresh_data_dir_after_a_host_ran() {
    let base = tempfile::tempdir().unwrap();
    // Looser than the test's own temp dir, as a home directory usually is.
    chmod(base.path(), 0o755);
    let dir = base.path().join("data");
    let host = Running::start(&dir, &["--demo", "1"]);
    // A CLI call through the host (the history, the transcript), and the demo's disk.
    crate::support::wait_blocking(
        Duration::from_secs(30),
        || {
            let out = trapdesk()
                .args(["computers", "--connect", &host.mcp])
                .arg("--data-dir")
                .arg(&dir)
                .output()
                .unwrap();
            text(&out.stdout).contains("online")
        },
        || "no demo computer".to_owned(),
    );
    host.stop();
    for name in ["secret", "mcp-token", "trapdesk.log", "history.db"] {
        assert!(dir.join(name).exists(), "{name} was not made");
    }
    let open = loose(&dir);
    assert!(open.is_empty(), "entries others can reach: {open:?}");
}

#[test]
fn a_data_dir_left_0755_by_an_earlier_version_is_tightened_at_start() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("data");
    std::fs::create_dir_all(dir.join("computers/1")).unwrap();
    std::fs::write(dir.join("trapdesk.log"), "an older version's line\n").unwrap();
    std::fs::write(dir.join("computers/1/.settings"), "{}").unwrap();
    chmod(&dir.join("trapdesk.log"), 0o644);
    chmod(&dir.join("computers/1/.settings"), 0o644);
    chmod(&dir.join("computers/1"), 0o755);
    chmod(&dir.join("computers"), 0o755);
    chmod(&dir, 0o755);
    let host = Running::start(&dir, &["--secret", SECRET]);
    host.stop();
    let open = loose(&dir);
    assert!(open.is_empty(), "still reachable by others: {open:?}");
    let log = std::fs::read_to_string(dir.join("trapdesk.log")).unwrap();
    assert_eq!(
        log.matches("was readable by other users").count(),
        1,
        "{log}"
    );
    assert!(log.contains("mode 0755"), "{log}");
}

#[test]
fn a_token_planted_in_a_data_dir_others_can_write_is_never_used() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("mcp-token"), "planted-by-the-group").unwrap();
    chmod(&dir, 0o775);
    let out = start_headless(&dir);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("its group can write it (mode 0775)"), "{err}");
    assert!(
        err.contains(&format!("`chmod 700 {}`", dir.display())),
        "{err}"
    );
    assert!(!dir.join("host.json").exists(), "it started anyway");
    assert_eq!(mode(&dir), 0o775, "refused, not silently changed");

    // The CLI takes neither the planted token nor a planted host.json that points it at a
    // listener of the planter's: nothing connects there, so no token is sent anywhere.
    let trap = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let planted = serde_json::json!({
        "pid": std::process::id(),
        "gateway": trap.local_addr().unwrap().to_string(),
        "mcp": trap.local_addr().unwrap().to_string(),
    });
    std::fs::write(dir.join("host.json"), planted.to_string()).unwrap();
    let cli = trapdesk()
        .args(["computers", "--timeout", "2s", "--data-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_ne!(cli.status.code(), Some(0), "{}", text(&cli.stderr));
    trap.set_nonblocking(true).unwrap();
    assert!(
        trap.accept().is_err(),
        "the CLI followed a planted host.json: {}",
        text(&cli.stderr)
    );
    std::fs::remove_file(dir.join("host.json")).unwrap();

    // In a private dir, a credential file everyone can write is refused the same way.
    chmod(&dir, 0o700);
    chmod(&dir.join("mcp-token"), 0o666);
    let out = start_headless(&dir);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("every user can write it (mode 0666)"), "{err}");
    let token = dir.join("mcp-token");
    assert!(
        err.contains(&format!("`chmod 600 {}`", token.display())),
        "{err}"
    );

    // And so is a --secret-file its group can write.
    let secret = base.path().join("secret-file");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    chmod(&secret, 0o620);
    chmod(&token, 0o600);
    let out = trapdesk()
        .args(["--mcp-only", "--gateway-bind", "127.0.0.1:0"])
        .args(["--mcp-bind", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .arg("--secret-file")
        .arg(&secret)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--secret-file"), "{err}");
    assert!(
        err.contains(&format!("`chmod 600 {}`", secret.display())),
        "{err}"
    );
    assert!(!err.contains(SECRET), "{err}");
}

#[test]
fn secrets_given_as_files_never_show_in_the_hosts_command_line() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("data");
    let secret = base.path().join("secret");
    let token = base.path().join("token");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    chmod(&secret, 0o600);
    chmod(&token, 0o600);
    let mut host = Running::start(
        &dir,
        &[
            "--secret-file",
            secret.to_str().unwrap(),
            "--mcp-token-file",
            token.to_str().unwrap(),
        ],
    );
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", host.child.id())).unwrap();
    let cmdline = text(&cmdline);
    assert!(cmdline.contains("--secret-file"), "{cmdline}");
    assert!(
        !cmdline.contains(SECRET) && !cmdline.contains(TOKEN),
        "{cmdline}"
    );
    // The file's token (its newline taken off) is the one the endpoint takes.
    let answer = |bearer: &str| {
        let out = trapdesk()
            .args(["computers", "--connect", &host.mcp])
            .arg("--data-dir")
            .arg(&dir)
            .env("TRAPDESK_TOKEN", bearer)
            .output()
            .unwrap();
        out.status.code()
    };
    assert_eq!(answer(TOKEN), Some(0));
    assert_eq!(answer("not-the-token"), Some(3));
    assert!(host.child.try_wait().unwrap().is_none());
    host.stop();

    // A value given on the command line is never repeated in an error.
    let weak = "weakweakweak";
    let out = trapdesk()
        .args(["--mcp-only", "--secret", weak, "--data-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(err.contains("--secret is too weak"), "{err}");
    assert!(!err.contains(weak), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_into_a_pipe_prints_no_secret() {
    let host = start_host().await;
    for json in [false, true] {
        let mut c = trapdesk();
        c.args(["doctor", "--connect", &host.mcp_url()])
            .args(["--gateway-bind", &host.gateway_addr.to_string()])
            .arg("--data-dir")
            .arg(host.dir.path())
            .current_dir(host.dir.path())
            .env("HOME", host.dir.path());
        if json {
            c.arg("--json");
        }
        let out = output(c).await;
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(!stdout.contains(SECRET), "{stdout}");
        assert!(stdout.contains("trapdesk secret show"), "{stdout}");
    }
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_players_escape_sequences_reach_the_cli_escaped() {
    let host = start_host().await;
    // OSC 52 writes the person's clipboard; CSI 2J clears the screen; U+202E reverses text.
    let osc52 = "\u{1b}]52;c;Y3VybCBldmlsfHNo\u{7}";
    let _player = FakeComputer::link(&host, 9, Some(&format!("{osc52}x"))).await;
    let _c = emulated(&host, 7, Some("miner")).await;
    let cli = |args: &[&str]| {
        let mut c = trapdesk();
        c.arg(args[0])
            .args(["--connect", &host.mcp_url()])
            .args(&args[1..])
            .env("TRAPDESK_DATA_DIR", host.dir.path());
        c
    };
    let listed = output(cli(&["computers"])).await;
    let stdout = text(&listed.stdout);
    assert!(stdout.contains("7:miner"), "{stdout}");
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    let json = output(cli(&["computers", "--json"])).await;
    assert!(
        !text(&json.stdout).contains('\u{1b}'),
        "{:?}",
        text(&json.stdout)
    );

    let ran = output(cli(&[
        "exec",
        "miner",
        "write('\\27]52;c;Y3VybA==\\7') print('line\\tnext') \
         return '\\27[2J', '\\226\\128\\174gnp.exe'",
    ]))
    .await;
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
    let stdout = text(&ran.stdout);
    assert!(
        stdout.contains("\u{fffd}]52;c;Y3VybA==\u{fffd}"),
        "{stdout:?}"
    );
    assert!(stdout.contains("line\tnext\n"), "{stdout:?}");
    for c in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(!stdout.contains(c), "{c:?} in {stdout:?}");
    }

    let failed = output(cli(&["exec", "miner", "error('\\27]52;c;aGk=\\7boom', 0)"])).await;
    assert_eq!(failed.status.code(), Some(1));
    let stderr = text(&failed.stderr);
    assert!(
        stderr.contains("boom") && !stderr.contains('\u{1b}'),
        "{stderr:?}"
    );

    // A refused hello's label is what `doctor` lists under the refused links.
    let mut bad = hello(11, Some(&format!("{osc52}intruder")));
    bad["secret"] = serde_json::json!("wrong");
    let mut raw = FakeComputer::connect_raw(&host).await;
    raw.send(&bad).await;
    let _ = raw.recv_close().await;
    for json in [false, true] {
        let mut c = cli(&["doctor", "--gateway-bind", &host.gateway_addr.to_string()]);
        c.current_dir(host.dir.path()).env("HOME", host.dir.path());
        if json {
            c.arg("--json");
        }
        let out = output(c).await;
        let stdout = text(&out.stdout);
        assert!(stdout.contains("intruder"), "{stdout}");
        assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
    }

    host.host.stop().await;
}

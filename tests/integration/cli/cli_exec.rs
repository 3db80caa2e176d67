//! `trapdesk exec`, `run` and `computers` through a real running host with emulated
//! computers: exit codes, what goes to stdout and what to stderr, `--json`, a chunk from
//! stdin, Ctrl-C cancelling on the computer, and the origin `cli` in the session log.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake};

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use support::{emulated, start_host, wait_until};

/// The binary against `host`, finding the host's local token in its data dir as it does on a
/// person's machine (no token in the environment).
fn trapdesk(host: &trapdesk::host::Host, args: &[&str]) -> Command {
    let mut c = trapdesk_at(&host.mcp_url(), args);
    c.env("TRAPDESK_DATA_DIR", &host.settings.data_dir);
    c
}

/// The binary against whatever answers at `url`, with no token at all.
fn trapdesk_at(url: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.env_remove("TRAPDESK_DATA_DIR");
    // Flags before the positionals: `run` hands everything after PATH to the program.
    c.arg(args[0]).args(["--connect", url]).args(&args[1..]);
    c.env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN");
    c
}

/// Runs the binary off the test's runtime threads (the host lives on them).
async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_prints_output_then_returns_and_exits_by_outcome() {
    let host = start_host().await;
    let _c = emulated(&host, 7, Some("miner")).await;

    let ok = output(trapdesk(
        &host,
        &[
            "exec",
            "miner",
            "print('hello') write('no newline') return 42, 'x'",
        ],
    ))
    .await;
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert_eq!(text(&ok.stdout), "hello\nno newline\n42, \"x\"\n");
    assert_eq!(text(&ok.stderr), "");

    let lua_error = output(trapdesk(
        &host,
        &["exec", "7", "print('before') error('boom')"],
    ))
    .await;
    assert_eq!(lua_error.status.code(), Some(1));
    assert_eq!(text(&lua_error.stdout), "before\n");
    let err = text(&lua_error.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("boom"), "{err}");

    let unknown = output(trapdesk(&host, &["exec", "nobody", "return 1"])).await;
    assert_eq!(unknown.status.code(), Some(3));
    assert_eq!(text(&unknown.stdout), "");
    let err = text(&unknown.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("trapdesk computers"), "{err}");

    let timed_out = output(trapdesk(
        &host,
        &["exec", "miner", "sleep(30)", "--timeout", "300ms"],
    ))
    .await;
    assert_eq!(
        timed_out.status.code(),
        Some(3),
        "{}",
        text(&timed_out.stderr)
    );
    assert!(text(&timed_out.stderr).contains("timeout"));

    // The session shows who did it: the origin `cli`.
    let log = host.session.recent(200);
    let mine: Vec<_> = log
        .iter()
        .filter(|e| e.who.as_deref() == Some("cli"))
        .collect();
    assert!(mine.len() >= 4, "{log:?}");
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_json_stdin_run_and_usage() {
    let host = start_host().await;
    let _c = emulated(&host, 3, Some("farm")).await;

    let json = output(trapdesk(
        &host,
        &["exec", "farm", "print('p') return {a=1}", "--json"],
    ))
    .await;
    assert_eq!(json.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["returns"][0]["value"]["a"], 1);
    assert_eq!(v["output"], "p\n");
    assert_eq!(v["traposId"], "3:farm");

    let failed = output(trapdesk(&host, &["exec", "farm", "error('x')", "--json"])).await;
    assert_eq!(failed.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&failed.stdout).unwrap();
    assert_eq!(v["ok"], false);

    let mut cmd = trapdesk(&host, &["exec", "farm", "-"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"local t = {}\nfor i = 1, 3 do t[#t+1] = i end\nreturn #t\n")
            .unwrap();
        drop(stdin);
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "3\n");

    std::fs::write(
        host.dir.path().join("computers/3/greet.lua"),
        "local who = ... print('hi ' .. who .. ' ' .. #arg) return arg[0]",
    )
    .unwrap();
    let ran = output(trapdesk(&host, &["run", "farm", "greet.lua", "bob", "-x"])).await;
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
    assert_eq!(text(&ran.stdout), "hi bob 2\n\"greet.lua\"\n");

    let missing = output(trapdesk(&host, &["run", "farm", "nothere.lua"])).await;
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing.stderr));

    let usage = output(trapdesk(&host, &["exec", "farm"])).await;
    assert_eq!(usage.status.code(), Some(2));
    let usage = output(trapdesk(&host, &["get", "farm", "x"])).await;
    assert_eq!(usage.status.code(), Some(2));
    assert!(text(&usage.stderr).contains("COMPUTER:PATH"));

    let listed = output(trapdesk(&host, &["computers", "--match", "f*"])).await;
    assert_eq!(listed.status.code(), Some(0));
    assert!(
        text(&listed.stdout).starts_with("3:farm\t"),
        "{}",
        text(&listed.stdout)
    );
    let none = output(trapdesk(&host, &["computers", "--match", "zzz*", "--json"])).await;
    let v: serde_json::Value = serde_json::from_slice(&none.stdout).unwrap();
    assert_eq!(v["computers"], serde_json::json!([]));
    host.host.stop().await;
}

#[test]
fn no_host_is_exit_3_with_one_line_saying_what_to_do() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = trapdesk_at(&url, &["computers"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("trapdesk --mcp-only"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_on_the_computer_and_exits_130() {
    let host = start_host().await;
    let _c = emulated(&host, 5, Some("slow")).await;
    let mut cmd = trapdesk(
        &host,
        &[
            "exec",
            "slow",
            "for i = 1, 600 do print('tick ' .. i) sleep(0.05) end",
        ],
    );
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    // The first live line proves the run is going on the computer. The reader stays open: a
    // closed pipe would end exec by itself.
    let (first, _reader) = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        (lines.next().unwrap().unwrap(), lines)
    })
    .await
    .unwrap();
    assert_eq!(first, "tick 1");
    assert_eq!(host.session.pending().len(), 1);
    let status = signal_and_wait(&mut child, "INT").await;
    assert_eq!(status.code(), Some(130));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(err, "trapdesk: Ctrl-C: cancelled the chunk on slow\n");
    // Cancelled on the computer, not just abandoned: the request ends as cancelled.
    cancelled_on_the_computer(&host).await;
    host.host.stop().await;
}

/// `trapdesk computers` lists every matching computer, however many pages of the host's
/// result budget they fill, and `--match` is the host's glob (ASCII case ignored, as in the
/// console's filter): a page here holds only a few computers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computers_walks_every_page() {
    let host = support::start_host_with(|s| s.max_result_bytes = 2_500).await;
    let mut linked = Vec::new();
    for id in 1..=9 {
        let label = if id % 3 == 0 { "Farm" } else { "miner" };
        linked.push(emulated(&host, id, Some(&format!("{label}-{id}"))).await);
    }
    let url = host.mcp_url();

    let all = output(trapdesk(&host, &["computers", "--json"])).await;
    assert_eq!(all.status.code(), Some(0), "{}", text(&all.stderr));
    let v: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    let ids: Vec<&str> = v["computers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["traposId"].as_str().unwrap())
        .collect();
    let want: Vec<String> = (1..=9)
        .map(|id| format!("{id}:{}-{id}", if id % 3 == 0 { "Farm" } else { "miner" }))
        .collect();
    assert_eq!(ids, want, "every computer once, in order");
    assert_eq!(v["nextCursor"], serde_json::Value::Null);

    // One page would not have held them all: the walk is what listed them.
    let (agent, _) = mcp_fake::connect(&url, &host.local_token).await;
    let page = mcp_fake::data(
        &mcp_fake::call(
            &agent,
            "probe-computers",
            serde_json::json!({"ping": false}),
        )
        .await,
    );
    assert!(page["computers"].as_array().unwrap().len() < 9, "{page}");
    assert!(page["nextCursor"].is_string(), "{page}");
    agent.cancel().await.unwrap();

    let farms = output(trapdesk(&host, &["computers", "--match", "farm*"])).await;
    assert_eq!(farms.status.code(), Some(0), "{}", text(&farms.stderr));
    let lines: Vec<String> = text(&farms.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(lines, ["3:Farm-3", "6:Farm-6", "9:Farm-9"]);
    host.host.stop().await;
}

/// Runs `exec` with `code` given on stdin.
async fn exec_stdin(host: &trapdesk::host::Host, computer: &str, code: Vec<u8>) -> Output {
    let mut cmd = trapdesk(host, &["exec", computer, "-"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // The child may stop reading early; what it says is what is checked.
        let _ = stdin.write_all(&code);
        drop(stdin);
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

/// A timeout past the host's limit or of 0 is a usage error (2) that says
/// what is allowed; a chunk over the host's body limit is "too large" with the limit (2), not
/// a lost host (3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_timeouts_and_oversized_chunks_are_usage_errors() {
    let host = start_host().await;
    let _c = emulated(&host, 4, Some("miner")).await;

    let long = output(trapdesk(
        &host,
        &["exec", "miner", "return 1", "--timeout", "11m"],
    ))
    .await;
    let err = text(&long.stderr);
    assert_eq!(long.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--timeout") && err.contains("at most 10m"),
        "{err}"
    );

    let zero = output(trapdesk(
        &host,
        &["exec", "miner", "return 1", "--timeout", "0"],
    ))
    .await;
    let err = text(&zero.stderr);
    assert_eq!(zero.status.code(), Some(2), "{err}");
    assert!(
        err.contains("more than 0") && !err.contains("not a duration"),
        "{err}"
    );

    let limit = host.settings.max_body_bytes;
    let mut chunk = b"return 1 --".to_vec();
    chunk.resize(5 << 20, b'x');
    let big = exec_stdin(&host, "miner", chunk).await;
    let err = text(&big.stderr);
    assert_eq!(big.status.code(), Some(2), "{err}");
    assert!(
        err.contains("too large") && err.contains(&limit.to_string()),
        "{err}"
    );
    assert!(!err.contains("lost the trapdesk"), "{err}");
    host.host.stop().await;
}

/// Sends `signal` (`INT`, `TERM`) to the CLI as a shell's `kill` does, and waits for it to end.
async fn signal_and_wait(
    child: &mut std::process::Child,
    signal: &str,
) -> std::process::ExitStatus {
    Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    crate::support::wait_some(
        Duration::from_secs(10),
        || child.try_wait().unwrap(),
        || format!("exec did not stop on SIG{signal}"),
    )
    .await
}

/// Waits until the session holds no pending request and has logged a `cli` request as
/// cancelled: the run was stopped on the computer, not just abandoned.
async fn cancelled_on_the_computer(host: &support::TestHost) {
    wait_until(|| host.session.pending().is_empty()).await;
    wait_until(|| {
        host.session.recent(50).iter().any(|e| {
            e.who.as_deref() == Some("cli")
                && matches!(e.status, Some(trapdesk::session::Status::Cancelled))
        })
    })
    .await;
}

/// `trapdesk exec … | head -1` as a shell runs it: the pipe closes after the first line, and
/// exec ends at once (not at its timeout, and a program that never returns does not hold the
/// pipeline open), cancels the run on the computer and exits 141, as a process SIGPIPE ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_ends_exec_and_cancels_the_run() {
    let host = start_host().await;
    let _c = emulated(&host, 5, Some("loop")).await;
    let bin = env!("CARGO_BIN_EXE_trapdesk");
    let script = format!(
        "set -o pipefail; '{bin}' exec --connect '{}' loop \"print('first') while true do sleep(1) end\" | head -1",
        host.mcp_url()
    );
    let started = std::time::Instant::now();
    let out = output({
        let mut c = Command::new("bash");
        c.args(["-c", &script])
            .env("TRAPDESK_DATA_DIR", &host.settings.data_dir)
            .env_remove("TRAPDESK_TOKEN");
        c
    })
    .await;
    assert_eq!(text(&out.stdout), "first\n");
    assert_eq!(out.status.code(), Some(141), "{}", text(&out.stderr));
    // Nothing to say: the person stopped reading on purpose.
    assert_eq!(text(&out.stderr), "");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );
    cancelled_on_the_computer(&host).await;
    // A pipe closed before anything is written, whichever comes first, the watch or the
    // returned value: the same quiet 141, never a panic.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut quick = trapdesk(&host, &["exec", "loop", "return 1"]);
    quick.stdout(writer);
    let out = output(quick).await;
    assert_eq!(out.status.code(), Some(141), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    host.host.stop().await;
}

/// SIGTERM (a `kill`, an editor stopping its task) cancels as Ctrl-C does, and exits 143.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_cancels_on_the_computer_and_exits_143() {
    let host = start_host().await;
    let _c = emulated(&host, 5, Some("slow")).await;
    let mut cmd = trapdesk(
        &host,
        &[
            "exec",
            "slow",
            "print('tick') while true do sleep(0.05) end",
        ],
    );
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let first = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        (line, stdout)
    })
    .await
    .unwrap();
    assert_eq!(first.0, "tick\n");
    let status = signal_and_wait(&mut child, "TERM").await;
    assert_eq!(status.code(), Some(143));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(err, "trapdesk: SIGTERM: cancelled the chunk on slow\n");
    cancelled_on_the_computer(&host).await;
    drop(first);
    host.host.stop().await;
}

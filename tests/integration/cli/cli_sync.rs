//! `trapdesk sync` through a real running host with an emulated computer: the first push,
//! only changed files re-sent, a save pushed and run, `--delete`, ignore rules, a computer
//! that unlinks and relinks in the middle, and the origin `sync` in the session.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use support::{TestHost, emulated, holds_within, start_host};

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
    c.arg(args[0]).args(["--connect", url]).args(&args[1..]);
    c.env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN");
    c
}

/// A running `trapdesk sync` with its stdout and stderr lines as they come.
struct Sync {
    child: Child,
    out: mpsc::Receiver<String>,
    err: mpsc::Receiver<String>,
    seen_err: Vec<String>,
}

impl Sync {
    fn start(host: &trapdesk::host::Host, args: &[&str]) -> Sync {
        let mut cmd = trapdesk(host, args);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let lines = |r: Box<dyn std::io::Read + Send>| {
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for l in BufReader::new(r).lines().map_while(Result::ok) {
                    if tx.send(l).is_err() {
                        break;
                    }
                }
            });
            rx
        };
        let out = lines(Box::new(child.stdout.take().unwrap()));
        let err = lines(Box::new(child.stderr.take().unwrap()));
        Sync {
            child,
            out,
            err,
            seen_err: Vec::new(),
        }
    }

    /// Waits for a stderr line containing `needle`.
    async fn err_line(&mut self, needle: &str) -> String {
        let limit = Duration::from_secs(15);
        let mut found = None;
        let (err, seen) = (&self.err, &mut self.seen_err);
        let got = holds_within(limit, || {
            while let Ok(l) = err.try_recv() {
                seen.push(l.clone());
                if l.contains(needle) {
                    found = Some(l);
                    return true;
                }
            }
            false
        })
        .await;
        match found {
            Some(l) if got => l,
            _ => panic!(
                "no {needle:?} on stderr; saw {:?} (waited {limit:?})",
                self.seen_err
            ),
        }
    }

    /// Waits for a stdout line equal to `want`.
    async fn out_line(&mut self, want: &str) {
        let limit = Duration::from_secs(15);
        let mut seen = Vec::new();
        let out = &self.out;
        let got = holds_within(limit, || {
            while let Ok(l) = out.try_recv() {
                if l == want {
                    return true;
                }
                seen.push(l);
            }
            false
        })
        .await;
        assert!(
            got,
            "no {want:?} on stdout; saw {seen:?} (waited {limit:?})"
        );
    }

    /// Ctrl-C: the sync stops with 130.
    async fn stop(self) {
        self.stop_with("INT", 130).await;
    }

    /// Sends `signal` (`INT`, `TERM`); the sync stops with `code`. Returns every stderr line.
    async fn stop_with(mut self, signal: &str, code: i32) -> Vec<String> {
        let _ = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status();
        let mut status = None;
        let child = &mut self.child;
        let stopped = holds_within(Duration::from_secs(10), || {
            status = child.try_wait().unwrap();
            status.is_some()
        })
        .await;
        let Some(status) = status.filter(|_| stopped) else {
            let _ = self.child.kill();
            panic!(
                "sync did not stop on SIG{signal}; stderr {:?}",
                self.seen_err
            );
        };
        assert_eq!(status.code(), Some(code), "{:?}", self.seen_err);
        // The process is gone: its stderr ends, and the reader thread with it.
        while let Ok(l) = self.err.recv_timeout(Duration::from_secs(5)) {
            self.seen_err.push(l);
        }
        self.seen_err
    }
}

async fn output(mut cmd: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

async fn wait_for(cond: impl FnMut() -> bool, what: &str) {
    crate::support::wait_for(Duration::from_secs(15), cond, || what.to_owned()).await;
}

fn writes_by_sync(host: &TestHost) -> usize {
    host.session
        .recent(1000)
        .iter()
        .filter(|e| {
            e.event.as_str() == "tool_call"
                && e.who.as_deref() == Some("sync")
                && e.what.as_deref() == Some("write-file")
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_pushes_what_differs_and_respects_ignores() {
    let host = start_host().await;
    let _c = emulated(&host, 2, Some("dev")).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("lib")).unwrap();
    std::fs::write(d.join("main.lua"), "print('main')").unwrap();
    std::fs::write(d.join("lib/util.lua"), "return {}").unwrap();
    std::fs::write(d.join("notes.md"), "private notes").unwrap();
    std::fs::write(d.join("secret.txt"), "hunter2").unwrap();
    std::fs::write(d.join(".gitignore"), "secret.txt\n").unwrap();
    let remote = host.dir.path().join("computers/2/proj");
    let local = d.to_str().unwrap();

    let first = output(trapdesk(
        &host,
        &["sync", local, "dev:/proj", "--once", "--ignore", "*.md"],
    ))
    .await;
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(remote.join("main.lua")).unwrap(),
        "print('main')"
    );
    assert_eq!(
        std::fs::read_to_string(remote.join("lib/util.lua")).unwrap(),
        "return {}"
    );
    assert!(
        !remote.join("notes.md").exists(),
        "--ignore was not respected"
    );
    assert!(
        !remote.join("secret.txt").exists(),
        ".gitignore was not respected"
    );
    assert!(
        !remote.join(".gitignore").exists(),
        "the .gitignore itself is not for the computer"
    );
    let after_first = writes_by_sync(&host);
    assert_eq!(after_first, 2, "main.lua and lib/util.lua");

    // Nothing changed: nothing is sent again.
    let again = output(trapdesk(
        &host,
        &["sync", local, "dev:/proj", "--once", "--ignore", "*.md"],
    ))
    .await;
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(writes_by_sync(&host), after_first);

    // One file changed: only it is sent. One deleted with --delete: it goes remotely too.
    std::fs::write(d.join("main.lua"), "print('main v2')").unwrap();
    std::fs::remove_file(d.join("lib/util.lua")).unwrap();
    let third = output(trapdesk(
        &host,
        &[
            "sync",
            local,
            "dev:/proj",
            "--once",
            "--delete",
            "--ignore",
            "*.md",
        ],
    ))
    .await;
    assert_eq!(
        third.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    assert_eq!(writes_by_sync(&host), after_first + 1);
    assert_eq!(
        std::fs::read_to_string(remote.join("main.lua")).unwrap(),
        "print('main v2')"
    );
    assert!(
        !remote.join("lib/util.lua").exists(),
        "--delete did not delete"
    );

    // --pull brings the computer's files down into an empty folder.
    std::fs::write(remote.join("made-there.lua"), "x").unwrap();
    let down = tempfile::tempdir().unwrap();
    let pulled = output(trapdesk(
        &host,
        &[
            "sync",
            down.path().to_str().unwrap(),
            "dev:/proj",
            "--once",
            "--pull",
        ],
    ))
    .await;
    assert_eq!(
        pulled.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&pulled.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(down.path().join("made-there.lua")).unwrap(),
        "x"
    );
    assert_eq!(
        std::fs::read_to_string(down.path().join("main.lua")).unwrap(),
        "print('main v2')"
    );
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_is_pushed_and_run_and_a_relinked_computer_gets_pending_pushes() {
    let host = start_host().await;
    let c = emulated(&host, 6, Some("bot")).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("show.lua"), "print('version 1')").unwrap();
    let remote = host.dir.path().join("computers/6/app");

    let mut sync = Sync::start(
        &host,
        &[
            "sync",
            d.to_str().unwrap(),
            "bot:/app",
            "--delete",
            "--run",
            "app/show.lua",
        ],
    );
    sync.err_line("watching").await;
    sync.out_line("version 1").await;

    // A save: pushed, then run, its output streamed.
    std::fs::write(d.join("show.lua"), "print('version 2')").unwrap();
    sync.out_line("version 2").await;
    assert_eq!(
        std::fs::read_to_string(remote.join("show.lua")).unwrap(),
        "print('version 2')"
    );

    // A save while a run is still going cancels that run.
    std::fs::write(d.join("show.lua"), "print('long') sleep(60)").unwrap();
    sync.out_line("long").await;
    std::fs::write(d.join("show.lua"), "print('version 3')").unwrap();
    sync.err_line("cancelled").await;
    sync.out_line("version 3").await;

    // A local delete deletes remotely.
    std::fs::write(d.join("tmp.lua"), "x").unwrap();
    wait_for(|| remote.join("tmp.lua").exists(), "tmp.lua not pushed").await;
    std::fs::remove_file(d.join("tmp.lua")).unwrap();
    wait_for(|| !remote.join("tmp.lua").exists(), "tmp.lua not deleted").await;

    // The computer goes away; a save waits for it and goes out once it is back.
    c.shutdown();
    c.wait_stopped().await;
    wait_for(
        || host.session.computer("6:bot").is_none_or(|c| !c.online),
        "computer still online",
    )
    .await;
    std::fs::write(d.join("show.lua"), "print('while away')").unwrap();
    sync.err_line("waits for").await;
    let _back = emulated(&host, 6, Some("bot")).await;
    wait_for(
        || {
            std::fs::read_to_string(remote.join("show.lua"))
                .is_ok_and(|s| s == "print('while away')")
        },
        "the pending push did not reach the relinked computer",
    )
    .await;
    sync.out_line("while away").await;
    sync.stop().await;
    host.host.stop().await;
}

/// A file the computer refuses (here: bigger than a default computer's free disk) is said
/// with its reason, the others still go, and `--once` exits 1 naming it: a Makefile must not
/// go on believing the computer has the new code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_exits_non_zero_when_the_computer_refuses_a_file() {
    let host = start_host().await;
    let _c = emulated(&host, 4, Some("dev")).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.lua"), "print('fits')").unwrap();
    // Past the 1,000,000-byte quota whatever the client takes.
    std::fs::write(dir.path().join("huge.bin"), vec![b'x'; 1_100_000]).unwrap();
    let out = output(trapdesk(
        &host,
        &["sync", dir.path().to_str().unwrap(), "dev:/p", "--once"],
    ))
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("huge.bin not pushed"), "{err}");
    assert!(err.contains("1 file not pushed"), "{err}");
    assert_eq!(
        std::fs::read_to_string(host.dir.path().join("computers/4/p/small.lua")).unwrap(),
        "print('fits')"
    );
    assert!(!host.dir.path().join("computers/4/p/huge.bin").exists());
    host.host.stop().await;
}

/// After a run, sync says one short line (the result's summary), not the
/// whole structured result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_ends_in_one_short_line() {
    let host = start_host().await;
    let _c = emulated(&host, 3, Some("dev")).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hi.lua"), "print('hi') return 42").unwrap();
    let out = output(trapdesk(
        &host,
        &[
            "sync",
            dir.path().to_str().unwrap(),
            "dev:/p",
            "--once",
            "--run",
            "p/hi.lua",
        ],
    ))
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("hi"));
    let ran: Vec<&str> = err.lines().filter(|l| l.contains("ran p/hi.lua")).collect();
    assert_eq!(ran.len(), 1, "{err}");
    assert!(!err.contains('{'), "no JSON on stderr: {err}");
    assert!(ran[0].len() < 200, "{}", ran[0]);
    host.host.stop().await;
}

/// Under a policy that asks before every run and write, a sync whose files
/// are already on the computer asks nothing: its comparison is `file-info`, a read, not code
/// shipped to the computer. (No approver is attached, so any ask would be refused at once and
/// the sync would fail.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_sync_under_ask_asks_nothing() {
    let host = support::start_host_with(|s| {
        s.policy = trapdesk::policy::Policy::from_toml(
            "[policy.default]\nagent = { exec = \"ask\", write = \"ask\", read = \"allow\" }\n",
        )
        .unwrap();
    })
    .await;
    let _c = emulated(&host, 2, Some("dev")).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.lua"), "print('same')").unwrap();
    let remote = host.dir.path().join("computers/2/proj");
    std::fs::create_dir_all(&remote).unwrap();
    std::fs::write(remote.join("main.lua"), "print('same')").unwrap();

    let out = output(trapdesk(
        &host,
        &["sync", dir.path().to_str().unwrap(), "dev:/proj", "--once"],
    ))
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let refused: Vec<_> = host
        .session
        .recent(1000)
        .into_iter()
        .filter(|e| e.event.as_str() == "refused")
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(writes_by_sync(&host), 0);

    // The policy does ask: a changed file is a write, refused here for want of an approver.
    std::fs::write(dir.path().join("main.lua"), "print('changed')").unwrap();
    let changed = output(trapdesk(
        &host,
        &["sync", dir.path().to_str().unwrap(), "dev:/proj", "--once"],
    ))
    .await;
    let said = String::from_utf8_lossy(&changed.stderr);
    assert_eq!(
        std::fs::read_to_string(remote.join("main.lua")).unwrap(),
        "print('same')",
        "{said}"
    );
    assert!(
        host.session
            .recent(1000)
            .iter()
            .any(|e| e.event.as_str() == "refused"),
        "the write was not asked for"
    );
    host.host.stop().await;
}

/// Ctrl-C or SIGTERM while a `--run` is going: the run is cancelled and the sync says it was
/// that, not a save (130 for Ctrl-C, 143 for SIGTERM).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_and_sigterm_say_what_stopped_the_run() {
    let host = start_host().await;
    let _c = emulated(&host, 6, Some("bot")).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("long.lua"), "print('long') sleep(60)").unwrap();
    for (signal, code, name) in [("INT", 130, "Ctrl-C"), ("TERM", 143, "SIGTERM")] {
        let mut sync = Sync::start(
            &host,
            &[
                "sync",
                d.to_str().unwrap(),
                "bot:/app",
                "--run",
                "app/long.lua",
            ],
        );
        sync.err_line("watching").await;
        sync.out_line("long").await;
        let err = sync.stop_with(signal, code).await;
        assert!(
            err.contains(&format!("sync: app/long.lua cancelled ({name})")),
            "{err:?}"
        );
        assert!(
            err.contains(&format!("trapdesk: {name}: sync stopped")),
            "{err:?}"
        );
        assert!(!err.iter().any(|l| l.contains("save")), "{err:?}");
        wait_until_nothing_pending(&host).await;
    }
    host.host.stop().await;
}

async fn wait_until_nothing_pending(host: &TestHost) {
    wait_for(
        || host.session.pending().is_empty(),
        "the run still pending",
    )
    .await;
}

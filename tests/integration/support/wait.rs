//! Waiting on a condition, the one way the tests wait: each helper polls what the test is
//! waiting for and fails, saying what did not happen, once a limit passes. A test never sleeps
//! for a guessed time in the hope that something happened meanwhile; the few sleeps that are
//! the thing under test (a quiet period, a fixed moment to strike) say so where they are.

use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use super::PROMPT;

/// How often a condition is looked at again.
const EVERY: Duration = Duration::from_millis(10);
/// How often an awaited probe runs again: each is a call through the host (an MCP tool, a
/// chunk on the computer), work on cores the computers share.
const EVERY_CALL: Duration = Duration::from_millis(50);

/// Polls `cond` every 10 ms until it holds; panics after [`PROMPT`].
pub async fn wait_until(cond: impl FnMut() -> bool) {
    wait_for(PROMPT, cond, || String::from("condition not met in time")).await;
}

/// Polls `cond` every 10 ms until it holds: the one wait on a condition the tests share, in
/// place of a sleep that guesses how long the condition takes. Panics with `why()` (what did
/// not happen, with whatever explains it) once `limit` has passed without it.
pub async fn wait_for(limit: Duration, cond: impl FnMut() -> bool, why: impl FnOnce() -> String) {
    if !holds_within(limit, cond).await {
        panic!("{} (waited {limit:?})", why());
    }
}

/// Polls `cond` every 10 ms until it holds (true) or `limit` has passed (false).
pub async fn holds_within(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() >= limit {
            return false;
        }
        tokio::time::sleep(EVERY).await;
    }
    true
}

/// [`wait_for`] a value: polls `get` until it returns one.
pub async fn wait_some<T>(
    limit: Duration,
    mut get: impl FnMut() -> Option<T>,
    why: impl FnOnce() -> String,
) -> T {
    let mut got = None;
    wait_for(
        limit,
        || {
            got = get();
            got.is_some()
        },
        why,
    )
    .await;
    match got {
        Some(v) => v,
        None => unreachable!("wait_for returned without the condition"),
    }
}

/// [`wait_for`] with a probe that must itself await (an MCP call, a chunk run on the computer):
/// `probe` runs until it gives `Ok`, whose value this returns; after `limit` it panics with the
/// last `Err` (what the probe saw instead).
pub async fn wait_ok<T>(limit: Duration, mut probe: impl AsyncFnMut() -> Result<T, String>) -> T {
    let start = Instant::now();
    loop {
        match probe().await {
            Ok(v) => return v,
            Err(seen) if start.elapsed() >= limit => panic!("{seen} (waited {limit:?})"),
            Err(_) => tokio::time::sleep(EVERY_CALL).await,
        }
    }
}

/// [`wait_for`] on a thread outside any runtime (a test that drives a child process).
pub fn wait_blocking(limit: Duration, cond: impl FnMut() -> bool, why: impl FnOnce() -> String) {
    if !holds_within_blocking(limit, cond) {
        panic!("{} (waited {limit:?})", why());
    }
}

/// [`holds_within`] on a thread outside any runtime, looking every [`EVERY_CALL`]: what such a
/// test looks at is mostly another process (its exit, a tmux pane, a CLI run).
pub fn holds_within_blocking(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(EVERY_CALL);
    }
    true
}

/// The exit status of `child` once it has exited, polled without blocking; panics with `why`
/// when it has not within `limit`.
pub fn exit_within(child: &mut Child, limit: Duration, why: &str) -> ExitStatus {
    let mut status = None;
    wait_blocking(
        limit,
        || {
            status = child.try_wait().unwrap();
            status.is_some()
        },
        || why.to_owned(),
    );
    match status {
        Some(s) => s,
        None => unreachable!("wait_blocking returned before the exit"),
    }
}

/// Lua that makes the file `/<name>` on the computer it runs on: a chunk's sign that it has
/// got to where a test waits for it (into `read()`, into `os.pullEvent`). Nothing yields
/// between the mark and the wait after it, and a computer runs one coroutine at a time, so
/// what the test sends once it sees the file finds the chunk waiting.
pub fn lua_mark(name: &str) -> String {
    format!("fs.open('/{name}', 'w').close() ")
}

/// Waits until `files` (a computer's files) hold the mark `name` a chunk made with
/// [`lua_mark`], and removes it.
pub async fn wait_mark(files: &Path, name: &str) {
    let path = files.join(name);
    wait_for(
        Duration::from_secs(60),
        || path.exists(),
        || format!("the chunk never made its mark {name}"),
    )
    .await;
    let _ = std::fs::remove_file(&path);
}

//! What `wait-request` and a timed-out call say of a run is what happened, through a real MCP
//! client (rmcp): a match of `until` after heavy output comes in one call with its line's
//! number in the run; a run that died with its host is `lost` (`host_restarted`), a result no
//! longer kept is `expired`, an id never issued is `unknown_request`, each in the session log;
//! a timeout that could not stop its chunk says `stopped: false`, and the log says when the
//! computer answered again (docs/mcp.md, "Detached runs" and "Errors").
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::world::{Runtime, World, on_both_runtimes};
use crate::support::{self, SECRET, mcp_fake as fake, tear};

fn data(r: &rmcp::model::CallToolResult) -> Value {
    fake::data(r)
}

/// The events named `event` about request `id` in a `session-log` answer.
fn logged(d: &Value, event: &str, id: &str) -> Vec<Value> {
    d["events"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|e| e["event"] == event && e["requestId"] == id)
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// 1,000 lines, then `MARK` seconds later: one `wait-request {until}` answers the match, with
/// the line's number in the run, the cursor at it, what it did not show, and how long it
/// waited; `after` that cursor on the ended run gives only what came after.
async fn until_after_heavy_output(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "detach": true,
                "code": "for i = 1, 1000 do print('line ' .. i) end sleep(3) print('MARK') sleep(0.5) print('tail') return 7"}),
        )
        .await;
    let id = data(&r)["requestId"].as_str().unwrap().to_owned();
    let limit = rt.patience(Duration::from_secs(60)).as_millis() as u64;
    let r = w
        .call(
            "wait-request",
            json!({"requestId": id, "until": "MARK", "timeoutMs": limit}),
        )
        .await;
    let d = data(&r);
    let text = fake::text(&r);
    assert_ne!(r.is_error, Some(true), "{text}");
    assert_eq!(d["matched"], true, "{text}");
    assert_eq!(d["line"], "MARK", "{text}");
    assert_eq!(d["lineNumber"], 1001, "{text}");
    // A compact page: each line's text once in `output`, one time per line in `times`.
    let shown = d["times"].as_array().unwrap().len() as u64;
    assert_eq!(d["skipped"].as_u64().unwrap() + shown, 1001, "{text}");
    let output = d["output"].as_str().unwrap();
    assert_eq!(output.lines().count() as u64, shown, "{text}");
    assert_eq!(output.lines().last(), Some("MARK"), "{text}");
    assert!(d["waitedMs"].as_u64().unwrap() >= 1000, "{text}");
    assert!(!text.contains("waiting 0 ms"), "{text}");
    let cursor = d["cursor"].as_u64().unwrap();
    assert!(text.contains(&format!("after={cursor}")), "{text}");
    // The end, after the cursor: only what came after the match. `tail` reaches the host
    // before the run's answer, so the run is first waited to its end: then it is the ended
    // run that is read (on a loaded machine the answer came after the matched line).
    let r = w
        .call("wait-request", json!({"requestId": id, "timeoutMs": limit}))
        .await;
    assert_eq!(data(&r)["status"], "ok", "{}", fake::text(&r));
    let r = w
        .call(
            "wait-request",
            json!({"requestId": id, "after": cursor, "until": "tail", "timeoutMs": limit}),
        )
        .await;
    let d = data(&r);
    assert_eq!(d["status"], "ok", "{d}");
    assert_eq!(d["returns"][0]["value"], 7, "{d}");
    assert_eq!(d["output"], "tail\n", "{d}");
    assert_eq!(d["outputAfter"], cursor, "{d}");
    assert_eq!(d["matched"], true, "{d}");
    assert_eq!(d["lineNumber"], 1002, "{d}");
}

on_both_runtimes!(until_after_heavy_output);

/// `timeoutMs: 2000` on a chunk that never yields: the call says it timed out and that the
/// computer did not stop it; the log says when the computer answered again (CC's watchdog
/// ends the chunk after 7 s without a yield).
async fn a_timeout_that_could_not_stop(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "while true do end", "timeoutMs": 2000}),
        )
        .await;
    let d = data(&r);
    let text = fake::text(&r);
    assert_eq!(r.is_error, Some(true), "{text}");
    assert_eq!(d["error"]["code"], "timeout", "{text}");
    assert_eq!(d["stopped"], false, "{text}");
    assert!(text.contains("did not stop"), "{text}");
    let id = d["requestId"].as_str().unwrap().to_owned();
    let mut late = Vec::new();
    let t0 = std::time::Instant::now();
    while late.is_empty() && t0.elapsed() < rt.patience(Duration::from_secs(30)) {
        let log = data(&w.call("session-log", json!({"limit": 1000})).await);
        late = logged(&log, "late_answer", &id);
        if late.is_empty() {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    assert_eq!(late.len(), 1, "no late_answer for {id}");
    assert!(late[0]["durationMs"].as_u64().unwrap() > 0, "{}", late[0]);
    // A chunk that yields stops when asked: `stopped: true`.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "while true do sleep(0.05) end", "timeoutMs": 1500}),
        )
        .await;
    let d = data(&r);
    assert_eq!(d["error"]["code"], "timeout", "{d}");
    assert_eq!(d["stopped"], true, "{d}");
}

on_both_runtimes!(a_timeout_that_could_not_stop);

/// An id this host never issued is `unknown_request`; one it issued whose result it no longer
/// keeps is `expired`; both are in the session log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_and_unknown_requests_are_told_apart() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    let r = w
        .call("wait-request", json!({"requestId": "h-zzzzzz-1"}))
        .await;
    assert_eq!(data(&r)["error"]["code"], "unknown_request", "{}", data(&r));
    // 65 ended requests push the first one's result out (the last 64 are kept).
    let first = data(
        &w.call("exec-lua", json!({"traposId": "miner", "code": "return 1"}))
            .await,
    )["requestId"]
        .as_str()
        .unwrap()
        .to_owned();
    for _ in 0..64 {
        w.call("exec-lua", json!({"traposId": "miner", "code": "return 2"}))
            .await;
    }
    let r = w.call("wait-request", json!({"requestId": first})).await;
    let d = data(&r);
    assert_eq!(d["error"]["code"], "expired", "{d}");
    let log = data(&w.call("session-log", json!({"limit": 1000})).await);
    assert_eq!(logged(&log, "expired", &first).len(), 1, "{log}");
    assert_eq!(
        logged(&log, "unknown_request", "h-zzzzzz-1").len(),
        1,
        "{log}"
    );
}

/// A `--demo` host is killed under a detached run on one of its own emulated computers and
/// started again: the run died with it, and `wait-request` says `lost`, `host_restarted`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_run_is_lost_with_its_host() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, mcp) = (tear::free_port(), tear::free_port());
    let host_dir = dir.path().join("host");
    let mut host = demo_host(&host_dir, gw, mcp);
    let agent = crate::support::tear::agent_when_answering(mcp, &host_dir, "miner").await;
    let r = fake::call(
        &agent,
        "exec-lua",
        json!({"traposId": "miner", "code": "sleep(60)", "detach": true}),
    )
    .await;
    let id = data(&r)["requestId"].as_str().unwrap().to_owned();
    drop(agent);
    host.start_kill().unwrap();
    let _ = host.wait().await;
    let _host = demo_host(&host_dir, gw, mcp);
    let agent = crate::support::tear::agent_when_answering(mcp, &host_dir, "miner").await;
    let r = fake::call(&agent, "wait-request", json!({"requestId": id})).await;
    let d = data(&r);
    assert_eq!(r.is_error, Some(true), "{d}");
    assert_eq!(d["error"]["code"], "lost", "{d}");
    assert_eq!(d["reason"], "host_restarted", "{d}");
    let log = data(&fake::call(&agent, "session-log", json!({"limit": 1000})).await);
    assert!(!logged(&log, "lost", &id).is_empty(), "{log}");
}

fn demo_host(dir: &std::path::Path, gw: u16, mcp: u16) -> tokio::process::Child {
    tokio::process::Command::new(support::trapdesk_exe())
        .args(["--mcp-only", "--demo", "1", "--data-dir"])
        .arg(dir)
        .env("SANDBOX_PASSWORD", SECRET)
        .args(["--gateway-bind", &format!("127.0.0.1:{gw}")])
        .args(["--mcp-bind", &format!("127.0.0.1:{mcp}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

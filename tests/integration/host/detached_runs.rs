//! Detached runs through a real MCP client (rmcp): `exec-lua` with `detach` answers at once and
//! the run goes on; `wait-request` waits for a text, for the end (the full result) or for its
//! timeout, and never cancels; detached runs have their own budget, so they never block a ping
//! or a short call; a dropped link and a restarted host do not end them, and the host takes
//! them back under the same requestId (docs/mcp.md and docs/protocol.md, "Detached runs").
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, craftos, mcp_fake as fake, tear, world};

use std::time::{Duration, Instant};

use crate::support::world::on_both_runtimes;
use serde_json::{Value, json};
use support::SECRET;
use world::{Runtime, Spec, World};

fn data(r: &rmcp::model::CallToolResult) -> Value {
    fake::data(r)
}

/// Starts a detached chunk and checks that the answer came at once, running.
async fn detach(client: &fake::Client, target: &str, code: &str) -> String {
    let t0 = Instant::now();
    let r = fake::call(
        client,
        "exec-lua",
        json!({"traposId": target, "code": code, "detach": true}),
    )
    .await;
    let d = data(&r);
    assert_ne!(r.is_error, Some(true), "{d}");
    assert_eq!(d["status"], "running", "{d}");
    assert!(d["traposId"].is_string(), "{d}");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "detach took {:?}",
        t0.elapsed()
    );
    d["requestId"].as_str().unwrap().to_owned()
}

fn texts(d: &Value) -> Vec<String> {
    fake::page_lines(d)
        .iter()
        .map(|x| x["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Detach answers at once; wait-request finds a text (with the cursor to go on from), then the
/// end with the full result, as exec-lua would have answered; a wait that times out says
/// running with the output so far; computer-output gives lines after a cursor, with times
/// and the request's status.
async fn detach_and_wait(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    let id = detach(
        &w.client,
        "miner",
        "for i = 1, 3 do print('tick ' .. i) sleep(0.2) end print('ready') sleep(1) print('late') return 42",
    )
    .await;
    // The text: running, the lines up to it, a cursor.
    let r = w
        .call(
            "wait-request",
            json!({"requestId": id, "until": "ready", "timeoutMs": 20000}),
        )
        .await;
    let d = data(&r);
    assert_ne!(r.is_error, Some(true), "{d}");
    assert_eq!(d["status"], "running", "{d}");
    assert_eq!(d["matched"], true, "{d}");
    assert_eq!(d["line"], "ready", "{d}");
    assert_eq!(texts(&d), ["tick 1", "tick 2", "tick 3", "ready"], "{d}");
    let cursor = d["cursor"].as_u64().unwrap();
    // computer-output after the cursor: nothing newer yet, and the status.
    let r = w
        .call(
            "computer-output",
            json!({"traposId": "miner", "requestId": id, "after": 0}),
        )
        .await;
    let d = data(&r);
    assert_eq!(d["status"], "running", "{d}");
    let first = &fake::page_lines(&d)[0];
    assert!(first["at"].as_u64().unwrap() > 1_700_000_000_000, "{d}");
    // The end: the full result, after the cursor.
    let r = w
        .call(
            "wait-request",
            json!({"requestId": id, "after": cursor, "timeoutMs": 20000}),
        )
        .await;
    let d = data(&r);
    assert_ne!(r.is_error, Some(true), "{d}");
    assert_eq!(d["status"], "ok", "{d}");
    assert_eq!(d["returns"][0]["value"], 42, "{d}");
    assert!(d["output"].as_str().unwrap().contains("late"), "{d}");
    // Asked again later: the same result.
    let r = w
        .call("wait-request", json!({"requestId": id, "timeoutMs": 1000}))
        .await;
    assert_eq!(data(&r)["returns"][0]["value"], 42);
    let r = w
        .call(
            "computer-output",
            json!({"traposId": "miner", "requestId": id, "after": cursor}),
        )
        .await;
    let d = data(&r);
    assert_eq!(d["status"], "ok", "{d}");
    assert_eq!(texts(&d), ["late"], "{d}");
    // A Lua error ends as exec-lua's would: isError.
    let id = detach(&w.client, "miner", "sleep(0.3) error('boom')").await;
    let r = w
        .call("wait-request", json!({"requestId": id, "timeoutMs": 20000}))
        .await;
    assert_eq!(r.is_error, Some(true), "{}", data(&r));
    assert!(
        data(&r)["error"].as_str().unwrap().contains("boom"),
        "{}",
        data(&r)
    );
    // The timeout: running, output so far.
    let id = detach(&w.client, "miner", "print('started') sleep(30)").await;
    let t0 = Instant::now();
    let r = w
        .call(
            "wait-request",
            json!({"requestId": id, "until": "never printed", "timeoutMs": 1500}),
        )
        .await;
    let d = data(&r);
    assert_ne!(r.is_error, Some(true), "{d}");
    assert_eq!(d["status"], "running", "{d}");
    assert_eq!(d["matched"], false, "{d}");
    assert!(
        t0.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        t0.elapsed()
    );
    assert!(d["output"].as_str().unwrap().contains("started"), "{d}");
    let r = w.call("cancel-request", json!({"requestId": id})).await;
    assert_ne!(r.is_error, Some(true), "{}", data(&r));
    let r = w
        .call("wait-request", json!({"requestId": id, "timeoutMs": 20000}))
        .await;
    assert_eq!(data(&r)["status"], "cancelled", "{}", data(&r));
    // run-file detaches the same way, its program's arguments as usual.
    let r = w
        .call(
            "write-file",
            json!({"traposId": "miner", "path": "job.lua", "content": "local n = ... sleep(0.3) print('job ' .. n) return n"}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", data(&r));
    let r = w
        .call(
            "run-file",
            json!({"traposId": "miner", "path": "job.lua", "args": ["7"], "detach": true}),
        )
        .await;
    let d = data(&r);
    assert_eq!(d["status"], "running", "{d}");
    let r = w
        .call(
            "wait-request",
            json!({"requestId": d["requestId"], "timeoutMs": 20000}),
        )
        .await;
    let d = data(&r);
    assert_eq!(d["status"], "ok", "{d}");
    assert_eq!(d["returns"][0]["value"], "7", "{d}");
    assert_eq!(d["output"], "job 7\n", "{d}");
}

on_both_runtimes!(detach_and_wait);

/// A wait cancelled by its MCP client (or timed out) leaves the run alone: it finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_never_cancels_the_run() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    let id = detach(&w.client, "miner", "sleep(1.5) return 'done'").await;
    let handle = fake::start_call(
        &w.client,
        "wait-request",
        json!({"requestId": id, "timeoutMs": 20000}),
    )
    .await;
    // The wait is under way at the host before its client goes away.
    support::wait_for(
        Duration::from_secs(10),
        || w.session().tool_calls_running() >= 1,
        || format!("the wait never started: {:?}", w.session().tool_calls()),
    )
    .await;
    handle
        .cancel(Some("the waiter goes away".into()))
        .await
        .unwrap();
    let r = w
        .call("wait-request", json!({"requestId": id, "timeoutMs": 100}))
        .await;
    assert_eq!(data(&r)["status"], "running", "{}", data(&r));
    let r = w
        .call("wait-request", json!({"requestId": id, "timeoutMs": 20000}))
        .await;
    let d = data(&r);
    assert_eq!(d["status"], "ok", "{d}");
    assert_eq!(d["returns"][0]["value"], "done", "{d}");
    // An ordinary call can be waited on too (by another caller): the same result as its own.
    let call = fake::start_call(
        &w.client,
        "exec-lua",
        json!({"traposId": "miner", "code": "sleep(0.5) return 5"}),
    )
    .await;
    let id = support::wait_some(
        Duration::from_secs(10),
        || {
            w.session()
                .pending()
                .into_iter()
                .next()
                .map(|p| p.request_id)
        },
        || "the call was never pending".to_owned(),
    )
    .await;
    let r = w
        .call("wait-request", json!({"requestId": id, "timeoutMs": 20000}))
        .await;
    assert_eq!(data(&r)["returns"][0]["value"], 5, "{}", data(&r));
    let own = match call.await_response().await.unwrap() {
        rmcp::model::ServerResult::CallToolResult(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(data(&own)["returns"], data(&r)["returns"]);
}

/// Detached runs count against their own budget: with one in-flight slot and two detached
/// runs going, a ping and a short chunk still answer at once; a third detached run is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_detached_budget_does_not_block_a_ping() {
    let w = World::boot_adjusted(
        Runtime::Emulator,
        |s| {
            s.max_in_flight = 1;
            s.max_detached = 2;
        },
        &[("miner", Spec::default())],
    )
    .await;
    let a = detach(&w.client, "miner", "sleep(60)").await;
    let b = detach(&w.client, "miner", "sleep(60)").await;
    // Both stay in the console's Requests pane, marked.
    let pending = w.session().pending();
    assert_eq!(pending.len(), 2, "{pending:?}");
    assert!(
        pending.iter().all(|p| p.summary.starts_with("detached: ")),
        "{pending:?}"
    );
    let t0 = Instant::now();
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "return 1", "timeoutMs": 5000}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", data(&r));
    let r = w.call("probe-computers", json!({"ping": true})).await;
    assert_ne!(r.is_error, Some(true), "{}", data(&r));
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "sleep(60)", "detach": true}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "detached_limit", "{}", data(&r));
    for id in [a, b] {
        w.call("cancel-request", json!({"requestId": id})).await;
    }
}

/// The link drops under a detached run (the client sees its socket closed, as CC reports a
/// lost connection) and links again: the host takes the run back under the same requestId,
/// and its output and result arrive as if nothing happened. An ordinary request on the link
/// that dropped ends, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_drop_does_not_end_a_detached_run() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    let id = detach(
        &w.client,
        "miner",
        "print('before') sleep(4) print('after') return 'survived'",
    )
    .await;
    let r = w
        .call(
            "wait-request",
            json!({"requestId": id, "until": "before", "timeoutMs": 10000}),
        )
        .await;
    assert_eq!(data(&r)["matched"], true, "{}", data(&r));
    let links = w
        .session()
        .recent(1000)
        .iter()
        .filter(|e| e.event.as_str() == "linked")
        .count();
    // The daemon's socket URL ends in ?c=<n>; a closed event for it is a dropped link.
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code":
                "local u = settings.get('sandbox.url'):gsub('^(wss?://)localhost([:/])', '%1127.0.0.1%2') \
                 for c = 1, 5 do os.queueEvent('websocket_closed', u .. '?c=' .. c, 'test drop') end"}),
        )
        .await;
    // The chunk's own answer may be lost with the link: either outcome is fine.
    let _ = r;
    support::wait_for(
        Duration::from_secs(20),
        || {
            w.session()
                .recent(1000)
                .iter()
                .filter(|e| e.event.as_str() == "linked")
                .count()
                != links
        },
        || "never relinked".to_owned(),
    )
    .await;
    let r = w
        .call("wait-request", json!({"requestId": id, "timeoutMs": 20000}))
        .await;
    let d = data(&r);
    assert_ne!(r.is_error, Some(true), "{d}");
    assert_eq!(d["status"], "ok", "{d}");
    assert_eq!(d["returns"][0]["value"], "survived", "{d}");
    assert!(
        w.session()
            .recent(1000)
            .iter()
            .any(|e| e.event.as_str() == "adopted" && e.request_id.as_deref() == Some(id.as_str())),
        "no adoption logged"
    );
}

/// The host is stopped (SIGKILL) under a detached run and started again: the computer, its
/// own process, keeps running it, names it in its next hello, and the new host gives its
/// result by the same requestId, with the output printed meanwhile.
async fn host_restart_keeps_a_detached_run(rt: Runtime, signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (gw, mcp) = (tear::free_port(), tear::free_port());
    let host_dir = dir.path().join("host");
    let mut host = tear::host_process(&host_dir, gw, mcp);
    support::wait_for(
        Duration::from_secs(30),
        || std::net::TcpStream::connect(("127.0.0.1", gw)).is_ok(),
        || "host never listened".to_owned(),
    )
    .await;
    let url = format!("ws://127.0.0.1:{gw}/gateway");
    let computer_dir = dir.path().join("computer");
    let _computer: Box<dyn std::any::Any> = match rt {
        Runtime::Emulator => Box::new(Emulate(
            std::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"))
                .args(["emulate", "--url", &url, "--id", "1", "--label", "torn"])
                .args(["--secret", SECRET, "--data-dir"])
                .arg(&computer_dir)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        )),
        Runtime::CraftOs => Box::new(craftos::CraftComputer::spawn(
            &craftos::launcher(),
            1,
            "torn",
            gw,
        )),
    };
    let agent = tear::agent_when_linked(mcp, &host_dir).await;
    let id = detach(
        &agent,
        "torn",
        "print('before') sleep(6) print('after the restart') return 'survived'",
    )
    .await;
    let r = fake::call(
        &agent,
        "wait-request",
        json!({"requestId": id, "until": "before", "timeoutMs": 20000}),
    )
    .await;
    assert_eq!(data(&r)["matched"], true, "{}", data(&r));
    // One more that finishes while no host is there: its answer waits on the computer.
    let quick = detach(
        &agent,
        "torn",
        "sleep(1) print('meanwhile') return 'done meanwhile'",
    )
    .await;
    // And one that prints more than the computer keeps while unlinked (32 KiB a run).
    let flood = detach(
        &agent,
        "torn",
        "sleep(1) for i = 1, 60 do print(('x'):rep(1000) .. i) end return 'flood'",
    )
    .await;
    drop(agent);
    // SIGKILL: the host is gone at once; SIGTERM: it stops cleanly, leaving detached runs be.
    let pid = host.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap()
            .success()
    );
    let _ = host.wait().await;
    // The host stays away a while, as one that is restarted does: the computer notices, and
    // the run prints on meanwhile, which the new host must give back.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _host = tear::host_process(&host_dir, gw, mcp);
    let agent = tear::agent_when_linked(mcp, &host_dir).await;
    let r = fake::call(
        &agent,
        "wait-request",
        json!({"requestId": id, "timeoutMs": rt.patience(Duration::from_secs(30)).as_millis() as u64}),
    )
    .await;
    let d = data(&r);
    assert_ne!(r.is_error, Some(true), "{d}");
    assert_eq!(d["status"], "ok", "{d}");
    assert_eq!(d["requestId"], id.as_str(), "{d}");
    assert_eq!(d["returns"][0]["value"], "survived", "{d}");
    let r = fake::call(
        &agent,
        "wait-request",
        json!({"requestId": quick, "timeoutMs": 20000}),
    )
    .await;
    let d = data(&r);
    assert_eq!(d["status"], "ok", "{d}");
    assert_eq!(d["returns"][0]["value"], "done meanwhile", "{d}");
    assert_eq!(d["output"], "meanwhile\n", "{d}");
    let r = fake::call(
        &agent,
        "wait-request",
        json!({"requestId": flood, "timeoutMs": 20000}),
    )
    .await;
    assert_eq!(data(&r)["returns"][0]["value"], "flood", "{}", data(&r));
    // Every line the new host has of it, page by page with the `after` cursor.
    let (mut lines, mut after) = (Vec::new(), 0);
    loop {
        let r = fake::call(
            &agent,
            "computer-output",
            json!({"traposId": "torn", "requestId": flood, "after": after}),
        )
        .await;
        let d = data(&r);
        lines.extend(texts(&d));
        after = d["cursor"].as_u64().unwrap();
        if d["more"] != true {
            break;
        }
    }
    let note = lines
        .iter()
        .find(|l| l.contains("dropped"))
        .unwrap_or_else(|| panic!("no dropped-output note in {lines:?}"));
    let dropped: u64 = note
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap();
    assert!((20_000..=40_000).contains(&dropped), "{note}");
    assert!(lines.last().unwrap().ends_with("x60"), "{lines:?}");
    assert!(
        lines.len() < 50,
        "more kept than the bound: {}",
        lines.len()
    );
    let r = fake::call(
        &agent,
        "computer-output",
        json!({"traposId": "torn", "requestId": id}),
    )
    .await;
    let d = data(&r);
    assert_eq!(d["status"], "ok", "{d}");
    assert!(texts(&d).contains(&"after the restart".to_owned()), "{d}");
    // A new request on the new host never takes the old one's id.
    let r = fake::call(
        &agent,
        "exec-lua",
        json!({"traposId": "torn", "code": "return 1"}),
    )
    .await;
    assert_ne!(data(&r)["requestId"], id.as_str());
}

/// A `trapdesk emulate` process, killed with the test.
struct Emulate(std::process::Child);

impl Drop for Emulate {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_restart_keeps_a_detached_run_on_the_emulator() {
    host_restart_keeps_a_detached_run(Runtime::Emulator, "KILL").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_host_stop_keeps_a_detached_run_on_the_emulator() {
    host_restart_keeps_a_detached_run(Runtime::Emulator, "TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn host_restart_keeps_a_detached_run_on_craftos_pc() {
    host_restart_keeps_a_detached_run(Runtime::CraftOs, "KILL").await;
}

/// The policy applies before a detached run starts: with `ask`, the call answers once the
/// person approved (running), and a refusal answers as any refused call does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_run_waits_for_the_persons_approval() {
    let w = World::boot_adjusted(
        Runtime::Emulator,
        |s| {
            s.policy = trapdesk::policy::Policy::from_toml(
                "[policy.default]\nagent = { exec = \"ask\" }\n",
            )
            .unwrap();
        },
        &[("miner", Spec::default())],
    )
    .await;
    let _approver = w.session().attach_approver();
    for answer in [
        trapdesk::session::Answer::Yes,
        trapdesk::session::Answer::No,
    ] {
        let handle = fake::start_call(
            &w.client,
            "exec-lua",
            json!({"traposId": "miner", "code": "sleep(0.5) return 'approved'", "detach": true}),
        )
        .await;
        let approval = support::wait_some(
            Duration::from_secs(10),
            || w.session().approvals().into_iter().next(),
            || "never asked for approval".to_owned(),
        )
        .await;
        w.session().answer(&approval.request_id, answer).unwrap();
        let r = match handle.await_response().await.unwrap() {
            rmcp::model::ServerResult::CallToolResult(r) => r,
            other => panic!("{other:?}"),
        };
        let d = data(&r);
        if answer == trapdesk::session::Answer::Yes {
            assert_ne!(r.is_error, Some(true), "{d}");
            assert_eq!(d["status"], "running", "{d}");
            assert_eq!(d["requestId"], approval.request_id.as_str(), "{d}");
            let r = w
                .call(
                    "wait-request",
                    json!({"requestId": approval.request_id, "timeoutMs": 20000}),
                )
                .await;
            assert_eq!(data(&r)["returns"][0]["value"], "approved", "{}", data(&r));
        } else {
            assert_eq!(r.is_error, Some(true), "{d}");
            assert_eq!(d["error"]["code"], "refused", "{d}");
        }
    }
}

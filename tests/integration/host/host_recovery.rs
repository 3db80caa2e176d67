//! The host recovers (RELIABILITY.md, guarantee 4): SIGTERM with requests in flight ends each
//! one with a clear outcome and a complete transcript; a full disk under the data dir is
//! reported once, loudly, while requests keep being served; after a restart, emulated
//! computers relink by themselves.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::{FakeComputer, SECRET, hello, start_host_with, wait_until};
use tokio_tungstenite::tungstenite::Message as Ws;
use trapdesk::session::{Origin, RequestError, RequestSpec};

fn exec(code: &str) -> RequestSpec {
    RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn transcript(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("transcript.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("torn line {l:?}: {e}")))
        .collect()
}

#[tokio::test]
async fn sigterm_in_flight_ends_every_request_and_completes_the_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, mcp) = (free_port(), free_port());
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args(["--mcp-only", "--secret", SECRET, "--data-dir"])
        .arg(dir.path())
        .args(["--gateway-bind", &format!("127.0.0.1:{gw}")])
        .args(["--mcp-bind", &format!("127.0.0.1:{mcp}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // A computer that takes every request and never answers.
    let url = format!("ws://127.0.0.1:{gw}/gateway");
    let (mut ws, _) = crate::support::wait_ok(Duration::from_secs(10), async || {
        tokio_tungstenite::connect_async(url.as_str())
            .await
            .map_err(|e| format!("host did not come up: {e}"))
    })
    .await;
    ws.send(Ws::Text(hello(9, Some("slow")).to_string().into()))
        .await
        .unwrap();
    let welcome = ws.next().await.unwrap().unwrap();
    assert!(welcome.to_text().unwrap().contains("welcome"));
    let reader = tokio::spawn(async move {
        let mut seen = 0;
        while let Some(Ok(f)) = ws.next().await {
            if f.to_text().is_ok_and(|t| t.contains("gateway_request")) {
                seen += 1;
            }
        }
        seen
    });
    // Three agent calls in flight over MCP.
    let calls: Vec<_> = (0..3)
        .map(|i| {
            let url = format!("http://127.0.0.1:{mcp}/mcp");
            let token = trapdesk::trust::agents::read_local(dir.path()).unwrap().unwrap();
            tokio::spawn(async move {
                use rmcp::ServiceExt;
                let info = rmcp::model::ClientConfig::new(
                    rmcp::model::ClientCapabilities::default(),
                    rmcp::model::Implementation::new(format!("agent-{i}"), "1"),
                );
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
                        .auth_header(token),
                );
                let client = info.serve(transport).await.unwrap();
                let Value::Object(args) = json!({"traposId": "slow", "code": "sleep(60)"}) else {
                    unreachable!()
                };
                client
                    .call_tool(
                        rmcp::model::CallToolRequestParams::new("exec-lua").with_arguments(args),
                    )
                    .await
            })
        })
        .collect();
    wait_until(|| {
        transcript(dir.path())
            .iter()
            .filter(|e| e["event"] == "request")
            .count()
            == 3
    })
    .await;
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().unwrap().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("host did not stop within 10 s of SIGTERM")
        .unwrap();
    assert!(exit.success(), "{exit:?}");
    // Each agent got a clear outcome: an error result that says the host is shutting down.
    for c in calls {
        let r = tokio::time::timeout(Duration::from_secs(10), c)
            .await
            .unwrap()
            .unwrap()
            .expect("the call got no answer before the host stopped");
        assert_eq!(r.is_error, Some(true));
        let data = r.structured_content.unwrap_or(Value::Null);
        assert_eq!(data["error"]["code"], "shutting_down", "{data}");
    }
    assert_eq!(reader.await.unwrap(), 3);
    // The transcript is whole: every request has its `finished` line, no line is torn.
    let lines = transcript(dir.path());
    let requests: Vec<&Value> = lines.iter().filter(|e| e["event"] == "request").collect();
    assert_eq!(requests.len(), 3);
    for r in requests {
        let id = &r["requestId"];
        assert!(id.is_string(), "{r}");
        let ends = lines
            .iter()
            .filter(|e| e["event"] == "finished" && e["requestId"] == *id)
            .count();
        assert_eq!(ends, 1, "request {id} ended {ends} times in the transcript");
    }
    // And each agent's call has its result recorded.
    assert_eq!(
        lines.iter().filter(|e| e["event"] == "tool_result").count(),
        3
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_full_disk_is_reported_once_and_requests_keep_being_served() {
    // /dev/full answers every write with ENOSPC, exactly as a full file system does.
    let host = start_host_with(|s| {
        std::os::unix::fs::symlink("/dev/full", s.data_dir.join("transcript.jsonl")).unwrap();
    })
    .await;
    let mut c = FakeComputer::link(&host, 1, None).await;
    let alarms = |host: &support::TestHost| -> Vec<trapdesk::session::LogEntry> {
        host.session
            .recent(5000)
            .into_iter()
            .filter(|e| e.event.as_str() == "transcript_failed")
            .collect()
    };
    // The transcript is written on its own thread, so the failure shows at a later entry:
    // serve requests until it is reported, then some more.
    let mut after = 0;
    for i in 0..200 {
        let session = host.session.clone();
        let t = tokio::spawn(async move {
            session
                .request("1", exec(&format!("return {i}")), Origin::Person)
                .await
        });
        let req = c.recv_request().await;
        c.respond(req["id"].as_str().unwrap(), json!({"ok": true}))
            .await;
        assert!(t.await.unwrap().is_ok(), "request {i} not served");
        if !alarms(&host).is_empty() {
            after += 1;
            if after == 5 {
                break;
            }
        } else {
            // The writer thread may not have run yet on a loaded machine (it failed a CI run
            // whose 200 requests all went by before it wrote once): give it the CPU.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    assert_eq!(after, 5, "the full disk was never reported");
    let alarms = alarms(&host);
    assert_eq!(alarms.len(), 1, "{alarms:?}");
    assert!(
        alarms[0].detail.contains("No space left"),
        "{}",
        alarms[0].detail
    );
}

#[tokio::test]
async fn shutdown_ends_queued_and_running_requests_as_shutting_down() {
    let host = start_host_with(|s| s.max_in_flight = 1).await;
    let mut c = FakeComputer::link(&host, 1, None).await;
    let running = host
        .session
        .start("1", exec("sleep(60)"), Origin::Person)
        .unwrap();
    let queued = host
        .session
        .start("1", exec("sleep(60)"), Origin::Person)
        .unwrap();
    c.recv_request().await;
    host.session.shutdown();
    assert_eq!(running.wait().await, Err(RequestError::ShuttingDown));
    assert_eq!(queued.wait().await, Err(RequestError::ShuttingDown));
    assert!(host.session.pending().is_empty());
    assert!(matches!(
        host.session.start("1", exec("1"), Origin::Person),
        Err(RequestError::ShuttingDown)
    ));
}

/// Restarts the host under `n` emulated computers (the real Lua client) and checks that all of
/// them relink by themselves, spread out in time by their jittered back-off.
async fn restart_with(n: u64) {
    use trapdesk::emu::{Computer, ComputerSpec, install_client};
    let dir = tempfile::tempdir().unwrap();
    let s = support::settings(dir.path());
    let host = trapdesk::host::Host::start(s.clone(), false).await.unwrap();
    let url = host.gateway_url();
    let mut computers = Vec::new();
    for id in 0..n {
        let root = dir.path().join("computers").join(id.to_string());
        std::fs::create_dir_all(&root).unwrap();
        install_client(&root, &url, SECRET).unwrap();
        let spec = ComputerSpec::new(id, None, root);
        computers.push(Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap());
    }
    let online =
        |h: &trapdesk::host::Host| h.session.computers().iter().filter(|c| c.online).count();
    crate::support::wait_for(
        Duration::from_secs(60),
        || online(&host) >= n as usize,
        || format!("only {} linked", online(&host)),
    )
    .await;
    let gateway_bind = host.gateway_addr;
    host.stop().await;
    // The same address again, as a restarted process would bind it.
    let mut s2 = s.clone();
    s2.gateway_bind = gateway_bind;
    let host = trapdesk::host::Host::start(s2, false).await.unwrap();
    let mut events = host.session.subscribe();
    let restarted = std::time::Instant::now();
    let mut link_times = Vec::new();
    while link_times.len() < n as usize {
        let left = Duration::from_secs(60).saturating_sub(restarted.elapsed());
        match tokio::time::timeout(left, events.recv()).await {
            Ok(Ok(trapdesk::session::Event::Linked { .. })) => {
                link_times.push(restarted.elapsed());
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => panic!("events: {e}"),
            Err(_) => panic!("only {} of {n} relinked within 60 s", link_times.len()),
        }
    }
    // Every computer works after relinking.
    for id in [0, n - 1] {
        let v = host
            .session
            .request(
                &id.to_string(),
                exec("return os.getComputerID()"),
                Origin::Person,
            )
            .await
            .unwrap();
        assert_eq!(v["returns"][0]["value"], json!(id));
    }
    let first = link_times[0];
    let last = link_times[link_times.len() - 1];
    println!(
        "{n} computers relinked: first after {first:?}, last after {last:?}, spread {:?}",
        last - first
    );
    // No thundering herd: the relinks are spread over the back-off's jitter window, not bunched
    // into one instant (1 s ± 25 % gives a 0.5 s window for the first retry).
    if n >= 20 {
        assert!(last - first >= Duration::from_millis(150), "{link_times:?}");
    }
    drop(computers);
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_emulated_computers_relink_by_themselves() {
    restart_with(20).await;
}

/// The full 100-computer run: `cargo test --test integration host::host_recovery:: -- --ignored
/// --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: 100 emulated computers restart; run with --ignored"]
async fn after_a_restart_a_hundred_emulated_computers_relink() {
    restart_with(100).await;
}

//! History that outlives the process: each computer's output and the session log are
//! in `history.db`, read back after a restart through `computer-output` and `session-log` with
//! the cursors they had; and a host killed with SIGKILL under an output flood loses nothing it
//! had stored (committed to the database), nor stores anything twice.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use support::SECRET;
use support::mcp_fake as fake;

type Client = RunningService<RoleClient, rmcp::model::ClientConfig>;

async fn client(url: &str, dir: &std::path::Path) -> Client {
    let token = trapdesk::trust::agents::read_local(dir).unwrap().unwrap();
    let info = rmcp::model::ClientConfig::new(
        rmcp::model::ClientCapabilities::default(),
        rmcp::model::Implementation::new("historian", "1"),
    );
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token);
    info.serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

async fn call(client: &Client, tool: &str, args: Value) -> Value {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let r = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap();
    r.structured_content.unwrap_or(Value::Null)
}

/// Every output line of `computer` through `computer-output` with `after`, from cursor `from`
/// on, `per_page` lines a call: `(cursor, text)`, oldest first, the cursor being that of the
/// line's page (with one line a page, the line's own seq).
async fn all_lines(
    client: &Client,
    computer: &str,
    from: u64,
    per_page: u64,
) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut after = from;
    loop {
        let page = call(
            client,
            "computer-output",
            json!({"traposId": computer, "after": after, "lines": per_page}),
        )
        .await;
        let lines = fake::page_lines(&page);
        for l in &lines {
            out.push((
                page["cursor"].as_u64().unwrap(),
                l["text"].as_str().unwrap_or_default().to_owned(),
            ));
        }
        let cursor = page["cursor"].as_u64().unwrap_or(after);
        if lines.is_empty() || cursor == after {
            return out;
        }
        after = cursor;
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A host process on `dir` and the given ports (`--mcp-only`, as under systemd).
fn spawn_host(dir: &std::path::Path, gw: u16, mcp: u16) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args(["--mcp-only", "--secret", SECRET, "--data-dir"])
        .arg(dir)
        .args(["--gateway-bind", &format!("127.0.0.1:{gw}")])
        .args(["--mcp-bind", &format!("127.0.0.1:{mcp}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// Output lines in `history.db` as the host has committed them: `(computer, seq, text)`.
fn stored(dir: &std::path::Path) -> Vec<(String, u64, String)> {
    let path = dir.join("history.db");
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return Vec::new();
    };
    let mut stmt = conn
        .prepare("SELECT trapos_id, seq, text FROM output WHERE kind = 0 ORDER BY trapos_id, seq")
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)? as u64,
            r.get(2)?,
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

async fn wait_for(what: &str, limit: Duration, mut cond: impl AsyncFnMut() -> bool) {
    crate::support::wait_ok(limit, async || {
        if cond().await {
            Ok(())
        } else {
            Err(format!("{what}: not within"))
        }
    })
    .await;
}

/// Emulated computers (the real Lua client) linked to `url`, in this process: they outlive
/// the host's process and relink to the next one by themselves.
fn computers(dir: &std::path::Path, url: &str, ids: &[u64]) -> Vec<trapdesk::emu::Computer> {
    use trapdesk::emu::{Computer, ComputerSpec, install_client};
    ids.iter()
        .map(|id| {
            let root = dir.join("computers").join(id.to_string());
            std::fs::create_dir_all(&root).unwrap();
            install_client(&root, url, SECRET).unwrap();
            let spec = ComputerSpec::new(*id, Some(format!("c{id}")), root);
            Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap()
        })
        .collect()
}

async fn online(client: &Client, n: usize) {
    wait_for("computers linked", Duration::from_secs(60), async || {
        let list = call(client, "probe-computers", json!({"ping": false})).await;
        list["computers"].as_array().is_some_and(|c| c.len() >= n)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_restart_serves_the_earlier_output_and_log_with_the_same_cursors() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, mcp) = (free_port(), free_port());
    let url = format!("http://127.0.0.1:{mcp}/mcp");
    let mut host = spawn_host(dir.path(), gw, mcp);
    let _computers = computers(dir.path(), &format!("ws://127.0.0.1:{gw}/gateway"), &[7]);
    wait_for("host up", Duration::from_secs(30), async || {
        trapdesk::trust::agents::read_local(dir.path())
            .ok()
            .flatten()
            .is_some()
            && std::net::TcpStream::connect(("127.0.0.1", mcp)).is_ok()
    })
    .await;
    let c = client(&url, dir.path()).await;
    online(&c, 1).await;
    let ran = call(
        &c,
        "exec-lua",
        json!({"traposId": "7:c7", "code": "for i = 1, 50 do print('before ' .. i) end"}),
    )
    .await;
    assert_eq!(ran["ok"], true, "{ran}");
    let lines_before = all_lines(&c, "7:c7", 0, 2000).await;
    assert_eq!(lines_before.len(), 50, "{lines_before:?}");
    let page_before = call(
        &c,
        "computer-output",
        json!({"traposId": "7:c7", "lines": 20}),
    )
    .await;
    let log_before = call(&c, "session-log", json!({"limit": 100})).await;
    drop(c);
    // A clean stop (SIGTERM), then the same data dir and ports again.
    let pid = host.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    tokio::time::timeout(Duration::from_secs(20), host.wait())
        .await
        .unwrap()
        .unwrap();
    let mut host = spawn_host(dir.path(), gw, mcp);
    wait_for("host up again", Duration::from_secs(30), async || {
        std::net::TcpStream::connect(("127.0.0.1", mcp)).is_ok()
    })
    .await;
    let c = client(&url, dir.path()).await;
    // Before the computer relinks: its history is read by its full id.
    let lines_after = all_lines(&c, "7:c7", 0, 2000).await;
    assert_eq!(lines_after, lines_before);
    let page_after = call(
        &c,
        "computer-output",
        json!({"traposId": "7:c7", "lines": 20}),
    )
    .await;
    for k in ["output", "at", "times"] {
        assert_eq!(page_after[k], page_before[k], "{k}");
    }
    assert_eq!(page_after["before"], page_before["before"]);
    // Paging back with the old `before` cursor reads the same older lines.
    let older = call(
        &c,
        "computer-output",
        json!({"traposId": "7:c7", "lines": 20, "before": page_before["before"]}),
    )
    .await;
    assert_eq!(fake::page_lines(&older).len(), 20);
    assert_eq!(fake::page_lines(&older)[0]["text"], "before 11");
    // The log: every entry of before is there with its seq.
    let log_after = call(&c, "session-log", json!({"limit": 100})).await;
    let seqs = |log: &Value| -> HashMap<u64, String> {
        log["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["seq"].as_u64().unwrap(), e["event"].to_string()))
            .collect()
    };
    let (old, new) = (seqs(&log_before), seqs(&log_after));
    for (seq, event) in &old {
        assert_eq!(
            new.get(seq),
            Some(event),
            "log entry {seq} after the restart"
        );
    }
    // New output goes on above every cursor of the first start.
    online(&c, 1).await;
    let ran = call(
        &c,
        "exec-lua",
        json!({"traposId": "7:c7", "code": "print('after the restart')"}),
    )
    .await;
    assert_eq!(ran["ok"], true, "{ran}");
    let newest = lines_before.last().unwrap().0;
    let since = call(
        &c,
        "computer-output",
        json!({"traposId": "7:c7", "after": newest}),
    )
    .await;
    let texts: Vec<Value> = fake::page_lines(&since)
        .iter()
        .map(|l| l["text"].clone())
        .collect();
    assert_eq!(texts, ["after the restart"], "{since}");
    assert!(since["cursor"].as_u64().unwrap() > newest);
    // The log's `latest` of before still reads only what came after it.
    let latest = log_before["latest"].as_u64().unwrap();
    let log_since = call(&c, "session-log", json!({"since": latest})).await;
    assert!(
        log_since["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["seq"].as_u64().unwrap() > latest || e["event"] == "call"),
        "{log_since}"
    );
    drop(c);
    host.start_kill().unwrap();
    let _ = host.wait().await;
}

/// The host is killed with SIGKILL under an output flood and restarted;
/// every line it had stored before the kill is there exactly once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_an_output_flood_loses_and_repeats_no_stored_line() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, mcp) = (free_port(), free_port());
    let url = format!("http://127.0.0.1:{mcp}/mcp");
    let mut host = spawn_host(dir.path(), gw, mcp);
    let ids = [1, 2, 3];
    let _computers = computers(dir.path(), &format!("ws://127.0.0.1:{gw}/gateway"), &ids);
    wait_for("host up", Duration::from_secs(30), async || {
        trapdesk::trust::agents::read_local(dir.path())
            .ok()
            .flatten()
            .is_some()
            && std::net::TcpStream::connect(("127.0.0.1", mcp)).is_ok()
    })
    .await;
    let c = client(&url, dir.path()).await;
    online(&c, ids.len()).await;
    // Every computer floods (partial writes too, so open lines are being extended at the kill).
    let flood = "for i = 1, 1000000 do write('flood ' .. i) write(' x\\n') \
                 if i % 100 == 0 then sleep(0) end end";
    let peer = c.peer().clone();
    let floods = tokio::spawn(async move {
        let Value::Object(args) = json!({"match": "*", "code": flood, "timeoutMs": 600000}) else {
            unreachable!()
        };
        peer.call_tool(CallToolRequestParams::new("exec-lua-many").with_arguments(args))
            .await
    });
    // Under load: thousands of lines committed, and more coming in.
    wait_for("a flood stored", Duration::from_secs(120), async || {
        stored(dir.path()).len() >= 20_000
    })
    .await;
    let snapshot = stored(dir.path());
    let pid = host.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap()
            .success()
    );
    let _ = host.wait().await;
    floods.abort();
    drop(c);
    let at_kill = stored(dir.path());
    assert!(at_kill.len() >= snapshot.len());
    println!(
        "{} lines read before the kill, {} stored at the kill",
        snapshot.len(),
        at_kill.len()
    );
    let mut host = spawn_host(dir.path(), gw, mcp);
    wait_for("host up again", Duration::from_secs(30), async || {
        std::net::TcpStream::connect(("127.0.0.1", mcp)).is_ok()
    })
    .await;
    let c = client(&url, dir.path()).await;
    for id in ids {
        let computer = format!("{id}:c{id}");
        // From cursor 1 (the first start's first entry is the request's start, at 1): a cursor
        // reads on from where it is, however far back.
        let served = all_lines(&c, &computer, 1, 2000).await;
        let mine: Vec<(u64, String)> = snapshot
            .iter()
            .filter(|(t, _, _)| *t == computer)
            .map(|(_, s, text)| (*s, text.clone()))
            .collect();
        assert!(
            !mine.is_empty(),
            "{computer} printed nothing before the kill"
        );
        // Pages in cursor order; every stored line there, in its order (a page carries its
        // lines' text, not each one's seq).
        assert!(
            served.windows(2).all(|w| w[0].0 <= w[1].0),
            "{computer}: out of order"
        );
        let mut rest = served.iter();
        for (seq, text) in &mine {
            // A line still open at the read may have grown since; never changed otherwise.
            rest.by_ref()
                .find(|(_, now)| now.starts_with(text.as_str()))
                .unwrap_or_else(|| panic!("{computer}: line {seq} ({text:?}) lost"));
        }
        // Each flood line exactly once.
        let mut seen = HashMap::new();
        for (_, text) in &served {
            if text.ends_with(" x") {
                *seen.entry(text.clone()).or_insert(0) += 1;
            }
        }
        assert!(seen.values().all(|n| *n == 1), "{computer}: a line twice");
        println!(
            "{computer}: {} lines before the kill, {} served after",
            mine.len(),
            served.len()
        );
    }
    drop(c);
    host.start_kill().unwrap();
    let _ = host.wait().await;
}

/// `before` pages back past the scrollback into the history, and `after` from an old cursor
/// reads on from it, in one host start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_goes_past_the_scrollback_into_the_history() {
    let host = support::start_host_with(|s| s.scrollback_lines = 100).await;
    let _computer = support::emulated(&host, 4, Some("deep")).await;
    let c = client(&host.mcp_url(), host.dir.path()).await;
    let ran = call(
        &c,
        "exec-lua",
        json!({"traposId": "4:deep", "code": "for i = 1, 300 do print('deep ' .. i) end"}),
    )
    .await;
    assert_eq!(ran["ok"], true, "{ran}");
    assert!(host.session.flush_history(Duration::from_secs(30)));
    // Backwards with `before` until it is null: all 300, each once, oldest first.
    let mut texts = Vec::new();
    let mut before = Value::Null;
    loop {
        let mut args = json!({"traposId": "4:deep", "lines": 70});
        if !before.is_null() {
            args["before"] = before.clone();
        }
        let page = call(&c, "computer-output", args).await;
        let mut lines: Vec<String> = fake::page_lines(&page)
            .iter()
            .map(|l| l["text"].as_str().unwrap().to_owned())
            .collect();
        lines.append(&mut texts);
        texts = lines;
        before = page["before"].clone();
        if before.is_null() {
            break;
        }
    }
    let want: Vec<String> = (1..=300).map(|i| format!("deep {i}")).collect();
    assert_eq!(texts, want);
    // Forwards from the first line's cursor: the rest, though most left the scrollback.
    let all = all_lines(&c, "4:deep", 0, 2000).await;
    // after=0 is what the scrollback holds: 100 entries, the request's end and 99 lines.
    assert_eq!(all.len(), 99);
    assert_eq!(all[98].1, "deep 300");
    let first = all_lines(&c, "4:deep", 1, 2000).await;
    assert_eq!(first.len(), 300);
    assert_eq!(first[0].1, "deep 1");
}

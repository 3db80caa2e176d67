//! Attacks on the listeners and the log (docs/security.md, "Listeners, refusals and the log"):
//! half-sent requests and idle sockets on the MCP port, a web page opening the gateway, a flood
//! of refused hellos, a log that only grows. Each is stopped by a deadline, a cap, a refusal or
//! a bound, shown here against the real listeners, the real binary and the real log file.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::support::{self, FakeComputer};
use trapdesk::door::HEADER_DEADLINE;
use trapdesk::mcp::http::MAX_UNPROVEN;

/// The host's ends of the TCP connections to `port` on 127.0.0.1: established sockets whose
/// local port is `port` (one the host closed is no longer established). The kernel's table,
/// rather than this process's descriptors as `tests/process/identity.rs` counts them, because the
/// other attacks in this binary open and close descriptors at the same time.
fn host_ends(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3
                && f[3] == "01"
                && f[1]
                    .rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok())
                    == Some(port)
        })
        .count()
}

/// A TCP connection that sends the start of a request head and never finishes it.
async fn half_sent(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
        .await
        .unwrap();
    s
}

/// Whether the host closed `s` within `within` (end of stream or a reset).
async fn closed_within(mut s: TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(within, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            // A response (there should be none to half a request) is not a close: read on.
            Ok(Ok(_)) => {}
        }
    }
}

/// One HTTP/1.1 request on `s` (kept alive) and the status of its answer.
async fn ask(s: &mut TcpStream, path: &str, token: &str) -> u16 {
    let req =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    // The head, then as many body bytes as Content-Length says.
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(support::PROMPT, s.read(&mut buf))
            .await
            .expect("no answer in time")
            .unwrap();
        assert!(n > 0, "closed before an answer");
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let len: usize = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if got.len() >= end + 4 + len {
                return text[9..12].parse().unwrap();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_to_either_port_are_closed_within_the_header_deadline() {
    let host = support::start_host().await;
    let started = Instant::now();
    let mut held = Vec::new();
    for _ in 0..220 {
        held.push(half_sent(host.mcp_addr).await);
    }
    // The gateway's door has the same deadline.
    for _ in 0..20 {
        held.push(half_sent(host.gateway_addr).await);
    }
    // Meanwhile the gateway links a computer, and the MCP port answers a right token.
    let _c = FakeComputer::link(&host, 1, Some("miner")).await;
    let mut client = TcpStream::connect(host.mcp_addr).await.unwrap();
    assert_eq!(
        ask(&mut client, "/control/status", &host.local_token).await,
        200
    );
    // Every half-sent request is closed by the deadline (plus a margin for a loaded machine),
    // none before it has nearly passed.
    let margin = Duration::from_secs(5);
    let closes: Vec<_> = held
        .into_iter()
        .map(|s| tokio::spawn(closed_within(s, HEADER_DEADLINE + margin)))
        .collect();
    for c in closes {
        assert!(
            c.await.unwrap(),
            "a half-sent request was held past the deadline"
        );
    }
    let took = started.elapsed();
    assert!(
        took >= HEADER_DEADLINE - Duration::from_secs(1),
        "closed after {took:?}: before the deadline"
    );
    assert!(took < HEADER_DEADLINE + margin, "{took:?}");
    // And a computer still links after the flood.
    let _d = FakeComputer::link(&host, 2, Some("farm")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_unproven_connections_to_the_mcp_port_holds_at_most_the_cap() {
    let host = support::start_host().await;
    // A client that showed its token before the flood: its connection is never pushed out.
    let mut proven = TcpStream::connect(host.mcp_addr).await.unwrap();
    assert_eq!(
        ask(&mut proven, "/control/status", &host.local_token).await,
        200
    );
    let port = host.mcp_addr.port();
    let n = MAX_UNPROVEN + 400;
    let mut idle = Vec::with_capacity(n);
    for _ in 0..n {
        idle.push(half_sent(host.mcp_addr).await);
    }
    // All n are open on our side; the host holds at most MAX_UNPROVEN of them, and the proven
    // one (a few more may sit in the kernel's queue before the host accepts and drops them).
    let bound = MAX_UNPROVEN + 1 + 8;
    crate::support::wait_for(
        Duration::from_secs(5),
        || host_ends(port) <= bound,
        || {
            format!(
                "the host holds {} connections for {n} unproven ones (cap {MAX_UNPROVEN})",
                host_ends(port)
            )
        },
    )
    .await;
    assert!(
        host_ends(port) > MAX_UNPROVEN / 2,
        "the flood never arrived"
    );
    // The proven connection still answers, a new client gets in, and a computer links.
    assert_eq!(
        ask(&mut proven, "/control/status", &host.local_token).await,
        200
    );
    let mut late = TcpStream::connect(host.mcp_addr).await.unwrap();
    assert_eq!(
        ask(&mut late, "/control/status", &host.local_token).await,
        200
    );
    let _c = FakeComputer::link(&host, 1, None).await;
    drop(idle);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_from_a_web_page_origin_is_refused_and_one_without_links() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let host = support::start_host().await;
    let mut req = host.gateway_url().into_client_request().unwrap();
    req.headers_mut()
        .insert("Origin", "http://evil.example".parse().unwrap());
    match tokio_tungstenite::connect_async(req).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 403);
        }
        Err(e) => panic!("refused otherwise: {e}"),
        Ok(_) => panic!("an upgrade with an Origin was accepted"),
    }
    // Even a loopback page's Origin: no ComputerCraft client sends one.
    let mut req = host.gateway_url().into_client_request().unwrap();
    req.headers_mut()
        .insert("Origin", "http://127.0.0.1:8000".parse().unwrap());
    assert!(tokio_tungstenite::connect_async(req).await.is_err());
    // Without one, a scripted computer and the emulator's real client link.
    let _c = FakeComputer::link(&host, 1, Some("miner")).await;
    let _e = support::emulated(&host, 2, Some("farm")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_refused_hellos_leaves_the_log_within_its_bound() {
    use std::io::{BufRead, BufReader};
    use trapdesk::session::throttle::LINK_REFUSALS_PER_MINUTE;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args([
            "--mcp-only",
            "--gateway-bind",
            "127.0.0.1:0",
            "--mcp-bind",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--secret", support::SECRET])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("no start line").unwrap();
        if let Some(rest) = line.split("gateway ws://").nth(1) {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let url = format!("ws://{addr}/gateway");
    let flood = 400u64;
    let mut tasks = Vec::new();
    for w in 0..8u64 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..flood / 8 {
                let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str())
                    .await
                    .unwrap();
                let mut hello = support::hello(1000 + w * 1000 + i, Some("guess"));
                hello["secret"] = json!("not-the-secret");
                use futures_util::{SinkExt, StreamExt};
                ws.send(hello.to_string().into()).await.unwrap();
                // Until the host closes it (auth_failed).
                while let Some(Ok(_)) = ws.next().await {}
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let log = dir.path().join("trapdesk.log");
    let text = std::fs::read_to_string(&log).unwrap();
    let refused = text.lines().filter(|l| l.contains("link refused")).count();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        (1..=LINK_REFUSALS_PER_MINUTE as usize + 1).contains(&refused),
        "{refused} lines for {flood} refused hellos:\n{text}"
    );
    assert!(text.len() < 16 * 1024, "{} bytes of log", text.len());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "trapdesk.log is {mode:o}");
    }
}

#[tokio::test]
async fn refused_links_past_the_allowance_are_counted_not_logged() {
    use trapdesk::session::throttle::{LINK_REFUSALS_PER_MINUTE, WINDOW};
    // No socket: the session alone, on a paused clock.
    tokio::time::pause();
    let dir = tempfile::tempdir().unwrap();
    let session = trapdesk::session::Session::new(support::settings(dir.path()), false);
    let from = Some("127.0.0.1:5555".parse().unwrap());
    for i in 0..5000 {
        session.link_refused(
            Some(&format!("{i}:guess")),
            from,
            "auth_failed: wrong secret",
        );
    }
    let refused = |s: &trapdesk::session::Session| {
        s.recent(usize::MAX)
            .into_iter()
            .filter(|e| e.event.as_str() == "refused")
            .collect::<Vec<_>>()
    };
    assert_eq!(refused(&session).len(), LINK_REFUSALS_PER_MINUTE as usize);
    // The minute over, the count comes in one entry (the gateway flushes every half minute).
    tokio::time::advance(WINDOW).await;
    session.flush_link_refusals();
    let all = refused(&session);
    let last = all.last().unwrap();
    assert_eq!(
        last.who.as_deref(),
        Some(format!("{} more", 5000 - LINK_REFUSALS_PER_MINUTE).as_str()),
        "{last:?}"
    );
    // The next refusal is logged again, with who and why.
    session.link_refused(Some("7:vault"), from, "auth_failed: wrong secret");
    assert_eq!(
        refused(&session).last().unwrap().who.as_deref(),
        Some("7:vault")
    );
}

#[test]
fn the_log_rotates_past_its_size() {
    use std::io::Write;
    use trapdesk::host::log_file::{LOG_FILE, LogFile};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(LOG_FILE);
    let max = 4096u64;
    let mut log = LogFile::open(&path, max).unwrap();
    for i in 0..1000 {
        let line =
            format!("2026-12-04T16:00:00Z  WARN link refused from 127.0.0.1:{i}: auth_failed\n");
        log.write_all(line.as_bytes()).unwrap();
    }
    let previous = LogFile::previous(&path);
    let now = std::fs::read_to_string(&path).unwrap();
    let before = std::fs::read_to_string(&previous).unwrap();
    assert!(now.len() as u64 <= max && before.len() as u64 <= max);
    // Whole lines in each, the newest in the current file, nothing else kept.
    assert!(now.ends_with("127.0.0.1:999: auth_failed\n"), "{now}");
    assert!(now.starts_with("2026") && before.starts_with("2026"));
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, 2);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for p in [&path, &previous] {
            let mode = std::fs::metadata(p).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{} is {mode:o}", p.display());
        }
    }
    // A log left 0644 by an earlier version is tightened when opened.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(LogFile::open(&path, max).unwrap());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_console_idle_past_the_header_deadline_is_not_cut() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};
    let host = support::start_host().await;
    let url = format!("ws://{}/control/attach", host.mcp_addr);
    let mut req = url.into_client_request().unwrap();
    req.headers_mut().insert(
        "Authorization",
        format!("Bearer {}", host.local_token).parse().unwrap(),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    // Past the deadline for a request's headers, reading whatever the host sends: the socket
    // has left HTTP, so the deadline is not its.
    let until = tokio::time::Instant::now() + HEADER_DEADLINE + Duration::from_secs(2);
    loop {
        match tokio::time::timeout_at(until, ws.next()).await {
            Err(_) => break,
            Ok(Some(Ok(Message::Close(f)))) => panic!("closed: {f:?}"),
            Ok(Some(Ok(_))) => {}
            Ok(other) => panic!("the attached socket ended: {other:?}"),
        }
    }
    ws.send(Message::Ping(b"still there".to_vec().into()))
        .await
        .unwrap();
    loop {
        match tokio::time::timeout(support::PROMPT, ws.next()).await {
            Ok(Some(Ok(Message::Pong(p)))) => {
                assert_eq!(&p[..], b"still there");
                break;
            }
            Ok(Some(Ok(_))) => {}
            other => panic!("no pong: {other:?}"),
        }
    }
}

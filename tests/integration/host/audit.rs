//! The audit trail and the secrets, on a real host (gateway + MCP on port 0, a scripted
//! computer over a real WebSocket): the transcript holds every request with the right origin
//! and the full code; no secret or token lands in any file the process wrote; a rotated secret
//! locks out the old one; a computer's own secret links only that computer.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use support::{FakeComputer, SECRET, hello, start_host, start_host_with, wait_until};
use trapdesk::config::SecretSource;
use trapdesk::session::{Origin, RequestSpec};

#[derive(Clone)]
struct Named(&'static str);

impl rmcp::ClientHandler for Named {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            Default::default(),
            rmcp::model::Implementation::new(self.0, "1"),
        )
    }
}

fn lines(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("transcript.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every file under `dir`, with its bytes.
fn all_files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn the_transcript_holds_every_request_and_no_secret_or_token() {
    let h = start_host().await;
    let mut computer = FakeComputer::link(&h, 7, Some("miner")).await;
    let token = trapdesk::trust::agents::add(h.dir.path(), "builder").unwrap();
    let answer = json!({"ok": true, "returns": [], "n": 0, "output": "twelve bytes"});

    // The person runs something.
    let session = h.session.clone();
    let person = tokio::spawn(async move {
        session
            .request(
                "miner",
                RequestSpec::new(
                    trapdesk::protocol::Kind::ExecLua,
                    json!({"code": "print('from the person')\nreturn 1"}),
                ),
                Origin::Person,
            )
            .await
    });
    let req = computer.recv_request().await;
    computer
        .respond(req["id"].as_str().unwrap(), answer.clone())
        .await;
    person.await.unwrap().unwrap();

    // A named agent runs something through MCP.
    let config =
        StreamableHttpClientTransportConfig::with_uri(h.mcp_url()).auth_header(token.clone());
    let client = Named("claims-to-be-someone")
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    let code = "for i = 1, 2 do\n  print(i)\nend";
    let args = json!({"traposId": "7", "code": code});
    let call = {
        let client = client.peer().clone();
        tokio::spawn(async move {
            client
                .call_tool(
                    CallToolRequestParams::new("exec-lua")
                        .with_arguments(args.as_object().unwrap().clone()),
                )
                .await
        })
    };
    let req = computer.recv_request().await;
    computer
        .respond(req["id"].as_str().unwrap(), answer.clone())
        .await;
    let r = call.await.unwrap().unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    // A wrong secret and a wrong token are tried too: neither may be written anywhere.
    let mut bad = hello(8, Some("intruder"));
    bad["secret"] = json!("not-the-secret-zz");
    let mut c = FakeComputer::connect_raw(&h).await;
    c.send(&bad).await;
    let (code_close, _) = c.recv_close().await;
    assert_eq!(code_close, Some(4001));
    let (status, _) = support_post(&h, "Bearer td_wrong_token_qq").await;
    assert_eq!(status, 401);
    // The local token is used too: it lives in its own file and nowhere else.
    let (status, _) = support_post(&h, &format!("Bearer {}", h.local_token)).await;
    assert_eq!(status, 200);

    // Written off the request path: wait for the writer.
    wait_until(|| {
        lines(h.dir.path())
            .iter()
            .filter(|l| l["event"] == "finished")
            .count()
            >= 2
    })
    .await;
    let all = lines(h.dir.path());
    let requests: Vec<&Value> = all.iter().filter(|l| l["event"] == "request").collect();
    assert_eq!(requests.len(), 2, "{all:#?}");
    assert_eq!(requests[0]["origin"], json!({"kind": "person"}));
    assert_eq!(requests[0]["who"], "person");
    assert_eq!(
        requests[0]["args"]["code"],
        "print('from the person')\nreturn 1"
    );
    assert_eq!(
        requests[1]["origin"],
        json!({"kind": "agent", "name": "builder"})
    );
    assert_eq!(requests[1]["args"]["code"], code);
    assert_eq!(requests[1]["traposId"], "7:miner");
    for f in all.iter().filter(|l| l["event"] == "finished") {
        assert_eq!(f["status"], "ok");
        assert!(f["durationMs"].is_u64());
        assert_eq!(f["outputBytes"], 12);
        assert!(f["origin"].is_object());
    }
    assert!(
        all.iter()
            .any(|l| l["event"] == "tool_call" && l["who"] == "builder")
    );
    assert!(all.iter().all(|l| l["who"] != "claims-to-be-someone"));

    // `trapdesk transcript` reads it back, filtered.
    let mut out = Vec::new();
    let filter = trapdesk::commands::admin::TranscriptArgs {
        origin: Some("person".into()),
        ..Default::default()
    };
    trapdesk::commands::admin::transcript(h.dir.path(), filter, &mut out)
        .await
        .unwrap();
    let printed = String::from_utf8(out).unwrap();
    assert!(printed.contains("print('from the person')"), "{printed}");
    assert!(!printed.contains("builder"), "{printed}");

    drop(client);
    let dir = h.dir.path().to_owned();
    let files = all_files(&dir);
    assert!(files.iter().any(|(p, _)| p.ends_with("transcript.jsonl")));
    for (path, bytes) in &files {
        let local = if path.ends_with(trapdesk::trust::agents::LOCAL_FILE) {
            "td_wrong_token_qq"
        } else {
            h.local_token.as_str()
        };
        for secret in [
            SECRET,
            token.as_str(),
            "not-the-secret-zz",
            "td_wrong_token_qq",
            local,
        ] {
            assert!(
                !contains(bytes, secret),
                "{secret:?} found in {}",
                path.display()
            );
        }
    }
    h.host.stop().await;
}

async fn support_post(h: &support::TestHost, auth: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let mut s = tokio::net::TcpStream::connect(h.mcp_addr).await.unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        h.mcp_addr,
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[tokio::test]
async fn a_rotated_secret_locks_out_the_old_one() {
    let h = start_host_with(|s| {
        let path = s.data_dir.join("secret");
        std::fs::write(&path, "old-secret-aa").unwrap();
        s.secret = "old-secret-aa".into();
        s.secret_source = SecretSource::Stored(path);
    })
    .await;
    let mut with_old = hello(3, Some("a"));
    with_old["secret"] = json!("old-secret-aa");
    let (c, _) = FakeComputer::link_with(&h, with_old.clone()).await;
    c.close().await;

    let mut out = Vec::new();
    trapdesk::commands::admin::secret(
        h.dir.path(),
        trapdesk::commands::admin::SecretCmd::Rotate,
        &mut out,
    )
    .unwrap();
    let printed = String::from_utf8(out).unwrap();
    assert!(printed.contains("set sandbox.password"), "{printed}");
    let new = std::fs::read_to_string(h.dir.path().join("secret")).unwrap();
    assert!(printed.contains(new.trim()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(h.dir.path().join("secret"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let mut c = FakeComputer::connect_raw(&h).await;
    c.send(&with_old).await;
    let (code, seen) = c.recv_close().await;
    assert_eq!(code, Some(4001), "{seen:?}");
    assert_eq!(seen[0]["code"], "auth_failed");
    assert!(!seen[0].to_string().contains("old-secret-aa"));

    let mut with_new = hello(3, Some("a"));
    with_new["secret"] = json!(new.trim());
    let (c, welcome) = FakeComputer::link_with(&h, with_new).await;
    assert_eq!(welcome["trapos_id"], "3:a");
    c.close().await;
}

#[tokio::test]
async fn a_computers_own_secret_links_only_that_computer() {
    let h = start_host().await;
    let miner = trapdesk::trust::secrets::add(h.dir.path(), "miner").unwrap();
    // The miner with its own secret links; with the shared one it no longer does.
    let mut m = hello(7, Some("miner"));
    m["secret"] = json!(miner);
    let (c, _) = FakeComputer::link_with(&h, m).await;
    c.close().await;
    let mut c = FakeComputer::connect_raw(&h).await;
    c.send(&hello(7, Some("miner"))).await;
    assert_eq!(c.recv_close().await.0, Some(4001));
    // Another computer presenting the miner's secret is refused.
    let mut other = hello(9, Some("farm"));
    other["secret"] = json!(miner);
    let mut c = FakeComputer::connect_raw(&h).await;
    c.send(&other).await;
    assert_eq!(c.recv_close().await.0, Some(4001));
    // The rest keep using the shared secret.
    let (c, _) = FakeComputer::link_with(&h, hello(9, Some("farm"))).await;
    c.close().await;
    let stored = std::fs::read_to_string(h.dir.path().join("computer-secrets.json")).unwrap();
    assert!(!stored.contains(&miner));
}

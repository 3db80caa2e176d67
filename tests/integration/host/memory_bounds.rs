//! Memory bounded by configuration (RELIABILITY.md, guarantee 2) where clients, not computers,
//! push: a huge MCP request body is refused with 413 while it streams in (`max_body_bytes`);
//! an MCP client that never reads its stream does not hold
//! up the computer or the host (`stream_buffer`); a computer that stops reading its socket is
//! unlinked when its outbound queue fills (`outbound_queue`). Real listeners, real sockets.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use support::{FakeComputer, start_host_with, wait_until};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use trapdesk::session::{Origin, RequestError, RequestSpec};

fn mcp_addr(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap()
}

/// Headers of a stateless 2026-07-28 `tools/call` POST (no session, no `initialize`).
fn call_head(addr: SocketAddr, token: &str, length: usize) -> String {
    let length = format!("Content-Length: {length}\r\n");
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: exec-lua\r\n{length}\r\n"
    )
}

fn meta() -> serde_json::Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bounds", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A stateless `tools/call` of `exec-lua` on computer 1 whose body is `body`.
async fn post(url: &str, token: &str, body: Vec<u8>) -> reqwest::Response {
    reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "exec-lua")
        .body(body)
        .send()
        .await
        .unwrap()
}

/// The body of a call whose `code` is `size` bytes.
fn call_body(size: usize) -> Vec<u8> {
    let head = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{},"name":"exec-lua","arguments":{{"traposId":"1","code":"return 1 --"#,
        meta()
    );
    let mut body = Vec::with_capacity(head.len() + size + 8);
    body.extend_from_slice(head.as_bytes());
    body.resize(head.len() + size, b'x');
    body.extend_from_slice(br#""}}}"#);
    body
}

#[tokio::test]
async fn a_100_mb_body_is_refused_with_413_as_it_streams_in() {
    let host = start_host_with(|s| s.max_body_bytes = 1 << 20).await;
    let mut c = FakeComputer::link(&host, 1, None).await;
    let response = post(&host.mcp_url(), &host.local_token, call_body(100 << 20)).await;
    assert_eq!(response.status().as_u16(), 413);
    // Nothing reached the session, and the endpoint still serves.
    assert!(host.session.pending().is_empty());
    assert!(host.session.tool_calls().is_empty());
    let _answer = tokio::spawn(async move {
        let req = c.recv_request().await;
        c.send(
            &json!({"type": "computer_response", "id": req["id"], "ok": true,
            "payload": {"ok": true, "returns": [], "n": 0}}),
        )
        .await;
        c
    });
    let response = post(&host.mcp_url(), &host.local_token, call_body(10)).await;
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.unwrap();
    assert!(text.contains("\"isError\":false"), "{text}");
}

#[tokio::test]
async fn a_50_mb_exec_lua_from_an_agent_is_refused_and_never_reaches_the_computer() {
    use rmcp::ServiceExt;
    let host = start_host_with(|_| {}).await;
    let mut c = FakeComputer::link(&host, 1, None).await;
    let info = rmcp::model::ClientConfig::new(
        rmcp::model::ClientCapabilities::default(),
        rmcp::model::Implementation::new("huge-agent", "1"),
    );
    // The 413's JSON-RPC error has a null id (the host never parsed the request); stock rmcp
    // clients cannot pair it with their call and would wait forever, so the transport that
    // `mcp-stdio` and the CLI use, which pairs it, carries this call.
    let transport = trapdesk::mcp::upstream::transport(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            host.mcp_url(),
        )
        .auth_header(host.local_token.clone()),
    );
    let client = info.serve(transport).await.unwrap();
    let code = "x".repeat(50 << 20);
    let args = json!({"traposId": "1", "code": code});
    let serde_json::Value::Object(args) = args else {
        unreachable!()
    };
    let params = rmcp::model::CallToolRequestParams::new("exec-lua").with_arguments(args);
    let answer = tokio::time::timeout(Duration::from_secs(60), client.call_tool(params))
        .await
        .expect("no answer to a 50 MB call");
    let Err(rmcp::ServiceError::McpError(err)) = answer else {
        panic!("{answer:?}")
    };
    assert!(err.message.contains("max_body_bytes"), "{err:?}");
    // The computer got nothing; a normal call still works on the same client.
    let next = tokio::time::timeout(Duration::from_millis(300), c.recv()).await;
    assert!(next.is_err(), "the computer was sent {next:?}");
    assert!(host.session.pending().is_empty());
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_client_that_never_reads_its_stream_holds_up_neither_computer_nor_host() {
    let host = start_host_with(|s| s.stream_buffer = 64).await;
    let mut c = FakeComputer::link(&host, 1, None).await;
    let addr = mcp_addr(&host.mcp_url());
    // A streaming call (a progress token): then every output line is a progress notification
    // on the response's SSE stream, which this client never reads.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "exec-lua", "arguments": {"traposId": "1", "code": "flood()"},
        "_meta": meta().as_object().unwrap().clone().into_iter()
            .chain([("progressToken".to_owned(), json!("p1"))]).collect::<serde_json::Map<_, _>>()}})
    .to_string();
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(call_head(addr, &host.local_token, body.len()).as_bytes())
        .await
        .unwrap();
    tcp.write_all(body.as_bytes()).await.unwrap();
    let req = c.recv_request().await;
    let id = req["id"].as_str().unwrap().to_owned();
    // 20 000 lines of 1 KiB: 20 MB of output toward a reader that takes none of it.
    let line = "y".repeat(1023);
    let flood = tokio::time::timeout(Duration::from_secs(60), async {
        for _ in 0..20_000 {
            c.send(&json!({"type": "output", "id": id, "text": format!("{line}\n")}))
                .await;
        }
        c.send(&json!({"type": "computer_response", "id": id, "ok": true,
            "payload": {"ok": true, "returns": [], "n": 0}}))
            .await;
    })
    .await;
    assert!(flood.is_ok(), "the computer was held up by the reader");
    // The request ended in the session (the transcript and the log have it) …
    wait_until(|| host.session.pending().is_empty()).await;
    // … and the same computer serves the next request at once.
    let session = host.session.clone();
    let next = tokio::spawn(async move {
        session
            .request(
                "1",
                RequestSpec::new(
                    trapdesk::protocol::Kind::ExecLua,
                    json!({"code": "return 1"}),
                ),
                Origin::Person,
            )
            .await
    });
    let req = c.recv_request().await;
    c.send(
        &json!({"type": "computer_response", "id": req["id"], "ok": true,
        "payload": {"ok": true, "returns": [], "n": 0}}),
    )
    .await;
    assert!(next.await.unwrap().is_ok());
    drop(tcp);
}

#[tokio::test]
async fn a_computer_that_stops_reading_is_unlinked_when_its_queue_fills() {
    // A long heartbeat, so that only the queue can catch it here.
    let host = start_host_with(|s| {
        s.heartbeat = Duration::from_secs(60);
        s.outbound_queue = 64;
        s.max_in_flight = 8;
    })
    .await;
    let _c = FakeComputer::link(&host, 1, None).await;
    // 8 requests of 8 MB each: far more than the socket buffers take, so the connection task
    // blocks on the socket and what the session sends next piles up in its queue.
    let code = "-".repeat(8 << 20);
    let mut tickets = Vec::new();
    for _ in 0..8 {
        let spec = RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({"code": code}))
            .timeout(Some(Duration::from_secs(120)));
        tickets.push(host.session.start("1", spec, Origin::Person).unwrap());
    }
    // The connection task gets stuck on the socket meanwhile, and nothing on the host says
    // when its buffers are full: the cancels below must find the requests sent, not queued.
    tokio::time::sleep(Duration::from_millis(500)).await;
    // A caller that keeps cancelling: each is one more message for the stuck socket.
    let unlinked = crate::support::holds_within(Duration::from_secs(3), || {
        for t in &tickets {
            let _ = host.session.cancel(&t.id);
        }
        !host.session.computer("1:").is_some_and(|c| c.online)
    })
    .await;
    assert!(unlinked, "a computer that reads nothing stayed linked");
    for t in tickets {
        assert_eq!(t.wait().await, Err(RequestError::Disconnected));
    }
    assert!(
        host.session
            .recent(20)
            .iter()
            .any(|e| e.event.as_str() == "unlinked" && e.detail.contains("outbound queue full")),
        "{:?}",
        host.session.recent(20)
    );
}

//! The HTTP edge of the MCP endpoint: DNS-rebinding protection (Origin and Host), the bearer
//! token, and a raw stateless 2026-07-28 request with no `initialize` and no session.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "support/mcp_fake.rs"]
mod fake;

use fake::{host, host_with, link_fake, raw_post};
use serde_json::json;
use trapdesk::config::Settings;

fn init_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string()
}

#[tokio::test]
async fn foreign_origin_and_host_are_refused() {
    let h = host().await;
    let (status, _) = raw_post(h.addr, &[("Origin", "http://evil.example")], &init_body()).await;
    assert_eq!(status, 403);
    let origin = format!("http://localhost:{}", h.addr.port());
    let (status, body) = raw_post(h.addr, &[("Origin", origin.as_str())], &init_body()).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = raw_post(h.addr, &[("Host", "evil.example")], &init_body()).await;
    assert_eq!(status, 403);
    let (status, body) = raw_post(h.addr, &[], &init_body()).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn bearer_token_is_required_when_set() {
    let settings = Settings {
        mcp_token: Some("sekrit".into()),
        ..Default::default()
    };
    let h = host_with(settings).await;
    let (status, _) = raw_post(h.addr, &[], &init_body()).await;
    assert_eq!(status, 401);
    let (status, _) = raw_post(h.addr, &[("Authorization", "Bearer wrong")], &init_body()).await;
    assert_eq!(status, 401);
    let (status, body) =
        raw_post(h.addr, &[("Authorization", "Bearer sekrit")], &init_body()).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn raw_stateless_call_without_initialize() {
    let h = host().await;
    let _ = &link_fake;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-stateless", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": meta}});
    let (status, body) = raw_post(
        h.addr,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "server/discover"),
        ],
        &discover.to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"trapdesk\""), "{body}");
    assert!(
        !body.to_ascii_lowercase().contains("mcp-session-id"),
        "{body}"
    );

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "exec-lua", "arguments": {"traposId": "miner", "code": "return 3"}, "_meta": meta}});
    let (status, body) = raw_post(
        h.addr,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "exec-lua"),
        ],
        &call.to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"structuredContent\""), "{body}");
    assert!(body.contains("\"isError\":false"), "{body}");
    let calls = h.session.tool_calls();
    assert!(
        calls.iter().any(|c| c.client == "raw-stateless"),
        "{calls:?}"
    );
}

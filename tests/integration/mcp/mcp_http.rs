//! The HTTP edge of the MCP endpoint: a credential on every request (the local token, a named
//! agent's, `--mcp-token`), the 401 clients understand and the OAuth discovery paths' 404s,
//! DNS-rebinding protection (Origin and Host), and a raw stateless 2026-07-28 request with no
//! `initialize` and no session.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::mcp_fake as fake;

use fake::{host, host_with, link_fake, raw_post, raw_request};
use serde_json::json;
use trapdesk::config::Settings;

fn init_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string()
}

/// The header and JSON body of an answer written by hand.
fn head_and_body(answer: &str) -> (String, serde_json::Value) {
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    let body = serde_json::from_str(body.trim()).unwrap_or(serde_json::Value::Null);
    (head.to_ascii_lowercase(), body)
}

/// What a computer of the same Minecraft server sends: loopback, no `Origin`, a loopback
/// `Host`, no token. Refused, with an answer an MCP client can show.
#[tokio::test]
async fn every_request_needs_a_token_even_from_loopback() {
    let h = host().await;
    let (status, answer) = raw_post(h.addr, &[], &init_body()).await;
    assert_eq!(status, 401, "{answer}");
    let (head, body) = head_and_body(&answer);
    assert!(
        head.contains("www-authenticate: bearer realm=\"trapdesk\""),
        "{head}"
    );
    assert!(
        !head.contains("invalid_token"),
        "no error code without a token (RFC 6750 3.1)"
    );
    assert!(head.contains("content-type: application/json"), "{head}");
    assert_eq!(body["error"], "unauthorized", "{answer}");
    let why = body["error_description"].as_str().unwrap();
    assert!(why.contains("trapdesk agent add"), "{why}");

    let (status, answer) = raw_post(
        h.addr,
        &[("Authorization", "Bearer td_guessed")],
        &init_body(),
    )
    .await;
    assert_eq!(status, 401);
    let (head, body) = head_and_body(&answer);
    assert!(head.contains("error=\"invalid_token\""), "{head}");
    assert_eq!(body["error"], "invalid_token");
    assert!(!answer.contains("td_guessed"), "the token is not echoed");

    // A stateless call is refused the same way, and nothing ran.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "probe-computers", "arguments": {}}});
    let (status, _) = raw_post(
        h.addr,
        &[("MCP-Protocol-Version", "2026-07-28")],
        &call.to_string(),
    )
    .await;
    assert_eq!(status, 401);
    assert!(h.session.tool_calls().is_empty());

    let local = format!("Bearer {}", h.token);
    let (status, body) = raw_post(h.addr, &[("Authorization", &local)], &init_body()).await;
    assert_eq!(status, 200, "{body}");
}

/// After a 401, clients look for OAuth; each path is a 404 with or without a token, so the
/// client reports the 401 instead of failing a flow this server does not offer.
#[tokio::test]
async fn oauth_discovery_paths_answer_404_with_or_without_a_token() {
    let h = host().await;
    let local = format!("Bearer {}", h.token);
    // Codex also probes under the endpoint's path.
    let under = [
        "/mcp/.well-known/oauth-protected-resource",
        "/mcp/.well-known/openid-configuration",
    ];
    for path in trapdesk::mcp::OAUTH_PATHS.into_iter().chain(under) {
        for method in ["GET", "POST"] {
            for auth in [None, Some(local.as_str()), Some("Bearer td_wrong")] {
                let headers: Vec<(&str, &str)> =
                    auth.map(|a| vec![("Authorization", a)]).unwrap_or_default();
                let (status, answer) = raw_request(h.addr, method, path, &headers, "{}").await;
                assert_eq!(status, 404, "{method} {path} {auth:?}: {answer}");
                let (_, body) = head_and_body(&answer);
                assert_eq!(body["error"], "not_found", "{answer}");
            }
        }
    }
}

#[tokio::test]
async fn foreign_origin_and_host_are_refused() {
    let h = host().await;
    let local = format!("Bearer {}", h.token);
    let auth = ("Authorization", local.as_str());
    let (status, _) = raw_post(
        h.addr,
        &[auth, ("Origin", "http://evil.example")],
        &init_body(),
    )
    .await;
    assert_eq!(status, 403);
    let origin = format!("http://localhost:{}", h.addr.port());
    let (status, body) = raw_post(h.addr, &[auth, ("Origin", origin.as_str())], &init_body()).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = raw_post(h.addr, &[auth, ("Host", "evil.example")], &init_body()).await;
    assert_eq!(status, 403);
    let (status, body) = raw_post(h.addr, &[auth], &init_body()).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn the_host_token_works_beside_the_local_one() {
    let settings = Settings {
        mcp_token: Some("sekrit-but-long-enough".into()),
        ..Default::default()
    };
    let h = host_with(settings).await;
    let (status, _) = raw_post(h.addr, &[], &init_body()).await;
    assert_eq!(status, 401);
    let (status, _) = raw_post(h.addr, &[("Authorization", "Bearer wrong")], &init_body()).await;
    assert_eq!(status, 401);
    let (status, body) = raw_post(
        h.addr,
        &[("Authorization", "Bearer sekrit-but-long-enough")],
        &init_body(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let local = format!("Bearer {}", h.token);
    let (status, body) = raw_post(h.addr, &[("Authorization", &local)], &init_body()).await;
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
    let local = format!("Bearer {}", h.token);
    let (status, body) = raw_post(
        h.addr,
        &[
            ("Authorization", &local),
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
            ("Authorization", &local),
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

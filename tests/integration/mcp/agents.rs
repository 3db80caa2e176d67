//! Named agents: a named agent's token works beside the install's local token (401 when a
//! token is missing, wrong or removed), and the name everyone sees is the token's, not the
//! clientInfo's.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::mcp_fake as fake;

use fake::{Agent, Client, call, data, host_with, link_fake, raw_post};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use trapdesk::config::Settings;
use trapdesk::policy::Policy;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

async fn client(url: &str, claims: &str, token: Option<&str>) -> Result<Client, String> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let agent = Agent {
        name: claims.into(),
        progress: tx,
    };
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(t) = token {
        config = config.auth_header(t.to_owned());
    }
    agent
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn tokens_missing_wrong_and_removed_get_401_and_the_name_is_the_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        data_dir: dir.path().to_owned(),
        policy: Policy::from_toml(
            "[[policy.rule]]\ncomputer = \"*\"\nagent_name = \"claude-code\"\nagent = { exec = \"deny\" }\n",
        )
        .unwrap(),
        ..Settings::default()
    };
    let h = host_with(settings).await;
    link_fake(&h.session, 7, Some("miner"), h.seen.clone());

    // No named agent yet: still nothing without a token; the local token works.
    let (status, _) = raw_post(h.addr, &[], INIT).await;
    assert_eq!(status, 401);
    let local = format!("Bearer {}", h.token);
    let (status, _) = raw_post(h.addr, &[("Authorization", &local)], INIT).await;
    assert_eq!(status, 200);

    let token = trapdesk::trust::agents::add(dir.path(), "builder").unwrap();
    let other = trapdesk::trust::agents::add(dir.path(), "claude-code").unwrap();

    // Missing and wrong tokens: 401, at once.
    let (status, body) = raw_post(h.addr, &[], INIT).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("needs a bearer token"), "{body}");
    let (status, body) = raw_post(h.addr, &[("Authorization", "Bearer td_nope")], INIT).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        !body.contains(&token) && !body.contains("td_nope"),
        "no token echoed: {body}"
    );
    assert!(client(&h.url, "x", None).await.is_err());
    assert!(client(&h.url, "x", Some("td_wrong")).await.is_err());

    // The right token: it works, and the name is the token's, whatever the client claims.
    let c = client(&h.url, "claude-code", Some(&token)).await.unwrap();
    let r = call(
        &c,
        "exec-lua",
        json!({"traposId": "miner", "code": "return 1"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let log = h.session.recent(100);
    let ran = log.iter().find(|e| e.event.as_str() == "request").unwrap();
    assert_eq!(ran.who.as_deref(), Some("builder"));
    let calls = h.session.tool_calls();
    assert!(calls.iter().all(|c| c.client == "builder"), "{calls:?}");

    // The policy's agent_name is the token's name too: claude-code's token is denied exec…
    let cc = client(&h.url, "builder", Some(&other)).await.unwrap();
    let r = call(
        &cc,
        "exec-lua",
        json!({"traposId": "miner", "code": "return 1"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(fake::text(&r).contains("claude-code"), "{}", fake::text(&r));
    let r = call(&cc, "probe-computers", json!({"ping": false})).await;
    assert_eq!(data(&r)["computers"][0]["policy"]["exec"], "deny");

    // Removed: its next call is refused at once.
    trapdesk::trust::agents::remove(dir.path(), "builder").unwrap();
    let err = c
        .call_tool(
            rmcp::model::CallToolRequestParams::new("probe-computers")
                .with_arguments(json!({"ping": false}).as_object().unwrap().clone()),
        )
        .await;
    assert!(err.is_err(), "a removed agent's call went through: {err:?}");
    let auth = format!("Bearer {token}");
    let (status, _) = raw_post(h.addr, &[("Authorization", &auth)], INIT).await;
    assert_eq!(status, 401);
    // The other agent is unaffected.
    let r = call(&cc, "probe-computers", json!({"ping": false})).await;
    assert_ne!(r.is_error, Some(true));
    // Named agents never locked out the install's own token.
    let (status, _) = raw_post(h.addr, &[("Authorization", &local)], INIT).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn removing_an_agent_cancels_its_pending_calls() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        data_dir: dir.path().to_owned(),
        ..Settings::default()
    };
    let h = host_with(settings).await;
    link_fake(&h.session, 7, Some("miner"), h.seen.clone());
    let token = trapdesk::trust::agents::add(dir.path(), "builder").unwrap();
    tokio::spawn(trapdesk::host::watch_removals(
        h.session.clone(),
        dir.path().to_owned(),
        h.shutdown.clone(),
    ));
    let c = client(&h.url, "x", Some(&token)).await.unwrap();
    let call = fake::start_call(&c, "exec-lua", json!({"traposId": "miner", "code": "hang"})).await;
    crate::support::wait_for(
        std::time::Duration::from_secs(5),
        || !h.session.pending().is_empty(),
        || String::from("the call never reached the session"),
    )
    .await;
    assert_eq!(h.session.pending().len(), 1);
    trapdesk::trust::agents::remove(dir.path(), "builder").unwrap();
    let started = std::time::Instant::now();
    let r = match call.await_response().await {
        Ok(rmcp::model::ServerResult::CallToolResult(r)) => Some(r),
        _ => None,
    };
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Its call ended cancelled (or its stream was cut); either way nothing is left pending.
    if let Some(r) = r {
        assert_eq!(r.is_error, Some(true));
    }
    crate::support::wait_for(
        std::time::Duration::from_secs(5),
        || h.session.pending().is_empty(),
        || format!("still pending: {:?}", h.session.pending().len()),
    )
    .await;
    assert!(h.session.pending().is_empty());
    assert!(
        h.seen.lock().unwrap().cancels.len() == 1,
        "the computer was told to stop"
    );
}

#[tokio::test]
async fn the_agent_command_prints_the_token_once_and_stores_a_hash() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    trapdesk::commands::admin::agent(
        dir.path(),
        trapdesk::commands::admin::AgentCmd::Add {
            name: "codex".into(),
            token_only: false,
        },
        &mut out,
    )
    .unwrap();
    let printed = String::from_utf8(out).unwrap();
    let token = printed
        .split_whitespace()
        .find(|w| w.starts_with("td_"))
        .unwrap()
        .to_owned();
    assert!(printed.contains("Authorization: Bearer"));
    let mut out = Vec::new();
    trapdesk::commands::admin::agent(
        dir.path(),
        trapdesk::commands::admin::AgentCmd::List,
        &mut out,
    )
    .unwrap();
    let listed = String::from_utf8(out).unwrap();
    assert!(
        listed.contains("codex") && !listed.contains(&token),
        "{listed}"
    );
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        assert!(!text.contains(&token), "the token was stored");
    }
    let mut out = Vec::new();
    trapdesk::commands::admin::agent(
        dir.path(),
        trapdesk::commands::admin::AgentCmd::Remove {
            name: "codex".into(),
        },
        &mut out,
    )
    .unwrap();
    assert!(
        trapdesk::trust::agents::list(dir.path())
            .unwrap()
            .is_empty()
    );
}

//! Real agent clients, installed from npm at pinned versions, configured the way the README
//! tells a person to (HTTP with a named agent's `Authorization: Bearer` token, and stdio through
//! `trapdesk mcp-stdio`; the Codex and OpenCode configurations are the README's own blocks, read
//! from README.md), each in a temporary HOME so nothing touches this machine's config, and
//! pointed at a real host with an emulated computer `1:miner` running the real Lua client. None
//! needs a model or an API key for what is checked here:
//!
//! - the MCP Inspector's `--cli` mode lists the tools and the resource templates and calls
//!   `probe-computers` and `exec-lua`;
//! - Claude Code's `claude mcp list` / `claude mcp get` show the entries connected (and the
//!   entry without a token failing, as the README says);
//! - Codex's `codex mcp list` shows the entries, and its app server (`codex app-server`, JSON-RPC
//!   on stdio: `mcpServerStatus/list`, `mcpServer/tool/call`) lists every tool of both entries
//!   (Codex validates each inputSchema) and calls `exec-lua`;
//! - OpenCode's `opencode mcp list` shows both connected, and its headless server
//!   (`opencode serve`) reports both connected and lists our screen resources through each.
//!
//! The clients are installed once into `target/tmp/agent-clients/` (`npm install --prefix`). A
//! build without node or npm on PATH reports the tests ignored (cfg `has_npm`, build/tools.rs)
//! and fails under `CI=true`; in a build with them, an unreachable registry fails the test
//! (it never passes without running).
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::agent_seat as seat;

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use seat::{
    CLAUDE, CODEX, CodexAppServer, DEFAULT_URL, INSPECTOR, OPENCODE, STEP, Seat, installed,
    readme_block,
};

/// The resource templates every client must see.
const TEMPLATES: [&str; 3] = [
    "trapdesk://computer/{traposId}/files/{+path}",
    "trapdesk://computer/{traposId}/screen",
    "trapdesk://computer/{traposId}/monitor/{monitor}/screen",
];

fn names(v: &Value, key: &str, field: &str) -> BTreeSet<String> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
        .iter()
        .map(|t| t[field].as_str().unwrap().to_owned())
        .collect()
}

fn templates() -> BTreeSet<String> {
    TEMPLATES.iter().map(|t| (*t).to_owned()).collect()
}

/// `exec-lua` answered 42 as its first returned value.
fn returned_42(result: &Value) {
    assert_eq!(result["isError"], json!(false), "{result}");
    assert_eq!(
        result["structuredContent"]["returns"][0]["value"],
        json!(42),
        "{result}"
    );
}

/// CI installs node and npm (.ci/run): there a build without them fails here, where elsewhere
/// the agent client tests are reported ignored.
#[cfg(not(has_npm))]
#[test]
fn node_and_npm_are_on_path_on_ci() {
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "node or npm is missing on CI; .ci/run installs them"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(has_npm), ignore = "needs npm and node on PATH")]
async fn the_inspector_cli_lists_tools_and_templates_and_calls_tools() {
    let bin = installed(&INSPECTOR);
    let seat = Seat::new(bin).await;
    let http = vec![
        seat.host.mcp_url(),
        "--header".to_owned(),
        format!(
            "Authorization: Bearer {}",
            seat.named_token("inspector").await
        ),
    ];

    let listed = seat.inspector(&http, &["--method", "tools/list"]).await;
    assert_eq!(names(&listed, "tools", "name"), seat.tools);
    let exec = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "exec-lua")
        .unwrap();
    for arg in ["traposId", "code"] {
        assert!(
            exec["inputSchema"]["properties"].get(arg).is_some(),
            "{exec}"
        );
    }

    let t = seat
        .inspector(&http, &["--method", "resources/templates/list"])
        .await;
    assert_eq!(names(&t, "resourceTemplates", "uriTemplate"), templates());

    let probe = seat
        .inspector(
            &http,
            &["--method", "tools/call", "--tool-name", "probe-computers"],
        )
        .await;
    assert_eq!(probe["isError"], json!(false), "{probe}");
    assert_eq!(
        names(&probe["structuredContent"], "computers", "traposId"),
        BTreeSet::from(["1:miner".to_owned()])
    );

    // `traposId=1`: the Inspector sends what looks like a number as a JSON number.
    for id in ["traposId=1:miner", "traposId=1"] {
        let r = seat
            .inspector(
                &http,
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "exec-lua",
                    "--tool-arg",
                    id,
                    "code=return 6*7",
                ],
            )
            .await;
        returned_42(&r);
    }

    // The same through stdio: the Inspector starts `trapdesk mcp-stdio` itself.
    let listed = seat
        .inspector(&seat.stdio_command(), &["--method", "tools/list"])
        .await;
    assert_eq!(names(&listed, "tools", "name"), seat.tools);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(has_npm), ignore = "needs npm and node on PATH")]
async fn claude_code_shows_both_entries_connected() {
    let bin = installed(&CLAUDE);
    let seat = Seat::new(bin).await;
    let token = seat.named_token("claude-code").await;
    let url = seat.host.mcp_url();

    let mut add = seat.command(CLAUDE.bin);
    add.args(["mcp", "add", "trapdesk", "--"])
        .args(seat.stdio_command());
    seat.run(add).await;
    let mut add = seat.command(CLAUDE.bin);
    add.args([
        "mcp",
        "add",
        "--transport",
        "http",
        "trapdesk-http",
        &url,
        "--header",
    ])
    .arg(format!("Authorization: Bearer {token}"));
    seat.run(add).await;
    // Without the header, as the README warns.
    let mut add = seat.command(CLAUDE.bin);
    add.args(["mcp", "add", "--transport", "http", "trapdesk-noauth", &url]);
    seat.run(add).await;

    let mut list = seat.command(CLAUDE.bin);
    list.args(["mcp", "list"]);
    let listed = seat.run(list).await;
    let line = |name: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no {name} in {listed}"))
            .to_owned()
    };
    for name in ["trapdesk", "trapdesk-http"] {
        assert!(line(name).ends_with("✔ Connected"), "{listed}");
    }
    assert!(
        line("trapdesk-noauth").contains("✘ Failed to connect"),
        "{listed}"
    );

    let mut get = seat.command(CLAUDE.bin);
    get.args(["mcp", "get", "trapdesk-http"]);
    let got = seat.run(get).await;
    assert!(got.contains("Status: ✔ Connected"), "{got}");
    // (`claude mcp add` redacts the header it echoes; `claude mcp get` prints it whole.)
    assert!(got.contains("Type: http"), "{got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(has_npm), ignore = "needs npm and node on PATH")]
async fn codex_lists_every_tool_of_both_entries_and_calls_exec_lua() {
    let bin = installed(&CODEX);
    let seat = Seat::new(bin).await;
    let token = seat.named_token("codex").await;
    let codex_home = seat.home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    // The README's block, pointed at this host: its stdio entry's arguments completed, its
    // HTTP entry's URL replaced.
    let mut config: toml::Table = readme_block("toml", "[mcp_servers.trapdesk]")
        .parse()
        .unwrap();
    let servers = config["mcp_servers"].as_table_mut().unwrap();
    let stdio = servers["trapdesk"].as_table_mut().unwrap();
    assert_eq!(stdio["command"].as_str(), Some("trapdesk"));
    let args = stdio["args"].as_array_mut().unwrap();
    args.clear();
    args.extend(
        seat.stdio_command()[1..]
            .iter()
            .cloned()
            .map(toml::Value::String),
    );
    let http = servers["trapdesk-http"].as_table_mut().unwrap();
    assert_eq!(http["url"].as_str(), Some(DEFAULT_URL));
    http.insert("url".into(), toml::Value::String(seat.host.mcp_url()));
    std::fs::write(codex_home.join("config.toml"), config.to_string()).unwrap();

    let mut list = seat.command(CODEX.bin);
    list.args(["mcp", "list"])
        .env("TRAPDESK_AGENT_TOKEN", &token);
    let listed = seat.run(list).await;
    for name in ["trapdesk ", "trapdesk-http "] {
        let line = listed
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {listed}"));
        assert!(line.contains("enabled"), "{listed}");
    }

    let mut app = CodexAppServer::start(&seat, &token).await;
    let status = app.request("mcpServerStatus/list", json!({})).await;
    let servers = status["data"].as_array().unwrap();
    for name in ["trapdesk", "trapdesk-http"] {
        let s = servers
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {status}"));
        // A tool whose inputSchema Codex refuses would be missing here, or give toolsError.
        assert_eq!(s["toolsError"], Value::Null, "{s}");
        let tools: BTreeSet<String> = s["tools"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(tools, seat.tools, "{name}");
        assert_eq!(
            names(s, "resourceTemplates", "uriTemplate"),
            templates(),
            "{name}"
        );
    }

    let thread = app.request("thread/start", json!({})).await;
    let thread_id = thread["thread"]["id"].as_str().unwrap().to_owned();
    for server in ["trapdesk", "trapdesk-http"] {
        let r = app
            .request(
                "mcpServer/tool/call",
                json!({"threadId": thread_id, "server": server, "tool": "exec-lua",
                       "arguments": {"traposId": "1:miner", "code": "return 6*7"}}),
            )
            .await;
        returned_42(&r);
    }
    app.child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(has_npm), ignore = "needs npm and node on PATH")]
async fn opencode_shows_both_entries_connected_and_their_resources() {
    let bin = installed(&OPENCODE);
    let seat = Seat::new(bin).await;
    let token = seat.named_token("opencode").await;
    // The README's block, pointed at this host, with the token in place of its `td_…`.
    let mut config: Value =
        serde_json::from_str(&readme_block("json", "{ \"mcp\": {").replace("td_…", &token))
            .unwrap();
    let mcp = &mut config["mcp"];
    assert_eq!(mcp["trapdesk"]["command"], json!(["trapdesk", "mcp-stdio"]));
    mcp["trapdesk"]["command"] = json!(seat.stdio_command());
    assert_eq!(mcp["trapdesk-http"]["url"], json!(DEFAULT_URL));
    mcp["trapdesk-http"]["url"] = json!(seat.host.mcp_url());
    assert_eq!(
        mcp["trapdesk-http"]["headers"]["Authorization"],
        json!(format!("Bearer {token}"))
    );
    std::fs::write(
        seat.home.path().join("project/opencode.json"),
        config.to_string(),
    )
    .unwrap();

    let mut list = seat.command(OPENCODE.bin);
    list.args(["mcp", "list"]);
    let listed = seat.run(list).await;
    for name in ["trapdesk", "trapdesk-http"] {
        assert!(
            listed
                .lines()
                .any(|l| l.contains(&format!("✓ {name} ")) && l.contains("connected")),
            "{name} not connected: {listed}"
        );
    }

    // The headless server reports the same and lists resources through each entry. (Its tool
    // lists, /experimental/tool and /experimental/tool/ids, hold only OpenCode's own tools in
    // this version: MCP tools reach only a model's turn, which needs a provider.)
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut serve = seat.command(OPENCODE.bin);
    serve
        .args([
            "serve",
            "--hostname",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut server = serve.spawn().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let get = |path: &str| {
        let req = http.get(format!("{base}{path}"));
        async move {
            let r = req.send().await.ok()?;
            r.json::<Value>().await.ok()
        }
    };
    let status = crate::support::wait_ok(STEP, async || match get("/mcp").await {
        Some(v)
            if v["trapdesk"]["status"] == "connected"
                && v["trapdesk-http"]["status"] == "connected" =>
        {
            Ok(v)
        }
        v => Err(format!("opencode serve never had both connected: {v:?}")),
    })
    .await;
    assert_eq!(status.as_object().unwrap().len(), 2, "{status}");
    let resources = get("/experimental/resource").await.unwrap();
    for client in ["trapdesk", "trapdesk-http"] {
        let key = format!("{client}:trapdesk://computer/1:miner/screen");
        assert_eq!(resources[&key]["client"], json!(client), "{resources}");
    }
    server.kill().await.unwrap();
}

//! Real agent clients, installed from npm at pinned versions, configured with the README's own
//! lines (read from README.md, never copied here: the Claude Code and Inspector `sh` blocks run
//! by `sh -c`, the Codex and OpenCode blocks written as their config files), each in a temporary
//! HOME so nothing touches this machine's config, and pointed at a real host with an emulated
//! computer `1:miner` running the real Lua client. The host listens on free ports, never
//! 4444/4445, and keeps its data in the default data dir of that HOME: the stdio entries, as
//! written (`trapdesk mcp-stdio`, no flag), find it through its `host.json`; the HTTP entries
//! get its URL in place of the README's `http://127.0.0.1:4445/mcp`. None needs a model or an
//! API key for what is checked here:
//!
//! - the MCP Inspector's `--cli` mode, the README's two lines, lists the tools; it also lists the
//!   resource templates and calls `probe-computers` and `exec-lua`;
//! - Claude Code's `claude mcp list` shows both entries `✔ Connected` (and an entry without a
//!   token failing, as the README says); the HTTP line run again leaves no entry with an empty
//!   token, and the README's way to a new token works;
//! - Codex's `codex mcp list` shows the entries, and its app server (`codex app-server`, JSON-RPC
//!   on stdio: `mcpServerStatus/list`, `mcpServer/tool/call`) reports both started (`serverInfo`
//!   is trapdesk), lists every tool of both (Codex validates each inputSchema) and calls
//!   `exec-lua`;
//! - OpenCode's `opencode mcp list` shows both `connected`, and its headless server
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

/// The JSON documents `text` holds one after another (each Inspector call prints one).
fn documents(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The line of `claude mcp list`'s `listed` for the entry `name`, if there is one.
fn entry<'a>(listed: &'a str, name: &str) -> Option<&'a str> {
    listed.lines().find(|l| l.starts_with(&format!("{name}:")))
}

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
    // The README's two lines, HTTP then stdio, as a shell runs them: two tool lists.
    let out = seat
        .run(seat.shell(&seat.readme_sh("TOKEN=$(trapdesk agent add inspector")))
        .await;
    let lists = documents(&out);
    assert_eq!(lists.len(), 2, "{out}");
    for listed in &lists {
        assert_eq!(names(listed, "tools", "name"), seat.tools);
    }
    let listed = &lists[0];
    let http = vec![
        seat.host.mcp_url(),
        "--header".to_owned(),
        format!(
            "Authorization: Bearer {}",
            seat.named_token("inspector-calls").await
        ),
    ];
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
}

/// The Inspector lints every tool's schemas as it lists them (`--strict` names each finding):
/// an input schema it flags (a `type` array, a schema that constrains nothing, a remote `$ref`)
/// is one some client maps wrongly or refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(has_npm), ignore = "needs npm and node on PATH")]
async fn the_inspector_cli_finds_every_input_schema_portable() {
    let bin = installed(&INSPECTOR);
    let seat = Seat::new(bin).await;
    let http = vec![
        seat.host.mcp_url(),
        "--header".to_owned(),
        format!(
            "Authorization: Bearer {}",
            seat.named_token("inspector-lint").await
        ),
    ];
    let out = seat
        .inspector(
            &http,
            &["--method", "tools/list", "--format", "json", "--strict"],
        )
        .await;
    assert_eq!(names(&out["result"], "tools", "name"), seat.tools);
    let findings: Vec<(String, Value)> = out
        .get("schemaFindings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|tool| {
            let name = tool["toolName"].as_str().unwrap().to_owned();
            let found = tool["findings"].as_array().unwrap().clone();
            found.into_iter().map(move |f| (name.clone(), f))
        })
        .collect();
    let (inputs, outputs): (Vec<_>, Vec<_>) = findings
        .into_iter()
        .partition(|(_, f)| f["schema"] == "inputSchema");
    eprintln!("Inspector findings on output schemas: {}", outputs.len());
    assert!(inputs.is_empty(), "{inputs:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(has_npm), ignore = "needs npm and node on PATH")]
async fn claude_code_shows_both_entries_connected() {
    let bin = installed(&CLAUDE);
    let seat = Seat::new(bin).await;
    let url = seat.host.mcp_url();
    // The README's block as a shell runs it: the stdio entry, then the HTTP one.
    let block = seat.readme_sh("claude mcp add trapdesk -- trapdesk mcp-stdio");
    seat.run(seat.shell(&block)).await;
    // Without the header, as the README warns.
    let mut add = seat.command(CLAUDE.bin);
    add.args(["mcp", "add", "--transport", "http", "trapdesk-noauth", &url]);
    seat.run(add).await;

    let list = async || {
        let mut list = seat.command(CLAUDE.bin);
        list.args(["mcp", "list"]);
        seat.run(list).await
    };
    let listed = list().await;
    let line = |name: &str| {
        entry(&listed, name)
            .unwrap_or_else(|| panic!("no {name} in {listed}"))
            .to_owned()
    };
    for name in ["trapdesk", "trapdesk-http"] {
        assert!(line(name).ends_with("✔ Connected"), "{listed}");
    }
    eprintln!("claude mcp list:\n{listed}");
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

    // Run again, and again after the HTTP entry is gone: the agent exists, so the block stops
    // before `claude mcp add`, and no entry is left with an empty token.
    let config = seat.home.path().join(".claude.json");
    seat.output(seat.shell(&block)).await;
    assert_eq!(list().await, listed);
    let mut remove = seat.command(CLAUDE.bin);
    remove.args(["mcp", "remove", "trapdesk-http"]);
    seat.run(remove).await;
    let again = seat.output(seat.shell(&block)).await;
    assert!(!again.status.success(), "{again:?}");
    let relisted = list().await;
    assert!(entry(&relisted, "trapdesk-http").is_none(), "{relisted}");
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(!written.contains("Bearer \""), "an empty token: {written}");

    // The README's way to a new token, followed as written, connects again.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let renew = readme
        .split("For a new token: `")
        .nth(1)
        .and_then(|r| r.split("`, then the line again").next())
        .expect("README says how to get a new token");
    seat.output(seat.shell(renew)).await;
    seat.run(seat.shell(&block)).await;
    let renewed = list().await;
    let http = entry(&renewed, "trapdesk-http").unwrap_or_else(|| panic!("{renewed}"));
    assert!(http.ends_with("✔ Connected"), "{renewed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(has_npm), ignore = "needs npm and node on PATH")]
async fn codex_lists_every_tool_of_both_entries_and_calls_exec_lua() {
    let bin = installed(&CODEX);
    let seat = Seat::new(bin).await;
    let codex_home = seat.home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    // The README's block, pointed at this host: its HTTP entry's URL replaced, its stdio entry
    // as written.
    let block = readme_block("toml", "[mcp_servers.trapdesk]");
    let mut config: toml::Table = block.parse().unwrap();
    let servers = config["mcp_servers"].as_table_mut().unwrap();
    let stdio = servers["trapdesk"].as_table().unwrap();
    assert_eq!(stdio["command"].as_str(), Some("trapdesk"));
    assert_eq!(stdio["args"].as_array().unwrap().len(), 1, "{stdio}");
    let http = servers["trapdesk-http"].as_table_mut().unwrap();
    assert_eq!(http["url"].as_str(), Some(DEFAULT_URL));
    http.insert("url".into(), toml::Value::String(seat.host.mcp_url()));
    std::fs::write(codex_home.join("config.toml"), config.to_string()).unwrap();
    // The block's commented shell line makes the token, as the shell that starts codex would.
    let make_token = block
        .lines()
        .find_map(|l| l.strip_prefix("# TRAPDESK_AGENT_TOKEN="))
        .map(|rest| format!("TRAPDESK_AGENT_TOKEN={rest}; printf %s \"$TRAPDESK_AGENT_TOKEN\""))
        .expect("the README's Codex block says how to make the token");
    let token = seat.run(seat.shell(&make_token)).await;
    assert!(token.starts_with("td_"), "{token}");

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
        // Started: Codex got trapdesk's own answer to `initialize`.
        assert_eq!(s["serverInfo"]["name"], json!("trapdesk"), "{s}");
        eprintln!(
            "codex mcpServerStatus/list {name}: serverInfo {}, runtimeStatus {}, authStatus {}, toolsError {}",
            s["serverInfo"], s["runtimeStatus"], s["authStatus"], s["toolsError"]
        );
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
    // The token from the command the README names for its `td_…`, run as written.
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let make_token = readme
        .split("(`td_…` is what `")
        .nth(1)
        .and_then(|r| r.split("` printed.)").next())
        .expect("the README says where the OpenCode block's token comes from");
    let token = seat.run(seat.shell(make_token)).await.trim().to_owned();
    assert!(token.starts_with("td_"), "{token}");
    // The README's block, pointed at this host, with the token in place of its `td_…`; its
    // stdio entry as written.
    let mut config: Value =
        serde_json::from_str(&readme_block("json", "{ \"mcp\": {").replace("td_…", &token))
            .unwrap();
    let mcp = &mut config["mcp"];
    assert_eq!(mcp["trapdesk"]["command"], json!(["trapdesk", "mcp-stdio"]));
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
    eprintln!("opencode mcp list:\n{listed}");
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

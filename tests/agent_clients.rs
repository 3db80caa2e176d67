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
//! The clients are installed once into `target/tmp/agent-clients/` (`npm install --prefix`); a
//! missing node/npm or an unreachable registry fails the test under `CI=true` and skips it loudly
//! elsewhere.
#![allow(clippy::unwrap_used, clippy::panic)]

mod support;

#[path = "support/mcp_fake.rs"]
mod fake;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use support::{TestHost, emulated, start_host};

/// An npm package at the version the tests were written against, and the command it installs.
struct Pin {
    package: &'static str,
    version: &'static str,
    bin: &'static str,
}

const INSPECTOR: Pin = Pin {
    package: "@modelcontextprotocol/inspector",
    version: "2.12.0",
    bin: "mcp-inspector",
};
const CLAUDE: Pin = Pin {
    package: "@anthropic-ai/claude-code",
    version: "2.1.332",
    bin: "claude",
};
const CODEX: Pin = Pin {
    package: "@openai/codex",
    version: "0.171.0",
    bin: "codex",
};
const OPENCODE: Pin = Pin {
    package: "opencode-ai",
    version: "1.18.33",
    bin: "opencode",
};

/// The two resource templates every client must see.
const TEMPLATES: [&str; 2] = [
    "trapdesk://computer/{traposId}/files/{+path}",
    "trapdesk://computer/{traposId}/screen",
];

/// How long one client command may take (a cold start of a bundled Node or Bun program on a
/// loaded machine is a few seconds; `opencode` alone takes about five).
const STEP: Duration = Duration::from_secs(90);

/// The client cannot run here: a failure on CI (`CI=true`), a loud skip elsewhere.
fn unavailable(why: &str) -> Option<PathBuf> {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why} (CI must run the agent clients; .ci/run installs node and npm)");
    }
    eprintln!("SKIPPED: {why}");
    None
}

/// The `node_modules/.bin` folder holding `pin`'s command, installing it on first use.
///
/// Each pin has a folder of its own named by package and version, so a new pin installs anew
/// and tests of different clients never share one. The install goes to a scratch folder that is
/// renamed into place only when complete: two test processes installing the same pin at once
/// both finish, one rename wins and the other's copy is dropped, and an interrupted install
/// leaves nothing that looks done.
fn installed(pin: &Pin) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("agent-clients");
    let name = format!("{}@{}", pin.package.replace(['/', '@'], "+"), pin.version);
    let dir = root.join(&name);
    let bin_dir = dir.join("node_modules").join(".bin");
    // node runs most of these clients (the Inspector, Codex's launcher) as well as npm.
    for tool in ["node", "npm"] {
        match std::process::Command::new(tool).arg("--version").output() {
            Ok(o) if o.status.success() => {}
            _ => {
                return unavailable(&format!(
                    "`{tool}` is not on PATH, so {} cannot be installed or run",
                    pin.package
                ));
            }
        }
    }
    if bin_dir.join(pin.bin).exists() {
        return Some(bin_dir);
    }
    std::fs::create_dir_all(&root).unwrap();
    let scratch = root.join(format!(".{name}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let spec = format!("{}@{}", pin.package, pin.version);
    eprintln!("installing {spec} into {} (once)", dir.display());
    let out = std::process::Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&scratch)
        .arg(&spec)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if !out.status.success() || !scratch.join("node_modules/.bin").join(pin.bin).exists() {
        let _ = std::fs::remove_dir_all(&scratch);
        return unavailable(&format!(
            "`npm install {spec}` failed (registry unreachable?): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if std::fs::rename(&scratch, &dir).is_err() {
        // Another process got there first; its copy is as good as ours.
        let _ = std::fs::remove_dir_all(&scratch);
    }
    bin_dir.join(pin.bin).exists().then_some(bin_dir)
}

/// A host with `1:miner` linked, a temporary HOME for the client, and what the server itself
/// lists (through rmcp), to compare each client's view with.
struct Seat {
    host: TestHost,
    _computer: trapdesk::emu::Computer,
    home: tempfile::TempDir,
    bin_dir: PathBuf,
    tools: BTreeSet<String>,
}

impl Seat {
    async fn new(bin_dir: PathBuf) -> Seat {
        let host = start_host().await;
        let computer = emulated(&host, 1, Some("miner")).await;
        let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
        let tools = client
            .list_all_tools()
            .await
            .unwrap()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        client.cancel().await.unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("project")).unwrap();
        Seat {
            host,
            _computer: computer,
            home,
            bin_dir,
            tools,
        }
    }

    fn trapdesk() -> PathBuf {
        PathBuf::from(env!("CARGO_BIN_EXE_trapdesk"))
    }

    fn data_dir(&self) -> String {
        self.host.settings.data_dir.display().to_string()
    }

    /// The stdio entry's command line: the README's `trapdesk mcp-stdio`, plus where this test's
    /// host is (a person's host is at the defaults). As arguments, so that every client's entry
    /// holds all it needs, whatever environment the client gives the servers it starts.
    fn stdio_command(&self) -> Vec<String> {
        vec![
            "trapdesk".into(),
            "mcp-stdio".into(),
            "--data-dir".into(),
            self.data_dir(),
            "--connect".into(),
            self.host.mcp_url(),
        ]
    }

    /// A fresh named agent's token, from `trapdesk agent add NAME --token-only` as the README
    /// has it.
    async fn named_token(&self, name: &str) -> String {
        let out = Command::new(Self::trapdesk())
            .args(["agent", "add", name, "--token-only", "--data-dir"])
            .arg(&self.host.settings.data_dir)
            .env_remove("TRAPDESK_DATA_DIR")
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        assert!(token.starts_with("td_"), "{token}");
        token
    }

    /// `program` from the client's install (or `trapdesk`) with a clean environment: the temp
    /// HOME and XDG dirs, PATH with the client and `trapdesk`, no updater, no telemetry, and
    /// nothing else of ours (no API keys, no TRAPDESK_* variables).
    fn command(&self, program: &str) -> Command {
        let home = self.home.path();
        let path = std::env::join_paths(
            [
                self.bin_dir.clone(),
                Self::trapdesk().parent().unwrap().to_owned(),
            ]
            .into_iter()
            .chain(std::env::split_paths(
                &std::env::var_os("PATH").unwrap_or_default(),
            )),
        )
        .unwrap();
        let mut c = Command::new(self.bin_dir.join(program));
        c.env_clear()
            .current_dir(home.join("project"))
            .env("PATH", path)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("CODEX_HOME", home.join(".codex"))
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        c
    }

    /// Runs `cmd` to its end; its stdout, after asserting it succeeded.
    async fn run(&self, mut cmd: Command) -> String {
        let shown = format!("{:?}", cmd.as_std());
        let out = tokio::time::timeout(STEP, cmd.output())
            .await
            .unwrap_or_else(|_| panic!("{shown} took over {STEP:?}"))
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{shown} failed: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// `mcp-inspector --cli` against `target` (URL or stdio command), one method; its JSON.
    async fn inspector(&self, target: &[String], args: &[&str]) -> Value {
        let mut c = self.command(INSPECTOR.bin);
        c.arg("--cli").args(target).args(args);
        let out = self.run(c).await;
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }
}

/// The body of the README's first fenced ```` ```LANG ```` block that starts with `first_line`:
/// the client configurations are taken from there, so the README cannot drift from what works.
fn readme_block(lang: &str, first_line: &str) -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let fence = format!("```{lang}\n");
    let mut rest = doc.as_str();
    while let Some(i) = rest.find(&fence) {
        let body = &rest[i + fence.len()..];
        let end = body.find("\n```").unwrap();
        if body.starts_with(first_line) {
            return body[..=end].to_owned();
        }
        rest = &body[end..];
    }
    panic!("README.md has no ```{lang} block starting {first_line:?}");
}

/// The README's default endpoint, which each test replaces with its host's.
const DEFAULT_URL: &str = "http://127.0.0.1:4445/mcp";

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_lists_tools_and_templates_and_calls_tools() {
    let Some(bin) = installed(&INSPECTOR) else {
        return;
    };
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
async fn claude_code_shows_both_entries_connected() {
    let Some(bin) = installed(&CLAUDE) else {
        return;
    };
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

/// Codex's app server on stdio: `initialize`, then one request; its `result`.
struct CodexAppServer {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next: u64,
}

impl CodexAppServer {
    async fn start(seat: &Seat, token: &str) -> CodexAppServer {
        let mut c = seat.command(CODEX.bin);
        c.arg("app-server")
            .env("TRAPDESK_AGENT_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut s = CodexAppServer {
            child,
            stdin,
            lines,
            next: 0,
        };
        s.request(
            "initialize",
            json!({"clientInfo": {"name": "trapdesk-test", "version": "1"}}),
        )
        .await;
        s.send(json!({"method": "initialized"})).await;
        s
    }

    async fn send(&mut self, v: Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"id": id, "method": method, "params": params}))
            .await;
        tokio::time::timeout(STEP, async {
            loop {
                let line = self.lines.next_line().await.unwrap().unwrap_or_else(|| {
                    panic!("codex app-server closed its output before answering {method}")
                });
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["id"] == json!(id) {
                    assert!(v.get("error").is_none(), "{method}: {v}");
                    return v["result"].clone();
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("codex app-server did not answer {method}"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_lists_every_tool_of_both_entries_and_calls_exec_lua() {
    let Some(bin) = installed(&CODEX) else { return };
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
async fn opencode_shows_both_entries_connected_and_their_resources() {
    let Some(bin) = installed(&OPENCODE) else {
        return;
    };
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
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(v) = get("/mcp").await
            && v["trapdesk"]["status"] == "connected"
            && v["trapdesk-http"]["status"] == "connected"
        {
            break v;
        }
        assert!(
            start.elapsed() < STEP,
            "opencode serve never had both connected"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(status.as_object().unwrap().len(), 2, "{status}");
    let resources = get("/experimental/resource").await.unwrap();
    for client in ["trapdesk", "trapdesk-http"] {
        let key = format!("{client}:trapdesk://computer/1:miner/screen");
        assert_eq!(resources[&key]["client"], json!(client), "{resources}");
    }
    server.kill().await.unwrap();
}

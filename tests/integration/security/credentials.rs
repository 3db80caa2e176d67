//! Attacks on credentials: who the person's own tools are is known by the token they present
//! (the data dir's `person-token`), never by the name a client gives itself; and no tool sends
//! a token to an address that neither the person nor a live `host.json` named
//! (docs/security.md, "Credentials: the person's tools and where tokens go").

use std::process::{Command, Stdio};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::cli::output;
use super::support::{self, TestHost};

/// An MCP client that calls itself whatever the test says.
struct Named(String);

impl ClientHandler for Named {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(self.0.clone(), "1.0"),
        )
    }
}

type Client = RunningService<RoleClient, Named>;

/// rmcp's Streamable HTTP client at `url` with `token`, named `name`.
async fn connect(url: &str, token: &str, name: &str) -> Client {
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    Named(name.to_owned())
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

async fn call(client: &Client, tool: &'static str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .unwrap()
}

fn data(r: &CallToolResult) -> Value {
    r.structured_content.clone().unwrap_or(Value::Null)
}

fn text(r: &CallToolResult) -> String {
    r.content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// The real binary with the data dir given and no token or address from the environment.
fn trapdesk(dir: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.args(args)
        .env("TRAPDESK_DATA_DIR", dir)
        .env("NO_COLOR", "1")
        .env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN")
        .env_remove("TRAPDESK_AGENT_TOKEN")
        .env_remove("TRAPDESK_CONNECT")
        .stdin(Stdio::null());
    c
}

/// Runs the binary off the test's runtime threads (the host lives on them).
fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const HOST_TOKEN: &str = "the-hosts-own-mcp-token-5h2k";

async fn host() -> TestHost {
    support::start_host_with(|s| {
        s.mcp_token = Some(HOST_TOKEN.into());
        // Room for every client's detached run on the one computer.
        s.max_detached = 16;
    })
    .await
}

/// After `trapdesk pause`, a client holding the local token, a named agent's token or the
/// host's `--mcp-token` is an agent whatever it calls itself (`trapdesk-cli`,
/// `trapdesk-sync`, anything): its detached run is cancelled and its exec, input and reboot
/// are refused with `paused`; the person's own CLI (the person token) still runs code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_calling_itself_trapdesk_cli_is_stopped_by_pause() {
    let host = host().await;
    let dir = host.dir.path().to_owned();
    let _c = support::emulated(&host, 1, Some("vault")).await;
    let named = trapdesk::trust::agents::add(&dir, "claude").unwrap();
    let tokens = [
        ("local", host.local_token.clone()),
        ("named", named),
        ("mcp-token", HOST_TOKEN.to_owned()),
    ];
    let names = [
        trapdesk::session::Origin::CLI_CLIENT,
        trapdesk::session::Origin::SYNC_CLIENT,
        "some-agent",
    ];
    let mut clients = Vec::new();
    let mut runs = Vec::new();
    for (what, token) in &tokens {
        for name in names {
            let c = connect(&host.mcp_url(), token, name).await;
            let r = call(
                &c,
                "exec-lua",
                json!({"traposId": "1:vault", "code": "sleep(60) return 1", "detach": true}),
            )
            .await;
            assert_ne!(r.is_error, Some(true), "{what} as {name}: {}", text(&r));
            runs.push(data(&r)["requestId"].as_str().unwrap().to_owned());
            clients.push((format!("{what} as {name}"), c));
        }
    }
    support::wait_until(|| host.session.pending().len() == runs.len()).await;

    let out = output(trapdesk(&dir, &["pause"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", lossy(&out.stderr));
    // Every one of those runs was an agent's: all of them end.
    support::wait_until(|| {
        let pending = host.session.pending();
        runs.iter()
            .all(|id| pending.iter().all(|p| &p.request_id != id))
    })
    .await;

    for (who, c) in &clients {
        for (tool, args) in [
            (
                "exec-lua",
                json!({"traposId": "1:vault", "code": "return 1"}),
            ),
            ("send-input", json!({"traposId": "1:vault", "text": "ls"})),
            ("reboot-computer", json!({"traposId": "1:vault"})),
        ] {
            let r = call(c, tool, args).await;
            assert_eq!(r.is_error, Some(true), "{who}: {tool} ran while paused");
            assert_eq!(
                data(&r)["error"]["code"],
                "paused",
                "{who}: {tool}: {}",
                text(&r)
            );
        }
        // A detached run that was cancelled says so to whoever asks.
    }
    let r = call(
        &clients[0].1,
        "wait-request",
        json!({"requestId": runs[0], "timeoutMs": 5000}),
    )
    .await;
    assert_eq!(data(&r)["status"], "cancelled", "{}", text(&r));

    // The person's CLI, with no --connect: it finds the host on its port-0 address through
    // host.json and presents the person token; a pause does not stop the person.
    let out = output(trapdesk(&dir, &["exec", "1:vault", "return 6*7"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", lossy(&out.stderr));
    assert!(lossy(&out.stdout).contains("42"), "{}", lossy(&out.stdout));
    for (_, c) in clients {
        let _ = c.cancel().await;
    }
}

/// A listener standing where the old fallback went (or where a stale host.json points):
/// counts the connections made to it.
struct Trap {
    addr: std::net::SocketAddr,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Trap {
    fn at(addr: &str) -> Option<Trap> {
        let l = std::net::TcpListener::bind(addr).ok()?;
        let addr = l.local_addr().ok()?;
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = hits.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(s);
            }
        });
        Some(Trap { addr, hits })
    }

    fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// With no live host recorded and no `--connect`, `mcp-stdio`, the CLI and `doctor` send
/// nothing anywhere: not to the old default 127.0.0.1:4445 (a listener taken there first
/// would have collected the local token), not to the address a dead host's `host.json` still
/// names. Each says where it looked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_on_the_default_port_collects_no_token() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    trapdesk::trust::agents::local_token(data).unwrap();
    trapdesk::trust::agents::person_token(data).unwrap();
    // The well-known port, when this machine lets us have it; a stale host.json always.
    let default = Trap::at("127.0.0.1:4445");
    let stale = Trap::at("127.0.0.1:0").unwrap();
    let dead_pid = 999_999_999u32;
    std::fs::write(
        data.join("host.json"),
        json!({"pid": dead_pid, "gateway": stale.addr.to_string(), "mcp": stale.addr.to_string()})
            .to_string(),
    )
    .unwrap();
    let host_json = data.join("host.json").display().to_string();

    let stdio = output(trapdesk(data, &["mcp-stdio"])).await;
    let err = lossy(&stdio.stderr);
    assert_ne!(stdio.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&host_json) && err.contains("--connect"),
        "mcp-stdio names where it looked and what to pass: {err}"
    );

    let cli = output(trapdesk(data, &["computers"])).await;
    let err = lossy(&cli.stderr);
    assert_eq!(cli.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&host_json) && err.contains("--connect URL"),
        "{err}"
    );

    let sync_dir = tempfile::tempdir().unwrap();
    let sync = output(trapdesk(
        data,
        &["sync", &sync_dir.path().display().to_string(), "1:vault"],
    ))
    .await;
    assert_ne!(sync.status.code(), Some(0), "{}", lossy(&sync.stdout));

    let doctor = output(trapdesk(data, &["doctor"])).await;
    let said = lossy(&doctor.stdout) + &lossy(&doctor.stderr);
    assert!(
        said.contains("no trapdesk is running") && said.contains(&host_json),
        "{said}"
    );

    // Give any stray connection time to land before counting none: the quiet period is the
    // test, as what is checked is that nothing comes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(stale.hits(), 0, "a dead host's address got a connection");
    if let Some(d) = default {
        assert_eq!(d.hits(), 0, "127.0.0.1:4445 got a connection");
    }
}

/// `mcp-stdio` started with only the data dir finds a host on non-default ports through its
/// `host.json`, and presents an agent's credential: the host's `TRAPDESK_MCP_TOKEN` (set here
/// to a wrong value) is not used and a warning says so; `TRAPDESK_AGENT_TOKEN` names the agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_stdio_finds_the_host_by_host_json_and_never_reads_the_hosts_token() {
    let host = host().await;
    let dir = host.dir.path().to_owned();
    let _c = support::emulated(&host, 1, Some("vault")).await;
    assert_ne!(host.mcp_addr.port(), 4445);

    for agent_token in [
        None,
        Some(trapdesk::trust::agents::add(&dir, "codex").unwrap()),
    ] {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"));
        cmd.arg("mcp-stdio")
            .env("TRAPDESK_DATA_DIR", &dir)
            .env_remove("TRAPDESK_CONNECT")
            .env_remove("TRAPDESK_TOKEN")
            .env("TRAPDESK_MCP_TOKEN", "td_not_the_agents_token")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        match &agent_token {
            Some(t) => cmd.env("TRAPDESK_AGENT_TOKEN", t),
            None => cmd.env_remove("TRAPDESK_AGENT_TOKEN"),
        };
        let mut child = cmd.spawn().unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let mut stderr = child.stderr.take().unwrap();
        // The agent calls itself the CLI: through mcp-stdio it is an agent all the same.
        let client = tokio::time::timeout(
            Duration::from_secs(20),
            Named(trapdesk::session::Origin::CLI_CLIENT.into()).serve((stdout, stdin)),
        )
        .await
        .unwrap()
        .unwrap();
        let r = call(
            &client,
            "exec-lua",
            json!({"traposId": "1:vault", "code": "return 6*7"}),
        )
        .await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let by = host.session.tool_calls().last().unwrap().client.clone();
        let expected = if agent_token.is_some() {
            "codex"
        } else {
            trapdesk::session::Origin::CLI_CLIENT
        };
        // The person's CLI would be recorded as `cli`.
        assert_eq!(by, expected, "an agent, never the person's cli");
        let _ = client.cancel().await;
        let _ = child.wait().await;
        let mut err = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err)
            .await
            .unwrap();
        if agent_token.is_none() {
            assert!(
                err.contains("TRAPDESK_MCP_TOKEN is set but not used")
                    && err.contains("TRAPDESK_AGENT_TOKEN"),
                "{err}"
            );
        } else {
            assert!(!err.contains("TRAPDESK_MCP_TOKEN"), "{err}");
        }
    }
}

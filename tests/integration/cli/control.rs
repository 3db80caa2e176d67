//! The local control channel (`/control/*` on the MCP listener) and the person's own tools on
//! it: only the local token opens it (not a named agent's, not from a web page); `doctor` asks
//! the running host and writes nothing; `secret show` prints the running host's secret; the
//! CLI works with the local token while named agents exist, and its calls keep origin `cli`.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

use support::{SECRET, start_host, start_host_with};

fn trapdesk() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN")
        .env_remove("TRAPDESK_CONNECT")
        .env_remove("TRAPDESK_DATA_DIR")
        .env_remove("TRAPDESK_GATEWAY_BIND")
        .env_remove("SANDBOX_PASSWORD")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME");
    c
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn base(host: &support::TestHost) -> String {
    format!("http://{}", host.mcp_addr)
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        }
        out.push(p);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_control_channel_takes_only_the_local_token() {
    let host = start_host_with(|s| s.mcp_token = Some("the-hosts-own-mcp-token-1234".into())).await;
    let agent = trapdesk::trust::agents::add(host.dir.path(), "builder").unwrap();
    let local = trapdesk::trust::agents::read_local(host.dir.path())
        .unwrap()
        .unwrap();
    let url = format!("{}/control/status", base(&host));
    let http = reqwest::Client::new();
    let code = |t: Option<&str>, origin: Option<&str>| {
        let mut r = http.get(&url);
        if let Some(t) = t {
            r = r.bearer_auth(t);
        }
        if let Some(o) = origin {
            r = r.header("Origin", o);
        }
        async move { r.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(code(None, None).await, 401);
    assert_eq!(code(Some(&agent), None).await, 401, "a named agent's token");
    assert_eq!(
        code(Some("the-hosts-own-mcp-token-1234"), None).await,
        401,
        "the host's --mcp-token is for MCP, not for the control channel"
    );
    assert_eq!(
        code(Some(&local), Some("http://localhost:8000")).await,
        403,
        "a web page, even with the token"
    );
    let st: trapdesk::control::Status = http
        .get(&url)
        .bearer_auth(&local)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(st.gateway, host.gateway_addr);
    assert_eq!(st.mcp, host.mcp_addr);
    assert_eq!(st.data_dir, host.dir.path());
    assert_eq!(st.secret.secret, SECRET);
    assert_eq!(st.pid, std::process::id());
    host.host.stop().await;
}

/// Doctor reports the running host's gateway port, data dir and secret,
/// whatever `--gateway-bind` or the defaults say, and the refused links it saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_asks_the_running_host_not_the_defaults() {
    let host = start_host().await;
    let gw = host.gateway_addr;
    assert_ne!(gw.port(), 4444);
    // A refused link, for the host to report.
    let mut bad = support::hello(9, Some("intruder"));
    bad["secret"] = serde_json::json!("wrong");
    let mut c = support::FakeComputer::connect_raw(&host).await;
    c.send(&bad).await;
    let _ = c.recv_close().await;

    let home = tempfile::tempdir().unwrap();
    let mut cmd = trapdesk();
    // --connect names the host; the flag for the gateway is a wrong guess that must not win.
    cmd.args([
        "doctor",
        "--connect",
        &host.mcp_url(),
        "--gateway-bind",
        "127.0.0.1:4444",
    ])
    .arg("--data-dir")
    .arg(host.dir.path())
    .current_dir(home.path())
    .env("HOME", home.path());
    let out = output(cmd).await;
    let printed = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{printed}{}", text(&out.stderr));
    assert!(
        printed.contains(&format!("its data dir is {}", host.dir.path().display())),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("listens on {gw} (the running host's")),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("port {} answers (/health ok)", gw.port())),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("port = {}", gw.port())),
        "{printed}"
    );
    // Into a pipe, doctor names the install line but keeps the secret to a terminal.
    assert!(
        printed.contains(&format!("wget run http://{gw}/install.lua and the secret")),
        "{printed}"
    );
    assert!(!printed.contains(SECRET), "{printed}");
    assert!(printed.contains("9:intruder"), "{printed}");
    assert!(!printed.contains("does not answer"), "{printed}");
    assert!(!printed.contains("0.0.0.0:4444"), "{printed}");
    host.host.stop().await;
}

/// On an empty HOME, with no host, doctor says what to start and writes
/// nothing (before, it resolved the settings as a host would: a data dir and a new secret).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_on_an_empty_home_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = trapdesk();
    cmd.args([
        "doctor",
        "--connect",
        &format!("http://127.0.0.1:{port}/mcp"),
    ])
    .current_dir(home.path())
    .env("HOME", home.path());
    let out = output(cmd).await;
    let printed = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{printed}{}", text(&out.stderr));
    assert!(printed.contains("no local token in"), "{printed}");
    assert!(printed.contains("no secret yet"), "{printed}");
    assert_eq!(files_under(home.path()), Vec::<std::path::PathBuf>::new());
}

/// `trapdesk secret show` while a host runs prints the secret that host checks (here one
/// given to the host directly, as `--secret` does), not one made up from the data dir.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_show_prints_the_running_hosts_secret() {
    let host = start_host().await;
    let mut cmd = trapdesk();
    cmd.args(["secret", "show"])
        .arg("--data-dir")
        .arg(host.dir.path())
        .env("HOME", host.dir.path());
    let out = output(cmd).await;
    let printed = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{printed}{}", text(&out.stderr));
    assert!(printed.contains(&format!("    {SECRET}\n")), "{printed}");
    assert!(
        printed.contains(&format!(
            "wget run http://{}/install.lua {SECRET}",
            host.gateway_addr
        )),
        "{printed}"
    );
    assert!(
        !host.dir.path().join("secret").exists(),
        "no secret file was made beside the running host's"
    );
    host.host.stop().await;
}

/// With a named agent in the store, the person's CLI still works with the data dir's person
/// token (no TRAPDESK_TOKEN), and its calls are the CLI's, not an agent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_uses_the_person_token_beside_named_agents() {
    let host = start_host().await;
    trapdesk::trust::agents::add(host.dir.path(), "builder").unwrap();
    let mut cmd = trapdesk();
    cmd.args(["computers", "--connect", &host.mcp_url()])
        .arg("--data-dir")
        .arg(host.dir.path());
    let out = output(cmd).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let calls: Vec<_> = host
        .session
        .recent(100)
        .into_iter()
        .filter(|e| e.event.as_str() == "tool_call")
        .collect();
    assert!(!calls.is_empty());
    for c in &calls {
        assert_eq!(c.who.as_deref(), Some("cli"), "{c:?}");
    }
    host.host.stop().await;
}

/// Without `--connect`, the CLI finds the host running on its data dir (on ports of its own,
/// here port 0) by the `host.json` it published, as `doctor` does, instead of the default port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_finds_the_host_running_on_its_data_dir() {
    let host = start_host().await;
    assert!(
        host.dir.path().join("host.json").exists(),
        "the test host publishes host.json"
    );
    let mut cmd = trapdesk();
    cmd.args(["computers", "--json", "--data-dir"])
        .arg(host.dir.path());
    let out = output(cmd).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    host.host.stop().await;
}

/// `trapdesk pause` / `resume` set and lift the stop for all agents over the control channel
/// (set by `cli`), and the host's status says so meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_and_resume_from_the_command_line() {
    let host = start_host().await;
    let run = |what: &'static str| {
        let mut c = trapdesk();
        c.arg(what).arg("--data-dir").arg(host.dir.path());
        output(c)
    };
    let out = run("pause").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("agents stopped"),
        "{}",
        text(&out.stdout)
    );
    let p = host.session.paused().expect("paused");
    assert_eq!(p.by, "cli");

    let local = trapdesk::trust::agents::read_local(host.dir.path())
        .unwrap()
        .unwrap();
    let st: trapdesk::control::Status = reqwest::Client::new()
        .get(format!("{}/control/status", base(&host)))
        .bearer_auth(&local)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(st.paused.map(|p| p.by), Some("cli".to_owned()));

    let again = run("pause").await;
    assert!(
        text(&again.stdout).contains("already stopped"),
        "{}",
        text(&again.stdout)
    );
    let out = run("resume").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(host.session.paused().is_none());
    host.host.stop().await;
}

/// With no host, `trapdesk pause` says so and exits 3.
#[test]
fn pause_without_a_host_exits_3() {
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = trapdesk()
        .args([
            "pause",
            "--connect",
            &format!("http://127.0.0.1:{port}/mcp"),
        ])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(files_under(home.path()), Vec::<std::path::PathBuf>::new());
}

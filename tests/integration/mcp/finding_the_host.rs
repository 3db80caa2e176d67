//! Every front of the install finds the running host the same way (`control_client::find`):
//! `--connect` or env `TRAPDESK_CONNECT`, else the live host in the data dir's `host.json`.
//! Through the real binary, each time against a host on ports other than 4444/4445, with a HOME
//! of its own and none of this machine's TRAPDESK_* variables.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;

use crate::support::{self, TestHost};

/// A host on free ports whose data dir is `dir`.
async fn host_in(dir: &Path) -> TestHost {
    std::fs::create_dir_all(dir).unwrap();
    let dir = dir.to_owned();
    let host = support::start_host_with(move |s| s.data_dir = dir).await;
    assert_ne!(host.mcp_addr.port(), 4445);
    assert_ne!(host.gateway_addr.port(), 4444);
    host
}

/// `trapdesk ARGS` as a person's shell (or an agent) starts it: HOME is `home`, no XDG or
/// TRAPDESK_* variable but those in `env`.
fn trapdesk(home: &Path, args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(support::trapdesk_exe());
    c.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    c
}

/// Starts `trapdesk mcp-stdio ARGS` and lists the tools through it, as an agent would: their
/// number, or what it said on stderr when it stopped instead.
async fn tools_through_stdio(
    home: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<usize, String> {
    let mut all = vec!["mcp-stdio"];
    all.extend_from_slice(args);
    let mut child = trapdesk(home, &all, env).spawn().unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let listed = async {
        let client = ().serve((stdout, stdin)).await.ok()?;
        let tools = client.list_all_tools().await.ok()?;
        let _ = client.cancel().await;
        Some(tools.len())
    };
    let listed = tokio::time::timeout(Duration::from_secs(30), listed)
        .await
        .expect("mcp-stdio neither answered nor stopped within 30 s");
    let _ = child.kill().await;
    let mut err = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err)
        .await
        .unwrap();
    listed.ok_or(err)
}

/// A person who exported `TRAPDESK_CONNECT` (the README's one export for a host on other
/// ports) reaches that host from the CLI and from `mcp-stdio` alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_stdio_takes_trapdesk_connect_as_the_cli_does() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let host = host_in(&elsewhere.path().join("data")).await;
    let token = trapdesk::trust::agents::add(&host.settings.data_dir, "probe").unwrap();
    let url = host.mcp_url();

    let cli = trapdesk(
        home.path(),
        &["computers"],
        &[("TRAPDESK_CONNECT", &url), ("TRAPDESK_TOKEN", &token)],
    )
    .output()
    .await
    .unwrap();
    assert!(
        cli.status.success(),
        "the CLI: {}",
        String::from_utf8_lossy(&cli.stderr)
    );

    let env = [
        ("TRAPDESK_CONNECT", url.as_str()),
        ("TRAPDESK_AGENT_TOKEN", &token),
    ];
    let listed = tools_through_stdio(home.path(), &[], &env).await;
    assert!(
        listed.as_ref().is_ok_and(|n| *n > 0),
        "mcp-stdio with TRAPDESK_CONNECT={url}: {listed:?}"
    );
}

/// The README's `trapdesk mcp-stdio`, no flags, finds a host on other ports through the
/// default data dir's `host.json`, as `secret show` and the CLI do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_line_finds_a_host_on_other_ports() {
    let home = tempfile::tempdir().unwrap();
    let _host = host_in(&home.path().join(".local/share/trapdesk")).await;
    let shown = trapdesk(home.path(), &["secret", "show"], &[])
        .output()
        .await
        .unwrap();
    let shown_text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown_text.contains("the running host's"), "{shown_text}");
    let listed = tools_through_stdio(home.path(), &[], &[]).await;
    assert!(listed.as_ref().is_ok_and(|n| *n > 0), "{listed:?}");
}

/// An agent that starts its servers with a trimmed environment (the MCP Inspector passes on
/// little more than HOME and PATH) drops the `TRAPDESK_DATA_DIR` the person exported: then
/// `mcp-stdio` says that the variable never arrived and what does, and that hint, followed as
/// written, reaches the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_trapdesk_data_dir_is_said_and_the_hint_works() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = elsewhere.path().join("data");
    let _host = host_in(&dir).await;

    let said = tools_through_stdio(home.path(), &[], &[])
        .await
        .unwrap_err();
    assert!(
        said.contains("TRAPDESK_DATA_DIR is not set in this process")
            && said.contains("put --data-dir DIR in the command the agent starts"),
        "{said}"
    );
    let dir = dir.display().to_string();
    let listed = tools_through_stdio(home.path(), &["--data-dir", &dir], &[]).await;
    assert!(listed.as_ref().is_ok_and(|n| *n > 0), "{listed:?}");
}

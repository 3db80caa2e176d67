//! The seat of a real agent client in `tests/integration/mcp/agent_clients.rs`: npm packages pinned
//! and installed once under `target/`, a host with an emulated computer and a temporary HOME for
//! the client, the commands run in it, the README's configuration blocks, and a driver for Codex's
//! app server.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::support::mcp_fake as fake;
use crate::support::{TestHost, emulated, start_host_with};

/// An npm package at the version the tests were written against, and the command it installs.
pub struct Pin {
    pub package: &'static str,
    pub version: &'static str,
    pub bin: &'static str,
}

pub const INSPECTOR: Pin = Pin {
    package: "@modelcontextprotocol/inspector",
    version: "2.12.0",
    bin: "mcp-inspector",
};
pub const CLAUDE: Pin = Pin {
    package: "@anthropic-ai/claude-code",
    version: "2.1.332",
    bin: "claude",
};
pub const CODEX: Pin = Pin {
    package: "@openai/codex",
    version: "0.171.0",
    bin: "codex",
};
pub const OPENCODE: Pin = Pin {
    package: "opencode-ai",
    version: "1.18.33",
    bin: "opencode",
};

/// How long one client command may take (a cold start of a bundled Node or Bun program on a
/// loaded machine is a few seconds; `opencode` alone takes about five).
pub const STEP: Duration = Duration::from_secs(90);

/// The client cannot run here: a failure. The tests that call [`installed`] are ignored in a
/// build without node and npm (`cfg(has_npm)`, build/tools.rs), so here they were on PATH when
/// the tests were built, and a test that returned without running would pass unseen.
pub fn unavailable(why: &str) -> ! {
    panic!(
        "{why} (node and npm were on PATH when the tests were built, cfg has_npm; \
         .ci/run installs them)"
    );
}

/// The `node_modules/.bin` folder holding `pin`'s command, installing it on first use.
///
/// Each pin has a folder of its own named by package and version, so a new pin installs anew
/// and tests of different clients never share one. The install goes to a scratch folder that is
/// renamed into place only when complete: two test processes installing the same pin at once
/// both finish, one rename wins and the other's copy is dropped, and an interrupted install
/// leaves nothing that looks done.
pub fn installed(pin: &Pin) -> PathBuf {
    let root = Path::new(crate::support::target_tmpdir()).join("agent-clients");
    let name = format!("{}@{}", pin.package.replace(['/', '@'], "+"), pin.version);
    let dir = root.join(&name);
    let bin_dir = dir.join("node_modules").join(".bin");
    // node runs most of these clients (the Inspector, Codex's launcher) as well as npm.
    for tool in ["node", "npm"] {
        match std::process::Command::new(tool).arg("--version").output() {
            Ok(o) if o.status.success() => {}
            _ => {
                unavailable(&format!(
                    "`{tool}` is not on PATH, so {} cannot be installed or run",
                    pin.package
                ));
            }
        }
    }
    // One install at a time in this process: tests run on several threads, and two of them
    // installing the same pin would share the scratch folder below (named by process), one
    // deleting it under the other's npm (an Inspector install failed so at four threads).
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = INSTALLING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if bin_dir.join(pin.bin).exists() {
        return bin_dir;
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
        unavailable(&format!(
            "`npm install {spec}` failed (registry unreachable?): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if std::fs::rename(&scratch, &dir).is_err() {
        // Another process got there first; its copy is as good as ours.
        let _ = std::fs::remove_dir_all(&scratch);
    }
    if !bin_dir.join(pin.bin).exists() {
        unavailable(&format!("{spec} installed, but {} is not in it", pin.bin));
    }
    bin_dir
}

/// A host with `1:miner` linked, a temporary HOME for the client, and what the server itself
/// lists (through rmcp), to compare each client's view with.
pub struct Seat {
    pub host: TestHost,
    _computer: trapdesk::emu::Computer,
    pub home: tempfile::TempDir,
    pub bin_dir: PathBuf,
    pub tools: BTreeSet<String>,
}

impl Seat {
    /// The host's data dir is the default one of the client's HOME (`~/.local/share/trapdesk`)
    /// and its ports are free ones, never 4444/4445: the README's `trapdesk mcp-stdio`, with no
    /// flag, must find it through its `host.json`, as it finds a person's host on other ports.
    pub async fn new(bin_dir: PathBuf) -> Seat {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("project")).unwrap();
        let data_dir = home.path().join(".local/share/trapdesk");
        std::fs::create_dir_all(&data_dir).unwrap();
        let host = start_host_with(move |s| s.data_dir = data_dir).await;
        assert_ne!(host.mcp_addr.port(), 4445);
        assert_ne!(host.gateway_addr.port(), 4444);
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
        Seat {
            host,
            _computer: computer,
            home,
            bin_dir,
            tools,
        }
    }

    pub fn trapdesk() -> PathBuf {
        PathBuf::from(crate::support::trapdesk_exe())
    }

    pub fn data_dir(&self) -> String {
        self.host.settings.data_dir.display().to_string()
    }

    /// A fresh named agent's token, from `trapdesk agent add NAME --token-only` as the README
    /// has it.
    pub async fn named_token(&self, name: &str) -> String {
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

    /// `sh -c SCRIPT` in the client's environment (see [`Seat::command`]): how a README line
    /// is run as a person's shell runs it.
    pub fn shell(&self, script: &str) -> Command {
        let mut c = self.command_at(Path::new("sh"));
        c.arg("-c").arg(script);
        c
    }

    /// The README's ```` ```sh ```` block that starts with `first_line`, as a person's shell
    /// would run it here: its default endpoint is this host's, and `npx PACKAGE` is the copy
    /// installed under `target/` (npx would fetch it again).
    pub fn readme_sh(&self, first_line: &str) -> String {
        readme_block("sh", first_line)
            .replace(DEFAULT_URL, &self.host.mcp_url())
            .replace(&format!("npx {}", INSPECTOR.package), INSPECTOR.bin)
    }

    /// `program` from the client's install (or `trapdesk`) with a clean environment: the temp
    /// HOME and XDG dirs, PATH with the client and `trapdesk`, no updater, no telemetry, and
    /// nothing else of ours (no API keys, no TRAPDESK_* variables).
    pub fn command(&self, program: &str) -> Command {
        self.command_at(&self.bin_dir.join(program))
    }

    fn command_at(&self, program: &Path) -> Command {
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
        let mut c = Command::new(program);
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

    /// Runs `cmd` to its end, whatever its exit.
    pub async fn output(&self, mut cmd: Command) -> std::process::Output {
        let shown = format!("{:?}", cmd.as_std());
        tokio::time::timeout(STEP, cmd.output())
            .await
            .unwrap_or_else(|_| panic!("{shown} took over {STEP:?}"))
            .unwrap()
    }

    /// Runs `cmd` to its end; its stdout, after asserting it succeeded.
    pub async fn run(&self, cmd: Command) -> String {
        let shown = format!("{:?}", cmd.as_std());
        let out = self.output(cmd).await;
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
    pub async fn inspector(&self, target: &[String], args: &[&str]) -> Value {
        let mut c = self.command(INSPECTOR.bin);
        c.arg("--cli").args(target).args(args);
        let out = self.run(c).await;
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }
}

/// The body of the README's first fenced ```` ```LANG ```` block that starts with `first_line`:
/// the client configurations are taken from there, so the README cannot drift from what works.
pub fn readme_block(lang: &str, first_line: &str) -> String {
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
pub const DEFAULT_URL: &str = "http://127.0.0.1:4445/mcp";

/// Codex's app server on stdio: `initialize`, then one request; its `result`.
pub struct CodexAppServer {
    pub child: tokio::process::Child,
    pub stdin: tokio::process::ChildStdin,
    pub lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    pub next: u64,
}

impl CodexAppServer {
    pub async fn start(seat: &Seat, token: &str) -> CodexAppServer {
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

    pub async fn send(&mut self, v: Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Value {
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

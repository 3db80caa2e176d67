//! Safe in a shared Minecraft world: the host started as a person starts it (`trapdesk
//! --mcp-only`, a fresh data dir, no token, no secret given) exposes nothing to the other
//! computers of the server, which reach it from loopback with no `Origin`.
//!
//! - A computer that is not linked, on the emulator and on CraftOS-PC (one Lua program, one
//!   test body), POSTs `initialize` and a stateless `tools/call` to the MCP endpoint: both 401,
//!   and nothing runs on the linked computer.
//! - `--mcp-only` with stderr in a file writes no secret there, only how to show it; on a
//!   terminal (tmux) the line to type on a computer is shown, secret included.
//! - The install's own tools find the local token by themselves; without it they say in one
//!   line what to set.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, craftos, mcp_fake as fake};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

/// `trapdesk --mcp-only --demo 1` on ports of its own, as a person starts it (no token, no
/// secret); killed on drop.
struct UserHost {
    child: std::process::Child,
    data: tempfile::TempDir,
    mcp: String,
    /// Every stderr line so far.
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl UserHost {
    fn start(stderr_file: Option<&Path>) -> UserHost {
        let data = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
        cmd.args(["--mcp-only", "--demo", "1"])
            .args(["--gateway-bind", "127.0.0.1:0", "--mcp-bind", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(data.path())
            .env_remove("SANDBOX_PASSWORD")
            .env_remove("TRAPDESK_MCP_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let child = match stderr_file {
            Some(path) => {
                cmd.stderr(std::fs::File::create(path).unwrap());
                cmd.spawn().unwrap()
            }
            None => {
                cmd.stderr(Stdio::piped());
                let mut child = cmd.spawn().unwrap();
                let err = child.stderr.take().unwrap();
                let sink = lines.clone();
                std::thread::spawn(move || {
                    for l in BufReader::new(err).lines().map_while(Result::ok) {
                        sink.lock().unwrap().push(l);
                    }
                });
                child
            }
        };
        let mut host = UserHost {
            child,
            data,
            mcp: String::new(),
            lines,
        };
        let text = || match stderr_file {
            Some(p) => std::fs::read_to_string(p).unwrap_or_default(),
            None => host.lines.lock().unwrap().join("\n"),
        };
        let url = || {
            text()
                .split_whitespace()
                .find(|w| w.starts_with("http://") && w.ends_with("/mcp"))
                .map(str::to_owned)
        };
        let mut found = None;
        support::wait_blocking(
            Duration::from_secs(30),
            || {
                found = url();
                found.is_some()
            },
            || "no start line".to_owned(),
        );
        host.mcp = found.unwrap_or_default();
        host
    }

    /// The token the test itself uses to look (a person's tools read it the same way).
    fn token(&self) -> String {
        trapdesk::trust::agents::read_local(self.data.path())
            .unwrap()
            .unwrap()
    }

    fn addr(&self) -> std::net::SocketAddr {
        self.mcp
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap()
    }

    /// The demo computer's own disk.
    fn demo_disk(&self) -> PathBuf {
        self.data.path().join("computers").join("1")
    }
}

impl Drop for UserHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a griefer's program on another computer of the server does: it needs no secret and no
/// token, only the address. It tries the handshake era and the stateless era (which needs no
/// `initialize`), and leaves each answer's status code in the global `RESULT`.
fn attack(mcp: &str) -> String {
    format!(
        r#"
local url = "{mcp}"
local function post(body, extra)
  local h = {{ ["Content-Type"] = "application/json", ["Accept"] = "application/json, text/event-stream" }}
  for k, v in pairs(extra or {{}}) do h[k] = v end
  local ok, err, failed = http.post(url, body, h)
  local r = ok or failed
  if not r then return "none (" .. tostring(err) .. ")" end
  local code = r.getResponseCode()
  r.close()
  return tostring(code)
end
local out = {{}}
out[#out + 1] = "initialize " .. post('{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"griefer","version":"1"}}}}}}')
out[#out + 1] = "call " .. post('{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"exec-lua","arguments":{{"traposId":"1","code":"local f = fs.open(\"/pwned\", \"w\") f.write(\"x\") f.close()"}}}}}}',
  {{ ["MCP-Protocol-Version"] = "2026-07-28", ["Mcp-Method"] = "tools/call", ["Mcp-Name"] = "exec-lua" }})
out[#out + 1] = "forged " .. post('{{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{{}}}}',
  {{ ["Mcp-Session-Id"] = "00000000-0000-0000-0000-000000000000", ["Authorization"] = "Bearer td_guessed" }})
RESULT = table.concat(out, ";")
"#
    )
}

/// Where the attack ran, so one test body serves both runtimes.
enum Runtime {
    Emulator,
    CraftOs(PathBuf),
}

/// Runs [`attack`] on a computer of `runtime` that is not linked, and returns what it printed.
async fn run_attack(runtime: &Runtime, mcp: &str) -> String {
    let program = attack(mcp);
    match runtime {
        Runtime::Emulator => {
            let disk = tempfile::tempdir().unwrap();
            let c = trapdesk::emu::Computer::spawn(
                trapdesk::emu::ComputerSpec::new(40, Some("griefer".into()), disk.path().into()),
                tokio::runtime::Handle::current(),
            )
            .unwrap();
            let program = format!("{program}\nprint(RESULT)");
            let out = tokio::time::timeout(Duration::from_secs(20), c.run_lua(&program))
                .await
                .expect("the attack did not finish")
                .unwrap();
            c.shutdown();
            out
        }
        Runtime::CraftOs(launcher) => {
            // Its own startup: no installer, no secret. The answers go to a file the test reads.
            let startup = format!(
                "{program}\nlocal f = fs.open('/result.txt', 'w') f.write(RESULT) f.close()\n"
            );
            let c = craftos::CraftComputer::spawn_program(launcher, 40, "griefer", &startup);
            let result = c.files().join("result.txt");
            support::wait_some(
                craftos::LINK_TIMEOUT,
                || {
                    std::fs::read_to_string(&result)
                        .ok()
                        .filter(|text| !text.is_empty())
                },
                || {
                    format!(
                        "the CraftOS-PC computer wrote no result; its screen:\n{}",
                        c.screen()
                    )
                },
            )
            .await
        }
    }
}

async fn an_unlinked_computer_cannot_use_the_agents_endpoint(runtime: Runtime) {
    let host = UserHost::start(None);
    // The demo computer is linked: the attack's exec-lua would have a target.
    let (client, _) = fake::connect(&host.mcp, &host.token()).await;
    support::wait_ok(Duration::from_secs(30), async || {
        let r = fake::call(&client, "probe-computers", json!({"ping": false})).await;
        if fake::data(&r)["computers"][0]["traposId"] == "1:miner" {
            Ok(())
        } else {
            Err("the demo never linked".to_owned())
        }
    })
    .await;

    let answers = run_attack(&runtime, &host.mcp).await;
    assert_eq!(
        answers.trim(),
        "initialize 401;call 401;forged 401",
        "{answers}"
    );

    // Nothing ran: no file on the linked computer, no tool call but the test's own.
    assert!(!host.demo_disk().join("pwned").exists());
    let r = fake::call(&client, "session-log", json!({"limit": 200})).await;
    let log = fake::data(&r)["events"].to_string();
    assert!(!log.contains("griefer"), "{log}");
    assert!(!log.contains("pwned"), "{log}");
    let ran = trapdesk::session::transcript::FILE;
    let transcript = std::fs::read_to_string(host.data.path().join(ran)).unwrap_or_default();
    assert!(!transcript.contains("pwned"), "{transcript}");
    drop(client);
    drop(host);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlinked_emulated_computer_cannot_use_the_agents_endpoint() {
    an_unlinked_computer_cannot_use_the_agents_endpoint(Runtime::Emulator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn an_unlinked_craftos_computer_cannot_use_the_agents_endpoint() {
    let launcher = craftos::launcher();
    an_unlinked_computer_cannot_use_the_agents_endpoint(Runtime::CraftOs(launcher)).await;
}

/// Under systemd or `2>>host.log`, stderr is a file: the secret must not be written there.
#[test]
fn mcp_only_writes_no_secret_into_a_log_file() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let host = UserHost::start(Some(log.path()));
    let secret = std::fs::read_to_string(host.data.path().join("secret")).unwrap();
    let secret = secret.trim();
    assert!(secret.len() >= 16, "a generated secret is long: {secret:?}");
    // Give the host time to write everything it writes at start: a fixed time, because what
    // is checked is that something never appears, and no line marks the end of the writing.
    std::thread::sleep(Duration::from_millis(500));
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert!(!text.contains(secret), "the secret is in the log:\n{text}");
    assert!(
        !text.contains(&host.token()),
        "the local token is in the log:\n{text}"
    );
    assert!(text.contains("trapdesk secret show"), "{text}");
    assert!(!text.contains("wget run"), "{text}");
}

/// On a terminal the person still gets the line to type, secret included.
#[test]
fn mcp_only_on_a_terminal_shows_the_install_line() {
    match Command::new("tmux").arg("-V").output() {
        Ok(o) if o.status.success() => {}
        _ => panic!("tmux is not installed: this test needs it (.ci/run installs it)"),
    }
    let data = tempfile::tempdir().unwrap();
    let socket = format!("trapdesk-world-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .unwrap()
    };
    // `timeout`: tmux's kill-server hangs the pane up, and SIGHUP only reloads the policy of a
    // running host, so without it the host would outlive the test.
    let cmd = format!(
        "timeout 30 '{}' --mcp-only --data-dir '{}' --gateway-bind 127.0.0.1:0 --mcp-bind 127.0.0.1:0; sleep 60",
        env!("CARGO_BIN_EXE_trapdesk"),
        data.path().display()
    );
    let out = tmux(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "w",
        "-x",
        "200",
        "-y",
        "20",
        &cmd,
    ]);
    assert!(out.status.success(), "{out:?}");
    let capture = || {
        let shown = tmux(&["capture-pane", "-p", "-t", "w"]);
        String::from_utf8_lossy(&shown.stdout).into_owned()
    };
    // Not a failure when it never comes: the assertions below say what the screen lacks.
    support::holds_within_blocking(Duration::from_secs(30), || capture().contains("wget run"));
    let screen = capture();
    tmux(&["kill-server"]);
    // The host is gone once `timeout` ends it; kill it now rather than leave it for 30 s.
    let _ = Command::new("pkill")
        .args(["-f", "--", &format!("--data-dir {}", data.path().display())])
        .status();
    let secret = std::fs::read_to_string(data.path().join("secret")).unwrap();
    assert!(
        screen.contains(&format!("install.lua {}", secret.trim())),
        "{screen}"
    );
}

/// The CLI finds the host's person token in the data dir; pointed at another data dir, or with
/// a wrong token in the environment, it says so in one line with what to set.
#[test]
fn the_cli_finds_the_local_token_and_says_what_to_set_without_it() {
    let host = UserHost::start(None);
    let cli = |data: &Path, token: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
        c.args(["computers", "--connect", &host.mcp])
            .env("TRAPDESK_DATA_DIR", data)
            .env_remove("TRAPDESK_TOKEN")
            .env_remove("TRAPDESK_MCP_TOKEN");
        if let Some(t) = token {
            c.env("TRAPDESK_TOKEN", t);
        }
        c.output().unwrap()
    };
    let ok = cli(host.data.path(), None);
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");

    let elsewhere = tempfile::tempdir().unwrap();
    let none = cli(elsewhere.path(), None);
    assert_eq!(none.status.code(), Some(3));
    let err = String::from_utf8_lossy(&none.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("needs a token (set TRAPDESK_TOKEN"), "{err}");
    assert!(!err.contains("Error") && !err.contains("rmcp"), "{err}");

    let wrong = cli(host.data.path(), Some("td_not_a_token"));
    assert_eq!(wrong.status.code(), Some(3));
    let err = String::from_utf8_lossy(&wrong.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("refused the token in TRAPDESK_TOKEN"), "{err}");
    assert!(!err.contains("td_not_a_token"), "{err}");

    // A named agent's token names it; the local token still works beside it.
    let token = trapdesk::trust::agents::add(host.data.path(), "builder").unwrap();
    assert_eq!(cli(host.data.path(), Some(&token)).status.code(), Some(0));
    assert_eq!(cli(host.data.path(), None).status.code(), Some(0));
    let _ = host.addr();
}

/// `mcp-stdio` started by an agent without a usable token stops at once with one line on
/// stderr (the agent's server list then shows it failed, its log says what to set).
#[test]
fn mcp_stdio_without_a_token_says_what_to_set_in_one_line() {
    let host = UserHost::start(None);
    let stdio = |data: &Path, token: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
        c.args(["mcp-stdio", "--connect", &host.mcp])
            .env("TRAPDESK_DATA_DIR", data)
            .env_remove("TRAPDESK_MCP_TOKEN")
            .env_remove("TRAPDESK_AGENT_TOKEN")
            .stdin(Stdio::null());
        if let Some(t) = token {
            c.env("TRAPDESK_AGENT_TOKEN", t);
        }
        c.output().unwrap()
    };
    let elsewhere = tempfile::tempdir().unwrap();
    let none = stdio(elsewhere.path(), None);
    assert!(!none.status.success());
    assert!(none.stdout.is_empty(), "nothing on the MCP channel");
    let err = String::from_utf8_lossy(&none.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("needs a token (set TRAPDESK_AGENT_TOKEN"),
        "{err}"
    );

    let wrong = stdio(host.data.path(), Some("td_not_a_token"));
    assert!(!wrong.status.success());
    let err = String::from_utf8_lossy(&wrong.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("refused the token in TRAPDESK_AGENT_TOKEN"),
        "{err}"
    );
    assert!(!err.contains("td_not_a_token"), "{err}");
}

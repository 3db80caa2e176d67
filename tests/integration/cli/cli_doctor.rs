//! `trapdesk doctor` against a real running host: without a computer, with one linked, and
//! after a link was refused; and with no host at all. Its reading of a Minecraft server's
//! `computercraft-server.toml` (real files in temp dirs). Also `trapdesk completions` for each
//! shell, generated from clap's definitions.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;
use support::{FakeComputer, SECRET, emulated, hello, start_host};

fn doctor(host: &support::TestHost, json: bool) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.args(["doctor", "--connect", &host.mcp_url()])
        .args(["--gateway-bind", &host.gateway_addr.to_string()])
        .arg("--data-dir")
        .arg(host.dir.path())
        .env("SANDBOX_PASSWORD", SECRET)
        .env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN")
        // Without --minecraft it looks from here and in the launcher's folder under HOME: an
        // empty temp dir for both, so nothing of this machine's is found.
        .current_dir(host.dir.path())
        .env("HOME", host.dir.path());
    if json {
        c.arg("--json");
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_reports_addresses_rules_secret_links_and_refusals() {
    let host = start_host().await;
    let gw = host.gateway_addr;

    let empty = output(doctor(&host, false)).await;
    assert_eq!(empty.status.code(), Some(0), "{}", text(&empty.stderr));
    let out = text(&empty.stdout);
    assert!(
        out.contains(&format!("ws://{gw}/gateway  reachable from this machine")),
        "{out}"
    );
    assert!(out.contains("answers (/health ok)"), "{out}");
    assert!(
        out.contains(&format!(
            "[[http.rules]]\n  host = \"127.0.0.1\"\n  port = {}",
            gw.port()
        )),
        "{out}"
    );
    assert!(out.contains("every local service"), "{out}");
    assert!(
        out.contains(&format!("(port {} is the running gateway's", gw.port())),
        "{out}"
    );
    assert!(out.contains("$private"), "{out}");
    // Piped, the secret is not printed: doctor's output is what lands in a bug report.
    assert!(
        out.contains(&format!("wget run http://{gw}/install.lua and the secret"))
            && out.contains("`trapdesk secret show` on a terminal"),
        "{out}"
    );
    assert!(!out.contains(SECRET), "{out}");
    assert!(out.contains("no computer linked yet"), "{out}");

    let _c = emulated(&host, 8, Some("miner")).await;
    let linked = output(doctor(&host, true)).await;
    assert_eq!(linked.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&linked.stdout).unwrap();
    assert_eq!(v["session"]["linked"], json!(["8:miner"]));
    assert_eq!(v["gateway"]["answers"], true);
    let port_line = format!("port = {}", gw.port());
    assert_eq!(
        v["httpRules"],
        json!([format!(
            "[[http.rules]]\nhost = \"127.0.0.1\"\n{port_line:<23}# the gateway's own port\naction = \"allow\""
        )])
    );

    // A computer with the wrong secret is refused; doctor lists it with its reason.
    let mut bad = hello(9, Some("intruder"));
    bad["secret"] = json!("wrong");
    let mut c = FakeComputer::connect_raw(&host).await;
    c.send(&bad).await;
    let (_code, _) = c.recv_close().await;
    let refused = output(doctor(&host, true)).await;
    let v: serde_json::Value = serde_json::from_slice(&refused.stdout).unwrap();
    let list = v["session"]["refused"].as_array().unwrap().clone();
    assert_eq!(list.len(), 1, "{v}");
    let line = list[0].as_str().unwrap();
    assert!(
        line.contains("9:intruder") && line.contains("secret"),
        "{line}"
    );
    let text_out = output(doctor(&host, false)).await;
    assert!(text(&text_out.stdout).contains("last refused links"));
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_without_a_host_says_what_to_start_and_exits_3() {
    let host = start_host().await;
    let (gw, mcp) = (host.gateway_addr, host.mcp_url());
    let dir = host.dir.path().to_owned();
    host.host.stop().await;
    let out = output({
        let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
        c.args([
            "doctor",
            "--connect",
            &mcp,
            "--gateway-bind",
            &gw.to_string(),
        ])
        .arg("--data-dir")
        .arg(&dir)
        .env("SANDBOX_PASSWORD", SECRET)
        .current_dir(&dir)
        .env("HOME", &dir);
        c
    })
    .await;
    assert_eq!(out.status.code(), Some(3));
    let s = text(&out.stdout);
    assert!(s.contains("does not answer"), "{s}");
    assert!(s.contains("trapdesk --mcp-only"), "{s}");
    // The rules and the installer line are still there: they do not need a running host.
    assert!(s.contains("[[http.rules]]"), "{s}");
    assert!(
        s.contains(&format!(
            "(port {} is from the flags and defaults",
            gw.port()
        )),
        "{s}"
    );
}

/// A server folder with `world/serverconfig/computercraft-server.toml` holding `rules` (TOML
/// `[[http.rules]]` entries), as Forge and CC: Tweaked write it.
fn server_with_rules(rules: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("world").join("serverconfig");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("computercraft-server.toml"),
        format!("[http]\n\tenabled = true\n\twebsocket_enabled = true\n{rules}"),
    )
    .unwrap();
    dir
}

fn config_path(dir: &Path) -> String {
    dir.join("world/serverconfig/computercraft-server.toml")
        .display()
        .to_string()
}

const PRIVATE_DENY: &str = "\t[[http.rules]]\n\t\thost = \"$private\"\n\t\taction = \"deny\"\n";
const REST_ALLOW: &str = "\t[[http.rules]]\n\t\thost = \"*\"\n\t\taction = \"allow\"\n";

/// `doctor --minecraft DIR` against `host`: its exit code, text and JSON.
async fn doctor_minecraft(
    host: &support::TestHost,
    dir: &Path,
) -> (Option<i32>, String, serde_json::Value) {
    let mut t = doctor(host, false);
    t.arg("--minecraft").arg(dir);
    let text_out = output(t).await;
    let mut j = doctor(host, true);
    j.arg("--minecraft").arg(dir);
    let json_out = output(j).await;
    assert_eq!(text_out.status.code(), json_out.status.code());
    let v = serde_json::from_slice(&json_out.stdout).unwrap();
    (text_out.status.code(), text(&text_out.stdout), v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_warns_when_a_rule_allows_the_host_on_every_port() {
    let host = start_host().await;
    let mcp_port = host.mcp_addr.port();
    // The rule the README used to give: the gateway is reachable, and so is everything else.
    let mc = server_with_rules(&format!(
        "\t[[http.rules]]\n\t\thost = \"127.0.0.1\"\n\t\taction = \"allow\"\n{PRIVATE_DENY}{REST_ALLOW}"
    ));
    let (code, out, v) = doctor_minecraft(&host, mc.path()).await;
    // A computer can link: the warning says what else is open, and the code stays 0.
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!("read {}", config_path(mc.path()))),
        "{out}"
    );
    assert!(
        out.contains("warning: rule 1 (host = \"127.0.0.1\") allows 127.0.0.1 on every port"),
        "{out}"
    );
    assert!(out.contains("every computer of every player"), "{out}");
    let file = &v["minecraft"]["read"][0];
    assert_eq!(file["gateway"][0]["allowed"], true, "{v}");
    assert_eq!(file["mcp"]["allowed"], true, "{v}");
    assert_eq!(file["mcp"]["address"], format!("127.0.0.1:{mcp_port}"));
    assert_eq!(file["ok"], true);
    assert_eq!(file["warnings"].as_array().map(Vec::len), Some(2), "{v}");
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_is_content_with_the_gateways_port_only() {
    let host = start_host().await;
    let gw = host.gateway_addr;
    let mc = server_with_rules(&format!(
        "\t[[http.rules]]\n\t\thost = \"127.0.0.1\"\n\t\tport = {}\n\t\taction = \"allow\"\n{PRIVATE_DENY}{REST_ALLOW}",
        gw.port()
    ));
    let (code, out, v) = doctor_minecraft(&host, mc.path()).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "a computer may open ws://{gw}/gateway (this machine): allowed by rule 1 (host = \"127.0.0.1\", port = {})",
            gw.port()
        )),
        "{out}"
    );
    assert!(out.contains("out of the computers' reach"), "{out}");
    assert!(!out.contains("warning:"), "{out}");
    let file = &v["minecraft"]["read"][0];
    assert_eq!(file["ok"], true, "{v}");
    assert_eq!(file["mcp"]["allowed"], false);
    assert_eq!(file["mcp"]["rule"], 2, "the $private rule keeps it out");
    assert_eq!(file["gateway"][0]["maxWebsocketMessage"], 131072);
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_sees_the_private_rule_above_the_allow_block_the_gateway() {
    let host = start_host().await;
    let gw = host.gateway_addr;
    let mc = server_with_rules(&format!(
        "{PRIVATE_DENY}\t[[http.rules]]\n\t\thost = \"127.0.0.1\"\n\t\tport = {}\n\t\taction = \"allow\"\n{REST_ALLOW}",
        gw.port()
    ));
    let (code, out, v) = doctor_minecraft(&host, mc.path()).await;
    assert_eq!(code, Some(3), "{out}");
    assert!(
        out.contains(&format!(
            "a computer may NOT open ws://{gw}/gateway (this machine): denied by rule 1 (host = \"$private\")"
        )),
        "{out}"
    );
    // The allow rule is there: doctor says it comes too late, and what to move where, instead
    // of giving the lines to add a second time.
    let port = gw.port();
    assert!(
        out.contains(&format!(
            "\nrule 2 (host = \"127.0.0.1\", port = {port}) is there but comes too late: rule 1 (host = \"$private\") matches the gateway first and denies it (the first matching rule with an action wins)\n\
             move rule 2, its whole [[http.rules]] block, ABOVE rule 1 (CC: Tweaked applies the saved file at once, without a restart)\n"
        )),
        "{out}"
    );
    assert!(!out.contains("put these lines"), "{out}");
    assert!(!out.contains("restart the server"), "{out}");
    let file = &v["minecraft"]["read"][0];
    assert_eq!(file["gateway"][0]["allowed"], false, "{v}");
    assert_eq!(file["gateway"][0]["rule"], 1);
    assert_eq!(file["ok"], false);
    host.host.stop().await;
}

/// CC: Tweaked's default `*` rule as versions before 1.105.0 wrote it, `timeout` included.
const REST_ALLOW_OLD: &str = "\t[[http.rules]]\n\t\thost = \"*\"\n\t\taction = \"allow\"\n\t\ttimeout = 30000\n\t\tmax_download = 16777216\n\t\tmax_upload = 4194304\n\t\tmax_websocket_message = 131072\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_with_the_rule_in_place_says_nothing_to_change_and_exits_0() {
    let host = start_host().await;
    let gw = host.gateway_addr;
    let mc = server_with_rules(&format!(
        "\t[[http.rules]]\n\t\thost = \"127.0.0.1\"\n\t\tport = {}\n\t\taction = \"allow\"\n{PRIVATE_DENY}{REST_ALLOW_OLD}",
        gw.port()
    ));
    let (code, out, v) = doctor_minecraft(&host, mc.path()).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("\n  rule 3 (host = \"*\") has timeout, which CC: Tweaked wrote before 1.105.0 and now passes over: harmless, no change needed\n"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "\nthe rule for the gateway is in place, rule 1 (host = \"127.0.0.1\", port = {}): nothing to change\n",
            gw.port()
        )),
        "{out}"
    );
    assert!(!out.contains("warning:"), "{out}");
    assert!(!out.contains("ABOVE"), "{out}");
    assert!(!out.contains("restart"), "{out}");
    assert_eq!(v["minecraft"]["read"][0]["ok"], true, "{v}");
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_without_the_rule_gives_the_lines_and_where_they_go() {
    let host = start_host().await;
    let gw = host.gateway_addr;
    // The file as CC: Tweaked writes it: $private denied, everything else allowed.
    let mc = server_with_rules(&format!("{PRIVATE_DENY}{REST_ALLOW_OLD}"));
    let (code, out, _) = doctor_minecraft(&host, mc.path()).await;
    assert_eq!(code, Some(3), "{out}");
    assert!(
        out.contains("\nto let computers reach the gateway, put these lines ABOVE rule 1 (host = \"$private\") of that file (the first matching rule wins; CC: Tweaked applies the saved file at once, without a restart):\n"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "  [[http.rules]]\n  host = \"127.0.0.1\"\n  port = {}",
            gw.port()
        )),
        "{out}"
    );
    assert!(!out.contains("restart the server"), "{out}");
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_reads_the_file_of_the_world_folder_it_is_given() {
    let host = start_host().await;
    let gw = host.gateway_addr;
    let mc = server_with_rules(&format!(
        "\t[[http.rules]]\n\t\thost = \"127.0.0.1\"\n\t\tport = {}\n\t\taction = \"allow\"\n{PRIVATE_DENY}",
        gw.port()
    ));
    let world = mc.path().join("world");
    let (code, out, v) = doctor_minecraft(&host, &world).await;
    assert_eq!(code, Some(0), "{out}");
    let path = config_path(mc.path());
    assert!(
        out.contains(&format!(
            "read {path} (the world's own: it wins over every other)"
        )),
        "{out}"
    );
    assert_eq!(v["minecraft"]["read"][0]["path"], path);
    assert_eq!(v["minecraft"]["read"][0]["role"], "world");
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_says_where_it_looked_when_it_finds_no_server_config() {
    let host = start_host().await;
    let empty = tempfile::tempdir().unwrap();
    let (code, out, v) = doctor_minecraft(&host, empty.path()).await;
    // Nothing to judge is not a problem of the rules: the rest is fine, so 0.
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("found no computercraft-server.toml; looked in:"),
        "{out}"
    );
    let d = empty.path().display();
    for place in [
        format!("{d}/world/serverconfig/computercraft-server.toml"),
        format!("{d}/*/serverconfig/computercraft-server.toml"),
        format!("{d}/saves/*/serverconfig/computercraft-server.toml"),
        format!("{d}/config/computercraft-server.toml"),
        format!("{d}/defaultconfigs/computercraft-server.toml"),
    ] {
        assert!(out.contains(&format!("  {place}\n")), "{place} in {out}");
    }
    assert!(out.contains("--minecraft DIR"), "{out}");
    assert_eq!(v["minecraft"]["read"], json!([]));
    // Without --minecraft it looks from the current directory (the host's temp dir here).
    let plain = output(doctor(&host, false)).await;
    let s = text(&plain.stdout);
    let here = host.dir.path().display();
    assert!(
        s.contains(&format!(
            "  {here}/world/serverconfig/computercraft-server.toml\n"
        )),
        "{s}"
    );
    // A --minecraft that does not exist is a usage error, said before anything else.
    let mut bad = doctor(&host, false);
    bad.arg("--minecraft").arg(empty.path().join("nope"));
    let bad = output(bad).await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("no such file or folder"));
    host.host.stop().await;
}

#[test]
fn completions_for_each_shell_come_from_the_definitions() {
    for (shell, marker) in [
        ("bash", "_trapdesk()"),
        ("zsh", "#compdef trapdesk"),
        ("fish", "complete -c trapdesk"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let s = text(&out.stdout);
        assert!(s.contains(marker), "{shell}: {s}");
        // Subcommands and their flags are in it, so it was generated from clap, not by hand.
        assert!(s.contains("sync") && s.contains("delete"), "{shell}");
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn every_command_has_an_example_in_its_help() {
    for cmd in [
        vec![],
        vec!["exec"],
        vec!["run"],
        vec!["computers"],
        vec!["ls"],
        vec!["get"],
        vec!["put"],
        vec!["sync"],
        vec!["doctor"],
        vec!["completions"],
        vec!["mcp-stdio"],
        vec!["emulate"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
            .args(&cmd)
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd:?}");
        assert!(
            text(&out.stdout).contains("Example: "),
            "{cmd:?} has no example"
        );
    }
}

/// Without `--gateway-bind`, doctor checks the gateway of the host running on its data dir
/// (`host.json` there), not the default port 4444, and gives the rule with that port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_the_running_hosts_gateway_not_the_default() {
    let host = start_host().await;
    let gw = host.gateway_addr;
    assert_ne!(gw.port(), 4444);
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.args(["doctor", "--connect", &host.mcp_url()])
        .arg("--data-dir")
        .arg(host.dir.path())
        .env("SANDBOX_PASSWORD", SECRET)
        .env_remove("TRAPDESK_GATEWAY_BIND")
        .env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN")
        .current_dir(host.dir.path())
        .env("HOME", host.dir.path());
    let out = output(c).await;
    let printed = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{printed}{}", text(&out.stderr));
    assert!(
        printed.contains(&format!("listens on {gw} (the running host's")),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("port = {}", gw.port())),
        "{printed}"
    );
    assert!(!printed.contains("4444"), "{printed}");
}

/// `trapdesk doctor | head -3`: a command that only prints ends as `cat` does when its reader
/// is gone (SIGPIPE, nothing on stderr), not with a panic and a backtrace. The pipe's reader is
/// closed before the command starts, so its first line already meets it.
#[test]
fn printing_into_a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["completions", "bash"],
        vec!["doctor", "--data-dir", dir.path().to_str().unwrap()],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
            .args(&args)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env_remove("TRAPDESK_CONNECT")
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{args:?}");
        assert_eq!(text(&out.stderr), "", "{args:?}");
    }
}

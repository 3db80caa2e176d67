//! `trapdesk doctor` against a real running host: without a computer, with one linked, and
//! after a link was refused; and with no host at all. Also `trapdesk completions` for each
//! shell, generated from clap's definitions.
#![allow(clippy::unwrap_used, clippy::panic)]

mod support;

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
        .env_remove("TRAPDESK_MCP_TOKEN");
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
        out.contains("[[http.rules]]\n  host = \"127.0.0.1\"\n  action = \"allow\""),
        "{out}"
    );
    assert!(out.contains("$private"), "{out}");
    assert!(
        out.contains(&format!("wget run http://{gw}/install.lua {SECRET}")),
        "{out}"
    );
    assert!(out.contains("no computer linked yet"), "{out}");

    let _c = emulated(&host, 8, Some("miner")).await;
    let linked = output(doctor(&host, true)).await;
    assert_eq!(linked.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&linked.stdout).unwrap();
    assert_eq!(v["session"]["linked"], json!(["8:miner"]));
    assert_eq!(v["gateway"]["answers"], true);
    assert_eq!(
        v["httpRules"],
        json!(["[[http.rules]]\nhost = \"127.0.0.1\"\naction = \"allow\""])
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
        .env("SANDBOX_PASSWORD", SECRET);
        c
    })
    .await;
    assert_eq!(out.status.code(), Some(3));
    let s = text(&out.stdout);
    assert!(s.contains("does not answer"), "{s}");
    assert!(s.contains("trapdesk --mcp-only"), "{s}");
    // The rules and the installer line are still there: they do not need a running host.
    assert!(s.contains("[[http.rules]]"), "{s}");
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

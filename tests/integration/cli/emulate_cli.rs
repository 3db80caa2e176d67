//! `trapdesk emulate` links one emulated computer, running the real client, to any gateway,
//! and stops on SIGTERM.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{SECRET, start_host, wait_until};
use trapdesk::session::{Origin, RequestSpec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emulate_links_to_a_gateway_and_stops_on_sigterm() {
    let host = start_host().await;
    let disk = host.dir.path().join("disk");
    let mut child = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args([
            "emulate",
            "--url",
            &host.gateway_url(),
            "--id",
            "9",
            "--label",
            "scout",
        ])
        .args(["--secret", SECRET])
        .arg("--data-dir")
        .arg(&disk)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(|| {
        host.session
            .computer("9:scout")
            .is_some_and(|c| c.serves.iter().any(|s| s == "exec-lua"))
    })
    .await;
    let r = host
        .session
        .request(
            "scout",
            RequestSpec::new(
                trapdesk::protocol::Kind::ExecLua,
                json!({"code": "return os.getComputerID(), os.getComputerLabel()"}),
            ),
            Origin::Person,
        )
        .await
        .unwrap();
    assert_eq!(
        r["returns"],
        json!([{"type":"number","value":9},{"type":"string","value":"scout"}])
    );
    assert!(
        disk.join("computers/9/trapdesk/servers/sandbox.lua")
            .is_file()
    );
    assert!(disk.join("trapdesk.log").is_file());
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = crate::support::wait_some(
        Duration::from_secs(15),
        || child.try_wait().unwrap(),
        || String::from("emulate did not stop on SIGTERM"),
    )
    .await;
    assert!(status.success(), "{status:?}");
    wait_until(|| host.session.computer("9:scout").is_some_and(|c| !c.online)).await;
}

#[test]
fn emulate_without_a_secret_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args(["emulate", "--url", "ws://127.0.0.1:9/gateway"])
        .arg("--data-dir")
        .arg(dir.path())
        .env_remove("SANDBOX_PASSWORD")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--secret"), "{err}");
}

/// `trapdesk emulate` says what happened to the link: linked, or refused and retrying.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emulate_prints_linked_refused_and_retrying() {
    let host = start_host().await;
    let run = |secret: &str, id: &str| {
        let disk = host.dir.path().join(format!("disk{id}"));
        Command::new(env!("CARGO_BIN_EXE_trapdesk"))
            .args(["emulate", "--url", &host.gateway_url(), "--id", id])
            .args(["--secret", secret])
            .arg("--data-dir")
            .arg(&disk)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let read_until = |child: &mut std::process::Child, want: &[&str]| -> String {
        use std::io::{BufRead, BufReader};
        let err = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut seen = String::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !want.iter().all(|w| seen.contains(w)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    seen.push_str(&line);
                    seen.push('\n');
                }
                Err(_) => panic!("missing {want:?} in:\n{seen}"),
            }
        }
        seen
    };
    let mut bad = run("not-the-secret", "21");
    let seen = read_until(&mut bad, &["refused: wrong secret", "retrying in "]);
    assert!(!seen.contains("linked as"), "{seen}");
    let mut good = run(SECRET, "22");
    read_until(&mut good, &["linked as 22:"]);
    for mut c in [bad, good] {
        let _ = c.kill();
        let _ = c.wait();
    }
    // The refusal is in the session log too: who, from where, why.
    let refused: Vec<_> = host
        .session
        .recent(100)
        .into_iter()
        .filter(|e| e.event.as_str() == "refused")
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].who.as_deref(), Some("21:"));
    assert!(
        refused[0].detail.contains("from 127.0.0.1:"),
        "{:?}",
        refused[0]
    );
    assert!(
        refused[0].detail.contains("wrong secret"),
        "{:?}",
        refused[0]
    );
}

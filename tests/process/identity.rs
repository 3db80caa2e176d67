//! A computer's identity cannot be taken, and a right secret always links.
//!
//! - Enrolment end to end with the real Lua client, on the emulator and on CraftOS-PC (ignored
//!   without `CRAFTOS_PC`, see `tests/integration/support/craftos.rs`): the shared secret enrols a
//!   computer, which stores its own secret and relinks with it after a reboot; the shared
//!   secret then no longer links its id, and the computer stays linked through the attempt.
//! - Pending bindings recover from a lost `welcome` or a lost `enrolled`; `enrol off` refuses
//!   new ids and keeps bound ones; `forget` lets a computer enrol again.
//! - A flood of wrong secrets from 127.0.0.1 (one after another and 64 sockets at once) never
//!   delays a right one from the same address, and sockets stay bounded, also under a flood
//!   of connections that never say anything.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, world};

use std::time::{Duration, Instant};

use crate::support::world::on_both_runtimes;
use futures_util::StreamExt;
use serde_json::{Value, json};
use support::{FakeComputer, SECRET, TestHost, emulated, hello, start_host, wait_until};
use tokio::io::AsyncWriteExt;
use trapdesk::session::{Origin, RequestSpec};
use trapdesk::trust::secrets::{self, ComputerSecret};
use world::{Runtime, World};

/// Sends `hello` on a fresh socket and returns the close code and what came before it.
async fn refused(host: &TestHost, hello: &Value) -> (Option<u16>, Vec<Value>) {
    let mut c = FakeComputer::connect_raw(host).await;
    c.send(hello).await;
    c.recv_close().await
}

fn enrolling(id: u64, label: Option<&str>, secret: &str) -> Value {
    let mut h = hello(id, label);
    h["secret"] = json!(secret);
    h["enrol"] = json!(true);
    h
}

fn binding(host: &TestHost, computer: &str) -> Option<ComputerSecret> {
    secrets::list(host.dir.path())
        .unwrap()
        .into_iter()
        .find(|c| c.computer == computer)
}

async fn wait_firm(host: &TestHost, computer: &str) -> ComputerSecret {
    wait_until(|| binding(host, computer).is_some_and(|b| !b.pending)).await;
    binding(host, computer).unwrap()
}

async fn exec(host: &TestHost, who: &str, code: &str) -> Value {
    host.session
        .request(
            who,
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code })),
            Origin::Person,
        )
        .await
        .unwrap()
}

/// The setting `trapdesk.secret` on an emulated computer's disk, read by its own Lua.
async fn own_secret(host: &TestHost, who: &str) -> Option<String> {
    let v = exec(host, who, "return settings.get('trapdesk.secret')").await;
    v["returns"][0]["value"].as_str().map(str::to_owned)
}

/// The computer enrols through the real client (on CraftOS-PC after the player's installer
/// one-liner), then nobody holding the shared secret can take its id, and after a reboot it
/// links with its own secret. A reboot of an emulated computer is `os.reboot` inside it; a
/// CraftOS-PC computer is killed and booted again on the same disk (headless, it takes no
/// key from outside).
async fn the_shared_secret_cannot_take_an_enrolled_computers_id(rt: Runtime) {
    let mut w = World::boot(rt, &["miner"]).await;
    let host = &w.host;
    let id = w.computer("miner").id;
    let who = w.trapos("miner");
    support::wait_for(
        rt.patience(Duration::from_secs(10)),
        || binding(host, &id.to_string()).is_some_and(|b| !b.pending),
        || format!("never enrolled; {}", w.computer("miner").dump()),
    )
    .await;
    let b = binding(host, &id.to_string()).unwrap();
    assert_eq!(b.label.as_deref(), Some("miner"));
    let own = own_secret(host, &who).await.expect("stored its secret");
    assert_ne!(own, SECRET);
    assert_eq!(trapdesk::trust::hash(&own), b.secret_sha256);
    let linked_at = host.session.computer(&who).unwrap().connected_at;

    // Anyone holding the shared secret, under its id and label, with or without enrol, or
    // under its id with another label: refused, and told why and what to do.
    for h in [
        hello(id, Some("miner")),
        enrolling(id, Some("miner"), SECRET),
        enrolling(id, Some("thief"), SECRET),
        enrolling(id, None, "a-guess-of-its-secret"),
    ] {
        let (code, seen) = refused(host, &h).await;
        assert_eq!(code, Some(4001), "{h}");
        assert_eq!(seen[0]["code"], "auth_failed", "{h}");
        let msg = seen[0]["message"].as_str().unwrap();
        if h["secret"] == SECRET {
            assert!(
                msg.contains(&format!("computer {id} is enrolled with its own secret"))
                    && msg.contains(&format!("trapdesk secret forget {id}")),
                "{msg}"
            );
        } else {
            assert_eq!(msg, "wrong secret");
        }
    }
    // The real computer stayed linked on the same link and still answers.
    let c = host.session.computer(&who).unwrap();
    assert!(c.online);
    assert_eq!(c.connected_at, linked_at, "the link was replaced");
    assert!(host.session.computer(&format!("{id}:thief")).is_none());
    assert_eq!(
        exec(host, &who, "return 6 * 7").await["returns"][0]["value"],
        42
    );
    assert_eq!(
        exec(host, &who, "return settings.get('sandbox.password')").await["returns"][0]["value"],
        SECRET,
        "the shared secret stays (it enrols again if the host forgets the computer)"
    );
    // Its own secret is no other computer's.
    let (code, _) = refused(host, &enrolling(id + 100, None, &own)).await;
    assert_eq!(code, Some(4001));

    // After a reboot it links with its own secret, without enrolling again.
    match &mut w.computer_mut("miner").machine {
        world::Machine::Emu(c) => c.reboot(),
        world::Machine::Craft(c) => c.restart(),
        world::Machine::EmuProcess(_) => unreachable!("booted in the test process"),
    }
    let host = &w.host;
    support::wait_for(
        rt.link_timeout(),
        || {
            host.session
                .computer(&who)
                .is_some_and(|c| c.online && c.connected_at != linked_at)
        },
        || format!("did not relink; {}", w.computer("miner").dump()),
    )
    .await;
    w.wait_linked("miner", rt.link_timeout()).await;
    let host = &w.host;
    assert_eq!(own_secret(host, &who).await.as_deref(), Some(&*own));
    assert_eq!(
        binding(host, &id.to_string()).unwrap(),
        b,
        "the binding did not change"
    );
    // The two attempts under its id and label are in the session's log as refusals.
    let refusals = host
        .session
        .recent(1000)
        .into_iter()
        .filter(|e| e.event.as_str() == "refused" && e.trapos_id.as_deref() == Some(&*who))
        .count();
    assert_eq!(refusals, 2, "the attempts under its label");
}

on_both_runtimes!(the_shared_secret_cannot_take_an_enrolled_computers_id);

#[tokio::test]
async fn a_lost_welcome_or_a_lost_enrolled_never_locks_a_computer_out() {
    let host = start_host().await;
    // The welcome carries the new secret; this computer "loses" it (never stores it).
    let (c, w1) = FakeComputer::link_with(&host, enrolling(3, None, SECRET)).await;
    let first = w1["secret"].as_str().unwrap().to_owned();
    assert_eq!(first.len(), 20);
    assert!(binding(&host, "3").unwrap().pending);
    c.close().await;
    // It comes back with the shared secret: enrolled again, with a fresh secret.
    let (c, w2) = FakeComputer::link_with(&host, enrolling(3, None, SECRET)).await;
    let second = w2["secret"].as_str().unwrap().to_owned();
    assert_ne!(first, second);
    // This time it stored it but its `enrolled` was lost (the link dropped first).
    c.close().await;
    assert!(binding(&host, "3").unwrap().pending);
    let (code, _) = refused(&host, &enrolling(3, None, &first)).await;
    assert_eq!(code, Some(4001), "the replaced pending secret");
    // Its first hello with the pending secret makes the binding firm, and enrols nothing.
    let (mut c, w3) = FakeComputer::link_with(&host, enrolling(3, None, &second)).await;
    assert!(w3.get("secret").is_none(), "{w3}");
    wait_firm(&host, "3").await;
    // An `enrolled` from a link that enrolled nothing changes nothing.
    c.send(&json!({"type": "enrolled"})).await;
    let (code, seen) = refused(&host, &enrolling(3, None, SECRET)).await;
    assert_eq!(code, Some(4001));
    assert!(seen[0]["message"].as_str().unwrap().contains("enrolled"));

    // The usual path: welcome, then `enrolled`.
    let (mut c, w) = FakeComputer::link_with(&host, enrolling(4, Some("farm"), SECRET)).await;
    assert!(w["secret"].is_string());
    c.send(&json!({"type": "enrolled"})).await;
    let b = wait_firm(&host, "4").await;
    assert_eq!(b.how.as_deref(), Some("enrolled"));
    assert!(b.since_ms > 0);
    // The file holds hashes only.
    let text = std::fs::read_to_string(host.dir.path().join(secrets::FILE)).unwrap();
    assert!(!text.contains(w["secret"].as_str().unwrap()) && !text.contains(&second));
}

#[tokio::test]
async fn clients_that_cannot_enrol_link_unbound_as_before() {
    let host = start_host().await;
    // No `enrol`: the tests' scripted computers and clients from before enrolment.
    let (_a, w) = FakeComputer::link_with(&host, hello(5, Some("old"))).await;
    assert!(w.get("secret").is_none());
    assert!(binding(&host, "5").is_none(), "nothing bound");
    assert!(
        !host.dir.path().join(secrets::FILE).exists(),
        "nothing written"
    );
    // A bound id needs its own secret whatever the hello says.
    let own = secrets::add(host.dir.path(), "6").unwrap();
    let (code, _) = refused(&host, &hello(6, None)).await;
    assert_eq!(code, Some(4001));
    let mut h = hello(6, None);
    h["secret"] = json!(own);
    let (_b, w) = FakeComputer::link_with(&host, h).await;
    assert_eq!(w["trapos_id"], "6:");
}

#[tokio::test]
async fn closed_enrolment_refuses_new_ids_and_forget_lets_one_enrol_again() {
    let host = start_host().await;
    let dir = host.dir.path();
    let (mut c, w) = FakeComputer::link_with(&host, enrolling(1, None, SECRET)).await;
    let own = w["secret"].as_str().unwrap().to_owned();
    c.send(&json!({"type": "enrolled"})).await;
    wait_firm(&host, "1").await;
    c.close().await;

    assert!(secrets::set_enrolment(dir, false).unwrap());
    for h in [enrolling(2, None, SECRET), hello(2, None)] {
        let (code, seen) = refused(&host, &h).await;
        assert_eq!(code, Some(4001));
        assert!(
            seen[0]["message"]
                .as_str()
                .unwrap()
                .contains("enrolment is closed: the shared secret links no new computer"),
            "{seen:?}"
        );
    }
    assert!(host.session.computer("2:").is_none());
    // A bound computer links as before.
    let (c, _) = FakeComputer::link_with(&host, enrolling(1, None, &own)).await;
    c.close().await;
    secrets::set_enrolment(dir, true).unwrap();

    // Forgotten, id 1 enrols again (a reinstalled computer); its old secret is refused.
    secrets::forget(dir, "1").unwrap();
    let (code, _) = refused(&host, &enrolling(1, None, &own)).await;
    assert_eq!(code, Some(4001));
    let (_c, w) = FakeComputer::link_with(&host, enrolling(1, None, SECRET)).await;
    assert!(w["secret"].is_string() && w["secret"] != json!(own));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_computer_enrols_again_by_itself() {
    let host = start_host().await;
    let real = emulated(&host, 9, Some("lab")).await;
    let first = wait_firm(&host, "9").await;
    secrets::forget(host.dir.path(), "lab").unwrap();
    // At its next link its own secret is refused; the client then presents the shared one
    // and enrols again, with a new secret.
    real.reboot();
    wait_until(|| {
        binding(&host, "9").is_some_and(|b| !b.pending && b.secret_sha256 != first.secret_sha256)
    })
    .await;
    wait_until(|| {
        host.session
            .computer("9:lab")
            .is_some_and(|c| c.online && c.serves.iter().any(|s| s == "exec-lua"))
    })
    .await;
    let own = own_secret(&host, "9:lab").await.unwrap();
    assert_eq!(
        trapdesk::trust::hash(&own),
        binding(&host, "9").unwrap().secret_sha256
    );
    real.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_demo_run_relinks_its_enrolled_computers() {
    use tokio_util::sync::CancellationToken;
    let host = start_host().await;
    let url = host.gateway_url();
    for run in 0..2 {
        let stop = CancellationToken::new();
        let (url, dir, until) = (url.clone(), host.dir.path().to_owned(), stop.clone());
        let demo =
            tokio::spawn(
                async move { trapdesk::emu::run_demo(2, &url, SECRET, &dir, until).await },
            );
        wait_until(|| {
            ["1:miner", "2:farm"].iter().all(|t| {
                host.session
                    .computer(t)
                    .is_some_and(|c| c.online && c.serves.iter().any(|s| s == "exec-lua"))
            })
        })
        .await;
        wait_firm(&host, "1").await;
        wait_firm(&host, "2").await;
        assert_eq!(
            exec(&host, "2:farm", "return 1 + 1").await["returns"][0]["value"],
            2,
            "run {run}"
        );
        stop.cancel();
        demo.await.unwrap().unwrap();
        wait_until(|| !host.session.computer("1:miner").unwrap().online).await;
    }
    let refusals = host
        .session
        .recent(1000)
        .into_iter()
        .filter(|e| e.event.as_str() == "refused")
        .count();
    assert_eq!(refusals, 0, "the second run linked with the stored secrets");
}

/// File descriptors this process holds (each socket, ours and the host's, is one).
fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Links a right secret from 127.0.0.1 and returns how long it took.
async fn right_one(host: &TestHost, id: u64) -> Duration {
    let start = Instant::now();
    let (c, w) = FakeComputer::link_with(host, hello(id, None)).await;
    let took = start.elapsed();
    assert_eq!(w["type"], "welcome");
    c.close().await;
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_right_secret_links_at_once_through_a_flood_of_wrong_ones() {
    let host = start_host().await;
    let before = fds();
    // One after another: a few hundred wrong secrets, each refused at once.
    let h = std::sync::Arc::new(host);
    let serial = {
        let h = h.clone();
        tokio::spawn(async move {
            let mut slowest = Duration::ZERO;
            for i in 0..300u64 {
                let start = Instant::now();
                let (code, seen) = refused(&h, &enrolling(1000 + i, None, "guess")).await;
                assert_eq!(code, Some(4001));
                assert_eq!(seen[0]["code"], "auth_failed");
                slowest = slowest.max(start.elapsed());
            }
            slowest
        })
    };
    // And 64 sockets at once, four times over.
    let parallel = {
        let h = h.clone();
        tokio::spawn(async move {
            for round in 0..4u64 {
                let mut all = Vec::new();
                for i in 0..64u64 {
                    let h = h.clone();
                    all.push(tokio::spawn(async move {
                        refused(&h, &enrolling(5000 + round * 64 + i, None, "guess"))
                            .await
                            .0
                    }));
                }
                for t in all {
                    assert_eq!(t.await.unwrap(), Some(4001));
                }
            }
        })
    };
    // Meanwhile, right secrets from the same address link within a second, every time.
    let mut took = Vec::new();
    let mut id = 1;
    while !(serial.is_finished() && parallel.is_finished()) {
        took.push(right_one(&h, id).await);
        id += 1;
        // The pace of the measurement: a right secret every 50 ms while the flood lasts.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let slowest_wrong = serial.await.unwrap();
    parallel.await.unwrap();
    took.push(right_one(&h, id).await);
    assert!(took.len() >= 3, "{took:?}");
    assert!(
        took.iter().all(|t| *t < Duration::from_secs(1)),
        "a right secret waited: {took:?}"
    );
    assert!(
        slowest_wrong < Duration::from_secs(1),
        "a wrong secret was held: {slowest_wrong:?}"
    );
    // Nothing of the flood is left: no computer, no socket.
    wait_until(|| h.session.computers().iter().all(|c| !c.online)).await;
    assert!(
        h.session.computers().iter().all(|c| c.id < 1000),
        "a wrong secret linked"
    );
    support::wait_for(
        Duration::from_secs(5),
        || fds() <= before + 8,
        || format!("sockets left after the flood: {} then {}", before, fds()),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_link_are_bounded_and_never_block_a_right_secret() {
    use trapdesk::gateway::door::MAX_WAITING;
    let host = start_host().await;
    let before = fds();
    // An upgrade that never says hello, the oldest of all...
    let mut first = FakeComputer::connect_raw(&host).await;
    // ...then far more TCP connections than may wait, each sending half an HTTP request and
    // nothing more (the HTTP layer has no deadline of its own for them).
    let n = MAX_WAITING + 600;
    let mut idle = Vec::with_capacity(n);
    for _ in 0..n {
        let mut s = tokio::net::TcpStream::connect(host.gateway_addr)
            .await
            .unwrap();
        s.write_all(b"GET /gateway HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        idle.push(s);
    }
    // The host accepts them all, and holds at most MAX_WAITING of them: ours are n + 1, so
    // the process holds at most n + 1 + MAX_WAITING (plus a few of its own).
    let bound = before + n + 1 + MAX_WAITING + 16;
    // The host accepts the flood meanwhile, and nothing says when it has: checked sooner,
    // the bound would hold only because the sockets were not yet accepted.
    tokio::time::sleep(Duration::from_millis(500)).await;
    support::wait_for(
        Duration::from_secs(10),
        || fds() <= bound,
        || {
            format!(
                "the host holds {} sockets for {n} idle connections (bound {bound})",
                fds() - before - n - 1
            )
        },
    )
    .await;
    // The oldest was pushed out with 1013 try_again_later, before its hello deadline.
    let (code, seen) = first.recv_close().await;
    assert_eq!(code, Some(1013));
    assert_eq!(seen[0]["code"], "try_again_later");
    // A right secret still links at once.
    assert!(right_one(&host, 1).await < Duration::from_secs(1));
    // Linked computers are never pushed out, however many connect after them.
    let (mut linked, _) = FakeComputer::link_with(&host, hello(2, None)).await;
    for _ in 0..(MAX_WAITING + 10) {
        idle.push(
            tokio::net::TcpStream::connect(host.gateway_addr)
                .await
                .unwrap(),
        );
    }
    // As above: the host accepts them (and would push out whom it pushes out) meanwhile, and
    // nothing says when it has.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let session = host.session.clone();
    let t = tokio::spawn(async move {
        session
            .request(
                "2:",
                RequestSpec::new(
                    trapdesk::protocol::Kind::ExecLua,
                    json!({"code": "return 1"}),
                ),
                Origin::Person,
            )
            .await
    });
    let req = linked.recv_request().await;
    linked
        .respond(req["id"].as_str().unwrap(), json!({"ok": true}))
        .await;
    assert!(t.await.unwrap().is_ok());
    drop(idle);
    // Nothing left once they go.
    support::wait_for(
        Duration::from_secs(10),
        || fds() <= before + 8,
        || format!("{}", fds()),
    )
    .await;
    let _ = first.ws.next().await;
}

fn trapdesk(dir: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .env_remove("SANDBOX_PASSWORD")
        .env_remove("TRAPDESK_GATEWAY_BIND")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_secret_commands_show_list_forget_and_close_enrolment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ok, out, err) = trapdesk(d, &["secret", "show"]);
    assert!(ok, "{err}");
    let shared = std::fs::read_to_string(d.join("secret")).unwrap();
    assert!(out.contains(&format!("    {}", shared.trim())), "{out}");
    assert!(
        out.contains(&format!(
            "wget run http://127.0.0.1:4444/install.lua {}",
            shared.trim()
        )),
        "{out}"
    );
    let (_, out, _) = trapdesk(d, &["secret", "list"]);
    assert!(
        out.contains("enrolment is open") && out.contains("no computer"),
        "{out}"
    );
    let (ok, out, _) = trapdesk(d, &["secret", "add", "7"]);
    assert!(ok && out.contains("set trapdesk.secret"), "{out}");
    let (_, out, _) = trapdesk(d, &["secret", "enrol", "off"]);
    assert!(out.contains("enrolment is closed"), "{out}");
    let (_, out, _) = trapdesk(d, &["secret", "list"]);
    assert!(out.contains("enrolment is closed"), "{out}");
    assert!(out.contains("7  firm, added since "), "{out}");
    assert!(
        !out.contains(&binding_hash(d, "7")),
        "never a hash or a secret: {out}"
    );
    let (_, out, _) = trapdesk(d, &["secret", "show"]);
    assert!(out.contains("Enrolment is closed"), "{out}");
    let (ok, out, _) = trapdesk(d, &["secret", "forget", "7"]);
    assert!(
        ok && out.contains("computer 7 no longer has a secret of its own"),
        "{out}"
    );
    let (ok, _, err) = trapdesk(d, &["secret", "forget", "7"]);
    assert!(
        !ok && err.contains("no computer \"7\" has a secret of its own"),
        "{err}"
    );
    let (_, out, _) = trapdesk(d, &["secret", "enrol", "on"]);
    assert!(out.contains("enrolment is open"), "{out}");
}

fn binding_hash(dir: &std::path::Path, computer: &str) -> String {
    secrets::list(dir)
        .unwrap()
        .into_iter()
        .find(|c| c.computer == computer)
        .map(|c| c.secret_sha256)
        .unwrap()
}

#[test]
fn a_weak_secret_given_by_hand_is_refused_at_start_with_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, err) = trapdesk(
        dir.path(),
        &[
            "--mcp-only",
            "--gateway-bind",
            "127.0.0.1:0",
            "--mcp-bind",
            "127.0.0.1:0",
            "--secret",
            "hunter2",
        ],
    );
    assert!(!ok);
    assert!(
        err.contains("--secret is too weak")
            && err.contains("at least 16 characters and at least 8 different ones"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "the secret is not echoed: {err}");
}

//! Files are never torn (RELIABILITY.md, guarantee 3), on CraftOS-PC: a megabyte `write-file`
//! over a megabyte file, interrupted by kill -9 of the CraftOS-PC process at every step of the
//! client's write and at times spread over the whole request (while its fragments arrive,
//! while the client decodes them, while it writes), leaves the old file or the new one, never
//! a mix, and nothing of the write behind once the same computer has booted again.
//! Skipped (one line) without `CRAFTOS_PC`; see `tests/support/craftos.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "support/craftos.rs"]
mod craftos;
#[path = "support/mcp_fake.rs"]
mod fake;
mod support;
#[path = "support/tear.rs"]
mod tear;

use std::time::{Duration, Instant};

use craftos::Fleet;
use serde_json::{Value, json};
use tear::{Outcome, TARGET};
use trapdesk::session::{Origin, RequestError, RequestSpec, Session};

const WHO: &str = "1:torn";

fn write_spec(bytes: &[u8]) -> RequestSpec {
    RequestSpec::new(
        trapdesk::protocol::Kind::WriteFile,
        json!({"path": TARGET, "content": tear::b64(bytes)}),
    )
    .timeout(Some(Duration::from_secs(120)))
}

async fn exec(session: &Session, code: &str) -> Value {
    session
        .request(
            WHO,
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
                .timeout(Some(Duration::from_secs(30))),
            Origin::Person,
        )
        .await
        .unwrap()
}

/// The old content, put on the computer's disk directly while it is idle.
fn reset(f: &Fleet) {
    let root = f.computers[0].files();
    std::fs::write(root.join(TARGET), tear::old()).unwrap();
    let _ = std::fs::remove_file(root.join(tear::MARK));
    // The journal's directory exists after the first write; with it there from the start,
    // step k is the same step in every round.
    std::fs::create_dir_all(root.join("trapdesk/journal")).unwrap();
}

/// kill -9 of CraftOS-PC, then the same computer booted again and linked.
async fn kill_and_reboot(f: &mut Fleet) {
    f.computers[0].kill9();
    let start = Instant::now();
    while f.host.session.computer(WHO).is_some_and(|c| c.online) {
        assert!(start.elapsed() < Duration::from_secs(30), "never unlinked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f.computers[0].restart();
    f.wait_linked(&f.computers[0], craftos::LINK_TIMEOUT).await;
}

fn spawn_write(session: &Session) -> tokio::task::JoinHandle<Result<Value, RequestError>> {
    let s = session.clone();
    tokio::spawn(async move {
        s.request(WHO, write_spec(&tear::new()), Origin::Person)
            .await
    })
}

type Started = tokio::task::JoinHandle<Result<Value, RequestError>>;

/// Kills CraftOS-PC at step 1, 2, ... of what `start` begins (a hooked write), until it runs
/// out of steps; returns each step and what the file held after the reboot.
async fn every_step(
    f: &mut Fleet,
    start: impl Fn(&Session, &std::path::Path) -> Started,
) -> Vec<(String, Outcome)> {
    let session = f.host.session.clone();
    let root = f.computers[0].files();
    let mut rows = Vec::new();
    for k in 1.. {
        reset(f);
        let v = exec(&session, &tear::hook(k)).await;
        assert_eq!(v["returns"][0]["value"], "hooked", "{v}");
        let req = start(&session, &root);
        let step = loop {
            if let Some(m) = tear::mark(&root) {
                break Some(m);
            }
            if req.is_finished() {
                break None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let Some(step) = step else {
            let r = req.await.unwrap().unwrap();
            assert_eq!(r["ok"], true, "{r}");
            assert_eq!(tear::verdict(&root, "after a whole write"), Outcome::New);
            break;
        };
        kill_and_reboot(f).await;
        assert_eq!(req.await.unwrap(), Err(RequestError::Disconnected));
        rows.push((
            step.clone(),
            tear::verdict(&root, &format!("killed at step {step}")),
        ));
    }
    assert!(rows.iter().any(|r| r.1 == Outcome::Old));
    assert!(rows.iter().any(|r| r.1 == Outcome::New));
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_of_craftos_at_every_step_of_a_write_never_tears_the_file() {
    let test = "kill9_of_craftos_at_every_step_of_a_write_never_tears_the_file";
    let Some(mut f) = Fleet::boot(test, &["torn"]).await else {
        return;
    };
    let rows = every_step(&mut f, |session, _| spawn_write(session)).await;
    tear::report("CraftOS-PC, kill -9 at each step", &rows);
    assert!(rows.len() >= 16, "only {} steps", rows.len());
}

/// The last step of a CLI `put` of several pieces: the client's `moveInto` of the finished
/// part file over the target, as `src/client/transfer.rs` runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_of_craftos_at_every_step_of_a_put_move_never_tears_the_file() {
    let test = "kill9_of_craftos_at_every_step_of_a_put_move_never_tears_the_file";
    let Some(mut f) = Fleet::boot(test, &["torn"]).await else {
        return;
    };
    let rows = every_step(&mut f, |session, root| {
        std::fs::write(root.join(".torn.bin.1.trapdesk-part"), tear::new()).unwrap();
        let s = session.clone();
        tokio::spawn(async move {
            let code = "local lib = dofile('/trapdesk/apis/libmcpcomputer.lua') \
                        lib.JOURNAL = '/trapdesk/journal' \
                        return lib.moveInto('.torn.bin.1.trapdesk-part', 'torn.bin')";
            s.request(
                WHO,
                RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
                    .timeout(Some(Duration::from_secs(60))),
                Origin::Person,
            )
            .await
            .map(|v| v["returns"][0]["value"].clone())
        })
    })
    .await;
    tear::report("CraftOS-PC, kill -9 at each step of a put's move", &rows);
    assert!(rows.len() >= 10, "only {} steps", rows.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_of_craftos_at_times_spread_over_a_write_never_tears_the_file() {
    let test = "kill9_of_craftos_at_times_spread_over_a_write_never_tears_the_file";
    let Some(mut f) = Fleet::boot(test, &["torn"]).await else {
        return;
    };
    let session = f.host.session.clone();
    let root = f.computers[0].files();
    reset(&f);
    let t0 = Instant::now();
    let r = spawn_write(&session).await.unwrap().unwrap();
    assert_eq!(r["ok"], true, "{r}");
    let whole = t0.elapsed();
    const ROUNDS: u32 = 12;
    let mut rows = Vec::new();
    for i in 0..ROUNDS {
        // A fresh computer each round, as the kill leaves it: CraftOS-PC slows down after
        // several large payloads on one computer (../shared/craftos/README.md).
        reset(&f);
        // Over twice the measured time: a freshly booted computer writes more slowly.
        let at = whole.mul_f64(2.0 * (f64::from(i) + 0.5) / f64::from(ROUNDS));
        let req = spawn_write(&session);
        tokio::time::sleep(at).await;
        let answered = req.is_finished();
        kill_and_reboot(&mut f).await;
        let _ = req.await.unwrap();
        let o = tear::verdict(&root, &format!("killed {at:?} into the write"));
        let when = if answered {
            "after the answer"
        } else {
            "in flight"
        };
        rows.push((format!("{at:?} of {whole:?}, {when}"), o));
    }
    tear::report("CraftOS-PC, kill -9 at spread times", &rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_host_mid_write_to_craftos_never_tears_the_file() {
    let test = "stopping_the_host_mid_write_to_craftos_never_tears_the_file";
    let Some(launcher) = craftos::launcher(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (gw, mcp) = (tear::free_port(), tear::free_port());
    let host_dir = dir.path().join("host");
    let host = tear::host_process(&host_dir, gw, mcp);
    // The host listens before the computer's installer asks it for the client.
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", gw)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "host never listened"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let computer = craftos::CraftComputer::spawn(&launcher, 1, "torn", gw);
    let rows = tear::host_stops(host, &computer.files(), &host_dir, gw, mcp, 6).await;
    tear::report("CraftOS-PC, host stopped mid-write", &rows);
}

/// kill -9 of CraftOS-PC in the middle of a chunk (issue 13's "mid-chunk" fault): the request
/// ends exactly once, as `disconnected`, the same computer boots and relinks by itself, and it
/// serves the next chunk on the new link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_of_craftos_mid_chunk_ends_the_request_and_the_computer_relinks() {
    let test = "kill9_of_craftos_mid_chunk_ends_the_request_and_the_computer_relinks";
    let Some(mut f) = Fleet::boot(test, &["torn"]).await else {
        return;
    };
    let session = f.host.session.clone();
    let s = session.clone();
    let req = tokio::spawn(async move {
        s.request(
            WHO,
            RequestSpec::new(
                trapdesk::protocol::Kind::ExecLua,
                json!({ "code": "for i = 1, 1e9 do print('tick', i) sleep(0.05) end" }),
            )
            .timeout(Some(Duration::from_secs(60))),
            Origin::Person,
        )
        .await
    });
    // The chunk is running once its printed lines reach the host (not just its start entry,
    // which quotes the code).
    let start = Instant::now();
    while !session.output_since(WHO, 0).iter().any(|i| {
        matches!(&i.entry, trapdesk::session::OutputEntry::Line { text, .. } if text.starts_with("tick"))
    }) {
        assert!(start.elapsed() < Duration::from_secs(30), "chunk never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!req.is_finished());
    let t0 = Instant::now();
    kill_and_reboot(&mut f).await;
    assert_eq!(req.await.unwrap(), Err(RequestError::Disconnected));
    let v = exec(&session, "return 6 * 7").await;
    eprintln!(
        "kill -9 mid-chunk: disconnected, relinked and answered after {:?}",
        t0.elapsed()
    );
    assert_eq!(v["returns"][0]["value"], 42, "{v}");
}

//! Files are never torn (RELIABILITY.md, guarantee 3), one body per case on the emulator and
//! on CraftOS-PC (a real CC runtime; ignored without `CRAFTOS_PC`, see
//! `tests/integration/support/craftos.rs`): a megabyte `write-file` over a megabyte file,
//! interrupted by kill -9 of the computer's process (a `trapdesk emulate` process, or CraftOS-PC)
//! at every step of the client's write and at times spread over the whole request (while its
//! fragments arrive, while the client decodes them, while it writes), and by SIGKILL / SIGTERM of
//! the host process mid-write, leaves the old file or the new one, never a mix, and nothing of the
//! write behind once the same computer has booted again. A kill -9 mid-chunk ends the request once
//! and the computer relinks.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, craftos, tear, world};

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::world::on_both_runtimes;
use serde_json::{Value, json};
use support::SECRET;
use tear::{Outcome, TARGET};
use trapdesk::session::{Origin, RequestError, RequestSpec, Session};
use world::{Runtime, Spec, World};

const LABEL: &str = "torn";

/// One computer labelled `torn` whose process the test can kill.
async fn boot(rt: Runtime) -> World {
    // The file torn is a megabyte, old and new side by side at the replace: more than a default
    // computer's 1,000,000 bytes hold beside the client, so the quota is raised, as a server's
    // `computer_space_limit` can be.
    let spec = Spec {
        process: true,
        disk_space: Some(4_000_000),
        ..Spec::default()
    };
    World::boot_with(rt, &[(LABEL, spec)]).await
}

fn write_spec(bytes: &[u8]) -> RequestSpec {
    RequestSpec::new(
        trapdesk::protocol::Kind::WriteFile,
        json!({"path": TARGET, "content": tear::b64(bytes)}),
    )
    .timeout(Some(Duration::from_secs(120)))
}

async fn exec(session: &Session, who: &str, code: &str) -> Value {
    session
        .request(
            who,
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
                .timeout(Some(Duration::from_secs(30))),
            Origin::Person,
        )
        .await
        .unwrap()
}

/// The old content, put on the computer's disk directly while it is idle.
fn reset(root: &Path) {
    std::fs::write(root.join(TARGET), tear::old()).unwrap();
    let _ = std::fs::remove_file(root.join(tear::MARK));
    // The journal's directory exists after the first write; with it there from the start,
    // step k is the same step in every round.
    std::fs::create_dir_all(root.join("trapdesk/journal")).unwrap();
}

type Started = tokio::task::JoinHandle<Result<Value, RequestError>>;

fn spawn_write(session: &Session, who: &str) -> Started {
    let (s, who) = (session.clone(), who.to_owned());
    tokio::spawn(async move {
        s.request(&who, write_spec(&tear::new()), Origin::Person)
            .await
    })
}

/// Kills the computer at step 1, 2, ... of what `start` begins (a hooked write), until it runs
/// out of steps; returns each step and what the file held after the reboot.
async fn every_step(
    w: &mut World,
    start: impl Fn(&Session, &str, &Path) -> Started,
) -> Vec<(String, Outcome)> {
    let session = w.session().clone();
    let who = w.trapos(LABEL);
    let root = w.files(LABEL);
    let mut rows = Vec::new();
    for k in 1.. {
        reset(&root);
        let v = exec(&session, &who, &tear::hook(k)).await;
        assert_eq!(v["returns"][0]["value"], "hooked", "{v}");
        let req = start(&session, &who, &root);
        // Either the hook stops the write at step k, or there are fewer steps and it ends.
        support::wait_for(
            Duration::from_secs(120),
            || tear::mark(&root).is_some() || req.is_finished(),
            || format!("the write neither stopped at step {k} nor ended"),
        )
        .await;
        let step = tear::mark(&root);
        let Some(step) = step else {
            let r = req.await.unwrap().unwrap();
            assert_eq!(r["ok"], true, "{r}");
            assert_eq!(tear::verdict(&root, "after a whole write"), Outcome::New);
            break;
        };
        w.kill_and_reboot(LABEL).await;
        assert_eq!(req.await.unwrap(), Err(RequestError::Disconnected));
        let o = tear::verdict(&root, &format!("killed at step {step}"));
        rows.push((step, o));
    }
    // Every step was reached, on both sides of the swap.
    assert!(rows.iter().any(|r| r.1 == Outcome::Old));
    assert!(rows.iter().any(|r| r.1 == Outcome::New));
    rows
}

async fn kill9_at_every_step_of_a_write_never_tears_the_file(rt: Runtime) {
    let mut w = boot(rt).await;
    let rows = every_step(&mut w, |session, who, _| spawn_write(session, who)).await;
    tear::report(&format!("{}, kill -9 at each step", rt.name()), &rows);
    assert!(rows.len() >= 16, "only {} steps", rows.len());
}

on_both_runtimes!(kill9_at_every_step_of_a_write_never_tears_the_file);

/// The last step of a CLI `put` of several pieces: the client's `moveInto` of the finished
/// part file over the target, as `src/commands/remote/transfer.rs` runs it.
async fn kill9_at_every_step_of_a_put_move_never_tears_the_file(rt: Runtime) {
    let mut w = boot(rt).await;
    let rows = every_step(&mut w, |session, who, root| {
        std::fs::write(root.join(".torn.bin.1.trapdesk-part"), tear::new()).unwrap();
        let (s, who) = (session.clone(), who.to_owned());
        tokio::spawn(async move {
            let code = "local lib = dofile('/trapdesk/apis/libmcpcomputer.lua') \
                        lib.JOURNAL = '/trapdesk/journal' \
                        return lib.moveInto('.torn.bin.1.trapdesk-part', 'torn.bin')";
            s.request(
                &who,
                RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
                    .timeout(Some(Duration::from_secs(60))),
                Origin::Person,
            )
            .await
            .map(|v| v["returns"][0]["value"].clone())
        })
    })
    .await;
    tear::report(
        &format!("{}, kill -9 at each step of a put's move", rt.name()),
        &rows,
    );
    assert!(rows.len() >= 10, "only {} steps", rows.len());
}

on_both_runtimes!(kill9_at_every_step_of_a_put_move_never_tears_the_file);

/// A number in [0, 1) that differs between runs (no extra crate for one draw).
fn rand_unit() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1000) / 1000.0
}

async fn kill9_at_times_spread_over_a_write_never_tears_the_file(rt: Runtime) {
    let mut w = boot(rt).await;
    let session = w.session().clone();
    let who = w.trapos(LABEL);
    let root = w.files(LABEL);
    // How long a whole megabyte write takes here, end to end.
    reset(&root);
    let t0 = Instant::now();
    let r = spawn_write(&session, &who).await.unwrap().unwrap();
    assert_eq!(r["ok"], true, "{r}");
    let whole = t0.elapsed();
    // When round i kills the computer. The emulator: spread over the request and a little past
    // its end, with a jitter of its own. CraftOS-PC: over twice the measured time, since a
    // freshly booted CraftOS-PC computer (every round's, as the kill leaves it) writes more
    // slowly than the warm one measured.
    let rounds: u32 = match rt {
        Runtime::Emulator => 10,
        Runtime::CraftOs => 12,
    };
    let at = |i: u32| match rt {
        Runtime::Emulator => whole.mul_f64((f64::from(i) + rand_unit()) / f64::from(rounds - 2)),
        Runtime::CraftOs => whole.mul_f64(2.0 * (f64::from(i) + 0.5) / f64::from(rounds)),
    };
    let mut rows = Vec::new();
    for i in 0..rounds {
        reset(&root);
        let at = at(i);
        let req = spawn_write(&session, &who);
        // The moment of the kill is what this measures: a fixed point into the write.
        tokio::time::sleep(at).await;
        let answered = req.is_finished();
        w.kill_and_reboot(LABEL).await;
        let _ = req.await.unwrap();
        let o = tear::verdict(&root, &format!("killed {at:?} into the write"));
        let when = if answered {
            "after the answer"
        } else {
            "in flight"
        };
        rows.push((format!("{at:?} of {whole:?}, {when}"), o));
    }
    tear::report(&format!("{}, kill -9 at spread times", rt.name()), &rows);
}

on_both_runtimes!(kill9_at_times_spread_over_a_write_never_tears_the_file);

/// The host process is stopped (SIGKILL, SIGTERM) mid-write and started again. The computer
/// links to a host on fixed ports, not to a [`World`]'s: the emulated one in the test process,
/// its client installed as the installer would, and CraftOS-PC through the installer once the
/// host listens (the installer fetches the client from it).
async fn stopping_the_host_mid_write_never_tears_the_file(rt: Runtime) {
    let dir = tempfile::tempdir().unwrap();
    let (gw, mcp) = (tear::free_port(), tear::free_port());
    let host_dir = dir.path().join("host");
    match rt {
        Runtime::Emulator => {
            use trapdesk::emu::{Computer, ComputerSpec, install_client};
            let root = dir.path().join("computer");
            std::fs::create_dir_all(&root).unwrap();
            install_client(&root, &format!("ws://127.0.0.1:{gw}/gateway"), SECRET).unwrap();
            std::fs::write(root.join(TARGET), tear::old()).unwrap();
            // A megabyte old and new side by side: the quota raised, as in `boot`.
            let spec =
                ComputerSpec::new(1, Some(LABEL.into()), root.clone()).with_disk_space(4_000_000);
            let _computer = Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap();
            let host = tear::host_process(&host_dir, gw, mcp);
            let rows = tear::host_stops(host, &root, &host_dir, gw, mcp, 6).await;
            tear::report("emulator, host stopped mid-write", &rows);
        }
        Runtime::CraftOs => {
            let launcher = craftos::launcher();
            let host = tear::host_process(&host_dir, gw, mcp);
            support::wait_for(
                Duration::from_secs(30),
                || std::net::TcpStream::connect(("127.0.0.1", gw)).is_ok(),
                || "host never listened".to_owned(),
            )
            .await;
            let computer = craftos::CraftComputer::spawn(&launcher, 1, LABEL, gw);
            let rows = tear::host_stops(host, &computer.files(), &host_dir, gw, mcp, 6).await;
            tear::report("CraftOS-PC, host stopped mid-write", &rows);
        }
    }
}

on_both_runtimes!(stopping_the_host_mid_write_never_tears_the_file);

/// kill -9 of the computer in the middle of a chunk: the request ends exactly once, as
/// `disconnected`, the same computer boots and relinks by itself, and it serves the next chunk
/// on the new link.
async fn kill9_mid_chunk_ends_the_request_and_the_computer_relinks(rt: Runtime) {
    let mut w = boot(rt).await;
    let session = w.session().clone();
    let who = w.trapos(LABEL);
    let (s, target) = (session.clone(), who.clone());
    let req = tokio::spawn(async move {
        s.request(
            &target,
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
    support::wait_for(
        Duration::from_secs(30),
        || {
            session.output_since(&who, 0).iter().any(|i| {
                matches!(&i.entry, trapdesk::session::OutputEntry::Line { text, .. } if text.starts_with("tick"))
            })
        },
        || "chunk never ran".to_owned(),
    )
    .await;
    assert!(!req.is_finished());
    let t0 = Instant::now();
    w.kill_and_reboot(LABEL).await;
    assert_eq!(req.await.unwrap(), Err(RequestError::Disconnected));
    let v = exec(&session, &who, "return 6 * 7").await;
    eprintln!(
        "{}, kill -9 mid-chunk: disconnected, relinked and answered after {:?}",
        rt.name(),
        t0.elapsed()
    );
    assert_eq!(v["returns"][0]["value"], 42, "{v}");
}

on_both_runtimes!(kill9_mid_chunk_ends_the_request_and_the_computer_relinks);

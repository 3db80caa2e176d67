//! Files are never torn (RELIABILITY.md, guarantee 3), on the emulator: a megabyte `write-file`
//! over a megabyte file, interrupted by kill -9 of the emulated computer's process (`trapdesk
//! emulate`) at every step of the client's write and at times spread over the whole request,
//! and by SIGKILL / SIGTERM of the host process mid-write, leaves the old file or the new one,
//! never a mix, and nothing of the write behind once the computer has booted again.
//! The same on CraftOS-PC: `tests/craftos_torn.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "support/mcp_fake.rs"]
mod fake;
mod support;
#[path = "support/tear.rs"]
mod tear;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{SECRET, TestHost, start_host};
use tear::{Outcome, TARGET};
use trapdesk::session::{Origin, RequestError, RequestSpec, Session};

const ID: u64 = 9;

/// One `trapdesk emulate` process (a computer running the real client) on a disk that outlives
/// it. Killed with SIGKILL and reaped on drop.
struct Emulated {
    child: Child,
}

impl Emulated {
    fn start(url: &str, disk: &Path) -> Emulated {
        let child = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
            .args(["emulate", "--url", url, "--id", &ID.to_string()])
            .args(["--label", "torn", "--secret", SECRET])
            .arg("--data-dir")
            .arg(disk)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Emulated { child }
    }

    /// kill -9, and wait until the process is gone.
    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Emulated {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn root(disk: &Path) -> PathBuf {
    disk.join("computers").join(ID.to_string())
}

async fn wait_linked(session: &Session, limit: Duration) {
    let start = Instant::now();
    while !session
        .computer(&format!("{ID}:torn"))
        .is_some_and(|c| c.online && c.serves.iter().any(|s| s == "write-file"))
    {
        assert!(start.elapsed() < limit, "computer {ID} did not link");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn write_spec(bytes: &[u8]) -> RequestSpec {
    RequestSpec::new(
        trapdesk::protocol::Kind::WriteFile,
        json!({"path": TARGET, "content": tear::b64(bytes)}),
    )
    .timeout(Some(Duration::from_secs(120)))
}

async fn write(session: &Session, bytes: &[u8]) {
    let r = session
        .request(&ID.to_string(), write_spec(bytes), Origin::Person)
        .await
        .unwrap();
    assert_eq!(r["ok"], true, "{r}");
}

async fn exec(session: &Session, code: &str) -> Value {
    session
        .request(
            &ID.to_string(),
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

struct Rig {
    host: TestHost,
    disk: tempfile::TempDir,
    computer: Emulated,
}

impl Rig {
    async fn start() -> Rig {
        let host = start_host().await;
        let disk = tempfile::tempdir().unwrap();
        let computer = Emulated::start(&host.gateway_url(), disk.path());
        wait_linked(&host.session, Duration::from_secs(30)).await;
        Rig {
            host,
            disk,
            computer,
        }
    }

    fn root(&self) -> PathBuf {
        root(self.disk.path())
    }

    /// kill -9 of the computer, then the same computer (same disk) booted again and linked.
    async fn kill_and_reboot(&mut self) {
        self.computer.kill9();
        let session = self.host.session.clone();
        let start = Instant::now();
        while session
            .computer(&format!("{ID}:torn"))
            .is_some_and(|c| c.online)
        {
            assert!(start.elapsed() < Duration::from_secs(30), "never unlinked");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.computer = Emulated::start(&self.host.gateway_url(), self.disk.path());
        wait_linked(&session, Duration::from_secs(30)).await;
    }
}

type Started = tokio::task::JoinHandle<Result<Value, RequestError>>;

/// Kills the computer at step 1, 2, ... of what `start` begins (a hooked write), until it runs
/// out of steps; returns each step and what the file held after the reboot.
async fn every_step(
    rig: &mut Rig,
    start: impl Fn(&Session, &Path) -> Started,
) -> Vec<(String, Outcome)> {
    let session = rig.host.session.clone();
    let root = rig.root();
    let mut rows = Vec::new();
    for k in 1.. {
        reset(&root);
        let v = exec(&session, &tear::hook(k)).await;
        assert_eq!(v["returns"][0]["value"], "hooked", "{v}");
        let req = start(&session, &root);
        // Either the hook stops the write at step k, or there are fewer steps and it ends.
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
        rig.kill_and_reboot().await;
        assert_eq!(req.await.unwrap(), Err(RequestError::Disconnected));
        let o = tear::verdict(&root, &format!("killed at step {step}"));
        rows.push((step, o));
    }
    // Every step was reached, on both sides of the swap.
    assert!(rows.iter().any(|r| r.1 == Outcome::Old));
    assert!(rows.iter().any(|r| r.1 == Outcome::New));
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_of_the_emulator_at_every_step_of_a_write_never_tears_the_file() {
    let mut rig = Rig::start().await;
    let rows = every_step(&mut rig, |session, _| {
        let s = session.clone();
        tokio::spawn(async move {
            s.request(&ID.to_string(), write_spec(&tear::new()), Origin::Person)
                .await
        })
    })
    .await;
    tear::report("emulator, kill -9 at each step", &rows);
    assert!(rows.len() >= 16, "only {} steps", rows.len());
}

/// The last step of a CLI `put` of several pieces: the client's `moveInto` of the finished
/// part file over the target, as `src/client/transfer.rs` runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_of_the_emulator_at_every_step_of_a_put_move_never_tears_the_file() {
    let mut rig = Rig::start().await;
    let rows = every_step(&mut rig, |session, root| {
        std::fs::write(root.join(".torn.bin.1.trapdesk-part"), tear::new()).unwrap();
        let s = session.clone();
        tokio::spawn(async move {
            let code = "local lib = dofile('/trapdesk/apis/libmcpcomputer.lua') \
                        lib.JOURNAL = '/trapdesk/journal' \
                        return lib.moveInto('.torn.bin.1.trapdesk-part', 'torn.bin')";
            s.request(
                &ID.to_string(),
                RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
                    .timeout(Some(Duration::from_secs(60))),
                Origin::Person,
            )
            .await
            .map(|v| v["returns"][0]["value"].clone())
        })
    })
    .await;
    tear::report("emulator, kill -9 at each step of a put's move", &rows);
    assert!(rows.len() >= 10, "only {} steps", rows.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_of_the_emulator_at_times_spread_over_a_write_never_tears_the_file() {
    let mut rig = Rig::start().await;
    let session = rig.host.session.clone();
    let root = rig.root();
    // How long a whole megabyte write takes here, end to end.
    reset(&root);
    let t0 = Instant::now();
    write(&session, &tear::new()).await;
    let whole = t0.elapsed();
    const ROUNDS: u32 = 10;
    let mut rows = Vec::new();
    for i in 0..ROUNDS {
        reset(&root);
        // Spread over the request, a little past its end, with a jitter of its own.
        let at = whole.mul_f64((f64::from(i) + rand_unit()) / f64::from(ROUNDS - 2));
        let s = session.clone();
        let req = tokio::spawn(async move {
            s.request(&ID.to_string(), write_spec(&tear::new()), Origin::Person)
                .await
        });
        tokio::time::sleep(at).await;
        rig.kill_and_reboot().await;
        let _ = req.await.unwrap();
        let o = tear::verdict(&root, &format!("killed {at:?} into the write"));
        rows.push((format!("{at:?} of {whole:?}"), o));
    }
    tear::report("emulator, kill -9 at spread times", &rows);
}

/// A number in [0, 1) that differs between runs (no extra crate for one draw).
fn rand_unit() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1000) / 1000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_host_mid_write_never_tears_the_file() {
    use trapdesk::emu::{Computer, ComputerSpec, install_client};
    let dir = tempfile::tempdir().unwrap();
    let (gw, mcp) = (tear::free_port(), tear::free_port());
    let root = dir.path().join("computer");
    std::fs::create_dir_all(&root).unwrap();
    install_client(&root, &format!("ws://127.0.0.1:{gw}/gateway"), SECRET).unwrap();
    std::fs::write(root.join(TARGET), tear::old()).unwrap();
    let spec = ComputerSpec::new(ID, Some("torn".into()), root.clone());
    let _computer = Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap();
    let host = tear::host_process(&dir.path().join("host"), gw, mcp);
    let rows = tear::host_stops(host, &root, &dir.path().join("host"), gw, mcp, 6).await;
    tear::report("host stopped mid-write", &rows);
}

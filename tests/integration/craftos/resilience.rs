//! Lua client resilience (RELIABILITY.md), one body per case on the emulator and on CraftOS-PC
//! (a real CC runtime; ignored without `CRAFTOS_PC`, see `tests/integration/support/craftos.rs`):
//! chunks that error inside a coroutine, yield forever, flood output, pull and drop every event,
//! redefine globals, or fill the disk. After each, the client still serves requests on the same
//! link, and the player's shell still runs what is typed at it (typed with `send-input`, read back
//! with `read-screen`).
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake, world};

use std::time::{Duration, SystemTime};

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use serde_json::{Value, json};
use trapdesk::session::{Origin, RequestError, RequestSpec};
use world::{Runtime, World};

const LABEL: &str = "player";

async fn exec(w: &World, code: &str, timeout: Duration) -> Result<Value, RequestError> {
    w.session()
        .request(
            &w.trapos(LABEL),
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
                .timeout(Some(timeout)),
            Origin::Person,
        )
        .await
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// A program on the computer's disk that the shell runs when `mark N` is typed: it prints
/// `markN ran`. (The emulator's ROM has few programs; a program of the test's own runs alike on
/// both runtimes.)
fn put_mark(w: &World) {
    std::fs::write(
        w.files(LABEL).join("mark.lua"),
        "print(\"mark\" .. ... .. \" ran\")\n",
    )
    .unwrap();
}

/// The client still answers, on the same link, and the player's shell runs `mark N` typed at
/// it.
async fn still_serving(w: &World, linked_at: SystemTime, n: u32, after: &str) {
    let who = w.trapos(LABEL);
    let v = exec(w, "return 6 * 7", w.runtime.patience(secs(10)))
        .await
        .unwrap_or_else(|e| panic!("after {after}: {e}\n{}", w.computer(LABEL).dump()));
    assert_eq!(v["returns"][0]["value"], 42, "after {after}: {v}");
    let c = w.session().computer(&who).unwrap();
    assert!(c.online, "after {after}");
    assert_eq!(
        c.connected_at, linked_at,
        "after {after}: the link was replaced"
    );
    let r = w
        .call(
            "send-input",
            json!({"traposId": who, "text": format!("mark {n}"), "keys": ["enter"]}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "after {after}: {}", text(&r));
    let want = format!("mark{n} ran");
    support::wait_ok(secs(20), async || {
        let r = w.call("read-screen", json!({"traposId": who})).await;
        assert_ne!(r.is_error, Some(true), "after {after}: {}", text(&r));
        let rows: Vec<String> = data(&r)["rows"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|r| r.as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        if rows.iter().any(|r| r.contains(&want)) {
            Ok(())
        } else {
            Err(format!(
                "after {after}: the shell did not run `mark {n}`; screen:\n{}",
                rows.join("\n")
            ))
        }
    })
    .await;
}

async fn hostile_chunks_leave_the_client_serving(rt: Runtime) {
    let w = World::boot(rt, &[LABEL]).await;
    w.wait_serves(LABEL, &["screen", "input"]).await;
    put_mark(&w);
    let linked_at = w.session().computer(&w.trapos(LABEL)).unwrap().connected_at;
    still_serving(&w, linked_at, 0, "linking").await;

    let r = exec(&w, "local co = coroutine.create(function() error('inside') end)\nlocal ok, e = coroutine.resume(co)\nerror('again: ' .. tostring(e))", secs(10)).await;
    assert!(format!("{r:?}").contains("inside"), "{r:?}");
    still_serving(&w, linked_at, 1, "an error inside a coroutine").await;

    let r = exec(
        &w,
        "coroutine.wrap(function() error('wrapped') end)()",
        secs(10),
    )
    .await;
    assert!(format!("{r:?}").contains("wrapped"), "{r:?}");
    still_serving(&w, linked_at, 2, "an error through coroutine.wrap").await;

    let deadline = rt.patience(secs(1));
    let r = exec(&w, "while true do coroutine.yield() end", deadline).await;
    assert!(matches!(r, Err(RequestError::Timeout { .. })), "{r:?}");
    still_serving(&w, linked_at, 3, "a chunk that yields forever").await;

    let r = exec(&w, "while true do os.pullEventRaw() end", deadline).await;
    assert!(matches!(r, Err(RequestError::Timeout { .. })), "{r:?}");
    still_serving(&w, linked_at, 4, "a chunk that pulls and drops every event").await;

    let r = exec(
        &w,
        "for i = 1, 20000 do print(i, string.rep('x', 40)) end return 'done'",
        rt.patience(secs(30)),
    )
    .await;
    assert_eq!(r.unwrap()["returns"][0]["value"], "done");
    still_serving(&w, linked_at, 5, "a chunk that floods output").await;

    let r = exec(
        &w,
        "os.pullEvent = function() error('hijacked') end os.queueEvent = nil \
         print = nil write = nil textutils = nil sleep = nil return 1",
        secs(10),
    )
    .await;
    assert!(r.is_ok(), "{r:?}");
    still_serving(&w, linked_at, 6, "a chunk that redefines globals").await;
    let v = exec(
        &w,
        "print('still printing') return type(textutils), type(os.queueEvent)",
        secs(10),
    )
    .await
    .unwrap();
    assert_eq!(
        v["returns"][0]["value"], "table",
        "globals leaked into the next chunk: {v}"
    );
    assert_eq!(
        v["returns"][1]["value"], "function",
        "a chunk's os.queueEvent = nil leaked into the next chunk: {v}"
    );
    assert!(
        v["output"]
            .as_str()
            .unwrap_or_default()
            .contains("still printing"),
        "{v}"
    );
}

on_both_runtimes!(hostile_chunks_leave_the_client_serving);

/// Unmounts the small file system when the test ends, however it ends (lazily: the computer
/// may still hold files open until its process is reaped).
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Moves the CraftOS-PC computer onto a 2 MB tmpfs (its files copied over while it is off) and
/// boots it again: CraftOS-PC does not limit a computer's space. Needs root (CAP_SYS_ADMIN),
/// which CI has; elsewhere the test fails saying so rather than passing without a full disk.
async fn onto_a_small_disk(w: &mut World) -> Mounted {
    w.kill9(LABEL);
    let files = w.files(LABEL);
    let saved = tempfile::tempdir().unwrap();
    let cp = |from: &std::path::Path, to: &std::path::Path| {
        let ok = std::process::Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", from.display()))
            .arg(to)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cp {} {}", from.display(), to.display());
    };
    cp(&files, saved.path());
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(&files)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        mounted,
        "mounting a 2 MB tmpfs for the full disk needs root (CAP_SYS_ADMIN)"
    );
    let mount = Mounted(files.clone());
    cp(saved.path(), &files);
    w.wait_offline(LABEL, secs(30)).await;
    match &mut w.computer_mut(LABEL).machine {
        world::Machine::Craft(c) => c.restart(),
        _ => unreachable!("only CraftOS-PC needs a small disk"),
    }
    w.wait_linked(LABEL, w.runtime.link_timeout()).await;
    mount
}

/// Writing `keep.txt` through the client.
async fn write_keep(w: &World) -> Value {
    w.session()
        .request(
            &w.trapos(LABEL),
            RequestSpec::new(
                trapdesk::protocol::Kind::WriteFile,
                json!({"path": "keep.txt", "content": "bmV3IGNvbnRlbnQsIGxvbmdlcg==", "encoding": "base64"}),
            )
            .timeout(Some(secs(20))),
            Origin::Person,
        )
        .await
        .unwrap()
}

/// A chunk fills the disk, a write-file on the full disk fails cleanly and leaves the old file
/// whole, and once the disk is freed the client writes again. The emulator holds a default
/// computer's 1,000,000 bytes as CC: Tweaked counts them ("Out of space" from the write);
/// CraftOS-PC runs on a small disk of its own.
async fn a_full_disk_leaves_the_client_serving(rt: Runtime) {
    let mut w = World::boot(rt, &[LABEL]).await;
    let _mount = match rt {
        Runtime::CraftOs => Some(onto_a_small_disk(&mut w).await),
        Runtime::Emulator => None,
    };
    w.wait_serves(LABEL, &["screen", "input"]).await;
    let files = w.files(LABEL);
    put_mark(&w);
    let linked_at = w.session().computer(&w.trapos(LABEL)).unwrap().connected_at;
    std::fs::write(files.join("keep.txt"), "old content").unwrap();

    let v = exec(
        &w,
        "local h = fs.open('fill', 'w') local ok, err = pcall(function() for i = 1, 4096 do h.write(string.rep('z', 1024)) h.flush() end end) pcall(h.close) return ok, tostring(err), fs.getSize('fill')",
        rt.patience(secs(30)),
    )
    .await
    .unwrap();
    let filled = v["returns"][2]["value"].as_u64().unwrap_or(0);
    eprintln!(
        "{}: fill: ok={} err={} size={filled}",
        rt.name(),
        v["returns"][0]["value"],
        v["returns"][1]["value"]
    );
    // The emulator holds 1,000,000 bytes, CraftOS-PC's tmpfs 2 MiB.
    assert!(filled < 2 * 1024 * 1024, "the disk never filled: {v}");
    still_serving(&w, linked_at, 1, "a chunk that fills the disk").await;

    // While it is full: a write fails cleanly and the old file stays whole. CraftOS-PC
    // drops what does not fit without an error; the client checks the size written
    // (before it did: `ok` with an empty file in place of the old one).
    let r = write_keep(&w).await;
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap_or_default()
            .contains("Out of space"),
        "{r}"
    );
    let kept = std::fs::read_to_string(files.join("keep.txt")).unwrap();
    assert_eq!(kept, "old content", "torn on a full disk");
    still_serving(&w, linked_at, 2, "a write-file on a full disk").await;

    let v = exec(
        &w,
        "fs.delete('fill') return fs.exists('startup.lua'), fs.exists('trapdesk/servers/sandbox.lua')",
        secs(10),
    )
    .await
    .unwrap();
    assert_eq!(
        (&v["returns"][0]["value"], &v["returns"][1]["value"]),
        (&json!(true), &json!(true)),
        "the client's own files survived: {v}"
    );
    still_serving(&w, linked_at, 3, "the disk freed again").await;
    let r = write_keep(&w).await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(
        std::fs::read_to_string(files.join("keep.txt")).unwrap(),
        "new content, longer"
    );
    if rt == Runtime::CraftOs {
        // Off before the tmpfs is unmounted.
        w.kill9(LABEL);
    }
}

on_both_runtimes!(a_full_disk_leaves_the_client_serving);

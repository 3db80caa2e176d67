//! Lua client resilience on CraftOS-PC (RELIABILITY.md), the cases of `tests/lua_resilience.rs`
//! on a real CC runtime: chunks that error inside a coroutine, yield forever, flood output,
//! pull and drop every event, redefine globals, or fill the disk. After each, the client still
//! serves requests on the same link, and the player's shell still runs what is typed at it
//! (typed with `send-input`, read back with `read-screen`).
//! Skipped (one line) without `CRAFTOS_PC`; see `tests/support/craftos.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "support/craftos.rs"]
mod craftos;
#[path = "support/mcp_fake.rs"]
mod fake;
mod support;

use std::time::{Duration, Instant, SystemTime};

use craftos::Fleet;
use fake::{data, text};
use serde_json::{Value, json};
use trapdesk::session::{Origin, RequestError, RequestSpec, Session};

const WHO: &str = "1:player";

async fn exec(session: &Session, code: &str, timeout_ms: u64) -> Result<Value, RequestError> {
    session
        .request(
            WHO,
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
                .timeout(Some(Duration::from_millis(timeout_ms))),
            Origin::Person,
        )
        .await
}

/// The client still answers, on the same link, and the player's shell runs a command typed at
/// it: `set markN` prints `markN is nil` on the screen.
async fn still_serving(f: &Fleet, linked_at: SystemTime, n: u32, after: &str) {
    let s = &f.host.session;
    let v = exec(s, "return 6 * 7", 20_000)
        .await
        .unwrap_or_else(|e| panic!("after {after}: {e}\nscreen:\n{}", f.computers[0].screen()));
    assert_eq!(v["returns"][0]["value"], 42, "after {after}: {v}");
    let c = s.computer(WHO).unwrap();
    assert!(c.online, "after {after}");
    assert_eq!(
        c.connected_at, linked_at,
        "after {after}: the link was replaced"
    );
    let mark = format!("mark{n}");
    let r = f
        .call(
            "send-input",
            json!({"traposId": WHO, "text": format!("set {mark}"), "keys": ["enter"]}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "after {after}: {}", text(&r));
    let want = format!("{mark} is nil");
    let start = Instant::now();
    loop {
        let r = f.call("read-screen", json!({"traposId": WHO})).await;
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
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "after {after}: the shell did not run `set {mark}`; screen:\n{}",
            rows.join("\n")
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_chunks_leave_the_client_serving_and_the_shell_working_on_craftos() {
    let test = "hostile_chunks_leave_the_client_serving_and_the_shell_working_on_craftos";
    let Some(f) = Fleet::boot(test, &["player"]).await else {
        return;
    };
    // The screen server links a moment after exec-lua.
    let start = Instant::now();
    while !f
        .host
        .session
        .computer(WHO)
        .is_some_and(|c| c.serves.iter().any(|s| s == "screen"))
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never served screen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = f.host.session.clone();
    let linked_at = s.computer(WHO).unwrap().connected_at;
    still_serving(&f, linked_at, 0, "linking").await;

    let r = exec(&s, "local co = coroutine.create(function() error('inside') end)\nlocal ok, e = coroutine.resume(co)\nerror('again: ' .. tostring(e))", 10_000).await;
    assert!(format!("{r:?}").contains("inside"), "{r:?}");
    still_serving(&f, linked_at, 1, "an error inside a coroutine").await;

    let r = exec(
        &s,
        "coroutine.wrap(function() error('wrapped') end)()",
        10_000,
    )
    .await;
    assert!(format!("{r:?}").contains("wrapped"), "{r:?}");
    still_serving(&f, linked_at, 2, "an error through coroutine.wrap").await;

    let r = exec(&s, "while true do coroutine.yield() end", 2_000).await;
    assert!(matches!(r, Err(RequestError::Timeout { .. })), "{r:?}");
    still_serving(&f, linked_at, 3, "a chunk that yields forever").await;

    let r = exec(&s, "while true do os.pullEventRaw() end", 2_000).await;
    assert!(matches!(r, Err(RequestError::Timeout { .. })), "{r:?}");
    still_serving(&f, linked_at, 4, "a chunk that pulls and drops every event").await;

    let r = exec(
        &s,
        "for i = 1, 20000 do print(i, string.rep('x', 40)) end return 'done'",
        60_000,
    )
    .await;
    assert_eq!(r.unwrap()["returns"][0]["value"], "done");
    still_serving(&f, linked_at, 5, "a chunk that floods output").await;

    let r = exec(
        &s,
        "os.pullEvent = function() error('hijacked') end os.queueEvent = nil \
         print = nil write = nil textutils = nil sleep = nil return 1",
        10_000,
    )
    .await;
    assert!(r.is_ok(), "{r:?}");
    still_serving(&f, linked_at, 6, "a chunk that redefines globals").await;
    let v = exec(
        &s,
        "print('still printing') return type(textutils), type(os.queueEvent)",
        10_000,
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

    // Filling the disk: `a_full_disk_leaves_the_client_serving_on_craftos` (CraftOS-PC does
    // not limit a computer's space, so that test gives it a small file system of its own).
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_leaves_the_client_serving_on_craftos() {
    let test = "a_full_disk_leaves_the_client_serving_on_craftos";
    let Some(mut f) = Fleet::boot(test, &["player"]).await else {
        return;
    };
    // The same computer on a 2 MB tmpfs: its files copied over while it is off.
    f.computers[0].kill9();
    let files = f.computers[0].files();
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
    if !mounted {
        eprintln!("{test}: skipped: mounting a 2 MB tmpfs needs root (CAP_SYS_ADMIN)");
        return;
    }
    let _mount = Mounted(files.clone());
    cp(saved.path(), &files);
    let start = Instant::now();
    while f.host.session.computer(WHO).is_some_and(|c| c.online) {
        assert!(start.elapsed() < Duration::from_secs(30), "never unlinked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f.computers[0].restart();
    f.wait_linked(&f.computers[0], craftos::LINK_TIMEOUT).await;
    let start = Instant::now();
    while !f
        .host
        .session
        .computer(WHO)
        .is_some_and(|c| c.serves.iter().any(|s| s == "screen"))
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never served screen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = f.host.session.clone();
    let linked_at = s.computer(WHO).unwrap().connected_at;
    std::fs::write(files.join("keep.txt"), "old content").unwrap();

    let r = exec(
        &s,
        "local h = fs.open('fill', 'w') local ok, err = pcall(function() for i = 1, 4096 do h.write(string.rep('z', 1024)) h.flush() end end) pcall(h.close) return ok, tostring(err), fs.getSize('fill')",
        60_000,
    )
    .await;
    let v = r.unwrap();
    let filled = v["returns"][2]["value"].as_u64().unwrap_or(0);
    eprintln!(
        "fill: ok={} err={} size={filled}",
        v["returns"][0]["value"], v["returns"][1]["value"]
    );
    let df = std::process::Command::new("df")
        .arg("--output=avail")
        .arg(&files)
        .output()
        .unwrap();
    eprintln!(
        "df avail: {}",
        String::from_utf8_lossy(&df.stdout).replace('\n', " ")
    );
    assert!(filled < 2 * 1024 * 1024, "the disk never filled: {v}");
    still_serving(&f, linked_at, 1, "a chunk that fills the disk").await;

    // While it is full: a write fails cleanly and the old file stays whole.
    let w = s
        .request(
            WHO,
            RequestSpec::new(trapdesk::protocol::Kind::WriteFile,
                json!({"path": "keep.txt", "content": "bmV3IGNvbnRlbnQsIGxvbmdlcg==", "encoding": "base64"}),
            )
            .timeout(Some(Duration::from_secs(20))),
            Origin::Person,
        )
        .await;
    // CraftOS-PC drops what does not fit without an error; the client checks the size written
    // (before: `ok` with an empty file in place of the old one).
    let w = w.unwrap();
    assert_eq!(w["ok"], false, "{w}");
    assert!(
        w["error"]
            .as_str()
            .unwrap_or_default()
            .contains("Out of space"),
        "{w}"
    );
    let kept = std::fs::read_to_string(files.join("keep.txt")).unwrap();
    assert_eq!(kept, "old content", "torn on a full disk");
    still_serving(&f, linked_at, 2, "a write-file on a full disk").await;

    let v = exec(
        &s,
        "fs.delete('fill') return fs.exists('startup/trapdesk.lua'), fs.exists('trapdesk/servers/sandbox.lua')",
        10_000,
    )
    .await
    .unwrap();
    assert_eq!(
        (&v["returns"][0]["value"], &v["returns"][1]["value"]),
        (&json!(true), &json!(true)),
        "the client's own files survived: {v}"
    );
    still_serving(&f, linked_at, 3, "the disk freed again").await;
    let w = s
        .request(
            WHO,
            RequestSpec::new(trapdesk::protocol::Kind::WriteFile,
                json!({"path": "keep.txt", "content": "bmV3IGNvbnRlbnQsIGxvbmdlcg==", "encoding": "base64"}),
            )
            .timeout(Some(Duration::from_secs(20))),
            Origin::Person,
        )
        .await
        .unwrap();
    assert_eq!(w["ok"], true, "{w}");
    assert_eq!(
        std::fs::read_to_string(files.join("keep.txt")).unwrap(),
        "new content, longer"
    );
    f.computers[0].kill9();
}

//! Lua client resilience on the emulator (RELIABILITY.md): chunks that error inside a
//! coroutine, yield forever, flood output, pull and drop every event, redefine globals, or fill
//! the disk. After each, the client still serves requests on the same link, and the player's
//! shell still runs what is typed at it (`send-input`, read back with `read-screen`).
//! The same cases on CraftOS-PC: `tests/craftos_resilience.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "support/mcp_fake.rs"]
mod fake;
mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{emulated, start_host};
use trapdesk::session::{Origin, RequestError, RequestSpec, Session};

async fn exec(session: &Session, code: &str, timeout_ms: u64) -> Result<Value, RequestError> {
    session
        .request(
            "50",
            RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
                .timeout(Some(Duration::from_millis(timeout_ms))),
            Origin::Person,
        )
        .await
}

/// The player's shell runs a program typed at it: `mark N` (a program on the computer's disk;
/// the emulator's ROM has few programs) prints `markN ran`.
async fn shell_works(agent: &fake::Client, n: u32, after: &str) {
    let r = fake::call(
        agent,
        "send-input",
        json!({"traposId": "50:", "text": format!("mark {n}"), "keys": ["enter"]}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "after {after}: {}", fake::text(&r));
    let want = format!("mark{n} ran");
    let start = std::time::Instant::now();
    loop {
        let r = fake::call(agent, "read-screen", json!({"traposId": "50:"})).await;
        assert_ne!(r.is_error, Some(true), "after {after}: {}", fake::text(&r));
        let rows: Vec<String> = fake::data(&r)["rows"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|r| r.as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        if rows.iter().any(|r| r.contains(&want)) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "after {after}: the shell did not run `mark {n}`; screen:\n{}",
            rows.join("\n")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The client still answers, and on the same link.
async fn still_serving(session: &Session, linked_at: std::time::SystemTime, after: &str) {
    let v = exec(session, "return 6 * 7", 10_000)
        .await
        .unwrap_or_else(|e| panic!("after {after}: {e}"));
    assert_eq!(v["returns"][0]["value"], 42, "after {after}: {v}");
    let c = session.computer("50:").unwrap();
    assert!(c.online, "after {after}");
    assert_eq!(
        c.connected_at, linked_at,
        "after {after}: the link was replaced"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_chunks_leave_the_client_serving() {
    let host = start_host().await;
    let _computer = emulated(&host, 50, None).await;
    let s = host.session.clone();
    let linked_at = s.computer("50:").unwrap().connected_at;
    support::wait_until(|| {
        s.computer("50:")
            .is_some_and(|c| c.serves.iter().any(|x| x == "input"))
    })
    .await;
    std::fs::write(
        host.dir.path().join("computers/50/mark.lua"),
        "print(\"mark\" .. ... .. \" ran\")\n",
    )
    .unwrap();
    let (agent, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    shell_works(&agent, 1, "linking").await;

    let r = exec(&s, "local co = coroutine.create(function() error('inside') end)\nlocal ok, e = coroutine.resume(co)\nerror('again: ' .. tostring(e))", 10_000).await;
    let shown = format!("{r:?}");
    assert!(shown.contains("inside"), "{shown}");
    still_serving(&s, linked_at, "an error inside a coroutine").await;
    shell_works(&agent, 2, "an error inside a coroutine").await;

    let r = exec(
        &s,
        "coroutine.wrap(function() error('wrapped') end)()",
        10_000,
    )
    .await;
    assert!(format!("{r:?}").contains("wrapped"), "{r:?}");
    still_serving(&s, linked_at, "an error through coroutine.wrap").await;
    shell_works(&agent, 3, "an error through coroutine.wrap").await;

    let r = exec(&s, "while true do coroutine.yield() end", 1_000).await;
    assert!(matches!(r, Err(RequestError::Timeout { .. })), "{r:?}");
    still_serving(&s, linked_at, "a chunk that yields forever").await;
    shell_works(&agent, 4, "a chunk that yields forever").await;

    let r = exec(&s, "while true do os.pullEventRaw() end", 1_000).await;
    assert!(matches!(r, Err(RequestError::Timeout { .. })), "{r:?}");
    still_serving(&s, linked_at, "a chunk that pulls and drops every event").await;
    shell_works(&agent, 5, "a chunk that pulls and drops every event").await;

    let r = exec(
        &s,
        "for i = 1, 20000 do print(i, string.rep('x', 40)) end return 'done'",
        30_000,
    )
    .await;
    assert_eq!(r.unwrap()["returns"][0]["value"], "done");
    still_serving(&s, linked_at, "a chunk that floods output").await;
    shell_works(&agent, 6, "a chunk that floods output").await;

    let r = exec(
        &s,
        "os.pullEvent = function() error('hijacked') end os.queueEvent = nil \
         print = nil write = nil textutils = nil sleep = nil return 1",
        10_000,
    )
    .await;
    assert!(r.is_ok(), "{r:?}");
    still_serving(&s, linked_at, "a chunk that redefines globals").await;
    shell_works(&agent, 7, "a chunk that redefines globals").await;
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

    let r = exec(
        &s,
        "local h = fs.open('fill', 'w') local ok = pcall(function() for i = 1, 100000 do h.write(string.rep('z', 1024)) end end) pcall(h.close) return fs.getFreeSpace('/')",
        30_000,
    )
    .await;
    assert!(r.is_ok(), "{r:?}");
    still_serving(&s, linked_at, "a chunk that fills the disk").await;
    shell_works(&agent, 8, "a chunk that fills the disk").await;
    let v = exec(
        &s,
        "fs.delete('fill') return fs.exists('startup.lua') or fs.exists('startup')",
        10_000,
    )
    .await
    .unwrap();
    assert_eq!(
        v["returns"][0]["value"], true,
        "the client's own files survived: {v}"
    );
}

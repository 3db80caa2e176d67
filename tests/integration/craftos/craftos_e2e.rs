//! The Lua client on a real CC runtime: headless CraftOS-PC computers that install the client
//! with the player's one-liner, driven through the MCP endpoint by an rmcp client. Ignored
//! (with the reason) unless built with `CRAFTOS_PC` naming a CraftOS-PC launcher; see
//! `tests/integration/support/craftos.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake};

use std::time::{Duration, Instant};

use crate::support::world::{Runtime, World};
use base64::Engine as _;
use fake::{data, text};
use serde_json::json;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn exec_lua_returns_errors_and_the_players_prompt() {
    let f = World::boot(Runtime::CraftOs, &["miner"]).await;
    let code = "print('hi from', os.getComputerID()) write('x') return os.getComputerID(), os.getComputerLabel(), {a = 1}, _HOST ~= nil";
    let r = f
        .call("exec-lua", json!({"traposId": "miner", "code": code}))
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&r);
    assert_eq!(d["output"], "hi from\t1\nx");
    assert_eq!(
        d["returns"],
        json!([{"type": "number", "value": 1}, {"type": "string", "value": "miner"},
               {"type": "table", "value": {"a": 1}, "truncated": false},
               {"type": "boolean", "value": true}])
    );
    assert_eq!(d["traposId"], "1:miner");

    // A runtime error keeps the output printed before it.
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "1", "code": "print('before') error('boom')"}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["output"], "before\n");
    assert!(
        data(&r)["error"].as_str().unwrap().contains("exec:1: boom"),
        "{}",
        text(&r)
    );
    // A syntax error names the chunk.
    let r = f
        .call("exec-lua", json!({"traposId": "miner", "code": "return +"}))
        .await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert!(
        data(&r)["error"].as_str().unwrap().contains("exec:1"),
        "{}",
        text(&r)
    );

    // The player still has a shell: the prompt is on the screen and the shell runs commands.
    let c = f.computer("miner").craft();
    c.wait_screen(Duration::from_secs(10), |s| {
        s.lines().any(|l| l == ">" || l.starts_with("> "))
    })
    .await;
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "return multishell ~= nil and multishell.getCount() or 0"}),
        )
        .await;
    // The client runs beside the player's shell in the startup wrapper, not in tabs of its own.
    assert_eq!(data(&r)["returns"][0]["value"], 1, "{}", text(&r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn files_byte_exact_list_and_run_file_with_args() {
    let f = World::boot(Runtime::CraftOs, &["miner"]).await;
    let all: Vec<u8> = (0..=255u8).rev().collect();
    let r = f
        .call(
            "write-file",
            json!({"traposId": "miner", "path": "data/all.bin", "content": B64.encode(&all), "encoding": "base64"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["bytes"], 256);
    // The bytes on the computer's disk are the bytes sent.
    let on_disk = std::fs::read(f.computer("miner").files().join("data/all.bin")).unwrap();
    assert_eq!(on_disk, all);
    let r = f
        .call(
            "read-file",
            json!({"traposId": "miner", "path": "data/all.bin"}),
        )
        .await;
    let d = data(&r);
    assert_eq!(d["encoding"], "base64", "{d}");
    assert_eq!(B64.decode(d["content"].as_str().unwrap()).unwrap(), all);

    let txt = "héllo ☃ — ünïcode\nline two\r\n\ttabbed\n";
    f.call(
        "write-file",
        json!({"traposId": "miner", "path": "notes.txt", "content": txt}),
    )
    .await;
    let r = f
        .call(
            "write-file",
            json!({"traposId": "miner", "path": "notes.txt", "content": "more", "append": true}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let r = f
        .call(
            "read-file",
            json!({"traposId": "miner", "path": "notes.txt"}),
        )
        .await;
    assert_eq!(data(&r)["encoding"], "utf8");
    assert_eq!(data(&r)["content"], format!("{txt}more"));
    assert_eq!(
        std::fs::read(f.computer("miner").files().join("notes.txt")).unwrap(),
        format!("{txt}more").into_bytes()
    );

    let r = f.call("list-files", json!({"traposId": "miner"})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let entries = data(&r)["entries"].as_array().unwrap().clone();
    let find = |n: &str| entries.iter().find(|e| e["name"] == n).cloned();
    assert_eq!(find("data").unwrap()["dir"], true, "{entries:?}");
    assert_eq!(find("trapdesk").unwrap()["dir"], true, "{entries:?}");
    assert_eq!(find("rom").unwrap()["dir"], true, "{entries:?}");
    let r = f
        .call("list-files", json!({"traposId": "miner", "path": "data"}))
        .await;
    assert_eq!(
        data(&r)["entries"],
        json!([{"name": "all.bin", "dir": false, "size": 256}])
    );
    let r = f
        .call(
            "read-file",
            json!({"traposId": "miner", "path": "nope.txt"}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));

    let prog = "print(...)\nprint(arg[0], #arg)\nif arg[1] == 'fail' then error('bad arg') end\nreturn select('#', ...)\n";
    f.call(
        "write-file",
        json!({"traposId": "miner", "path": "programs/p.lua", "content": prog}),
    )
    .await;
    let r = f
        .call(
            "run-file",
            json!({"traposId": "miner", "path": "programs/p.lua", "args": ["a b", "2"]}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["output"], "a b\t2\nprograms/p.lua\t2\n");
    assert_eq!(data(&r)["returns"][0]["value"], 2);
    let r = f
        .call(
            "run-file",
            json!({"traposId": "miner", "path": "programs/p.lua", "args": ["fail"]}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        data(&r)["error"]
            .as_str()
            .unwrap()
            .contains("programs/p.lua:3: bad arg"),
        "{}",
        text(&r)
    );
    assert_eq!(data(&r)["output"], "fail\nprograms/p.lua\t1\n");
}

/// Reads `path` back through `read-file`'s pieces; returns the bytes and how many pieces.
async fn read_back(f: &World, trapos: &str, path: &str) -> (Vec<u8>, usize) {
    let mut got = Vec::new();
    let mut offset = 0u64;
    let mut pieces = 0;
    loop {
        let r = f
            .call(
                "read-file",
                json!({"traposId": trapos, "path": path, "offset": offset}),
            )
            .await;
        assert_eq!(r.is_error, Some(false), "{path}@{offset}: {}", text(&r));
        let d = data(&r);
        assert_eq!(d["offset"], offset, "{d}");
        let content = d["content"].as_str().unwrap();
        match d["encoding"].as_str().unwrap() {
            "base64" => got.extend(B64.decode(content).unwrap()),
            _ => got.extend(content.as_bytes()),
        }
        pieces += 1;
        match d["nextOffset"].as_u64() {
            Some(n) => {
                assert!(n > offset, "{d}");
                offset = n;
            }
            None => return (got, pieces),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn files_up_to_a_megabyte_one_after_another() {
    let f = World::boot(Runtime::CraftOs, &["miner"]).await;
    for (i, size) in [1024usize, 100 * 1024, 500 * 1024, 1024 * 1024]
        .into_iter()
        .enumerate()
    {
        // Every byte value, in an order that is not a short cycle.
        let bytes: Vec<u8> = (0..size)
            .map(|k| ((k * 7919 + k / 251 + i) % 256) as u8)
            .collect();
        let path = format!("big/f{size}.bin");
        let r = f
            .call(
                "write-file",
                json!({"traposId": "miner", "path": path, "content": B64.encode(&bytes), "encoding": "base64"}),
            )
            .await;
        assert_eq!(r.is_error, Some(false), "write {size}: {}", text(&r));
        assert_eq!(data(&r)["bytes"], size, "{}", text(&r));
        let on_disk = std::fs::read(f.computer("miner").files().join(&path)).unwrap();
        assert!(on_disk == bytes, "{size} bytes on disk differ");
        let (back, pieces) = read_back(&f, "miner", &path).await;
        assert_eq!(back.len(), size);
        assert!(back == bytes, "{size} bytes read back differ");
        eprintln!("{size} bytes: read back in {pieces} pieces");
    }
    // The computer is still responsive and the player's shell is still there.
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "return multishell.getCount()"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
}

/// `trapdesk put` of a file of several pieces on CraftOS-PC: the pieces are appended in place
/// to the hidden part file (mode "ab", which CraftOS-PC's fs must honour byte-exact), then moved
/// over the old file; nothing of the put is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn a_put_of_several_pieces_over_an_old_file() {
    let f = World::boot(Runtime::CraftOs, &["miner"]).await;
    let disk = f.computer("miner").files();
    let local = tempfile::tempdir().unwrap();
    for (i, size) in [300_000usize, 140_000].into_iter().enumerate() {
        let bytes: Vec<u8> = (0..size)
            .map(|k| ((k * 7919 + k / 251 + i) % 256) as u8)
            .collect();
        let file = local.path().join(format!("f{i}.bin"));
        std::fs::write(&file, &bytes).unwrap();
        let out = tokio::task::spawn_blocking({
            let url = f.host.mcp_url();
            let data = f.host.settings.data_dir.clone();
            move || {
                std::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"))
                    .args(["put", "--connect", &url])
                    .env("TRAPDESK_DATA_DIR", &data)
                    .arg(&file)
                    .arg("miner:/data/big.bin")
                    .env_remove("TRAPDESK_TOKEN")
                    .env_remove("TRAPDESK_MCP_TOKEN")
                    .output()
                    .unwrap()
            }
        })
        .await
        .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "put {size}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let on_disk = std::fs::read(disk.join("data/big.bin")).unwrap();
        assert!(on_disk == bytes, "{size} bytes on disk differ");
        let left: Vec<String> = std::fs::read_dir(disk.join("data"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "big.bin")
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        let journal = disk.join("trapdesk/journal");
        let entries = std::fs::read_dir(&journal).map_or(0, Iterator::count);
        assert_eq!(entries, 0, "journal entries left in {}", journal.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn a_megabyte_returned_and_printed() {
    let f = World::boot(Runtime::CraftOs, &["miner"]).await;
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "return string.rep('x', 1048576)"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["ok"], true, "{}", text(&r));
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "local l = string.rep('y', 63) for i = 1, 16384 do print(l) end return 'printed'"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(data(&r)["returns"][0]["value"], "printed", "{}", text(&r));
    // Every line reached the host's output ring.
    let lines = f
        .host
        .session
        .output_since("1:miner", 0)
        .iter()
        .filter(|i| {
            matches!(&i.entry, trapdesk::session::OutputEntry::Line { text, .. } if text.len() == 63)
        })
        .count();
    assert!(lines > 0, "no output lines reached the host");
    let r = f
        .call("exec-lua", json!({"traposId": "miner", "code": "return 1"}))
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
}

fn tool_result(r: rmcp::model::ServerResult) -> rmcp::model::CallToolResult {
    match r {
        rmcp::model::ServerResult::CallToolResult(r) => r,
        other => panic!("not a tool result: {other:?}"),
    }
}

/// Waits until the host has sent a request of `kind`; returns its id.
async fn sent_request(f: &World, kind: &str) -> String {
    support::wait_some(
        Duration::from_secs(10),
        || {
            f.host
                .session
                .pending()
                .into_iter()
                .find(|p| p.sent && p.kind.as_str() == kind)
                .map(|p| p.request_id)
        },
        || format!("no {kind} sent"),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn timeouts_live_output_cancel_two_chunks_and_one_that_never_yields() {
    let mut f = World::boot(Runtime::CraftOs, &["miner"]).await;
    // A deadline stops the chunk; the computer answers the next call at once.
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "print('zz') sleep(30)", "timeoutMs": 400}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "timeout", "{}", text(&r));
    let started = Instant::now();
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "return 'awake'"}),
        )
        .await;
    assert_eq!(data(&r)["returns"][0]["value"], "awake", "{}", text(&r));
    assert!(started.elapsed() < Duration::from_secs(2));
    // The timed-out chunk was stopped on the computer, not left sleeping.
    support::wait_for(
        Duration::from_secs(5),
        || f.host.session.pending().is_empty(),
        || format!("still pending: {:?}", f.host.session.pending()),
    )
    .await;

    // Live output arrives as progress while the chunk still runs.
    while f.progress.try_recv().is_ok() {}
    let handle = fake::start_call(
        &f.client,
        "exec-lua",
        json!({"traposId": "miner", "code": "for i=1,3 do print(i) sleep(0.3) end return 'done'"}),
    )
    .await;
    let one = tokio::time::timeout(Duration::from_secs(5), f.progress.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(one.message.as_deref(), Some("1\n"));
    assert_eq!(f.host.session.pending().len(), 1);
    let r = tool_result(handle.await_response().await.unwrap());
    assert_eq!(data(&r)["output"], "1\n2\n3\n", "{}", text(&r));

    // The client cancels its own call: the chunk is cancelled on the computer.
    let handle = fake::start_call(
        &f.client,
        "exec-lua",
        json!({"traposId": "miner", "code": "print('waiting') sleep(30)"}),
    )
    .await;
    sent_request(&f, "exec-lua").await;
    f.client
        .notify_cancelled(rmcp::model::CancelledNotificationParam::new(
            Some(handle.id.clone()),
            Some("stop".into()),
        ))
        .await
        .unwrap();
    support::wait_for(
        Duration::from_secs(3),
        || f.host.session.pending().is_empty(),
        || format!("still pending: {:?}", f.host.session.pending()),
    )
    .await;
    drop(handle);

    // cancel-request stops a running call, keeping its output.
    let busy = tokio::spawn({
        let peer = f.client.peer().clone();
        async move {
            peer.call_tool(
                rmcp::model::CallToolRequestParams::new("exec-lua").with_arguments(
                    json!({"traposId": "miner", "code": "print('long job') sleep(30)"})
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
            )
            .await
            .unwrap()
        }
    });
    let rid = sent_request(&f, "exec-lua").await;
    // Cancelled once its output has reached the host, which the answer must keep.
    let miner = f.trapos("miner");
    support::wait_for(
        Duration::from_secs(10),
        || {
            f.host.session.output_since(&miner, 0).iter().any(|i| {
                matches!(&i.entry, trapdesk::session::OutputEntry::Line { text, .. } if text.starts_with("long job"))
            })
        },
        || "the chunk's output never reached the host".to_owned(),
    )
    .await;
    let r = f.call("cancel-request", json!({"requestId": rid})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let other = tokio::time::timeout(Duration::from_secs(5), busy)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        data(&other)["error"]["code"],
        "cancelled",
        "{}",
        text(&other)
    );
    assert_eq!(data(&other)["output"], "long job\n");

    // Two chunks at once: each sleeps a second, both finish after about one.
    let started = Instant::now();
    let (a, b) = tokio::join!(
        f.call(
            "exec-lua",
            json!({"traposId": "miner", "code": "sleep(1) return 'a'"})
        ),
        f.call(
            "exec-lua",
            json!({"traposId": "miner", "code": "sleep(1) return 'b'"})
        )
    );
    assert_eq!(data(&a)["returns"][0]["value"], "a", "{}", text(&a));
    assert_eq!(data(&b)["returns"][0]["value"], "b", "{}", text(&b));
    assert!(
        started.elapsed() < Duration::from_millis(1900),
        "{:?}",
        started.elapsed()
    );

    // A chunk that never yields: CC's watchdog ends it (7 s here, as in a world), the error
    // comes back as the chunk's, and the computer serves the next call.
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "while true do end", "timeoutMs": 30000}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("Too long without yielding"),
        "{}",
        text(&r)
    );
    let r = f
        .call("exec-lua", json!({"traposId": "miner", "code": "return 2"}))
        .await;
    assert_eq!(data(&r)["returns"][0]["value"], 2, "{}", text(&r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn ten_computers_linked_at_once_each_doing_work() {
    let labels: Vec<String> = (1..=10).map(|i| format!("c{i}")).collect();
    let names: Vec<&str> = labels.iter().map(String::as_str).collect();
    let f = World::boot(Runtime::CraftOs, &names).await;
    let r = f.call("probe-computers", json!({"ping": true})).await;
    let list = data(&r)["computers"].as_array().unwrap().clone();
    assert_eq!(list.len(), 10, "{}", text(&r));
    assert!(list.iter().all(|c| c["ping"]["ok"] == true), "{list:?}");
    let work = f.computers.iter().map(|c| {
        let f = &f;
        async move {
            let body: Vec<u8> = (0..20_000u32).map(|k| (k * 31 + c.id as u32) as u8).collect();
            let r = f
                .call(
                    "write-file",
                    json!({"traposId": c.trapos_id, "path": "work.bin", "content": B64.encode(&body), "encoding": "base64"}),
                )
                .await;
            assert_eq!(r.is_error, Some(false), "{}", text(&r));
            let r = f
                .call(
                    "exec-lua",
                    json!({"traposId": c.trapos_id, "code": "local h = fs.open('work.bin', 'rb') local s = h.readAll() h.close() local n = 0 for i = 1, #s do n = n + s:byte(i) end sleep(0.5) return os.getComputerID(), n"}),
                )
                .await;
            assert_eq!(r.is_error, Some(false), "{}", text(&r));
            let sum: u64 = body.iter().map(|&b| u64::from(b)).sum();
            assert_eq!(data(&r)["returns"][0]["value"], c.id);
            assert_eq!(data(&r)["returns"][1]["value"], sum);
            let (back, _) = read_back(f, &c.trapos_id, "work.bin").await;
            assert!(back == body, "{} read back differs", c.trapos_id);
        }
    });
    futures_util::future::join_all(work).await;
}

//! The real Lua client, running in emulated computers, answers every request type of
//! `docs/protocol.md` through the real gateway: capture, descriptors, errors, files, live
//! output, cancellation, concurrency. What CraftOS-PC must show the same way (a reboot
//! through the installer's startup) runs on both runtimes, through [`on_both_runtimes!`].
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use support::mcp_fake as fake;
use support::world::{Runtime, World, on_both_runtimes};
use support::{emulated, start_host};
use trapdesk::session::{Origin, RequestError, RequestSpec};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The text of every output line in a computer's scrollback, oldest first.
fn output_lines(host: &support::TestHost, trapos_id: &str) -> Vec<String> {
    host.session
        .output_since(trapos_id, 0)
        .into_iter()
        .filter_map(|i| match i.entry {
            trapdesk::session::OutputEntry::Line { text, .. } => Some(text),
            _ => None,
        })
        .collect()
}

fn lua(code: &str) -> RequestSpec {
    RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
}

async fn exec(host: &support::TestHost, target: &str, code: &str) -> Value {
    host.session
        .request(target, lua(code), Origin::Person)
        .await
        .unwrap()
}

async fn call(host: &support::TestHost, kind: &str, payload: Value) -> Value {
    host.session
        .request(
            "1",
            RequestSpec::new(kind.parse().unwrap(), payload),
            Origin::Person,
        )
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_and_write_are_captured_and_returns_described() {
    let host = start_host().await;
    let _c = emulated(&host, 1, Some("miner")).await;
    let r = exec(
        &host,
        "miner",
        "print('a', 1, nil) write('b') write('c\\n') return 1, nil, 'x', true, 2.5",
    )
    .await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["output"], "a\t1\tnil\nbc\n");
    assert_eq!(r["n"], 5);
    assert_eq!(
        r["returns"],
        json!([{"type":"number","value":1},{"type":"nil"},{"type":"string","value":"x"},
               {"type":"boolean","value":true},{"type":"number","value":2.5}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_descriptor_kind() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let r = exec(
        &host,
        "1",
        r#"local cyc = {} cyc.self = cyc
           local deep = {} local t = deep for i = 1, 12 do t.next = {} t = t.next end
           local big = {} for i = 1, 1500 do big[i] = i end
           return {1, 2, 3}, {a = 1, b = {c = "d"}}, print, 1/0, -1/0, 0/0, cyc, deep, big,
                  coroutine.create(function() end), {[true] = 1, [1.5] = 2}"#,
    )
    .await;
    assert_eq!(r["ok"], true, "{r}");
    let ret = r["returns"].as_array().unwrap();
    assert_eq!(r["n"], 11);
    assert_eq!(
        ret[0],
        json!({"type":"table","value":[1,2,3],"truncated":false})
    );
    assert_eq!(ret[1]["value"], json!({"a":1,"b":{"c":"d"}}));
    assert_eq!(ret[2]["type"], "function");
    assert!(ret[2]["repr"].as_str().unwrap().starts_with("function: "));
    assert_eq!(ret[3], json!({"type":"number","repr":"inf"}));
    assert_eq!(ret[4], json!({"type":"number","repr":"-inf"}));
    assert_eq!(ret[5]["type"], "number");
    assert!(ret[5]["repr"].as_str().unwrap().contains("nan"));
    assert_eq!(ret[6]["value"]["self"], json!({"type":"cycle"}));
    assert_eq!(ret[7]["truncated"], true);
    assert_eq!(ret[8]["truncated"], true);
    assert!(ret[8]["value"].as_array().unwrap().len() <= 1000);
    assert_eq!(ret[9]["type"], "thread");
    assert_eq!(ret[10]["value"], json!({"true": 1, "1.5": 2}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_and_syntax_errors_keep_the_output() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let r = exec(&host, "1", "print('before') error('boom')").await;
    assert_eq!(r["ok"], false);
    // Errors name the chunk `exec` whoever sent it (console or agent).
    assert!(
        r["error"].as_str().unwrap().starts_with("exec:1: boom"),
        "{r}"
    );
    assert_eq!(r["output"], "before\n");
    assert_eq!(r["n"], 0);
    let r = exec(&host, "1", "return +").await;
    assert_eq!(r["ok"], false);
    assert!(r["error"].as_str().unwrap().starts_with("exec:1:"), "{r}");
    // The computer is still fine.
    assert_eq!(exec(&host, "1", "return 2").await["returns"][0]["value"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_file_gets_args_and_errors_name_the_path() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let prog = "print(...)\nprint(arg[0], arg[1], #arg)\nerror('bad ' .. select('#', ...))\n";
    let w = call(
        &host,
        "write-file",
        json!({"path": "programs/x.lua", "content": prog, "encoding": "text"}),
    )
    .await;
    assert_eq!(w["ok"], true, "{w}");
    let r = call(
        &host,
        "run-file",
        json!({"path": "programs/x.lua", "args": ["3", "deep shaft"]}),
    )
    .await;
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["output"], "3\tdeep shaft\nprograms/x.lua\t3\t2\n");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("programs/x.lua:3: bad 2"),
        "{r}"
    );
    let missing = call(&host, "run-file", json!({"path": "nope.lua"})).await;
    assert_eq!(missing["ok"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_byte_exact() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let all: Vec<u8> = (0..=255u8).collect();
    let w = call(
        &host,
        "write-file",
        json!({"path": "bin/all", "content": B64.encode(&all), "encoding": "base64"}),
    )
    .await;
    assert_eq!(
        (w["ok"].as_bool(), w["bytes"].as_u64()),
        (Some(true), Some(256)),
        "{w}"
    );
    let r = call(&host, "read-file", json!({"path": "bin/all"})).await;
    assert_eq!(r["encoding"], "base64");
    assert_eq!(B64.decode(r["content"].as_str().unwrap()).unwrap(), all);
    let text = "héllo ☃\n";
    call(
        &host,
        "write-file",
        json!({"path": "t.txt", "content": text, "encoding": "text"}),
    )
    .await;
    call(
        &host,
        "write-file",
        json!({"path": "t.txt", "content": "more", "encoding": "text", "append": true}),
    )
    .await;
    let r = call(&host, "read-file", json!({"path": "t.txt"})).await;
    assert_eq!(
        B64.decode(r["content"].as_str().unwrap()).unwrap(),
        format!("{text}more").as_bytes()
    );
    let l = call(&host, "list-files", json!({"path": "/"})).await;
    let names: Vec<&str> = l["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"bin") && names.contains(&"t.txt"), "{l}");
    let missing = call(&host, "read-file", json!({"path": "nope"})).await;
    assert_eq!(missing["ok"], false);
    assert!(missing["error"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_write_leaves_the_old_file() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    call(
        &host,
        "write-file",
        json!({"path": "keep.txt", "content": "old", "encoding": "text"}),
    )
    .await;
    // Make the disk fail halfway through the next write, then write through the real server.
    let r = exec(
        &host,
        "1",
        r#"local real = fs.open
           _G.__real_open = real
           fs.open = function(path, mode)
             local h, e = real(path, mode)
             if h and mode:sub(1, 1) == "w" then
               local n = 0
               local w = h.write
               h.write = function(...) n = n + 1 if n > 0 then error("disk full", 0) end return w(...) end
             end
             return h, e
           end"#,
    )
    .await;
    assert_eq!(r["ok"], true, "{r}");
    let w = call(
        &host,
        "write-file",
        json!({"path": "keep.txt", "content": "new content", "encoding": "text"}),
    )
    .await;
    exec(&host, "1", "fs.open = _G.__real_open").await;
    assert_eq!(w["ok"], false, "{w}");
    let r = call(&host, "read-file", json!({"path": "keep.txt"})).await;
    assert_eq!(B64.decode(r["content"].as_str().unwrap()).unwrap(), b"old");
    let l = call(&host, "list-files", json!({"path": "/"})).await;
    let names: Vec<&str> = l["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        names.iter().filter(|n| n.contains("keep")).count() == 1,
        "temp file left: {names:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_streams_while_the_chunk_runs() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let mut t = host
        .session
        .start(
            "1",
            lua("print('first') sleep(0.5) print('second')").streaming(),
            Origin::Person,
        )
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), t.output().unwrap().recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.text, "first\n");
    // The chunk is still running when its first line arrives.
    assert_eq!(host.session.pending().len(), 1);
    let r = t.wait().await.unwrap();
    assert_eq!(r["output"], "first\nsecond\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_and_cancel_stop_a_sleeping_chunk_and_the_computer_stays_usable() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let r = host
        .session
        .request(
            "1",
            lua("print('zz') sleep(30)").timeout(Some(Duration::from_millis(500))),
            Origin::Person,
        )
        .await;
    assert!(matches!(r, Err(RequestError::Timeout { .. })), "{r:?}");
    let t = host
        .session
        .start("1", lua("print('so far') sleep(30)"), Origin::Person)
        .unwrap();
    support::wait_until(|| output_lines(&host, "1:").iter().any(|l| l == "so far")).await;
    host.session.cancel(&t.id).unwrap();
    let r = tokio::time::timeout(Duration::from_secs(5), t.wait())
        .await
        .unwrap();
    assert_eq!(
        r,
        Err(RequestError::Cancelled {
            output: Some("so far\n".into())
        })
    );
    assert_eq!(
        exec(&host, "1", "return 'alive'").await["returns"][0]["value"],
        "alive"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_chunks_run_at_once_on_one_computer() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let a = host
        .session
        .start(
            "1",
            lua("print('a1') sleep(0.5) print('a2')"),
            Origin::Person,
        )
        .unwrap();
    let b = host
        .session
        .start(
            "1",
            lua("print('b1') sleep(0.5) print('b2')"),
            Origin::Person,
        )
        .unwrap();
    let (ra, rb) = tokio::join!(a.wait(), b.wait());
    assert_eq!(ra.unwrap()["ok"], true);
    assert_eq!(rb.unwrap()["ok"], true);
    let lines = output_lines(&host, "1:");
    // Both started before either finished: the chunks overlapped.
    let pos = |s: &str| lines.iter().position(|l| l == s).unwrap();
    assert!(pos("b1") < pos("a2") && pos("a1") < pos("b2"), "{lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_is_answered_by_the_daemon_and_unknown_types_at_once() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let p = call(&host, "ping", json!({})).await;
    assert_eq!(p["pong"], true);
    // The host sends only kinds it knows; computer-output is one the client does not serve
    // (the host answers it from what it holds and never sends it on its own).
    let r = host
        .session
        .request(
            "1",
            RequestSpec::new(trapdesk::protocol::Kind::ComputerOutput, json!({})),
            Origin::Person,
        )
        .await;
    assert!(
        matches!(r, Err(RequestError::Remote { ref code, .. }) if code == "unknown_type"),
        "{r:?}"
    );
}

/// A reboot is answered before the computer goes, and the computer links again through the
/// startup the installer left (on CraftOS-PC the player's one-liner ran it, and deleted
/// itself; on the emulator `install_client` did the same), with the client's files in place.
async fn reboot_relinks_through_what_the_installer_left(rt: Runtime) {
    let f = World::boot(rt, &["miner"]).await;
    let c = f.computer("miner");
    let wrapper = String::from_utf8_lossy(&std::fs::read(c.files().join("startup.lua")).unwrap())
        .into_owned();
    assert!(
        wrapper.starts_with("-- trapdesk-startup-wrapper"),
        "{wrapper}"
    );
    assert!(!c.files().join("startup/trapdesk.lua").exists());
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "os.reboot()", "timeoutMs": 5000}),
        )
        .await;
    // Answered as a reboot before the computer goes (apis/run.lua), not "disconnected before
    // answering".
    assert_eq!(r.is_error, Some(false), "{}", fake::text(&r));
    assert_eq!(fake::data(&r)["power"], "reboot", "{}", fake::text(&r));
    // Down, then back.
    // The unlink may pass too fast to be seen: wait a while for it, then for the relink.
    support::holds_within(Duration::from_secs(5), || !f.linked("miner")).await;
    f.wait_linked("miner", Duration::from_secs(60)).await;
    let r = f
        .call(
            "exec-lua",
            json!({"traposId": "miner", "code": "return os.clock() < 30, fs.exists('/trapdesk/servers/sandbox.lua')"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", fake::text(&r));
    assert_eq!(
        fake::data(&r)["returns"][0]["value"],
        true,
        "{}",
        fake::text(&r)
    );
    assert_eq!(
        fake::data(&r)["returns"][1]["value"],
        true,
        "{}",
        fake::text(&r)
    );
    let r = f
        .session()
        .request(&f.trapos("miner"), lua("return 1"), Origin::Person)
        .await
        .unwrap();
    assert_eq!(r["returns"][0]["value"], 1);
}

on_both_runtimes!(reboot_relinks_through_what_the_installer_left);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_survive_both_ways() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    let r = exec(&host, "1", "print('é☃') return #'é☃', string.char(200)").await;
    assert_eq!(r["output"], "é☃\n");
    assert_eq!(r["returns"][0]["value"], 5);
    // A lone byte that is not UTF-8 keeps its value: the string's bytes in base64.
    assert_eq!(
        r["returns"][1],
        json!({"type": "string", "encoding": "base64", "value": "yA=="})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_that_never_yields_fails_without_taking_the_server_down() {
    use trapdesk::emu::{Computer, ComputerSpec, install_client};
    let host = start_host().await;
    let root = host.dir.path().join("busy");
    std::fs::create_dir_all(&root).unwrap();
    install_client(&root, &host.gateway_url(), support::SECRET).unwrap();
    let mut spec = ComputerSpec::new(4, None, root);
    // CC's limit is 7 s; a short one keeps the test fast and means the same thing.
    spec.yield_timeout = Duration::from_millis(300);
    let computer = Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap();
    support::wait_until(|| {
        host.session
            .computer("4:")
            .is_some_and(|c| c.serves.iter().any(|s| s == "exec-lua"))
    })
    .await;
    let r = exec(&host, "4", "print('spinning') while true do end").await;
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("Too long without yielding"),
        "{r}"
    );
    assert_eq!(r["output"], "spinning\n");
    assert_eq!(
        exec(&host, "4", "return 'still here'").await["returns"][0]["value"],
        "still here"
    );
    computer.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_over_the_computers_frame_limit_travel_as_fragments_both_ways() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    // 300 KB of source (over CC's 131072-byte frame limit) in, and the same string back out.
    let big = "é-x".repeat(75_000);
    let code = format!("local s = [[{big}]] return #s, s");
    let r = exec(&host, "1", &code).await;
    assert_eq!(
        r["ok"],
        true,
        "{}",
        &r.to_string()[..200.min(r.to_string().len())]
    );
    assert_eq!(r["returns"][0]["value"], big.len());
    assert_eq!(r["returns"][1]["value"].as_str(), Some(big.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_output_arrives_whole_and_before_the_answer() {
    let host = start_host().await;
    let _c = emulated(&host, 1, None).await;
    // 8,000 lines of 51 bytes in one go: more than one flush of the daemon's frame budget.
    let r = exec(
        &host,
        "1",
        "for i = 1, 8000 do print(('%05d'):format(i) .. string.rep('x', 45)) end",
    )
    .await;
    assert_eq!(r["ok"], true);
    assert_eq!(
        r["output_truncated"], true,
        "the Result keeps 64 KiB; live output has the rest"
    );
    let lines = output_lines(&host, "1:");
    assert_eq!(lines.len(), 8000);
    assert!(
        lines
            .iter()
            .enumerate()
            .all(|(i, l)| l.starts_with(&format!("{:05}", i + 1)))
    );
}

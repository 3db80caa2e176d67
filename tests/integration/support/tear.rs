//! Shared by the file-tearing tests (RELIABILITY.md, guarantee 3): two distinct contents of a
//! megabyte, the verdict "old, new or torn" on what a disk holds, and a Lua hook that stops a
//! write at its N-th step so the test can kill the computer exactly there.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::support::SECRET;
use crate::support::mcp_fake as fake;

/// The file every tearing test writes, at the computer's root.
pub const TARGET: &str = "torn.bin";

/// Where the hook notes the step it stopped at (at the computer's root).
pub const MARK: &str = "tear-mark";

/// A megabyte whose every byte depends on its position and on `seed`, so that any mix of two
/// contents (a prefix of one and the rest of the other, a half-written file) differs from both.
pub fn content(seed: u8) -> Vec<u8> {
    (0..1_048_576u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 ^ seed.wrapping_mul(97))
        .collect()
}

pub fn old() -> Vec<u8> {
    content(1)
}

pub fn new() -> Vec<u8> {
    content(2)
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// What a file holds after an interrupted write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Old,
    New,
}

/// The verdict on `root/TARGET` after a write of [`new`] over [`old`] was interrupted, and the
/// check that nothing of the write is left behind (no side files, an empty journal). Panics on
/// a torn, missing or mixed file, naming `when`.
pub fn verdict(root: &Path, when: &str) -> Outcome {
    let outcome = content_verdict(root, when);
    for side in [".torn.bin.trapdesk-new", ".torn.bin.trapdesk-old"] {
        assert!(!root.join(side).exists(), "{when}: {side} was left behind");
    }
    let journal = root.join("trapdesk/journal");
    let left: Vec<_> = std::fs::read_dir(&journal)
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{when}: journal entries left: {left:?}");
    outcome
}

/// Whether nothing of a write is left beside `root/TARGET`: no side file, an empty journal.
fn clean(root: &Path) -> bool {
    let sides = [".torn.bin.trapdesk-new", ".torn.bin.trapdesk-old"];
    !sides.iter().any(|s| root.join(s).exists())
        && std::fs::read_dir(root.join("trapdesk/journal")).map_or(true, |mut d| d.next().is_none())
}

/// The verdict on the content alone (a write may still be under way beside it).
pub fn content_verdict(root: &Path, when: &str) -> Outcome {
    let path = root.join(TARGET);
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{when}: {} is missing: {e}", path.display()));
    if bytes == old() {
        Outcome::Old
    } else if bytes == new() {
        Outcome::New
    } else {
        let same_old = bytes
            .iter()
            .zip(old())
            .take_while(|(a, b)| **a == *b)
            .count();
        let same_new = bytes
            .iter()
            .zip(new())
            .take_while(|(a, b)| **a == *b)
            .count();
        panic!(
            "{when}: {TARGET} is TORN: {} bytes, first {same_old} equal to the old content, \
             first {same_new} equal to the new",
            bytes.len()
        );
    }
}

/// The step the hook stopped at, once it has (`MARK` written at the computer's root).
pub fn mark(root: &Path) -> Option<String> {
    let s = std::fs::read_to_string(root.join(MARK)).ok()?;
    // Written in one call, but the test may read it half-way.
    s.ends_with('\n').then(|| s.trim_end().to_owned())
}

/// A chunk for `exec-lua` that wraps `fs.open` (its handle's `write` and `close`), `fs.move`,
/// `fs.delete` and `fs.makeDir` so that every call touching [`TARGET`] or the client's journal
/// is a step before and after (and a write a step half-way, after flushing its first half);
/// at step `stop_at` it writes [`MARK`] and waits forever, so the test kills the computer with
/// the write stopped exactly there. `fs` is the computer's shared table, so the client's own
/// `writeFile` calls the wrapped functions; a reboot (the kill) undoes it all.
pub fn hook(stop_at: u32) -> String {
    format!(
        r#"
local K = {stop_at}
local raw = {{ open = fs.open, move = fs.move, delete = fs.delete, makeDir = fs.makeDir }}
local n = 0
local function watched(p)
    p = tostring(p)
    return p:find("{TARGET}", 1, true) or p:find("journal", 1, true)
end
local function point(what)
    n = n + 1
    if n == K then
        local h = raw.open("{MARK}", "w")
        h.write(n .. " " .. what .. "\n")
        h.close()
        while true do os.pullEventRaw("tear_never") end
    end
end
local function wrap(name)
    local f = raw[name]
    fs[name] = function(a, b)
        if not (watched(a) or watched(b)) then return f(a, b) end
        point("before " .. name .. " " .. tostring(a) .. (b and (" " .. tostring(b)) or ""))
        local r = table.pack(f(a, b))
        point("after " .. name .. " " .. tostring(a) .. (b and (" " .. tostring(b)) or ""))
        return table.unpack(r, 1, r.n)
    end
end
wrap("move") wrap("delete") wrap("makeDir")
fs.open = function(p, m)
    if not watched(p) or not tostring(m):find("[wa]") then return raw.open(p, m) end
    point("before open " .. p)
    local h, e = raw.open(p, m)
    if not h then return h, e end
    point("after open " .. p)
    local proxy = setmetatable({{}}, {{ __index = h }})
    proxy.write = function(s)
        if type(s) == "string" and #s > 1 then
            local half = math.floor(#s / 2)
            h.write(s:sub(1, half))
            if h.flush then h.flush() end
            point("mid write " .. p)
            h.write(s:sub(half + 1))
        else
            h.write(s)
        end
        point("after write " .. p)
    end
    proxy.close = function()
        h.close()
        point("after close " .. p)
    end
    return proxy
end
return "hooked"
"#
    )
}

/// One line per interruption point for the test's output: `step -> outcome`.
pub fn report(name: &str, rows: &[(String, Outcome)]) {
    let old = rows.iter().filter(|r| r.1 == Outcome::Old).count();
    println!(
        "{name}: {} interruption points, old={old} new={} torn=0",
        rows.len(),
        rows.len() - old
    );
    for (step, o) in rows {
        println!("  {step:<70} -> {o:?}");
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The real host binary on fixed ports, so that a restarted one is found again.
pub fn host_process(dir: &Path, gw: u16, mcp: u16) -> tokio::process::Child {
    tokio::process::Command::new(crate::support::trapdesk_exe())
        .args(["--mcp-only", "--data-dir"])
        .arg(dir)
        // In the environment, not the arguments: every user's `ps` shows those.
        .env("SANDBOX_PASSWORD", SECRET)
        .args(["--gateway-bind", &format!("127.0.0.1:{gw}")])
        .args(["--mcp-bind", &format!("127.0.0.1:{mcp}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// An MCP client of the host on `mcp`, once the computer labelled `torn` answers through it.
pub async fn agent_when_linked(mcp: u16, host_dir: &Path) -> fake::Client {
    agent_when_answering(mcp, host_dir, "torn").await
}

/// An MCP client of the host on `mcp`, once the computer `computer` answers through it.
pub async fn agent_when_answering(mcp: u16, host_dir: &Path, computer: &str) -> fake::Client {
    crate::support::wait_ok(Duration::from_secs(90), async || {
        let url = format!("http://127.0.0.1:{mcp}/mcp");
        let connected = tokio::time::timeout(Duration::from_secs(5), async {
            use rmcp::ServiceExt as _;
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            let agent = fake::Agent {
                name: "tear-agent".into(),
                progress: tx,
            };
            // The host writes its local token before it listens.
            let token = trapdesk::trust::agents::read_local(host_dir)
                .ok()
                .flatten()?;
            agent.serve(fake::transport(&url, &token)).await.ok()
        })
        .await;
        if let Ok(Some(client)) = connected
            && exec_mcp(&client, computer, "return 1").await
        {
            return Ok(client);
        }
        Err("the computer never answered through the host".to_owned())
    })
    .await
}

async fn exec_mcp(agent: &fake::Client, computer: &str, code: &str) -> bool {
    let Value::Object(args) = json!({"traposId": computer, "code": code}) else {
        unreachable!()
    };
    let r = agent
        .call_tool(rmcp::model::CallToolRequestParams::new("exec-lua").with_arguments(args))
        .await;
    r.is_ok_and(|r| r.is_error != Some(true))
}

/// Stops the host process (SIGKILL and SIGTERM in turn) `rounds` times at times spread over an
/// MCP agent's megabyte `write-file` to the computer labelled `torn` (files at `root`), starts
/// it again on the same ports each time, and judges the file once the computer answers again
/// (the content alone: the computer may still be finishing the write) and after a whole
/// write's time more (nothing left beside it either).
pub async fn host_stops(
    mut host: tokio::process::Child,
    root: &Path,
    host_dir: &Path,
    gw: u16,
    mcp: u16,
    rounds: u32,
) -> Vec<(String, Outcome)> {
    let mut agent = agent_when_linked(mcp, host_dir).await;
    // How long the megabyte write takes through MCP.
    let args =
        json!({"traposId": "torn", "path": TARGET, "content": b64(&new()), "encoding": "base64"});
    std::fs::write(root.join(TARGET), old()).unwrap();
    let t0 = Instant::now();
    let r = fake::call(&agent, "write-file", args.clone()).await;
    assert_ne!(r.is_error, Some(true), "{}", fake::text(&r));
    let whole = t0.elapsed();
    let mut rows = Vec::new();
    for i in 0..rounds {
        std::fs::write(root.join(TARGET), old()).unwrap();
        let signal = if i % 2 == 0 { "KILL" } else { "TERM" };
        // Spread from the start of the call to a little past its answer.
        let at = whole.mul_f64(1.5 * (f64::from(i) + 0.5) / f64::from(rounds));
        let a = args.clone();
        let call = tokio::spawn(async move {
            let Value::Object(a) = a else { unreachable!() };
            agent
                .call_tool(rmcp::model::CallToolRequestParams::new("write-file").with_arguments(a))
                .await
        });
        // The moment of the signal is what this measures: a fixed point into the write.
        tokio::time::sleep(at).await;
        let pid = host.id().unwrap().to_string();
        assert!(
            Command::new("kill")
                .args([&format!("-{signal}"), &pid])
                .status()
                .unwrap()
                .success()
        );
        let _ = tokio::time::timeout(Duration::from_secs(15), host.wait())
            .await
            .expect("the host did not stop");
        let _ = tokio::time::timeout(Duration::from_secs(15), call).await;
        host = host_process(host_dir, gw, mcp);
        agent = agent_when_linked(mcp, host_dir).await;
        let first = content_verdict(root, &format!("host SIG{signal} {at:?} into the write"));
        // The computer may still be writing what it had received, and nothing says when it
        // has finished or given up: the write's own length passes first.
        tokio::time::sleep(whole + Duration::from_millis(500)).await;
        assert!(exec_mcp(&agent, "torn", "return 1").await);
        // A write the computer was still finishing when the host came back may take longer
        // than `whole` on a loaded machine (CraftOS-PC most): wait for its side files to go,
        // up to a bound, before the verdict (which fails on any left behind).
        crate::support::holds_within(whole * 3 + Duration::from_secs(5), || clean(root)).await;
        let o = verdict(
            root,
            &format!("host SIG{signal} {at:?} into the write, later"),
        );
        rows.push((
            format!("SIG{signal} {at:?} of {whole:?} (first look {first:?})"),
            o,
        ));
    }
    let _ = host.kill().await;
    rows
}

//! The emulated computer keeps CC's execution model: events and timers in order, coroutines
//! with filters, the 256-event queue, "Too long without yielding", a sandboxed disk, settings
//! that persist, and reboots that rerun startup.
#![allow(clippy::panic)] // test helpers fail the test by panicking

use std::time::Duration;

use trapdesk::emu::{Computer, ComputerSpec, EventArg};

fn boot(dir: &tempfile::TempDir) -> Computer {
    let mut spec = ComputerSpec::new(7, None, dir.path().to_path_buf());
    spec.yield_timeout = Duration::from_millis(300);
    Computer::spawn(spec, tokio::runtime::Handle::current()).expect("spawn")
}

async fn run(c: &Computer, code: &str) -> String {
    match tokio::time::timeout(Duration::from_secs(10), c.run_lua(code)).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => panic!("lua failed: {e}\n--- code:\n{code}"),
        Err(_) => panic!("timed out:\n{code}"),
    }
}

/// CC: Tweaked's `http.websocketAsync` (rom/apis/http/http.lua) returns `false, err` for a
/// URL it refuses at once, and queues `websocket_failure` as well; `true` when it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_async_returns_like_cc() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let out = run(
        &c,
        r##"
        local ok, err = http.websocketAsync("nope://x")
        print(ok, type(err))
        local ev, url, why = os.pullEvent("websocket_failure")
        print(url, why == err)
        print(http.websocketAsync("ws://127.0.0.1:1/x"))
        "##,
    )
    .await;
    assert_eq!(out, "false\tstring\nnope://x\ttrue\ntrue\tnil\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_timers_and_identity() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let out = run(
        &c,
        r##"
        print(os.getComputerID(), select("#", os.getComputerLabel()), os.version(), _HOST ~= nil)
        os.queueEvent("a", 1, "x")
        os.queueEvent("b", true)
        local e, n, s = os.pullEvent("a")
        print(e, n, s)
        local t1 = os.startTimer(0.1)
        local t0 = os.startTimer(0)
        local first = select(2, os.pullEvent("timer"))
        print(first == t0)
        local c0 = os.clock()
        sleep(0.2)
        print(os.clock() - c0 >= 0.15)
        os.setComputerLabel("miner")
        print(os.getComputerLabel(), os.epoch("utc") > 1.6e12, type(os.time()), type(os.day()))
        local t, d = os.time("utc"), os.day("utc")
        print(t >= 0 and t < 24, d > 19000, os.epoch() >= 0, (pcall(os.epoch, "martian")))
    "##,
    )
    .await;
    assert_eq!(
        out,
        "7\t0\tCraftOS 1.9\ttrue\na\t1\tx\ntrue\ntrue\nminer\ttrue\tnumber\tnumber\ntrue\ttrue\ttrue\tfalse\n"
    );
    c.shutdown();
    c.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_with_sleeping_coroutines() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let out = run(
        &c,
        r##"
        local log = {}
        parallel.waitForAll(
            -- Margins of 250 ms or more: the order must not depend on how
            -- busy the test machine is (50 ms margins flaked under load).
            function() sleep(0.6) log[#log + 1] = "slow" end,
            function() sleep(0.05) log[#log + 1] = "fast" end,
            function() local _, v = os.pullEvent("poke") log[#log + 1] = "poke" .. v end,
            function() sleep(0.3) os.queueEvent("poke", 1) end
        )
        print(table.concat(log, ","))
        print(parallel.waitForAny(function() sleep(1) end, function() sleep(0.05) end))
    "##,
    )
    .await;
    assert_eq!(out, "fast,poke1,slow\n2\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_drops_past_256() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let out = run(
        &c,
        r##"
        for i = 1, 300 do os.queueEvent("e", i) end
        local n, last = 0, nil
        for _ = 1, 256 do
            local ev, i = os.pullEvent()
            if ev == "e" then n, last = n + 1, i end
        end
        os.queueEvent("end")
        while true do
            local ev = os.pullEvent()
            if ev == "e" then n = n + 1 elseif ev == "end" then break end
        end
        print(n, last)
    "##,
    )
    .await;
    assert_eq!(out, "256\t256\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yield_timeout_is_catchable() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let out = run(
        &c,
        r##"
        local ok, err = pcall(function() while true do end end)
        print(ok, err)
        sleep(0)
        print("alive")
    "##,
    )
    .await;
    // The message carries the interrupted code's position, as on CC: Tweaked.
    assert_eq!(out, "false\trun_lua:2: Too long without yielding\nalive\n");
    assert_eq!(run(&c, "print(1 + 1)").await, "2\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignoring_the_timeout_shuts_down() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let r = c
        .run_lua("while true do pcall(function() while true do end end) end")
        .await;
    assert!(r.is_err());
    tokio::time::timeout(Duration::from_secs(5), c.wait_stopped())
        .await
        .expect("stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_is_a_sandbox() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let out = run(&c, r##"
        print(fs.open("../escape", "w"))
        print(fs.open("/x", "r"))
        local h = fs.open("/a/b/c.txt", "w") h.writeLine("hello") h.write(42) h.close()
        print(fs.exists("/a/b"), fs.isDir("/a"), fs.getSize("/a/b/c.txt"))
        h = fs.open("/a/b/c.txt", "r") print(h.readLine(), h.readAll()) h.close()
        h = fs.open("/a/d", "w") h.close()
        print(pcall(fs.move, "/a/d", "/a/b/c.txt"))
        print(table.concat(fs.list("/"), ","), table.concat(fs.list("a"), ","))
        print(fs.combine("a/b", "../c"), fs.getName("/a/b.lua"), fs.getDir("/a/b/c"), fs.isReadOnly("/rom"))
        local all = {}
        for i = 0, 255 do all[#all + 1] = string.char(i) end
        local bytes = table.concat(all)
        h = fs.open("bin", "wb") h.write(bytes) h.write(65) h.close()
        h = fs.open("bin", "rb") local back = h.readAll() h.close()
        print(back == bytes .. "A", #back)
        h = fs.open("bin", "rb") print(h.read(), h.read(), h.read(3) == "\2\3\4") h.close()
        fs.delete("/a") print(fs.exists("/a"))
        print(pcall(fs.delete, "../x"))
        print(dofile ~= nil, loadfile("/nope"))
    "##).await;
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("nil\t") && lines[0].contains("Invalid Path"),
        "{out}"
    );
    assert_eq!(lines[1], "nil\t/x: No such file");
    assert_eq!(lines[2], "true\ttrue\t8");
    assert_eq!(lines[3], "hello\t42");
    // CC: Tweaked's FileSystem.move words its errors without a path.
    assert_eq!(lines[4], "false\tFile exists");
    assert_eq!(lines[5], "a,rom\tb,d");
    assert_eq!(lines[6], "a/c\tb.lua\ta/b\ttrue");
    assert_eq!(lines[7], "true\t257");
    assert_eq!(lines[8], "0\t1\ttrue");
    assert_eq!(lines[9], "false");
    assert!(lines[10].starts_with("false\t"), "{out}");
    assert_eq!(lines[11], "true\tnil\t/nope: No such file");
    assert!(!dir.path().parent().expect("parent").join("escape").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_persist_and_startup_reruns_on_reboot() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(dir.path().join("startup")).expect("mkdir");
    std::fs::write(
        dir.path().join("startup/count.lua"),
        "local n = settings.get('boots', 0) + 1 settings.set('boots', n) settings.save() print('boot ' .. n)",
    )
    .expect("write");
    let c = boot(&dir);
    let out = run(&c, "print(settings.get('boots'))").await;
    assert_eq!(out, "1\n");
    c.reboot();
    // Until the second boot's startup has run (a chunk run while the computer reboots fails).
    let n: f64 = crate::support::wait_ok(Duration::from_secs(5), async || {
        let out = c.run_lua("print(settings.get('boots'))").await;
        let n = out.map_or(0.0, |o| o.trim().parse().unwrap_or(0.0));
        if n >= 2.0 {
            Ok(n)
        } else {
            Err(format!("boots is {n}"))
        }
    })
    .await;
    assert_eq!(n, 2.0);
    assert!(
        c.screen_text().iter().any(|l| l.starts_with("boot 2")),
        "{:?}",
        c.screen_text()
    );
    let out = run(
        &c,
        "print(textutils.serialize({1, 'two', x = true}, {compact = true}))",
    )
    .await;
    assert_eq!(out, "{1,\"two\",x=true,}\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_reaches_read() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let pending = {
        let c = c.clone();
        let code = crate::support::lua_mark("in-read") + "local l = read() print('got ' .. l)";
        tokio::spawn(async move { c.run_lua(&code).await })
    };
    crate::support::wait_mark(dir.path(), "in-read").await;
    c.queue_event("char", vec![EventArg::Str(b"h".to_vec())]);
    c.type_text("i\n");
    let out = pending.await.expect("join").expect("lua");
    assert!(out.ends_with("got hi\n"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_quirks() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = boot(&dir);
    let out = run(&c, r##"
        print(textutils.serializeJSON({ "\233", n = 0/0 == 0/0 }))
        print(textutils.serializeJSON({ "caf\195\169" }))
        local v = textutils.unserializeJSON('{"a":[1,2,null],"b":"\\u00e9","c":[]}')
        print(#v.a, #v.b, v.c == textutils.empty_json_array, v.a[3])
        print((textutils.unserializeJSON("{")), select("#", textutils.unserializeJSON("{")))
        print(utf8.char(233, 0x20AC) == "\195\169\226\130\172", utf8.len("\195\169x"), table.move({1,2,3}, 1, 3, 2)[3])
        print(collectgarbage, os.exit, string.dump, io.popen, textutils.formatTime(13.5, false))
    "##).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "{\"n\":false}");
    assert_eq!(lines[1], "[\"caf\\u00C3\\u00A9\"]");
    assert_eq!(lines[2], "2\t2\ttrue\tnil");
    assert_eq!(lines[3], "nil\t2");
    assert_eq!(lines[4], "true\t2\t2");
    assert_eq!(lines[5], "nil\tnil\tnil\tnil\t1:30 PM");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_runs_programs_and_errors_come_back() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(dir.path().join("prog")).expect("mkdir");
    std::fs::write(
        dir.path().join("prog/lib.lua"),
        "return { twice = function(x) return 2 * x end }",
    )
    .expect("w");
    std::fs::write(
        dir.path().join("prog/main.lua"),
        "local lib = require('lib') print(shell.getRunningProgram(), lib.twice(...))",
    )
    .expect("w");
    std::fs::write(dir.path().join("prog/bad.lua"), "\nerror('boom')").expect("w");
    let c = boot(&dir);
    let out = run(&c, "print(shell.run('prog/main', 21)) print(shell.run('/prog/bad.lua')) print(shell.run('nope'))").await;
    assert_eq!(
        out,
        "prog/main.lua\t42\ntrue\n/prog/bad.lua:2: boom\nfalse\nNo such program\nfalse\n"
    );
    match c.run_lua("local x = nil + 1").await {
        Err(trapdesk::emu::EmuError::Lua(msg)) => assert!(msg.contains("run_lua:1:"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert!(c.run_lua("this is not lua").await.is_err());
    assert_eq!(
        run(&c, "print(load('return 1 +', 'x'))").await,
        "nil\t[string \"x\"]:1: unexpected symbol near <eof>\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_client_writes_settings_the_bios_loads() {
    let dir = tempfile::tempdir().expect("tmp");
    trapdesk::emu::install_client(dir.path(), "ws://127.0.0.1:1/gateway", "s\"ecret")
        .expect("install");
    let c = boot(&dir);
    let out = run(
        &c,
        "print(settings.get('sandbox.url'), settings.get('sandbox.password'))",
    )
    .await;
    assert_eq!(out, "ws://127.0.0.1:1/gateway\ts\"ecret\n");
    c.shutdown();
    tokio::time::timeout(Duration::from_secs(2), c.wait_stopped())
        .await
        .expect("off");
    assert!(c.is_stopped());
}

//! The emulator enforces what a default CC: Tweaked world enforces (docs/emulator.md, "What the
//! emulator enforces"): one test per rule, Lua run directly on an emulated computer through its
//! Rust API, with real sockets where sockets matter.
#![allow(clippy::panic)] // test helpers fail the test by panicking

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use trapdesk::emu::{Computer, ComputerSpec, Floppy, PowerState};

fn spawn(spec: ComputerSpec) -> Computer {
    Computer::spawn(spec, tokio::runtime::Handle::current()).expect("spawn")
}

fn spec(dir: &tempfile::TempDir) -> ComputerSpec {
    ComputerSpec::new(5, Some("world".into()), dir.path().to_path_buf())
}

async fn run(c: &Computer, code: &str) -> String {
    match tokio::time::timeout(Duration::from_secs(20), c.run_lua(code)).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => panic!("lua failed: {e}\n--- code:\n{code}"),
        Err(_) => panic!("timed out:\n{code}"),
    }
}

/// A websocket server: "send N" answers with a text frame of N `x`, "sendbin N" with a binary
/// frame of N bytes 0xFF, "burst N" with N frames "1" .. "N" at once; anything else is echoed
/// (a binary frame as a binary frame).
async fn ws_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async_with_config(
                    tcp,
                    Some(
                        tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
                            .max_message_size(None)
                            .max_frame_size(None),
                    ),
                )
                .await
                else {
                    return;
                };
                while let Some(Ok(msg)) = ws.next().await {
                    let text = match &msg {
                        Message::Text(t) => t.as_str().to_owned(),
                        Message::Binary(_) => String::new(),
                        _ => continue,
                    };
                    let replies: Vec<Message> = if let Some(n) = text.strip_prefix("sendbin ") {
                        let n: usize = n.parse().expect("n");
                        vec![Message::Binary(vec![0xFF; n].into())]
                    } else if let Some(n) = text.strip_prefix("send ") {
                        let n: usize = n.parse().expect("n");
                        vec![Message::Text("x".repeat(n).into())]
                    } else if let Some(n) = text.strip_prefix("burst ") {
                        let n: usize = n.parse().expect("n");
                        (1..=n)
                            .map(|i| Message::Text(i.to_string().into()))
                            .collect()
                    } else {
                        vec![msg.clone()]
                    };
                    for r in replies {
                        if ws.feed(r).await.is_err() {
                            return;
                        }
                    }
                    if ws.flush().await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// `max_websocket_message` as the http rule sets it: a send above it raises "Message is too
/// large" (`WebsocketHandle.send`), a frame above it closes the socket with that reason and no
/// code (`WebsocketHandler.fail`); 0 is no limit either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_websocket_message_limit_is_the_rules() {
    let port = ws_server().await;
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir).with_max_websocket_message(1000));
    let code = format!(
        r##"
        local url = "ws://127.0.0.1:{port}/"
        local ws = assert(http.websocket(url))
        print(pcall(ws.send, string.rep("y", 1001)))
        print(pcall(ws.send, string.rep("y", 1001), true))
        ws.send(string.rep("y", 1000))
        print(#ws.receive(5))
        ws.send("send 1000")
        print(#ws.receive(5))
        ws.send("send 1001")
        local _, u, reason, code = os.pullEvent("websocket_closed")
        print(u == url, reason, code)
        print(pcall(ws.send, "after"))
        "##
    );
    assert_eq!(
        run(&c, &code).await,
        "false\tMessage is too large\nfalse\tMessage is too large\n1000\n1000\ntrue\tMessage is too large\tnil\nfalse\tattempt to use a closed file\n"
    );

    // The default is CC's default rule's 131072.
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir));
    let code = format!(
        r##"
        local ws = assert(http.websocket("ws://127.0.0.1:{port}/"))
        print(pcall(ws.send, string.rep("y", 131073)))
        ws.send("send 131072")
        print(#ws.receive(5))
        ws.send("send 131073")
        print(select(3, os.pullEvent("websocket_closed")))
        "##
    );
    assert_eq!(
        run(&c, &code).await,
        "false\tMessage is too large\n131072\nMessage is too large\tnil\n"
    );

    // 0: no limit.
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir).with_max_websocket_message(0));
    let code = format!(
        r##"
        local ws = assert(http.websocket("ws://127.0.0.1:{port}/"))
        ws.send(string.rep("y", 300000))
        print(#ws.receive(5))
        ws.send("send 400000")
        print(#ws.receive(5))
        ws.close()
        "##
    );
    assert_eq!(run(&c, &code).await, "300000\n400000\n");
}

/// Binary frames as CC: Tweaked gives them (since 1.109.0, "websocket messages now use raw
/// bytes"): a received one is its raw bytes with `websocket_message`'s third value `true`
/// (`WebsocketHandler.channelRead0`), a binary send writes the string's bytes as they are
/// (`WebsocketHandle.send`), and the rule's limit holds for them exactly as for text: a send
/// above it raises, an incoming frame above it closes the socket with no code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_frames_are_raw_bytes_under_the_same_limit() {
    let port = ws_server().await;
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir).with_max_websocket_message(1000));
    let code = format!(
        r##"
        local ws = assert(http.websocket("ws://127.0.0.1:{port}/"))
        local all = {{}}
        for i = 0, 255 do all[#all + 1] = string.char(i) end
        all = table.concat(all)
        ws.send(all, true)
        local _, _, msg, binary = os.pullEvent("websocket_message")
        print(msg == all, binary)
        ws.send(("\255"):rep(1000), true)
        _, _, msg, binary = os.pullEvent("websocket_message")
        print(#msg, msg == ("\255"):rep(1000), binary)
        print(pcall(ws.send, ("\255"):rep(1001), true))
        ws.send("sendbin 1000")
        _, _, msg, binary = os.pullEvent("websocket_message")
        print(#msg, binary)
        ws.send("sendbin 1001")
        print(select(3, os.pullEvent("websocket_closed")))
        "##
    );
    assert_eq!(
        run(&c, &code).await,
        "true\ttrue\n1000\ttrue\ttrue\nfalse\tMessage is too large\n1000\ttrue\nMessage is too large\tnil\n"
    );
}

/// Busy for `ms` without yielding, so that events pile up in the queue meanwhile.
fn busy(ms: u32) -> String {
    format!("local t = os.epoch('utc') + {ms} while os.epoch('utc') < t do end")
}

/// CC: Tweaked's `ComputerExecutor` keeps at most 256 queued events and drops the rest
/// silently: socket messages and timers as much as `os.queueEvent`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_holds_256_events_of_every_kind() {
    let port = ws_server().await;
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir));
    let code = format!(
        r##"
        -- Counts events of a kind until the queue is drained: a marker is queued once the
        -- first event is taken (a full queue would drop it before).
        local function drain(kind)
            local n, last, marked = 0, nil, false
            while true do
                local ev, a, b = os.pullEvent()
                if ev == "drained" then return n, last end
                if ev == kind then n = n + 1 last = kind == "timer" and a or b end
                if not marked then os.queueEvent("drained") marked = true end
            end
        end
        for i = 1, 300 do os.queueEvent("q", "", i) end
        print("queueEvent", drain("q"))

        local first
        for i = 1, 300 do
            local id = os.startTimer(0)
            first = first or id
        end
        {busy}
        local n, last = drain("timer")
        print("timer", n, last - first + 1)

        local ws = assert(http.websocket("ws://127.0.0.1:{port}/"))
        ws.send("burst 300")
        {busy}
        print("websocket_message", drain("websocket_message"))
        ws.close()
        "##,
        busy = busy(1000)
    );
    assert_eq!(
        run(&c, &code).await,
        "queueEvent\t256\t256\ntimer\t256\t256\nwebsocket_message\t256\t256\n"
    );
}

/// A websocket server that accepts one connection and reports how it ended: `true` when the
/// client sent a close frame, `false` when the connection just ended.
async fn ws_close_watcher() -> (u16, tokio::sync::oneshot::Receiver<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
            return;
        };
        let mut close_frame = false;
        while let Some(Ok(msg)) = ws.next().await {
            if let Message::Close(_) = msg {
                close_frame = true;
            }
        }
        let _ = tx.send(close_frame);
    });
    (port, rx)
}

/// CC: Tweaked's watchdog: "Too long without yielding" after the soft timeout (7 s), and a
/// program that goes on for the hard one (1.5 s more) gets the computer shut down, with CC's
/// failure on the screen and its sockets closed; it stays off until turned on, and then boots
/// as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_abort_shuts_the_computer_down_until_turned_on() {
    let (port, closed_with_frame) = ws_close_watcher().await;
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(
        dir.path().join("startup.lua"),
        "local h = fs.open('/boots', 'a') h.writeLine('boot') h.close()",
    )
    .expect("startup");
    let soft = Duration::from_millis(400);
    let hard = Duration::from_millis(300);
    let c = spawn(spec(&dir).with_timeouts(soft, hard));
    assert_eq!(run(&c, "print(fs.exists('/boots'))").await, "true\n");
    assert_eq!(c.power_state(), PowerState::On);

    let started = std::time::Instant::now();
    let code = format!(
        r##"
        local ws = assert(http.websocket("ws://127.0.0.1:{port}/"))
        while true do pcall(function() while true do end end) end
        "##
    );
    let r = tokio::time::timeout(Duration::from_secs(10), c.run_lua(&code))
        .await
        .expect("answered");
    assert!(
        matches!(&r, Err(trapdesk::emu::EmuError::Lua(m)) if m == "Too long without yielding"),
        "{r:?}"
    );
    tokio::time::timeout(Duration::from_secs(5), c.wait_stopped())
        .await
        .expect("stopped");
    assert!(started.elapsed() >= soft + hard, "{:?}", started.elapsed());
    assert_eq!(c.power_state(), PowerState::Aborted);
    assert_eq!(
        c.screen_text()[..4]
            .iter()
            .map(|l| l.trim_end())
            .collect::<Vec<_>>(),
        [
            "Error running computer",
            "Too long without yielding",
            "ComputerCraft may be installed incorrectly",
            ""
        ]
    );
    // The socket was dropped, not closed with a close frame.
    let frame = tokio::time::timeout(Duration::from_secs(5), closed_with_frame)
        .await
        .expect("socket closed")
        .expect("watcher");
    assert!(!frame, "the socket got a close frame");

    // Off it stays: no code runs, events are dropped. The quiet period is the test: the state
    // must hold through it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(c.power_state(), PowerState::Aborted);
    assert!(matches!(
        c.run_lua("print(1)").await,
        Err(trapdesk::emu::EmuError::Stopped)
    ));
    // Turning on a computer that is on does nothing; this one boots, and runs startup again.
    c.turn_on();
    assert_eq!(
        run(
            &c,
            "local h = fs.open('/boots', 'r') local t = h.readAll() h.close() print(#t)"
        )
        .await,
        "10\n"
    );
    assert_eq!(c.power_state(), PowerState::On);
    c.turn_on();
    assert_eq!(run(&c, "print(os.getComputerLabel())").await, "world\n");

    // os.shutdown turns it off the ordinary way, and it stays off too.
    let _ = c.run_lua("os.shutdown()").await;
    tokio::time::timeout(Duration::from_secs(5), c.wait_stopped())
        .await
        .expect("stopped");
    assert_eq!(c.power_state(), PowerState::Off);
}

/// `computer_space_limit`: 1,000,000 bytes, counted as CC: Tweaked's `WritableFileMount`:
/// every file and folder costs at least 500 bytes, a write past the quota raises "Out of space"
/// and writes nothing, an open or a `makeDir` that does not fit fails with the path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_disk_quota_is_counted_as_cc_counts_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir));
    let code = r##"
        for _, name in ipairs(fs.list("/")) do if name ~= "rom" then fs.delete(name) end end
        local free = fs.getFreeSpace("/")
        print(fs.getCapacity("/"), free)
        local function spent() local f = fs.getFreeSpace("/") local d = free - f free = f return d end
        local h = fs.open("/a.txt", "w")
        print("empty file", spent())
        h.write(string.rep("x", 500))
        print("500 bytes", spent())
        h.write("y")
        print("501 bytes", spent())
        h.close()
        fs.makeDir("/d/e/f")
        print("three folders", spent())
        h = fs.open("/d/e/f/g.txt", "w") h.close()
        print("a file", spent())
        fs.delete("/d")
        print("deleted", spent())
        h = fs.open("/a.txt", "w") h.close()
        print("emptied", spent())
        h = fs.open("/a.txt", "a") h.write(string.rep("z", 1000)) h.close()
        print("appended", spent())
        fs.copy("/a.txt", "/b.txt")
        print("copied", spent())
        fs.move("/b.txt", "/c/b.txt")
        print("moved", spent())

        -- Fill the disk to the byte.
        h = fs.open("/big", "wb")
        print(pcall(h.write, string.rep("b", free + 1)))
        print("refused", spent(), fs.getSize("/big"))
        -- The first 500 bytes of a file were paid for when it was made.
        h.write(string.rep("b", free + 500))
        print("full", fs.getFreeSpace("/"), fs.getSize("/big"))
        print(pcall(h.write, "!"))
        h.close()
        print(fs.open("/new", "w"))
        print(pcall(fs.makeDir, "/nd"))
        print(pcall(fs.copy, "/a.txt", "/a2.txt"))
        fs.delete("/big")
        print("freed", fs.getFreeSpace("/"))
    "##;
    let out = run(&c, code).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "1000000\t1000000",
            "empty file\t500",
            "500 bytes\t0",
            "501 bytes\t1",
            "three folders\t1500",
            "a file\t500",
            "deleted\t-2000",
            "emptied\t-1",
            "appended\t500",
            "copied\t1000",
            "moved\t500",
            "false\tOut of space",
            "refused\t500\t0",
            "full\t0\t997500",
            "false\tOut of space",
            "nil\t/new: Out of space",
            "false\t/nd: Out of space",
            "false\t/a2.txt: Out of space",
            "freed\t997500",
        ],
        "{out}"
    );

    // A computer whose quota the server raised holds more.
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir).with_disk_space(3_000_000));
    let out = run(
        &c,
        r##"
        print(fs.getCapacity("/"))
        local h = fs.open("/two", "wb") h.write(string.rep("2", 2000000)) h.close()
        print(fs.getSize("/two"))
        "##,
    )
    .await;
    assert_eq!(out, "3000000\n2000000\n");
}

/// `os.clock` counts server ticks, 0.05 s each (`OSAPI.clock`), and timers are counted in
/// ticks: `Math.round(time / 0.05)` of them (`OSAPI.startTimer`), firing at a tick. On a server
/// that falls behind both stretch; `os.epoch("utc")` does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_and_timers_count_server_ticks() {
    let code = r##"
        local function ticks(d) return math.floor(d / 0.05 + 0.5) end
        local whole = true
        for _ = 1, 5 do
            local c = os.clock()
            if ticks(c) * 0.05 ~= c then whole = false end
            sleep(0)
        end
        print("whole ticks", whole)
        -- 0.06 s is 1 tick (rounded to the nearest), 0.08 s 2, 0.01 s 0 (the next tick).
        for _, t in ipairs({ 0.06, 0.08, 0.01 }) do
            sleep(0)
            local c = os.clock()
            local id = os.startTimer(t)
            repeat local _, got = os.pullEvent("timer") until got == id
            print(t, ticks(os.clock() - c))
        end
        local c, e = os.clock(), os.epoch("utc")
        sleep(1)
        print("sleep(1)", ticks(os.clock() - c), os.epoch("utc") - e)
    "##;
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir));
    let out = run(&c, code).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..4],
        ["whole ticks\ttrue", "0.06\t1", "0.08\t2", "0.01\t1"],
        "{out}"
    );
    let real_ms = |line: &str| -> u64 {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f[..2], ["sleep(1)", "20"], "{out}");
        f[2].parse().expect("ms")
    };
    let ms = real_ms(lines[4]);
    assert!((950..1400).contains(&ms), "{out}");

    // A server at 10 ticks a second: a second of ticks takes two of real time.
    let dir = tempfile::tempdir().expect("tmp");
    let c = spawn(spec(&dir).with_tick(Duration::from_millis(100)));
    let out = run(&c, code).await;
    let lines: Vec<&str> = out.lines().collect();
    let ms = real_ms(lines[4]);
    assert!((1950..2500).contains(&ms), "{out}");
}

/// A disk drive with a floppy: `peripheral` and `disk` answer as CC: Tweaked's, the floppy is
/// mounted at `/disk` with its own 125,000-byte quota, its `startup.lua` replaces the
/// computer's at boot (unless `shell.allow_disk_startup` is false), and inserting and ejecting
/// queue `disk` and `disk_eject`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_floppy_in_a_drive_is_mounted_with_its_own_quota() {
    let dir = tempfile::tempdir().expect("tmp");
    let hdd = dir.path().join("hdd");
    let floppy_dir = dir.path().join("floppy");
    std::fs::create_dir_all(&hdd).expect("hdd");
    std::fs::create_dir_all(&floppy_dir).expect("floppy");
    let mark = |who: &str| format!("local h = fs.open('/ran', 'a') h.writeLine('{who}') h.close()");
    std::fs::write(hdd.join("startup.lua"), mark("computer")).expect("startup");
    std::fs::write(floppy_dir.join("startup.lua"), mark("floppy")).expect("startup");
    let floppy = Floppy::new(9, floppy_dir.clone());
    let spec =
        ComputerSpec::new(5, None, hdd.clone()).with_disk_drive("left", Some(floppy.clone()));
    let c = spawn(spec);
    let out = run(
        &c,
        r##"
        local h = fs.open("/ran", "r") print(h.readAll()) h.close()
        print(table.concat(peripheral.getNames(), ","), peripheral.getType("left"), peripheral.isPresent("right"))
        print(disk.isPresent("left"), disk.hasData("left"), disk.getMountPath("left"), disk.getID("left"), disk.isPresent("right"))
        print(fs.getDrive("disk/startup.lua"), fs.getDrive("ran"), fs.getCapacity("disk"), fs.getFreeSpace("disk"))
        print(table.concat(fs.list("/"), ","))
        h = fs.open("disk/big", "wb")
        -- The open took 500 of the 124,500 free; those 500 hold the file's first bytes.
        print(pcall(h.write, string.rep("x", 124501)))
        h.write(string.rep("x", 124500)) h.close()
        print(fs.getFreeSpace("disk"), fs.open("disk/more", "w"))
        print(pcall(fs.delete, "disk"))
        local free = fs.getFreeSpace("/")
        fs.move("disk/startup.lua", "moved.lua")
        print(free - fs.getFreeSpace("/"), fs.getFreeSpace("disk"), fs.exists("disk/startup.lua"))
        fs.move("moved.lua", "disk/startup.lua")
        "##,
    )
    .await;
    assert_eq!(
        out,
        "floppy\n\nleft\tdrive\tfalse\ntrue\ttrue\tdisk\t9\tfalse\nleft\thdd\t125000\t124500\ndisk,ran,rom,startup.lua\nfalse\tOut of space\n0\tnil\t/disk/more: Out of space\nfalse\t/disk: Access denied\n500\t500\tfalse\n"
    );
    assert_eq!(
        std::fs::metadata(floppy_dir.join("big"))
            .expect("big")
            .len(),
        124_500
    );

    // Out and in again, as a player would.
    let waiting = c.clone();
    let out = tokio::spawn(async move {
        run(
            &waiting,
            &(crate::support::lua_mark("out")
                + r##"
        local ev = { os.pullEvent("disk_eject") }
        print(ev[1], ev[2], fs.exists("disk"), disk.isPresent("left"), disk.getMountPath("left"))
        fs.open("/in", "w").close()
        ev = { os.pullEvent("disk") }
        print(ev[1], ev[2], fs.exists("disk/big"))
        disk.eject("left")
        print(os.pullEvent("disk_eject"))
        print(fs.exists("disk"))
        "##),
        )
        .await
    });
    // The chunk waits for each event before the floppy moves (its marks say so; the second
    // is support::lua_mark's, written out where the chunk's text is).
    crate::support::wait_mark(&hdd, "out").await;
    c.eject_disk().expect("a floppy was in");
    crate::support::wait_mark(&hdd, "in").await;
    c.insert_disk(floppy.clone()).expect("insert");
    let out = out.await.expect("chunk");
    assert_eq!(
        out,
        "disk_eject\tleft\tfalse\tfalse\tnil\ndisk\tleft\ttrue\ndisk_eject\tleft\nfalse\n"
    );

    // With shell.allow_disk_startup false, the computer's own startup runs.
    c.shutdown();
    c.wait_stopped().await;
    std::fs::remove_file(hdd.join("ran")).expect("ran");
    std::fs::write(
        hdd.join(".settings"),
        "{ [ \"shell.allow_disk_startup\" ] = false, }",
    )
    .expect("settings");
    let spec = ComputerSpec::new(5, None, hdd.clone()).with_disk_drive("left", Some(floppy));
    let c = spawn(spec);
    assert_eq!(
        run(
            &c,
            "local h = fs.open('/ran', 'r') print(h.readAll()) h.close()"
        )
        .await,
        "computer\n\n"
    );
}

//! Monitors through a real MCP client, against the real Lua client: what a program draws on a
//! monitor (through `peripheral.wrap`, and through `term.redirect`) is what `read-screen` with
//! `monitor` shows, text and colours, compared with what the emulated monitor really shows;
//! cells never drawn are unknown, never guessed; a touch from `send-input` arrives as
//! `monitor_touch` at the cell; a watched monitor streams to the session apart from the
//! terminal; errors for a monitor that is not there.
//!
//! The emulator only: CraftOS-PC's headless build cannot create a monitor ("Monitors are not
//! available in this mode"), and a monitor cannot be created any other way there.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake, world};

use std::time::Duration;

use crate::support::world::on_both_runtimes;
use fake::{data, text};
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};
use support::wait_until;
use trapdesk::session::screen::Display;
use world::{Runtime, World};

/// Runs a chunk on `label` and fails the test when it fails; its result.
async fn lua(w: &World, label: &str, code: &str) -> Value {
    let r = w
        .call(
            "exec-lua",
            json!({"traposId": w.trapos(label), "code": code}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    data(&r)
}

fn row(d: &Value, y: usize) -> String {
    d["rows"][y].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_is_read_with_its_colours_and_unknown_cells() {
    let w = World::boot(Runtime::Emulator, &["board"]).await;
    w.wait_serves("board", &["peripherals", "screen"]).await;
    // Drawn through a wrapped monitor and through term.redirect, on a 20x5 monitor at scale 1;
    // cell 1 of row 1, all of row 2 and everything right of what was written stay unknown.
    lua(
        &w,
        "board",
        r#"assert(periphemu.create("top", "monitor", 20, 5))
           local mon = peripheral.wrap("top")
           mon.setCursorPos(2, 1)
           mon.setTextColour(colours.yellow) mon.setBackgroundColour(colours.blue)
           mon.write("Reactor")
           local old = term.redirect(mon)
           term.setCursorPos(1, 3) term.setTextColour(colours.lime) term.setBackgroundColour(colours.black)
           term.write("printed")
           term.redirect(old)
           return true"#,
    )
    .await;
    let r = w
        .call(
            "read-screen",
            json!({"traposId": "board", "monitor": "top", "colors": true}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&r);
    assert_eq!(
        (&d["monitor"], &d["scale"]),
        (&json!("top"), &json!(1.0)),
        "{d}"
    );
    assert_eq!((&d["width"], &d["height"]), (&json!(20), &json!(5)), "{d}");
    assert_eq!(
        row(&d, 0),
        " Reactor",
        "an unknown cell's text is a blank: {d}"
    );
    assert_eq!(row(&d, 2), "printed");
    assert_eq!(
        d["known"][0],
        format!("0{}{}", "1".repeat(7), "0".repeat(12)),
        "{d}"
    );
    assert_eq!(d["known"][1], "0".repeat(20), "{d}");
    assert_eq!(
        d["known"][2],
        format!("{}{}", "1".repeat(7), "0".repeat(13)),
        "{d}"
    );
    // Colours: yellow (4) on blue (b) where Reactor is, lime (5) on black where printed is.
    assert_eq!(&d["fg"][0].as_str().unwrap()[1..8], "4444444", "{d}");
    assert_eq!(&d["bg"][0].as_str().unwrap()[1..8], "bbbbbbb", "{d}");
    assert_eq!(&d["fg"][2].as_str().unwrap()[..7], "5555555", "{d}");
    assert_eq!(&d["bg"][2].as_str().unwrap()[..7], "fffffff", "{d}");
    // What the monitor really shows, read from the emulator, agrees where the shadow knows.
    let real = w.computer("board").emu().monitor("top").unwrap();
    assert_eq!(&real.text[0][1..8], "Reactor");
    assert_eq!(&real.fg[0][1..8], "4444444");
    assert_eq!(&real.text[2][..7], "printed");
    assert_eq!(&real.bg[2][..7], "fffffff");
    // The text block an agent reads marks unknown cells as such, never as blanks.
    let t = text(&r);
    assert!(
        t.contains("20x5 monitor top (text scale 1)") && t.contains("cells unknown"),
        "{t}"
    );
    assert!(t.contains("\n\u{2591}Reactor\u{2591}\u{2591}"), "{t}");
    assert!(t.contains(&format!("\n{}\n", "\u{2591}".repeat(20))), "{t}");
    assert!(t.contains("\nprinted\u{2591}"), "{t}");

    // The monitor as an MCP resource reads the same, its unknown cells marked; it is listed
    // once a status named it (read-screen above asked none: probe-computers does).
    let uri = format!(
        "trapdesk://computer/{}/monitor/top/screen",
        w.trapos("board")
    );
    let read = w
        .client
        .read_resource(ReadResourceRequestParams::new(uri.clone()))
        .await
        .unwrap();
    match &read.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => {
            assert!(text.starts_with("\u{2591}Reactor\u{2591}"), "{text}");
            assert!(text.contains("\nprinted\u{2591}"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    w.call("probe-computers", json!({})).await;
    let listed: Vec<String> = w
        .client
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    assert!(listed.contains(&uri), "{listed:?}");
    let missing = w
        .client
        .read_resource(ReadResourceRequestParams::new(format!(
            "trapdesk://computer/{}/monitor/left/screen",
            w.trapos("board")
        )))
        .await;
    match missing {
        Err(rmcp::ServiceError::McpError(e)) => {
            assert_eq!(e.data.as_ref().unwrap()["code"], "not_found", "{e:?}");
        }
        other => panic!("{other:?}"),
    }

    // Cleared: every cell known; the terminal's own mirror is another display entirely.
    lua(
        &w,
        "board",
        r#"local mon = peripheral.wrap("top") mon.setBackgroundColour(colours.black) mon.clear()
           mon.setCursorPos(1, 1) mon.write("all known") return true"#,
    )
    .await;
    let r = w
        .call(
            "read-screen",
            json!({"traposId": "board", "monitor": "top"}),
        )
        .await;
    let d = data(&r);
    assert!(d.get("known").is_none(), "{d}");
    assert_eq!(row(&d, 0), "all known");
    assert!(!text(&r).contains('\u{2591}'), "{}", text(&r));
    let terminal = data(&w.call("read-screen", json!({"traposId": "board"})).await);
    assert!(terminal.get("monitor").is_none(), "{terminal}");
    assert_eq!(terminal["width"], 51, "{terminal}");

    // Errors: no such monitor (the computer's not_found), and arguments refused by name
    // before anything is sent.
    let r = w
        .call(
            "read-screen",
            json!({"traposId": "board", "monitor": "left"}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "not_found", "{}", text(&r));
    assert!(text(&r).contains("no monitor left"), "{}", text(&r));
    // Gone: the monitor's frame goes with it.
    let top = Display::Monitor("top".into());
    assert!(w.session().screen(&w.trapos("board"), &top).is_some());
    lua(&w, "board", r#"return periphemu.remove("top")"#).await;
    let r = w
        .call(
            "read-screen",
            json!({"traposId": "board", "monitor": "top"}),
        )
        .await;
    assert_eq!(data(&r)["error"]["code"], "not_found", "{}", text(&r));
    assert!(w.session().screen(&w.trapos("board"), &top).is_none());
    for (args, field) in [
        (
            json!({"traposId": "board", "touch": {"x": 1, "y": 1}}),
            "touch",
        ),
        (
            json!({"traposId": "board", "monitor": "top", "text": "hi", "touch": {"x": 1, "y": 1}}),
            "text",
        ),
        (
            json!({"traposId": "board", "monitor": "top", "keys": ["enter"]}),
            "keys",
        ),
        (json!({"traposId": "board", "monitor": "top"}), "touch"),
        (
            json!({"traposId": "board", "monitor": "top", "touch": {"x": 1.5, "y": 1}}),
            "touch.x",
        ),
        (
            json!({"traposId": "board", "monitor": "top", "touch": {"x": 1, "y": 0}}),
            "touch.y",
        ),
        (
            json!({"traposId": "board", "monitor": "", "touch": {"x": 1, "y": 1}}),
            "monitor",
        ),
    ] {
        let r = w.call("send-input", args.clone()).await;
        assert_eq!(r.is_error, Some(true), "{args}: {}", text(&r));
        let d = data(&r);
        assert_eq!(d["error"]["code"], "invalid_arguments", "{args}: {d}");
        assert_eq!(d["field"], field, "{args}: {d}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_touch_arrives_as_monitor_touch_at_the_cell() {
    let w = World::boot(Runtime::Emulator, &["board"]).await;
    w.wait_serves("board", &["peripherals", "input"]).await;
    lua(
        &w,
        "board",
        r#"assert(periphemu.create("top", "monitor", 20, 5))
           peripheral.call("top", "clear") return true"#,
    )
    .await;
    // A chunk waits for the touch; send-input touches the monitor meanwhile.
    let (waited, touched) = tokio::join!(
        w.call(
            "exec-lua",
            json!({"traposId": "board", "code": support::lua_mark("in-pull") + "local e = table.pack(os.pullEvent('monitor_touch')) return table.concat({e[1], e[2], e[3], e[4]}, ' ')", "timeoutMs": 15000}),
        ),
        async {
            support::wait_mark(&w.files("board"), "in-pull").await;
            w.call(
                "send-input",
                json!({"traposId": "board", "monitor": "top", "touch": {"x": 3, "y": 4}}),
            )
            .await
        }
    );
    assert_eq!(touched.is_error, Some(false), "{}", text(&touched));
    let t = data(&touched);
    assert_eq!(t["touched"], json!({"x": 3, "y": 4}), "{t}");
    assert_eq!(
        t["monitor"], "top",
        "the answer is the monitor's screen: {t}"
    );
    assert!(
        text(&touched).starts_with("touched top at 3,4; "),
        "{}",
        text(&touched)
    );
    assert_eq!(waited.is_error, Some(false), "{}", text(&waited));
    assert_eq!(
        data(&waited)["returns"][0]["value"],
        "monitor_touch top 3 4",
        "{}",
        text(&waited)
    );

    // Outside the monitor as it is now: the computer refuses it; a monitor not there:
    // not_found.
    let r = w
        .call(
            "send-input",
            json!({"traposId": "board", "monitor": "top", "touch": {"x": 21, "y": 1}}),
        )
        .await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(
        data(&r)["error"]["code"],
        "invalid_arguments",
        "{}",
        text(&r)
    );
    let r = w
        .call(
            "send-input",
            json!({"traposId": "board", "monitor": "bottom", "touch": {"x": 1, "y": 1}}),
        )
        .await;
    assert_eq!(data(&r)["error"]["code"], "not_found", "{}", text(&r));
}

/// A monitor on the wired network, by its network name; watched, it streams to the session
/// apart from the terminal, and what it shows after each draw is what the session holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_monitor_is_watched_apart_from_the_terminal() {
    let w = World::boot(Runtime::Emulator, &["hall"]).await;
    w.wait_serves("hall", &["peripherals", "screen"]).await;
    lua(
        &w,
        "hall",
        r#"assert(periphemu.create("monitor_0", "monitor", 20, 5))
           assert(periphemu.create("left", "modem"))
           local mon = peripheral.wrap("monitor_0")
           mon.clear() mon.setCursorPos(1, 1) mon.write("remote")
           return true"#,
    )
    .await;
    let id = w.trapos("hall");
    let display = Display::Monitor("monitor_0".into());
    let watch = w.session().watch_screen(&id, display.clone()).unwrap();
    wait_until(|| {
        w.session()
            .screen(&id, &display)
            .is_some_and(|f| f.text_rows()[0] == "remote")
    })
    .await;
    assert_eq!(w.session().screen_watchers(&id, &display), 1);
    assert_eq!(
        w.session().screen_watchers(&id, &Display::Terminal),
        0,
        "watching a monitor does not watch the terminal"
    );
    // A draw after the watch began comes as an update of that monitor.
    lua(
        &w,
        "hall",
        r#"local mon = peripheral.wrap("monitor_0") mon.setCursorPos(1, 2) mon.write("updated") return true"#,
    )
    .await;
    wait_until(|| {
        w.session()
            .screen(&id, &display)
            .is_some_and(|f| f.text_rows()[1] == "updated")
    })
    .await;
    let f = w.session().screen(&id, &display).unwrap();
    assert_eq!(f.monitor.as_deref(), Some("monitor_0"));
    assert!(
        f.rows
            .iter()
            .all(|r| (0..r.text.len()).all(|x| r.is_known(x)))
    );
    drop(watch);
    let r = w
        .call(
            "read-screen",
            json!({"traposId": "hall", "monitor": "monitor_0"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(row(&data(&r), 1), "updated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_after_term_redirect_draws_on_the_monitor_not_in_the_output() {
    let w = World::boot(Runtime::Emulator, &["sign"]).await;
    w.wait_serves("sign", &["peripherals", "screen"]).await;
    // A status board written the way CC programs write them: redirect, print, redirect back.
    let d = lua(
        &w,
        "sign",
        r#"assert(periphemu.create("top", "monitor", 20, 5))
           local mon = peripheral.wrap("top")
           mon.clear() mon.setCursorPos(1, 1)
           local old = term.redirect(mon)
           print("on the board")
           write("and more")
           term.redirect(old)
           print("in the output")
           return true"#,
    )
    .await;
    let output = d["output"].as_str().unwrap_or_default();
    assert!(output.contains("in the output"), "{d}");
    assert!(
        !output.contains("on the board") && !output.contains("and more"),
        "what was printed while redirected went to the monitor, not the capture: {output:?}"
    );
    let m = w.computer("sign").emu().monitor("top").unwrap();
    assert_eq!(m.text[0].trim_end(), "on the board");
    assert_eq!(m.text[1].trim_end(), "and more");
    let r = w
        .call("read-screen", json!({"traposId": "sign", "monitor": "top"}))
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&r);
    assert_eq!(
        (row(&d, 0), row(&d, 1)),
        ("on the board".into(), "and more".into()),
        "{d}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_a_monitor_is_sent_while_nobody_watches() {
    let w = World::boot(Runtime::Emulator, &["quiet"]).await;
    w.wait_serves("quiet", &["peripherals", "screen"]).await;
    let id = w.trapos("quiet");
    let display = Display::Monitor("top".into());
    // Two thousand draws, yielding every hundred so the client could send if it would.
    lua(
        &w,
        "quiet",
        r#"assert(periphemu.create("top", "monitor", 20, 5))
           local mon = peripheral.wrap("top")
           for i = 1, 2000 do
               mon.setCursorPos(1, i % 5 + 1) mon.write(("%05d"):format(i))
               if i % 100 == 0 then sleep(0) end
           end
           return true"#,
    )
    .await;
    // The quiet period is the test: nothing may arrive in it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // An update the host gets without a frame makes it ask for one: had the client sent
    // anything, the session would hold a frame of the monitor by now.
    assert!(
        w.session().screen(&id, &display).is_none(),
        "a monitor nobody watches was sent"
    );
    // The shadow was kept all along: the first read shows the last draw.
    let r = w
        .call(
            "read-screen",
            json!({"traposId": "quiet", "monitor": "top"}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(row(&data(&r), 0), "02000");
}

/// What the shadow costs a program on the computer, printed beside its floor (the same calls
/// through the original `peripheral.call`, which the client keeps as
/// `trapdeskClient.peripheralCall`) in the same run: drawing on a monitor (emulator only:
/// CraftOS-PC headless has no monitors) and calling another peripheral (a modem), on both.
async fn measure_the_shadow(rt: Runtime) {
    let w = World::boot(rt, &["bench"]).await;
    w.wait_serves("bench", &["peripherals"]).await;
    let monitor = rt == Runtime::Emulator;
    let d = lua(
        &w,
        "bench",
        &format!(
            r#"local monitor = {monitor}
               local orig, hooked = trapdeskClient.peripheralCall, peripheral.call
               assert(orig and orig ~= hooked, "the client hooked peripheral.call")
               periphemu.create("left", "modem")
               if monitor then assert(periphemu.create("top", "monitor")) end
               local N = 20000
               local function draw(call)
                   local t = os.epoch("utc")
                   for i = 1, N do call("top", "setCursorPos", 1, i % 19 + 1) call("top", "write", "0123456789") end
                   return os.epoch("utc") - t
               end
               local function other(call)
                   local t = os.epoch("utc")
                   for i = 1, N do call("left", "isOpen", 1) end
                   return os.epoch("utc") - t
               end
               local best = {{}}
               for round = 1, 5 do
                   for k, f in pairs({{ drawRaw = function() return draw(orig) end,
                                        drawHooked = function() return draw(hooked) end,
                                        otherRaw = function() return other(orig) end,
                                        otherHooked = function() return other(hooked) end }}) do
                       if monitor or k:sub(1, 5) == "other" then
                           local ms = f()
                           best[k] = math.min(best[k] or math.huge, ms)
                       end
                   end
                   sleep(0)
               end
               return best"#
        ),
    )
    .await;
    let best = &d["returns"][0]["value"];
    let ms = |k: &str| best[k].as_f64().unwrap_or(f64::NAN);
    println!(
        "{}: {} calls to a modem, best of 5: {:.0} ms through the hook, {:.0} ms through the original: {:.2}x",
        rt.name(),
        20000,
        ms("otherHooked"),
        ms("otherRaw"),
        ms("otherHooked") / ms("otherRaw")
    );
    if monitor {
        println!(
            "{}: {} setCursorPos+write pairs on a monitor, best of 5: {:.0} ms with the shadow, {:.0} ms without: {:.2}x",
            rt.name(),
            20000,
            ms("drawHooked"),
            ms("drawRaw"),
            ms("drawHooked") / ms("drawRaw")
        );
    }
}

on_both_runtimes!(
    #[ignore = "a measurement, not a check: BENCHMARKS.md, 'Monitor shadows'"]
    measure_the_shadow
);

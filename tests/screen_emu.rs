//! The terminal mirror end to end on emulated computers: rmcp's client → MCP `read-screen` /
//! `send-input` → session → gateway → the real Lua client's screen server in an emulated
//! computer. The shell prompt, `ls`, colours in blit rows, a program waiting on a key, `edit`
//! saving with ctrl then enter, refusals, and watching (nothing sent while nobody watches).
#![allow(clippy::unwrap_used, clippy::panic)]

mod support;

#[path = "support/mcp_fake.rs"]
mod fake;

use std::time::{Duration, Instant};

use fake::{call, data, text};
use serde_json::{Value, json};
use support::{TestHost, emulated, emulated_sized, start_host, wait_until};
use trapdesk::session::Origin;

/// Boots an emulated computer and waits until its screen server serves.
async fn screen_computer(host: &TestHost, id: u64, label: &str) -> trapdesk::emu::Computer {
    let c = emulated(host, id, Some(label)).await;
    let tid = format!("{id}:{label}");
    wait_until(|| {
        host.session.computer(&tid).is_some_and(|c| {
            c.serves.iter().any(|s| s == "screen") && c.serves.iter().any(|s| s == "input")
        })
    })
    .await;
    c
}

fn rows(v: &Value) -> Vec<String> {
    v["rows"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|r| r.as_str().unwrap_or("").to_owned())
        .collect()
}

/// Reads the screen until `cond` holds on its rows (the shell answers asynchronously).
async fn screen_until(
    client: &fake::Client,
    target: &str,
    cond: impl Fn(&[String]) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let r = call(
            client,
            "read-screen",
            json!({"traposId": target, "colors": true}),
        )
        .await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let d = data(&r);
        if cond(&rows(&d)) {
            return d;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "screen never matched; last:\n{}",
            rows(&d).join("\n")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn prompt_ready(rows: &[String]) -> bool {
    rows.iter().any(|r| r.starts_with('>'))
}

/// Waits for the shell, then presses enter for a prompt of its own.
async fn fresh_prompt(client: &fake::Client, target: &str) -> Value {
    screen_until(client, target, prompt_ready).await;
    let r = call(
        client,
        "send-input",
        json!({"traposId": target, "keys": ["enter"]}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    screen_until(client, target, |rows| rows.iter().any(|r| r == ">")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_screen_shows_the_prompt_and_send_input_runs_ls() {
    let host = start_host().await;
    let _c = screen_computer(&host, 31, "scr").await;
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    let d = fresh_prompt(&client, "scr").await;
    assert_eq!(
        (d["width"].as_u64(), d["height"].as_u64()),
        (Some(51), Some(19))
    );
    assert_eq!(d["traposId"], "31:scr");
    assert_eq!(d["fg"].as_array().unwrap().len(), 19);
    assert_eq!(d["palette"][0], "#f0f0f0");
    assert_eq!(
        d["cursor"]["x"], 3,
        "the cursor waits after the prompt: {d}"
    );
    assert_eq!(d["cursor"]["blink"], true);

    let r = call(
        &client,
        "send-input",
        json!({"traposId": "scr", "text": "ls", "keys": ["enter"], "waitMs": 500}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let d = data(&r);
    assert!(d["events"].as_u64().unwrap() >= 4, "{d}");
    let shown = rows(&d);
    let listing = screen_until(&client, "scr", |rows| {
        rows.iter()
            .any(|r| r.contains("trapdesk") && r.contains("startup"))
    })
    .await;
    assert!(
        rows(&listing).iter().any(|r| r == "> ls"),
        "the typed command is on screen: {shown:?}"
    );
    // read-screen without colors has no blit rows.
    let plain = data(&call(&client, "read-screen", json!({"traposId": "scr"})).await);
    assert!(plain.get("fg").is_none());
    // Both calls are in the activity of the session like every tool call.
    let log = data(&call(&client, "session-log", json!({"limit": 200})).await);
    let tools: Vec<&str> = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["what"].as_str())
        .collect();
    assert!(
        tools.contains(&"send-input") && tools.contains(&"read-screen"),
        "{tools:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colours_keys_and_edit_work_as_a_players() {
    let host = start_host().await;
    let c = screen_computer(&host, 32, "paint").await;
    let root = host.dir.path().join("computers").join("32");
    std::fs::write(
        root.join("paint.lua"),
        "term.setTextColour(colours.red) write(\"RED\") term.setBackgroundColour(colours.blue) write(\"BLUE\")\n\
         term.setTextColour(colours.white) term.setBackgroundColour(colours.black) print()\n",
    )
    .unwrap();
    std::fs::write(
        root.join("keywait.lua"),
        "print(\"waiting\") local _, k = os.pullEvent(\"key\") print(\"got \" .. keys.getName(k))\n",
    )
    .unwrap();
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    fresh_prompt(&client, "paint").await;

    // A program painting coloured text: its colours are in the blit rows.
    call(
        &client,
        "send-input",
        json!({"traposId": "paint", "text": "paint\n"}),
    )
    .await;
    let d = screen_until(&client, "paint", |rows| {
        rows.iter().any(|r| r.starts_with("REDBLUE"))
    })
    .await;
    let y = rows(&d)
        .iter()
        .position(|r| r.starts_with("REDBLUE"))
        .unwrap();
    let fg = d["fg"][y].as_str().unwrap();
    let bg = d["bg"][y].as_str().unwrap();
    assert_eq!(&fg[..7], "eeeeeee", "red text: {fg}");
    assert_eq!(&bg[..7], "fffbbbb", "blue behind BLUE: {bg}");

    // A program waiting on os.pullEvent("key") gets the key sent.
    call(
        &client,
        "send-input",
        json!({"traposId": "paint", "text": "keywait", "keys": ["enter"]}),
    )
    .await;
    screen_until(&client, "paint", |rows| rows.iter().any(|r| r == "waiting")).await;
    let r = call(
        &client,
        "send-input",
        json!({"traposId": "paint", "keys": ["up"]}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    screen_until(&client, "paint", |rows| rows.iter().any(|r| r == "got up")).await;

    // edit: type, then ctrl and enter saves.
    call(
        &client,
        "send-input",
        json!({"traposId": "paint", "text": "edit hello.txt\n"}),
    )
    .await;
    screen_until(&client, "paint", |rows| {
        rows.iter().any(|r| r.contains("Press Ctrl"))
    })
    .await;
    call(
        &client,
        "send-input",
        json!({"traposId": "paint", "text": "hi there"}),
    )
    .await;
    let r = call(
        &client,
        "send-input",
        json!({"traposId": "paint", "keys": ["ctrl", "enter"], "waitMs": 500}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    wait_until(|| std::fs::read_to_string(root.join("hello.txt")).is_ok_and(|s| s == "hi there\n"))
        .await;
    // ctrl, left (wraps to Exit), enter leaves the editor for the prompt.
    call(
        &client,
        "send-input",
        json!({"traposId": "paint", "keys": ["ctrl", "left", "enter"]}),
    )
    .await;
    screen_until(&client, "paint", |rows| rows.iter().any(|r| r == ">")).await;
    c.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_naming_the_field() {
    let host = start_host().await;
    let _c = screen_computer(&host, 33, "bad").await;
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    let r = call(
        &client,
        "send-input",
        json!({"traposId": "bad", "keys": ["enter", "entr"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let d = data(&r);
    assert_eq!(d["field"], "keys[1]");
    assert_eq!(d["error"]["code"], "invalid_arguments");
    assert!(
        text(&r).contains("unknown key name \"entr\""),
        "{}",
        text(&r)
    );
    let r = call(
        &client,
        "send-input",
        json!({"traposId": "bad", "paste": "x".repeat(513)}),
    )
    .await;
    assert_eq!(data(&r)["field"], "paste");
    let r = call(&client, "send-input", json!({"traposId": "bad"})).await;
    assert_eq!(r.is_error, Some(true));
    // The computer's own check says the same for a request that bypasses the host's.
    let err = host
        .session
        .request(
            "bad",
            trapdesk::session::RequestSpec::new(
                trapdesk::protocol::Kind::Input,
                json!({"steps": [{"key": "hyper+x"}]}),
            ),
            Origin::Person,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "bad_request");
    assert!(err.to_string().contains("unknown modifier hyper"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_for_a_computer_without_the_mirror_is_refused() {
    let host = start_host().await;
    let mut fake_computer = support::FakeComputer::link(&host, 34, Some("old")).await;
    fake_computer
        .send(&json!({"type": "serve", "types": ["exec-lua"]}))
        .await;
    wait_until(|| {
        host.session
            .computer("34:old")
            .is_some_and(|c| !c.serves.is_empty())
    })
    .await;
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    for (tool, args) in [
        ("send-input", json!({"traposId": "old", "text": "ls"})),
        ("read-screen", json!({"traposId": "old"})),
    ] {
        let r = call(&client, tool, args).await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(data(&r)["error"]["code"], "unknown_type");
        assert!(text(&r).contains("does not serve"), "{}", text(&r));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_flow_only_while_watched() {
    let host = start_host().await;
    let c = screen_computer(&host, 35, "watch").await;
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    fresh_prompt(&client, "watch").await;
    // Not watched: typing changes the computer's screen but the host's copy stays as read.
    c.type_text("abc");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let held = host.session.screen("35:watch").unwrap();
    assert!(
        !held.text_rows().iter().any(|r| r.contains("abc")),
        "no update may arrive while nobody watches"
    );
    // Watched: a full frame, then updates as the screen changes.
    let watch = host.session.watch_screen("watch").unwrap();
    wait_until(|| {
        host.session
            .screen("35:watch")
            .is_some_and(|f| f.text_rows().iter().any(|r| r == "> abc"))
    })
    .await;
    c.type_text("def");
    wait_until(|| {
        host.session
            .screen("35:watch")
            .is_some_and(|f| f.text_rows().iter().any(|r| r == "> abcdef") && f.cursor_x == 9)
    })
    .await;
    drop(watch);
    tokio::time::sleep(Duration::from_millis(400)).await;
    c.type_text("ghi");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        !host
            .session
            .screen("35:watch")
            .unwrap()
            .text_rows()
            .iter()
            .any(|r| r.contains("ghi")),
        "updates stop with the last watcher"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_stops_a_program_as_holding_ctrl_t_does() {
    let host = start_host().await;
    let _c = screen_computer(&host, 36, "term").await;
    let root = host.dir.path().join("computers").join("36");
    std::fs::write(
        root.join("forever.lua"),
        "print(\"looping\") while true do os.pullEvent(\"never\") end\n",
    )
    .unwrap();
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    fresh_prompt(&client, "term").await;
    call(
        &client,
        "send-input",
        json!({"traposId": "term", "text": "forever\n"}),
    )
    .await;
    screen_until(&client, "term", |rows| rows.iter().any(|r| r == "looping")).await;
    let r = call(
        &client,
        "send-input",
        json!({"traposId": "term", "keys": ["terminate"]}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    // os.pullEvent raises "Terminated" and the shell prints it, then prompts again.
    screen_until(&client, "term", |rows| {
        rows.iter().any(|r| r == "Terminated")
    })
    .await;
}

/// Waits until the session lists `trapos_id` online (or offline).
async fn online(host: &TestHost, trapos_id: &str, want: bool) {
    let start = Instant::now();
    while host.session.computer(trapos_id).is_some_and(|c| c.online) != want {
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "{trapos_id} never went {}",
            if want { "online" } else { "offline" }
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_linked_line_sits_above_a_clean_first_prompt() {
    let host = start_host().await;
    let _c = screen_computer(&host, 37, "clean").await;
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    // No key pressed: the first prompt the shell drew.
    let d = screen_until(&client, "clean", prompt_ready).await;
    let shown = rows(&d);
    let y = d["cursor"]["y"].as_u64().unwrap() as usize;
    assert_eq!(
        shown[y - 1].trim_end(),
        ">",
        "the prompt line holds the prompt alone:\n{}",
        shown.join("\n")
    );
    assert_eq!(d["cursor"]["x"], 3, "the cursor waits after the prompt");
    let linked = shown
        .iter()
        .position(|r| r.trim_end() == "trapdesk: linked as 37:clean")
        .unwrap_or_else(|| panic!("the linked line is shown:\n{}", shown.join("\n")));
    assert!(linked < y - 1, "above the prompt:\n{}", shown.join("\n"));
    // Typing at that prompt works as on any prompt.
    call(
        &client,
        "send-input",
        json!({"traposId": "clean", "text": "ls\n"}),
    )
    .await;
    screen_until(&client, "clean", |rows| rows.iter().any(|r| r == "> ls")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turtle_and_pocket_sizes_and_a_resize_are_followed() {
    let host = start_host().await;
    let turtle = emulated_sized(&host, 38, Some("turtle"), trapdesk::emu::TURTLE_SIZE).await;
    let pocket = emulated_sized(&host, 39, Some("pocket"), trapdesk::emu::POCKET_SIZE).await;
    for id in ["38:turtle", "39:pocket"] {
        wait_until(|| {
            host.session
                .computer(id)
                .is_some_and(|c| c.serves.iter().any(|s| s == "screen"))
        })
        .await;
    }
    assert_eq!(turtle.screen_size(), (39, 13));
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    for (target, w, h) in [("turtle", 39, 13), ("pocket", 26, 20)] {
        let d = screen_until(&client, target, prompt_ready).await;
        assert_eq!(
            (d["width"].as_u64(), d["height"].as_u64()),
            (Some(w), Some(h)),
            "{target}: {d}"
        );
        assert_eq!(rows(&d).len(), h as usize);
        assert!(rows(&d).iter().all(|r| r.chars().count() <= w as usize));
    }

    // Watched: a resize sends a whole frame by itself, the prompt kept where it fits.
    let watch = host.session.watch_screen("pocket").unwrap();
    wait_until(|| {
        host.session
            .screen("39:pocket")
            .is_some_and(|f| f.width == 26)
    })
    .await;
    pocket.resize(30, 10);
    wait_until(|| {
        host.session.screen("39:pocket").is_some_and(|f| {
            f.width == 30 && f.height == 10 && f.text_rows().iter().any(|r| r.starts_with('>'))
        })
    })
    .await;
    drop(watch);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Not watched: read-screen shows the new size, and typing draws at it.
    pocket.resize(45, 15);
    let d = screen_until(&client, "pocket", |rows| rows.len() == 15).await;
    assert_eq!(d["width"], 45, "{d}");
    call(
        &client,
        "send-input",
        json!({"traposId": "pocket", "text": "echo-after-resize-wide-text"}),
    )
    .await;
    let d = screen_until(&client, "pocket", |rows| {
        rows.iter()
            .any(|r| r.contains("echo-after-resize-wide-text"))
    })
    .await;
    assert_eq!(
        (d["width"].as_u64(), d["height"].as_u64()),
        (Some(45), Some(15))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reboot_relinks_and_shutdown_stays_off() {
    let host = start_host().await;
    let c = screen_computer(&host, 40, "power").await;
    let (client, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    screen_until(&client, "power", prompt_ready).await;
    std::fs::write(
        host.dir.path().join("computers/40/marker.lua"),
        "print(\"booted\")\n",
    )
    .unwrap();
    // Holding ctrl+R: the computer answers, reboots and links again.
    let r = call(
        &client,
        "send-input",
        json!({"traposId": "power", "keys": ["reboot"], "waitMs": 0}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    // A new link (its connected_at moves on): the old one may be seen closing, or be replaced.
    let before = host.session.computer("40:power").unwrap().connected_at;
    let start = Instant::now();
    while !host
        .session
        .computer("40:power")
        .is_some_and(|c| c.online && c.connected_at > before)
    {
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "never linked again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!c.is_stopped());
    wait_until(|| {
        host.session
            .computer("40:power")
            .is_some_and(|c| c.serves.iter().any(|s| s == "input"))
    })
    .await;
    // A fresh boot: a clean screen with the linked line and a prompt, and it takes input.
    let d = screen_until(&client, "power", prompt_ready).await;
    assert!(
        rows(&d)
            .iter()
            .any(|r| r.trim_end() == "trapdesk: linked as 40:power"),
        "{d}"
    );
    call(
        &client,
        "send-input",
        json!({"traposId": "power", "text": "marker\n"}),
    )
    .await;
    screen_until(&client, "power", |rows| rows.iter().any(|r| r == "booted")).await;

    // Holding ctrl+S: the computer turns off, the link drops and stays down.
    let r = call(
        &client,
        "send-input",
        json!({"traposId": "power", "keys": ["shutdown"], "waitMs": 0}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    tokio::time::timeout(Duration::from_secs(20), c.wait_stopped())
        .await
        .expect("the computer turns off");
    online(&host, "40:power", false).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !host.session.computer("40:power").unwrap().online,
        "a computer that is off does not link again"
    );
    let r = call(&client, "read-screen", json!({"traposId": "power"})).await;
    assert_eq!(
        r.is_error,
        Some(true),
        "an offline computer has no screen to read"
    );
}

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
use support::{TestHost, emulated, start_host, wait_until};
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

/// Waits for the shell, then presses enter for a prompt of its own (the client's "linked"
/// line is printed where the first prompt was).
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
    let (client, _) = fake::connect(&host.mcp_url()).await;
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
    let (client, _) = fake::connect(&host.mcp_url()).await;
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
    let (client, _) = fake::connect(&host.mcp_url()).await;
    let r = call(
        &client,
        "send-input",
        json!({"traposId": "bad", "keys": ["enter", "entr"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let d = data(&r);
    assert_eq!(d["field"], "keys[1]");
    assert_eq!(d["error"]["code"], "bad_request");
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
            trapdesk::session::RequestSpec::new("input", json!({"steps": [{"key": "hyper+x"}]})),
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
    let (client, _) = fake::connect(&host.mcp_url()).await;
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
    let (client, _) = fake::connect(&host.mcp_url()).await;
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
    let (client, _) = fake::connect(&host.mcp_url()).await;
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

//! What docs/console.md tells a person attached to a computer to press to save in CC's `edit`
//! saves, on CraftOS-PC's real `edit`, as the console sends those keys.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use crate::support::mcp_fake::text;
use crate::support::world::{Runtime, World};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn ctrl_s_then_s_saves_in_edit_as_the_console_docs_say() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/console.md"))
        .unwrap()
        .replace('\n', " ");
    assert!(
        docs.contains("press **Ctrl-S, then `s`** to save"),
        "docs/console.md changed"
    );
    let w = World::boot(Runtime::CraftOs, &["desk"]).await;
    w.wait_serves("desk", &["screen", "input"]).await;
    let id = w.trapos("desk");
    // What the attached console sends: typed characters as text, Ctrl-S as the key `ctrl+s`
    // (`tui/panes/screen/keys.rs`), which the client queues as Ctrl, then S.
    let send = |input: Value| {
        let w = &w;
        let mut args = json!({"traposId": id, "waitMs": 300});
        if let (Some(a), Some(i)) = (args.as_object_mut(), input.as_object()) {
            a.extend(i.clone());
        }
        async move {
            let r = w.call("send-input", args).await;
            assert_ne!(r.is_error, Some(true), "{}", text(&r));
        }
    };
    send(json!({"text": "edit note.lua\n"})).await;
    send(json!({"text": "print(1)"})).await;
    // Ctrl-S, then s: Ctrl opens edit's menu, `s` picks Save.
    send(json!({"keys": ["ctrl+s"]})).await;
    send(json!({"text": "s"})).await;
    let file = w.files("desk").join("note.lua");
    let saved = crate::support::holds_within(Duration::from_secs(20), || {
        std::fs::read_to_string(&file).is_ok_and(|t| t == "print(1)\n")
    })
    .await;
    assert!(
        saved,
        "edit did not save note.lua: {:?}",
        std::fs::read_to_string(&file)
    );
}

//! The stop for all agents and the person's keyboard, end to end: rmcp's client (an agent) →
//! MCP → session → gateway → an emulated computer running the real Lua client. While paused,
//! the agent's running `exec-lua` ends cancelled, new runs, writes and input are refused with
//! `paused`, reads go on, and the person's own runs are untouched; while the person is
//! attached, the agent's `send-input` is refused with `person_typing` (policy `refuse`).
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake, world};

use fake::{data, text};
use serde_json::json;
use trapdesk::policy::{PersonTyping, Policy};
use trapdesk::session::{Origin, RequestSpec};
use world::{Runtime, World};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_stops_the_agents_runs_and_writes_and_resume_lets_them_go() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    let id = w.trapos("miner");
    // The agent's long run, and the stop once it runs.
    let running = w.call(
        "exec-lua",
        json!({"traposId": id, "code": "sleep(20) return 1", "timeoutMs": 30000}),
    );
    let stop = async {
        support::wait_until(|| w.session().pending().iter().any(|p| p.sent)).await;
        w.session().pause("cli")
    };
    let (r, report) = tokio::join!(running, stop);
    assert_eq!(report.stopped, 1);
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "cancelled", "{}", text(&r));
    assert!(text(&r).contains("stop for all agents"), "{}", text(&r));

    for (tool, args) in [
        ("exec-lua", json!({"traposId": id, "code": "return 1"})),
        (
            "write-file",
            json!({"traposId": id, "path": "/x.txt", "content": "x"}),
        ),
        ("send-input", json!({"traposId": id, "text": "ls"})),
    ] {
        let r = w.call(tool, args).await;
        assert_eq!(r.is_error, Some(true), "{tool}");
        assert_eq!(data(&r)["error"]["code"], "paused", "{tool}: {}", text(&r));
    }
    // Reads go on.
    let r = w
        .call("list-files", json!({"traposId": id, "path": "/"}))
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    // The person's own run is untouched.
    let v = w
        .session()
        .request(
            &id,
            RequestSpec::new(
                trapdesk::protocol::Kind::ExecLua,
                json!({"code": "return 7"}),
            ),
            Origin::Person,
        )
        .await
        .unwrap();
    assert_eq!(v["ok"], true, "{v}");

    assert!(w.session().resume("cli"));
    let r = w
        .call("exec-lua", json!({"traposId": id, "code": "return 2"}))
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cannot_type_while_the_person_is_attached() {
    let w = World::boot(Runtime::Emulator, &["miner"]).await;
    w.wait_serves("miner", &["screen", "input"]).await;
    let id = w.trapos("miner");
    let p = Policy {
        person_typing: PersonTyping::Refuse,
        ..Policy::default()
    };
    w.session().set_policy(p);
    let hold = w.session().hold_keyboard(&id);
    let r = w
        .call("send-input", json!({"traposId": id, "text": "ls"}))
        .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "person_typing", "{}", text(&r));
    drop(hold);
    let r = w
        .call("send-input", json!({"traposId": id, "text": "ls"}))
        .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
}

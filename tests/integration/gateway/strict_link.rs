//! The link in a strict world: CC: Tweaked's limits as the emulator enforces them
//! (the rule's `max_websocket_message`, the 256-event queue) do not break the link, and a label
//! set on the computer shows at once, on both runtimes.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, craftos, world};

use std::time::{Duration, Instant};

use crate::support::world::on_both_runtimes;
use serde_json::{Value, json};
use support::{SECRET, TestHost, start_host, wait_until};
use trapdesk::emu::{Computer, ComputerSpec, install_client};
use trapdesk::protocol::Kind;
use trapdesk::session::{Origin, RequestError, RequestSpec};
use world::{Runtime, World};

/// Boots an emulated computer with the client, `adjust`ing its spec (its http rule's limit),
/// and waits until it serves exec-lua.
async fn emulated_with(
    host: &TestHost,
    id: u64,
    label: &str,
    adjust: impl FnOnce(ComputerSpec) -> ComputerSpec,
) -> Computer {
    let root = host.dir.path().join("computers").join(id.to_string());
    std::fs::create_dir_all(&root).unwrap();
    install_client(&root, &host.gateway_url(), SECRET).unwrap();
    let spec = adjust(ComputerSpec::new(id, Some(label.to_owned()), root));
    let computer = Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap();
    let trapos = format!("{id}:{label}");
    wait_until(|| {
        host.session
            .computer(&trapos)
            .is_some_and(|c| c.online && c.serves.iter().any(|s| s == "exec-lua"))
    })
    .await;
    computer
}

async fn exec(
    host: &TestHost,
    who: &str,
    code: &str,
    timeout: Duration,
) -> Result<Value, RequestError> {
    host.session
        .request(
            who,
            RequestSpec::new(Kind::ExecLua, json!({"code": code})).timeout(Some(timeout)),
            Origin::Person,
        )
        .await
}

/// Return value `i` of an exec-lua answer (a descriptor: `{"type", "value"}`).
fn ret(got: &Value, i: usize) -> Value {
    got["returns"][i]["value"].clone()
}

fn links(host: &TestHost, event: &str) -> usize {
    host.session
        .recent(500)
        .iter()
        .filter(|e| e.event.as_str() == event)
        .count()
}

/// The client finds a rule's limit below CC: Tweaked's default (16384 here) and tells the host;
/// requests and answers far above it then go in fragments, and the link never drops. On
/// CraftOS-PC the limit is its `http_max_websocket_message` (one for every address).
async fn a_low_message_limit_keeps_the_link_with_big_answers_and_requests(rt: Runtime) {
    let spec = world::Spec {
        max_websocket_message: Some(16_384),
        ..Default::default()
    };
    let w = World::boot_with(rt, &[("small", spec)]).await;
    // The client found the rule's limit and told the host.
    crate::support::wait_for(
        Duration::from_secs(10),
        || {
            w.session()
                .computer("1:small")
                .is_some_and(|c| c.max_message == 16_384)
        },
        || {
            format!(
                "the host never heard of the limit: {:?}; {}",
                w.session().computer("1:small"),
                w.computer("small").dump()
            )
        },
    )
    .await;
    let linked = links(&w.host, "linked");
    // A request of 100 KB (the literal) and an answer of 150 KB, each far above the limit.
    let code = format!(
        "local s = [[{}]] return #s, string.rep('y', 150000)",
        "x".repeat(100_000)
    );
    for round in 0..3 {
        let got = exec(
            &w.host,
            "small",
            &code,
            rt.patience(Duration::from_secs(60)),
        )
        .await
        .unwrap_or_else(|e| panic!("round {round}: {e}; {}", w.computer("small").dump()));
        assert_eq!(ret(&got, 0), json!(100_000), "round {round}");
        assert_eq!(
            ret(&got, 1).as_str().map(str::len),
            Some(150_000),
            "round {round}"
        );
    }
    assert_eq!(links(&w.host, "linked"), linked, "the link never dropped");
    assert_eq!(links(&w.host, "unlinked"), 0, "the link never dropped");
}

on_both_runtimes!(a_low_message_limit_keeps_the_link_with_big_answers_and_requests);

/// Lua that keeps CC's event queue full for `ms`: every round queues more than 256 events
/// (the rest are dropped, as CC drops them) and waits for one of its own.
fn flood(ms: u64) -> String {
    format!(
        "local stop = os.epoch('utc') + {ms}
         while os.epoch('utc') < stop do
             for i = 1, 300 do os.queueEvent('flood') end
             os.pullEvent('flood')
         end"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_dropped_from_a_full_queue_fails_fast_and_the_link_stays() {
    let host = start_host().await;
    let c = emulated_with(&host, 1, "busy", |s| s).await;
    let linked = links(&host, "linked");
    let flood_code = support::lua_mark("flooding") + &flood(3_000);
    let flooding = c.run_lua(&flood_code);
    let asked = async {
        // The requests go once the flood runs: its mark is made with no yield before the
        // first round fills the queue.
        let root = host.dir.path().join("computers").join("1");
        support::wait_mark(&root, "flooding").await;
        let started = Instant::now();
        // A large request too: the daemon decodes it in slices, whose tokens the flood drops.
        let big = format!("local s = [[{}]] return #s", "b".repeat(300_000));
        let (small, large) = tokio::join!(
            exec(&host, "busy", "return 42", Duration::from_secs(120)),
            exec(&host, "busy", &big, Duration::from_secs(120)),
        );
        (small, large, started.elapsed())
    };
    let (flooded, (small, large, took)) = tokio::join!(flooding, asked);
    flooded.expect("the flood ran");
    for (what, r) in [("small", &small), ("large", &large)] {
        match r {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e.code(), "lost", "{what}: {e}");
                assert!(e.to_string().contains("256"), "{what}: {e}");
            }
        }
    }
    assert!(
        small.is_err() || large.is_err(),
        "a 3 s flood drops at least one of the requests' frames: {small:?} / {large:?}"
    );
    assert!(
        took < Duration::from_secs(20),
        "failed fast, not at the 120 s timeout: {took:?}"
    );
    // Nothing hangs: the daemon and the server answer at once afterwards, on the same link.
    let after = exec(&host, "busy", "return 7", Duration::from_secs(10))
        .await
        .expect("answered after the flood");
    assert_eq!(ret(&after, 0), json!(7));
    assert_eq!(links(&host, "linked"), linked, "the link never dropped");
}

async fn a_label_change_shows_within_seconds(rt: Runtime) {
    let w = World::boot(rt, &["miner"]).await;
    let t0 = Instant::now();
    let r = w
        .session()
        .request(
            "miner",
            RequestSpec::new(
                Kind::ExecLua,
                json!({"code": "os.setComputerLabel('digger') return 1"}),
            ),
            Origin::Person,
        )
        .await
        .expect("the label set");
    assert_eq!(ret(&r, 0), json!(1));
    let limit = rt
        .patience(Duration::from_secs(5))
        .saturating_sub(t0.elapsed());
    crate::support::wait_for(
        limit,
        || w.session().computer("1:digger").is_some(),
        || "not renamed".to_owned(),
    )
    .await;
    let info = w.session().computer("1:digger").unwrap();
    assert!(info.online, "{info:?}");
    assert_eq!(info.label.as_deref(), Some("digger"));
    assert!(
        w.session().computer("1:miner").is_none(),
        "the old name is gone"
    );
    assert!(
        w.session().resolve("miner").is_err(),
        "the old label no longer resolves"
    );
    let ids: Vec<String> = w
        .session()
        .computers()
        .into_iter()
        .map(|c| c.trapos_id)
        .collect();
    assert_eq!(ids, vec!["1:digger".to_owned()]);
    // The same link goes on under the new name.
    let r = w
        .session()
        .request(
            "digger",
            RequestSpec::new(
                Kind::ExecLua,
                json!({"code": "return os.getComputerLabel()"}),
            ),
            Origin::Person,
        )
        .await
        .expect("a request under the new name");
    assert_eq!(ret(&r, 0), json!("digger"));
    assert_eq!(
        w.session()
            .recent(200)
            .iter()
            .filter(|e| e.event.as_str() == "unlinked")
            .count(),
        0,
        "renamed without a relink"
    );
}

on_both_runtimes!(a_label_change_shows_within_seconds);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_abort_is_reported_and_so_is_the_computer_coming_back() {
    let host = start_host().await;
    // CC: Tweaked's own times (7 s, then 1.5 s): the host judges by them.
    let c = emulated_with(&host, 1, "stuck", |s| {
        s.with_timeouts(Duration::from_secs(7), Duration::from_millis(1_500))
    })
    .await;
    // The console hears of it: what it shows the person is fed from the session's events.
    let mut events = host.session.subscribe();
    let mut console = trapdesk::tui::App::new(
        host.session.settings(),
        trapdesk::tui::theme::Theme::plain(),
        false,
    );
    let t0 = Instant::now();
    // Catches "Too long without yielding" and goes on: CC shuts the computer down.
    let err = exec(
        &host,
        "stuck",
        "while true do pcall(function() while true do end end) end",
        Duration::from_secs(120),
    )
    .await
    .expect_err("a computer shut down answers nothing");
    assert_eq!(
        err.code(),
        "shut_down",
        "{err}; log: {:?}",
        host.session.recent(10)
    );
    let text = err.to_string();
    assert!(text.contains("Too long without yielding"), "{text}");
    assert!(text.contains("/computercraft turn-on #1"), "{text}");
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "reported at once: {:?}",
        t0.elapsed()
    );
    wait_until(|| c.power_state() == trapdesk::emu::PowerState::Aborted).await;
    // Asked for again, the host says why it is gone and what to do.
    let again = exec(&host, "stuck", "return 1", Duration::from_secs(5))
        .await
        .expect_err("off");
    assert_eq!(again.code(), "shut_down", "{again}");
    assert!(
        host.session
            .recent(100)
            .iter()
            .any(|e| e.event.as_str() == "unlinked" && e.detail.contains("went off while request")),
        "in the session log"
    );
    while let Ok(ev) = events.try_recv() {
        console.note(&ev);
    }
    let (notice, alarm) = console.notice.clone().expect("the console says so");
    assert!(
        alarm && notice.contains("/computercraft turn-on #1"),
        "{notice}"
    );
    // A player turns it on: the client links again and the host says it is back.
    c.turn_on();
    wait_until(|| host.session.computer("1:stuck").is_some_and(|i| i.online)).await;
    wait_until(|| {
        host.session
            .recent(100)
            .iter()
            .any(|e| e.event.as_str() == "back")
    })
    .await;
    while let Ok(ev) = events.try_recv() {
        console.note(&ev);
    }
    let (notice, _) = console.notice.clone().expect("the console says so");
    assert!(notice.starts_with("1:stuck is on again"), "{notice}");
    let r = exec(&host, "stuck", "return 1", Duration::from_secs(10))
        .await
        .expect("on again");
    assert_eq!(ret(&r, 0), json!(1));
}

/// A websocket server: "send N" answers with one text frame of N `x`; anything else is
/// dropped.
async fn ws_server() -> u16 {
    use futures_util::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                while let Some(Ok(msg)) = ws.next().await {
                    if let Message::Text(t) = &msg
                        && let Some(n) = t.as_str().strip_prefix("send ")
                    {
                        let n: usize = n.parse().unwrap();
                        if ws.send(Message::Text("x".repeat(n).into())).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    port
}

/// CraftOS-PC's `http_max_websocket_message`, as the harness writes it, is CC: Tweaked's rule
/// limit in bytes for sends: one byte above it raises "Message is too large", at it goes. A
/// frame above it from the server closes the socket, but not as CC: Tweaked does (its reason
/// "Message is too large" and no code): CraftOS-PC reads at most the limit per frame and
/// closes with code 1006 and its HTTP library's message (docs/lua-client.md, CraftOS-PC notes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(craftos_pc),
    ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
)]
async fn craftos_pc_takes_the_message_limit_in_bytes_as_cc_tweaked_does() {
    let port = ws_server().await;
    let startup = format!(
        r##"
local out = {{}}
local function say(...) out[#out + 1] = table.concat({{ ... }}, "\t") end
local url = "ws://127.0.0.1:{port}/"
local ws = assert(http.websocket(url))
local ok, err = pcall(ws.send, string.rep("y", 16385))
say(tostring(ok), tostring(err))
ok, err = pcall(ws.send, string.rep("y", 16385), true)
say(tostring(ok), tostring(err))
say(tostring(pcall(ws.send, string.rep("y", 16384))))
ws.send("send 16384")
say(#ws.receive(10))
ws.send("send 16385")
local ev
repeat ev = {{ os.pullEvent() }} until ev[1] == "websocket_closed" or ev[1] == "websocket_message"
say(ev[1], tostring(ev[2] == url), tostring(ev[3]), tostring(ev[4]))
local h = fs.open("/result.txt", "w") h.write(table.concat(out, "\n")) h.close()
os.shutdown()
"##
    );
    let launcher = craftos::launcher();
    let opts = craftos::Options {
        max_websocket_message: Some(16_384),
        ..Default::default()
    };
    let mut c = craftos::CraftComputer::spawn_program_with(&launcher, 1, "limits", &startup, opts);
    let stopped = crate::support::holds_within(Duration::from_secs(60), || !c.running()).await;
    assert!(stopped, "{}", c.screen());
    let got = std::fs::read_to_string(c.files().join("result.txt"))
        .unwrap_or_else(|e| panic!("{e}; screen:\n{}", c.screen()));
    assert_eq!(
        got,
        "false\tMessage is too large\nfalse\tMessage is too large\ntrue\n16384\n\
         websocket_closed\ttrue\tPayload too big\t1006"
    );
}

//! The policy, end to end: allow, ask and deny for each kind of action through rmcp's own
//! client over Streamable HTTP; `ask` answered in the console through the app's event API (no
//! terminal), refused at once when headless; a reload never loosens a waiting approval.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::mcp_fake as fake;

use std::time::Duration;

use fake::{Host, call, connect, data, host_with, link_fake, start_call, text};
use ratatui::crossterm::event::{Event as CtEvent, KeyCode, KeyEvent, KeyModifiers};
use rmcp::model::{CallToolResult, ServerResult};
use serde_json::{Value, json};
use trapdesk::config::Settings;
use trapdesk::policy::Policy;
use trapdesk::session::{Answer, Origin, RequestError, RequestSpec};

async fn host_with_policy(toml: &str) -> Host {
    let settings = Settings {
        policy: Policy::from_toml(toml).unwrap(),
        ..Settings::default()
    };
    let h = host_with(settings).await;
    link_fake(&h.session, 7, Some("test-1"), h.seen.clone());
    link_fake(&h.session, 5, Some("reactor"), h.seen.clone());
    h
}

/// One call of each action kind on `target`.
fn calls(target: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("exec-lua", json!({"traposId": target, "code": "return 1"})),
        ("run-file", json!({"traposId": target, "path": "prog.lua"})),
        (
            "write-file",
            json!({"traposId": target, "path": "a.txt", "content": "hello"}),
        ),
        ("read-file", json!({"traposId": target, "path": "a.txt"})),
        ("list-files", json!({"traposId": target})),
        ("computer-output", json!({"traposId": target})),
    ]
}

fn code(r: &CallToolResult) -> String {
    data(r)
        .get("error")
        .and_then(|e| e.get("code").or(Some(e)))
        .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
        .unwrap_or_default()
}

async fn wait_for_approval(h: &Host) -> trapdesk::session::Approval {
    crate::support::wait_some(
        Duration::from_secs(5),
        || h.session.approvals().into_iter().next(),
        || String::from("no approval asked"),
    )
    .await
}

async fn finish(handle: rmcp::service::RequestHandle<rmcp::RoleClient>) -> CallToolResult {
    match handle.await_response().await.unwrap() {
        ServerResult::CallToolResult(r) => r,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn deny_refuses_every_kind_and_the_computer_sees_nothing() {
    let h = host_with_policy(
        r#"
[[policy.rule]]
computer = "reactor*"
agent = { exec = "deny", write = "deny", read = "deny" }
"#,
    )
    .await;
    let (client, _) = connect(&h.url, &h.token).await;
    for (tool, args) in calls("reactor") {
        let r = call(&client, tool, args).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {r:?}");
        let t = text(&r);
        assert!(
            t.contains("denies") && t.contains("reactor*"),
            "{tool}: {t}"
        );
        assert!(
            t.contains("config.toml"),
            "{tool}: says how to change it: {t}"
        );
        assert_eq!(code(&r), "denied", "{tool}");
    }
    assert!(h.seen.lock().unwrap().requests.is_empty());
    // The same calls on another computer are allowed by the default.
    for (tool, args) in calls("test-1") {
        let r = call(&client, tool, args).await;
        assert_ne!(code(&r), "denied", "{tool}: {r:?}");
    }
    // probe-computers says so before the agent tries.
    let r = call(&client, "probe-computers", json!({"ping": false})).await;
    let list = data(&r)["computers"].as_array().unwrap().clone();
    let reactor = list.iter().find(|c| c["label"] == "reactor").unwrap();
    assert_eq!(
        reactor["policy"],
        json!({"exec": "deny", "write": "deny", "read": "deny"})
    );
    let test = list.iter().find(|c| c["label"] == "test-1").unwrap();
    assert_eq!(
        test["policy"],
        json!({"exec": "allow", "write": "allow", "read": "allow"})
    );
    // The log and the transcript record the refusal with who asked.
    let refused: Vec<_> = h
        .session
        .recent(1000)
        .into_iter()
        .filter(|e| e.event.as_str() == "refused")
        .collect();
    assert_eq!(refused.len(), 6, "{refused:?}");
    assert!(
        refused
            .iter()
            .all(|e| e.who.as_deref() == Some("test-agent"))
    );
}

#[tokio::test]
async fn ask_without_a_console_refuses_at_once_saying_so() {
    let h = host_with_policy(
        "[policy.default]\nagent = { exec = \"ask\", write = \"ask\", read = \"ask\" }\n",
    )
    .await;
    let (client, _) = connect(&h.url, &h.token).await;
    for (tool, args) in calls("test-1") {
        let started = std::time::Instant::now();
        let r = call(&client, tool, args).await;
        assert!(started.elapsed() < Duration::from_secs(5), "{tool} waited");
        assert_eq!(r.is_error, Some(true), "{tool}");
        assert_eq!(code(&r), "no_approver", "{tool}");
        let t = text(&r);
        assert!(
            t.contains("--mcp-only") && t.contains("nobody can answer"),
            "{t}"
        );
        assert!(
            t.contains("agent") && t.contains("\"ask\""),
            "policy named: {t}"
        );
    }
    assert!(h.seen.lock().unwrap().requests.is_empty());
}

#[tokio::test]
async fn ask_waits_for_the_person_yes_no_always_and_timeout() {
    let h = host_with_policy(
        r#"
[[policy.rule]]
computer = "test-*"
agent = { exec = "ask", write = "ask", read = "ask" }
"#,
    )
    .await;
    let _approver = h.session.attach_approver();
    let (client, _) = connect(&h.url, &h.token).await;

    for (tool, args) in calls("test-1") {
        // y: it runs.
        let handle = start_call(&client, tool, args.clone()).await;
        let a = wait_for_approval(&h).await;
        assert_eq!(a.origin, Origin::Agent("test-agent".into()));
        assert_eq!(a.trapos_id, "7:test-1");
        let pending = h.session.pending();
        assert!(
            pending
                .iter()
                .any(|p| p.request_id == a.request_id && p.awaiting_approval)
        );
        h.session.answer(&a.request_id, Answer::Yes).unwrap();
        let r = finish(handle).await;
        assert_ne!(r.is_error, Some(true), "{tool} approved: {r:?}");

        // n: a person refused, and how the policy is set.
        let handle = start_call(&client, tool, args.clone()).await;
        let a = wait_for_approval(&h).await;
        h.session.answer(&a.request_id, Answer::No).unwrap();
        let r = finish(handle).await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(code(&r), "refused", "{tool}");
        let t = text(&r);
        assert!(
            t.contains("a person") && t.contains("refused") && t.contains("test-*"),
            "{t}"
        );
    }

    // The prompt carries the code in full and its size.
    let code_text = "for i = 1, 3 do\n  print(i)\nend";
    let handle = start_call(
        &client,
        "exec-lua",
        json!({"traposId": "test-1", "code": code_text, "timeoutMs": 300}),
    )
    .await;
    let a = wait_for_approval(&h).await;
    assert_eq!(a.detail, code_text);
    assert_eq!(a.size, code_text.len());
    // Nobody answers: its own timeout counts while it waits.
    let r = finish(handle).await;
    assert_eq!(code(&r), "not_answered");
    assert!(text(&r).contains("nobody") && text(&r).contains("did not run"));
    assert!(h.session.approvals().is_empty());

    // a: allowed for the session for that agent, that computer and that kind only.
    let handle = start_call(
        &client,
        "exec-lua",
        json!({"traposId": "test-1", "code": "return 1"}),
    )
    .await;
    let a = wait_for_approval(&h).await;
    h.session.answer(&a.request_id, Answer::Always).unwrap();
    assert_ne!(finish(handle).await.is_error, Some(true));
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "test-1", "code": "return 1"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "no second prompt");
    assert!(h.session.approvals().is_empty());
    let r = call(&client, "probe-computers", json!({"ping": false})).await;
    let list = data(&r)["computers"].as_array().unwrap().clone();
    let test = list.iter().find(|c| c["label"] == "test-1").unwrap();
    assert_eq!(
        test["policy"],
        json!({"exec": "allow", "write": "ask", "read": "ask"})
    );
    // Write still asks.
    let handle = start_call(
        &client,
        "write-file",
        json!({"traposId": "test-1", "path": "b", "content": "x"}),
    )
    .await;
    let a = wait_for_approval(&h).await;
    assert_eq!(a.kind, trapdesk::protocol::Kind::WriteFile);
    assert!(a.detail.starts_with("b\nx"), "{}", a.detail);
    h.session.answer(&a.request_id, Answer::No).unwrap();
    finish(handle).await;
}

#[tokio::test]
async fn a_reload_never_loosens_a_waiting_approval() {
    let h = host_with_policy("[policy.default]\nagent = { exec = \"ask\" }\n").await;
    let _approver = h.session.attach_approver();
    let (client, _) = connect(&h.url, &h.token).await;
    let handle = start_call(
        &client,
        "exec-lua",
        json!({"traposId": "test-1", "code": "return 1"}),
    )
    .await;
    let a = wait_for_approval(&h).await;
    // Loosened to allow: the waiting call still waits for the person.
    h.session.set_policy(Policy::default());
    // A quiet period is the point: nothing may let the waiting call through meanwhile.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(h.session.approvals().len(), 1);
    assert!(h.seen.lock().unwrap().requests.is_empty());
    // Tightened to deny: it is refused.
    h.session
        .set_policy(Policy::from_toml("[policy.default]\nagent = { exec = \"deny\" }\n").unwrap());
    let r = finish(handle).await;
    assert_eq!(code(&r), "denied");
    assert!(text(&r).contains("reloaded"));
    assert!(
        h.session
            .approvals()
            .iter()
            .all(|x| x.request_id != a.request_id)
    );
}

#[tokio::test]
async fn the_person_has_a_policy_of_their_own() {
    let h =
        host_with_policy("[policy.default]\nperson = { write = \"deny\", exec = \"ask\" }\n").await;
    let spec = RequestSpec::new(
        trapdesk::protocol::Kind::WriteFile,
        json!({"path": "x", "content": ""}),
    );
    match h.session.request("test-1", spec, Origin::Person).await {
        Err(RequestError::Policy { code, message }) => {
            assert_eq!(code.as_str(), "denied");
            assert!(message.contains("person write"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Agents are not people: the person's policy does not apply to them.
    let (client, _) = connect(&h.url, &h.token).await;
    let r = call(
        &client,
        "write-file",
        json!({"traposId": "test-1", "path": "x", "content": "y"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
}

/// The console answers through its event API: the prompt appears, `y` runs the call, `n`
/// refuses it, `a` allows it for the session.
#[tokio::test]
async fn the_console_prompt_answers_with_y_n_and_a() {
    use trapdesk::tui::{App, Event, handle as tui_handle};
    let h = host_with_policy(
        r#"
[[policy.rule]]
computer = "test-*"
agent_name = "test-agent"
agent = { exec = "ask" }
"#,
    )
    .await;
    let _approver = h.session.attach_approver();
    let (client, _) = connect(&h.url, &h.token).await;
    let mut app = App::new(
        Settings::default(),
        trapdesk::tui::theme::Theme::plain(),
        false,
    );
    let (msg_tx, _msg_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut events = h.session.subscribe();
    let key = |c: char| {
        Event::Crossterm(CtEvent::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )))
    };

    for (answer, want_error) in [('y', false), ('n', true), ('a', false)] {
        let handle = start_call(
            &client,
            "exec-lua",
            json!({"traposId": "test-1", "code": "local x = 42\nreturn x"}),
        )
        .await;
        // Feed session events to the app until it shows the prompt.
        let shown = || {
            while let Ok(e) = events.try_recv() {
                tui_handle(&mut app, &h.session, &msg_tx, Event::Session(e));
            }
            app.pull(&h.session);
            app.approval().is_some()
        };
        crate::support::holds_within(Duration::from_secs(5), shown).await;
        let a = app.approval().cloned().unwrap();
        assert_eq!(a.detail, "local x = 42\nreturn x");
        // Drawn with what it is, who asks, the code and the keys.
        let backend = ratatui::backend::TestBackend::new(100, 30);
        let mut term = ratatui::Terminal::new(backend).unwrap();
        term.draw(|f| app.draw(f)).unwrap();
        let screen: String = term
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        for want in [
            "Approve?",
            "test-agent",
            "exec-lua",
            "7:test-1",
            "local x = 42",
            "return x",
            "bytes",
        ] {
            assert!(screen.contains(want), "{want} not on screen:\n{screen}");
        }
        // Keys typed for the editor do not answer it.
        tui_handle(&mut app, &h.session, &msg_tx, key('x'));
        assert_eq!(h.session.approvals().len(), 1);
        tui_handle(&mut app, &h.session, &msg_tx, key(answer));
        let r = finish(handle).await;
        assert_eq!(r.is_error == Some(true), want_error, "{answer}: {r:?}");
        while let Ok(e) = events.try_recv() {
            tui_handle(&mut app, &h.session, &msg_tx, Event::Session(e));
        }
        app.pull(&h.session);
        assert!(app.approval().is_none());
    }
    // After `a`, the next call runs without a prompt.
    let r = call(
        &client,
        "exec-lua",
        json!({"traposId": "test-1", "code": "return 1"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true));
    assert!(h.session.approvals().is_empty());
}

/// Every kind of action an agent asks for is answered in the console, and the person's own F5
/// meets the person's policy: denied with a notice, or asked and run after `y`.
#[tokio::test]
async fn the_console_answers_every_kind_and_the_persons_own_runs_meet_their_policy() {
    use trapdesk::tui::{App, AppMsg, Event, handle as tui_handle};
    let h = host_with_policy(
        r#"
[policy.default]
agent = { exec = "ask", write = "ask", read = "ask" }
[[policy.rule]]
computer = "reactor"
person = { exec = "deny" }
[[policy.rule]]
computer = "test-1"
person = { exec = "ask" }
"#,
    )
    .await;
    let _approver = h.session.attach_approver();
    let (client, _) = connect(&h.url, &h.token).await;
    let mut app = App::new(
        Settings::default(),
        trapdesk::tui::theme::Theme::plain(),
        false,
    );
    let (msg_tx, mut msg_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut events = h.session.subscribe();
    let press = |c: KeyCode| Event::Crossterm(CtEvent::Key(KeyEvent::new(c, KeyModifiers::NONE)));
    let mut pump = |app: &mut App| {
        while let Ok(e) = events.try_recv() {
            tui_handle(app, &h.session, &msg_tx, Event::Session(e));
        }
        app.pull(&h.session);
    };

    let mut granted = std::collections::HashSet::new();
    for (tool, args) in calls("test-1") {
        let action = trapdesk::policy::Action::of(tool.parse().unwrap()).unwrap();
        for answer in ['y', 'n', 'a'] {
            let handle = start_call(&client, tool, args.clone()).await;
            let done = tokio::spawn(finish(handle));
            // Asked, or (after `a`, a grant lets it through without a prompt) done.
            crate::support::holds_within(Duration::from_secs(5), || {
                pump(&mut app);
                app.approval().is_some() || done.is_finished()
            })
            .await;
            let asked = app.approval().is_some();
            assert_eq!(asked, !granted.contains(&action), "{tool} {answer}");
            if asked {
                assert_eq!(app.approval().unwrap().trapos_id, "7:test-1");
                tui_handle(&mut app, &h.session, &msg_tx, press(KeyCode::Char(answer)));
            }
            let r = done.await.unwrap();
            let refused = code(&r) == "refused";
            assert_eq!(refused, asked && answer == 'n', "{tool} {answer}: {r:?}");
            if answer == 'a' {
                granted.insert(action);
            }
            pump(&mut app);
        }
        // After `a`, this kind runs without asking on this computer.
        let r = call(&client, tool, args.clone()).await;
        assert_ne!(code(&r), "refused", "{tool}");
        assert!(
            h.session.approvals().is_empty(),
            "{tool} asked again after a"
        );
    }

    // The person's F5 on the reactor: denied, and the console says why.
    app.set_editor_text("print('hi')");
    app.selected = Some("5:reactor".into());
    tui_handle(&mut app, &h.session, &msg_tx, press(KeyCode::F(5)));
    let msg = msg_rx.try_recv().unwrap();
    match msg {
        AppMsg::Notice { text, error } => {
            assert!(
                error && text.contains("denies") && text.contains("person exec"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    // On test-1 the person's policy asks: the prompt shows, `y` runs it.
    let before = h.seen.lock().unwrap().requests.len();
    app.selected = Some("7:test-1".into());
    tui_handle(&mut app, &h.session, &msg_tx, press(KeyCode::F(5)));
    crate::support::holds_within(Duration::from_secs(5), || {
        pump(&mut app);
        app.approval().is_some()
    })
    .await;
    assert_eq!(app.approval().unwrap().origin, Origin::Person);
    tui_handle(&mut app, &h.session, &msg_tx, press(KeyCode::Char('y')));
    crate::support::holds_within(Duration::from_secs(5), || {
        h.seen.lock().unwrap().requests.len() > before
    })
    .await;
    let seen = h.seen.lock().unwrap().requests.clone();
    assert_eq!(seen.last().unwrap().1["code"], "print('hi')");
}

/// A call that waits on something other than the computer (here the person's approval) still
/// ends when its client cancels it: its row in the activity pane is not left running.
#[tokio::test]
async fn a_cancelled_call_waiting_for_approval_leaves_no_row_running() {
    let h = host_with_policy("[policy.default]\nagent = { read = \"ask\" }\n").await;
    let _approver = h.session.attach_approver();
    let (client, _) = connect(&h.url, &h.token).await;
    let handle = start_call(&client, "computer-output", json!({"traposId": "test-1"})).await;
    wait_for_approval(&h).await;
    assert_eq!(h.session.tool_calls_running(), 1);
    client
        .notify_cancelled(rmcp::model::CancelledNotificationParam::new(
            Some(handle.id.clone()),
            Some("stop".into()),
        ))
        .await
        .unwrap();
    // Up to 5 s for the cancel to end the call; the assertion below says what it left.
    crate::support::holds_within(Duration::from_secs(5), || {
        h.session.tool_calls_running() == 0
    })
    .await;
    let calls = h.session.tool_calls();
    assert_eq!(h.session.tool_calls_running(), 0, "{calls:?}");
    assert_eq!(
        calls.last().map(|c| c.status),
        Some(trapdesk::session::Status::Cancelled)
    );
    drop(handle);
}

//! `trapdesk attach`: the console as a client of a headless host over the control
//! channel. A real host (gateway, MCP, control) with an emulated computer running the real Lua
//! client; the real binary attached under tmux; an agent through rmcp's client. Also two
//! consoles attached at once (the first answer wins, the other hears who gave it), the
//! credentials refused, a host that is not there, and the attached console's marker
//! (TestBackend snapshot).
//!
//! tmux is required, as in tests/integration/tui/tui_pty.rs: without it the tmux test fails and
//! says so.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, mcp_fake as fake, tui_common};

use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{TestHost, emulated, start_host_with, wait_until};
use trapdesk::policy::Policy;
use trapdesk::session::screen::Display;
use trapdesk::session::{Answer, Event};
use trapdesk::tui::Hub;

/// How long the screen may take to show what a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

/// A host whose policy asks the person before an agent runs code.
async fn asking_host() -> TestHost {
    start_host_with(|s| {
        s.policy = Policy::from_toml("[policy.default]\nagent = { exec = \"ask\" }\n").unwrap();
        // Where F7's reload reads from (no file there at first: the defaults above).
        s.config_path = Some(s.data_dir.join("config.toml"));
    })
    .await
}

fn base(host: &TestHost) -> String {
    format!("http://{}", host.mcp_addr)
}

fn token_file(host: &TestHost) -> std::path::PathBuf {
    host.dir.path().join("mcp-token")
}

/// One tmux server of its own running `trapdesk attach` in a 100x30 terminal; the shell prints
/// the exit status when it ends and idles so the pane can still be read.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn attach(host: &TestHost, name: &str) -> Tmux {
        // The person's own data dir is another than the host's (as for a service user):
        // the host is named by URL and the credential given as a file.
        let mine = host.dir.path().join(format!("person-{name}"));
        Tmux::run(&format!(
            "attach {} --token-file '{}' --name {name} --data-dir '{}'",
            base(host),
            token_file(host).display(),
            mine.display()
        ))
    }

    /// `trapdesk ARGS` in the terminal.
    fn run(args: &str) -> Tmux {
        static N: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "trapdesk-attach-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        match Command::new("tmux").arg("-V").output() {
            Ok(o) if o.status.success() => {}
            _ => panic!("tmux is not installed: the attach test needs it (apt-get install tmux)"),
        }
        let bin = env!("CARGO_BIN_EXE_trapdesk");
        let cmd = format!("'{bin}' {args}; echo \"attach exited: $?\"; sleep 600");
        let t = Tmux { socket };
        let out = t.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "a",
            "-x",
            "100",
            "-y",
            "30",
            &cmd,
        ]);
        assert!(out.status.success(), "tmux new-session failed: {out:?}");
        t
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .output()
            .unwrap()
    }

    fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-t", "a"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn text(&self, s: &str) {
        self.tmux(&["send-keys", "-t", "a", "-l", s]);
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "a"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Polls the screen (without blocking the runtime) until it shows `needle`.
    async fn wait_text(&self, needle: &str) -> String {
        let mut screen = String::new();
        let shown = crate::support::holds_within(PATIENCE, || {
            screen = self.screen();
            screen.contains(needle)
        })
        .await;
        assert!(
            shown,
            "waited {PATIENCE:?} for {needle:?}; the screen is:\n{screen}"
        );
        screen
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let socket = self.tmux(&["display-message", "-p", "#{socket_path}"]);
        let _ = self.tmux(&["kill-server"]);
        let socket = String::from_utf8_lossy(&socket.stdout).trim().to_owned();
        if !socket.is_empty() {
            let _ = std::fs::remove_file(socket);
        }
    }
}

/// The whole round: a headless host with an emulated computer, the console attached
/// under tmux runs code and sees its output, approves an agent's call, detaches (the host and
/// the agent go on; `ask` now refuses at once), attaches again and sees the same state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attached_console_runs_approves_detaches_and_finds_the_same_state() {
    let host = asking_host().await;
    let _c = emulated(&host, 3, Some("miner")).await;
    let (agent, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    let agent = std::sync::Arc::new(agent);

    let t = Tmux::attach(&host, "alice");
    t.wait_text("attached to").await;
    t.wait_text("3:miner").await;
    assert_eq!(
        host.session.approvers(),
        1,
        "the attached console is the approver"
    );

    // Code from the attached console's editor runs on the computer; its output comes back.
    t.text(r#"print("hello from attach") return 6*7"#);
    t.keys(&["F5"]);
    t.wait_text("hello from attach").await;
    t.wait_text("→ 42").await;

    // An agent's call waits for the attached person, who approves it; it runs a while.
    let call = {
        let agent = agent.clone();
        tokio::spawn(async move {
            fake::call(
                &agent,
                "exec-lua",
                json!({"traposId": "miner", "code": "print('agent was here') sleep(4) return 'ok'"}),
            )
            .await
        })
    };
    // The prompt shows the code.
    t.wait_text("agent was here").await;
    t.keys(&["y"]);
    wait_until(|| host.session.pending().iter().any(|p| p.sent)).await;
    t.wait_text("Requests 1").await;

    // Detach while the agent's call runs: the console ends at once, the host and the call
    // do not.
    t.keys(&["C-c"]);
    let screen = t.wait_text("attach exited:").await;
    assert!(screen.contains("attach exited: 0"), "{screen}");
    assert!(screen.contains("detached from"), "{screen}");
    wait_until(|| host.session.approvers() == 0).await;
    assert!(host.session.computer("3:miner").unwrap().online);
    assert_eq!(host.session.pending().len(), 1, "the agent's call goes on");

    // With nobody attached, `ask` refuses at once.
    let started = Instant::now();
    let r = fake::call(
        &agent,
        "exec-lua",
        json!({"traposId": "miner", "code": "return 1"}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let code = fake::data(&r)["error"]["code"].clone();
    assert_eq!(code, "no_approver", "{}", fake::text(&r));

    // Attached again: the same computers, output, requests and agent activity; the agent's
    // call ends while this console watches.
    let t2 = Tmux::attach(&host, "alice");
    let screen = t2.wait_text("hello from attach").await;
    assert!(screen.contains("3:miner"), "{screen}");
    t2.wait_text("Requests 1").await;
    let r = call.await.unwrap();
    assert_ne!(r.is_error, Some(true), "the agent kept working: {r:?}");
    t2.wait_text(r#"→ "ok""#).await;
    t2.wait_text("Requests 0").await;
    let r = fake::call(&agent, "list-files", json!({"traposId": "miner"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    t2.wait_text("list-files").await;
    assert_eq!(host.session.approvers(), 1);
    drop(t2);
    wait_until(|| host.session.approvers() == 0).await;
    host.host.stop().await;
}

/// `trapdesk attach` with no URL finds the headless host running on the data dir (a real
/// `trapdesk --mcp-only --demo 1` process) through its host.json and local token; a host that
/// stops under it (SIGTERM) ends the console with exit code 3, saying the host is stopping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_finds_the_headless_host_of_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let mut host = tokio::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args(["--mcp-only", "--demo", "1", "--gateway-bind", "127.0.0.1:0"])
        .args(["--mcp-bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_until(|| dir.path().join("host.json").exists()).await;
    let t = Tmux::run(&format!("attach --data-dir '{}'", dir.path().display()));
    t.wait_text("attached to").await;
    // The demo computer links after the host starts (slowly on a loaded machine).
    t.wait_text("1:miner").await;
    t.wait_text("idle").await;
    t.text("print(os.getComputerID() + 100)");
    t.keys(&["F5"]);
    t.wait_text("101").await;
    // The host is stopped (systemd's SIGTERM): the console says so and exits 3.
    let pid = host.id().unwrap().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let screen = t.wait_text("attach exited:").await;
    assert!(screen.contains("attach exited: 3"), "{screen}");
    assert!(screen.contains("lost the host"), "{screen}");
    assert!(screen.contains("the host is stopping"), "{screen}");
    let _ = host.wait().await;
}

/// Every call the console makes works over the connection, against the host's session: runs
/// (their output and pending requests in the mirror, with clocks), a run refused, cancel,
/// list-files (F6's completion), the screen watched and its frame, the keyboard held and
/// input typed, the stop for all agents, the policy reload, the secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hub_call_works_over_the_connection() {
    use trapdesk::protocol::{Kind, RequestBody};
    let host = asking_host().await;
    let _c = emulated(&host, 5, Some("mine")).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let c = trapdesk::commands::attach::connect(&base(&host), &host.local_token, "carol")
        .await
        .unwrap();
    let hub = c.hub.clone();
    c.spawn(stop.clone());
    assert_eq!(hub.secret(), support::SECRET);
    assert!(hub.policy_lines().iter().any(|l| l.contains("exec = ask")));
    assert!(
        hub.policy_source().starts_with("defaults"),
        "{}",
        hub.policy_source()
    );
    assert!(
        hub.computers()
            .iter()
            .any(|c| c.trapos_id == "5:mine" && c.online)
    );

    // A run: output in the mirror.
    hub.run(
        "mine",
        RequestBody::from_value(Kind::ExecLua, json!({"code": "print('over the wire')"})).unwrap(),
        None,
    )
    .await
    .unwrap();
    wait_until(|| {
        hub.output_since("5:mine", 0).iter().any(|i| {
            matches!(&i.entry, trapdesk::session::OutputEntry::Line { text, .. } if text == "over the wire")
        })
    })
    .await;
    let err = hub
        .run(
            "nobody",
            RequestBody::from_value(Kind::ExecLua, json!({"code": "return 1"})).unwrap(),
            None,
        )
        .await
        .unwrap_err();
    assert!(err.contains("nobody"), "{err}");

    // A long run: pending with its clock, then cancelled from the console.
    let deadline = Some(Duration::from_secs(120));
    hub.run(
        "mine",
        RequestBody::from_value(Kind::ExecLua, json!({"code": "sleep(60)"})).unwrap(),
        deadline,
    )
    .await
    .unwrap();
    let mut p = None;
    wait_until(|| {
        p = hub.pending().into_iter().next();
        p.is_some()
    })
    .await;
    let p = p.unwrap();
    let left = p
        .deadline
        .saturating_duration_since(tokio::time::Instant::now());
    assert!(left > Duration::from_secs(100), "{left:?}");
    hub.cancel(&p.request_id).await.unwrap();
    wait_until(|| hub.pending().is_empty()).await;
    assert!(hub.cancel(&p.request_id).await.is_err(), "ended already");

    // F6's completion.
    let listing = hub.list_files("mine", "/").await.unwrap();
    assert!(listing.to_string().contains("rom"), "{listing}");

    // The Screen view and F8.
    let terminal = Display::Terminal;
    let watch = hub.watch_screen("5:mine", &terminal).unwrap();
    wait_until(|| hub.screen("5:mine", &terminal).is_some()).await;
    let keyboard = hub.hold_keyboard("5:mine");
    wait_until(|| host.session.keyboard_held("5:mine")).await;
    hub.input("mine", vec![json!({"text": "zz"})])
        .await
        .unwrap();
    wait_until(|| {
        hub.screen("5:mine", &terminal)
            .is_some_and(|f| f.rows.iter().any(|r| r.text_string().contains("zz")))
    })
    .await;
    drop(keyboard);
    wait_until(|| !host.session.keyboard_held("5:mine")).await;
    drop(watch);
    // A click on a monitor's cell: the attach channel carries the touch to the computer, where
    // a program waiting for it gets `monitor_touch` with the monitor and the cell.
    hub.run(
        "mine",
        RequestBody::from_value(
            Kind::ExecLua,
            json!({"code": "periphemu.create('top', 'monitor') \
            local _, side, x, y = os.pullEvent('monitor_touch') \
            print('touched ' .. side .. ' ' .. x .. ',' .. y)"}),
        )
        .unwrap(),
        None,
    )
    .await
    .unwrap();
    let mut refused = Vec::new();
    // Until the program made the monitor, the computer refuses the touch (no such monitor).
    crate::support::wait_ok(Duration::from_secs(10), async || {
        hub.touch("5:mine", "top", 2, 3).await.map_err(|e| {
            refused.push(e);
            format!("never touched: {refused:?}")
        })
    })
    .await;
    wait_until(|| {
        hub.output_since("5:mine", 0).iter().any(|i| {
            matches!(&i.entry, trapdesk::session::OutputEntry::Line { text, .. } if text == "touched top 2,3")
        })
    })
    .await;

    // F4 and F7's reload.
    assert!(hub.pause().await.contains("stopped"));
    wait_until(|| hub.paused() && host.session.paused().is_some()).await;
    assert!(hub.resume().await.contains("run again"));
    wait_until(|| !hub.paused()).await;
    std::fs::write(
        host.dir.path().join("config.toml"),
        "[policy.default]\nagent = { exec = \"deny\" }\n",
    )
    .unwrap();
    let source = hub.reload_policy().await.unwrap();
    assert!(source.contains("config.toml"), "{source}");
    wait_until(|| hub.policy_lines().iter().any(|l| l.contains("exec = deny"))).await;
    std::fs::write(host.dir.path().join("config.toml"), "[policy.default\n").unwrap();
    let refused = hub.reload_policy().await.unwrap_err();
    assert!(!refused.is_empty());

    stop.cancel();
    wait_until(|| host.session.approvers() == 0).await;
    host.host.stop().await;
}

/// Two terminals attached: the agent's call is asked in both; alice answers, bob's prompt
/// closes and his status line says who answered and when.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_terminals_attached_the_other_sees_who_answered() {
    let host = asking_host().await;
    let _c = emulated(&host, 6, Some("quarry")).await;
    let (agent, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    let alice = Tmux::attach(&host, "alice");
    let bob = Tmux::attach(&host, "bob");
    alice.wait_text("6:quarry").await;
    bob.wait_text("6:quarry").await;
    wait_until(|| host.session.approvers() == 2).await;
    let call = tokio::spawn(async move {
        fake::call(
            &agent,
            "exec-lua",
            json!({"traposId": "quarry", "code": "return 'dug'"}),
        )
        .await
    });
    alice.wait_text("return 'dug'").await;
    bob.wait_text("return 'dug'").await;
    alice.keys(&["y"]);
    let r = call.await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let screen = bob.wait_text("approved by alice at ").await;
    assert!(
        screen.contains("exec-lua on 6:quarry for test-agent"),
        "{screen}"
    );
    // Alice's own console does not tell her what she did.
    let mine = alice.screen();
    assert!(!mine.contains("approved by alice"), "{mine}");
    drop((alice, bob));
    wait_until(|| host.session.approvers() == 0).await;
    host.host.stop().await;
}

/// Two consoles attached: both are approvers, the first answer wins, the second finds nothing
/// to answer and both hear who answered (the other says it on its status line).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_attached_the_first_answer_wins_and_the_other_hears_who() {
    let host = asking_host().await;
    let _c = emulated(&host, 4, Some("farm")).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let connect = |name: &'static str| {
        let (base, token, stop) = (base(&host), host.local_token.clone(), stop.clone());
        async move {
            let c = trapdesk::commands::attach::connect(&base, &token, name)
                .await
                .unwrap();
            let hub = c.hub.clone();
            c.spawn(stop);
            hub
        }
    };
    let alice = connect("alice@box").await;
    let bob = connect("alice@box").await;
    assert_eq!(bob.name(), "alice@box#2", "two of one name are told apart");
    assert_eq!(host.session.approvers(), 2);
    let mut bob_hears = bob.subscribe();

    let (agent, _) = fake::connect(&host.mcp_url(), &host.local_token).await;
    let call = tokio::spawn(async move {
        fake::call(
            &agent,
            "exec-lua",
            json!({"traposId": "farm", "code": "return 1"}),
        )
        .await
    });
    // Both mirrors get the approval.
    let mut id = None;
    wait_until(|| {
        id = alice.approvals().first().map(|a| a.request_id.clone());
        id.is_some() && !bob.approvals().is_empty()
    })
    .await;
    let id = id.unwrap();
    let left = bob.approvals()[0]
        .deadline
        .saturating_duration_since(tokio::time::Instant::now());
    assert!(
        left > Duration::from_secs(5),
        "the countdown crossed over: {left:?}"
    );

    alice.answer(&id, Answer::Yes).await.unwrap();
    let late = bob.answer(&id, Answer::No).await;
    assert!(late.is_err(), "the second answer must find nothing waiting");
    let r = call.await.unwrap();
    assert_ne!(r.is_error, Some(true), "alice's yes ran it: {r:?}");

    let heard = tokio::time::timeout(PATIENCE, async {
        loop {
            if let Ok(Event::AnsweredBy { by, answer, .. }) = bob_hears.recv().await {
                return (by, answer);
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(heard, ("alice@box".to_owned(), Answer::Yes));
    // The log (and so the transcript and `session-log`) says which console approved.
    let approved = host
        .session
        .recent(usize::MAX)
        .into_iter()
        .find(|e| e.event.as_str() == "approved")
        .unwrap();
    assert_eq!(approved.detail, "exec-lua on 4:farm by alice@box");
    // What bob's console says of it.
    let mut app = tui_common::app();
    app.me = bob.name();
    app.note(&Event::AnsweredBy {
        request_id: id.clone(),
        by: heard.0.clone(),
        answer: heard.1,
        what: "exec-lua on 4:farm for test-agent".into(),
        at_ms: 1_700_000_000_000,
    });
    let notice = app.notice.clone().unwrap().0;
    assert!(
        notice.starts_with("approved by alice@box at ") && notice.contains("exec-lua on 4:farm"),
        "{notice}"
    );
    // Its own answers it does not repeat to itself.
    app.notice = None;
    app.note(&Event::AnsweredBy {
        request_id: id,
        by: bob.name(),
        answer: Answer::No,
        what: String::new(),
        at_ms: 0,
    });
    assert_eq!(app.notice, None);

    stop.cancel();
    wait_until(|| host.session.approvers() == 0).await;
    host.host.stop().await;
}

async fn attach_cli(args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    cmd.arg("attach")
        .args(args)
        .env_remove("TRAPDESK_CONTROL_TOKEN");
    tokio::time::timeout(PATIENCE, cmd.output())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_token_or_a_wrong_one_is_refused_saying_which_credential() {
    let host = asking_host().await;
    let agent = trapdesk::trust::agents::add(host.dir.path(), "builder").unwrap();
    let f = host.dir.path().join("agent-token");
    std::fs::write(&f, &agent).unwrap();
    for token in [agent.as_str(), "td_not-a-token-at-all"] {
        std::fs::write(&f, token).unwrap();
        let out = attach_cli(&[&base(&host), "--token-file", f.to_str().unwrap()]).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(
            err.contains("refused the token in") && err.contains("an agent's token does not open"),
            "{err}"
        );
    }
    assert_eq!(host.session.approvers(), 0);
    host.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_host_there_is_a_clear_error_and_exit_3() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("token");
    std::fs::write(&f, "td_whatever").unwrap();
    let out = attach_cli(&[
        &format!("http://127.0.0.1:{port}"),
        "--token-file",
        f.to_str().unwrap(),
    ])
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("no trapdesk answers at"), "{err}");
    // And with no URL, on a data dir where no host runs.
    let out = attach_cli(&["--data-dir", dir.path().to_str().unwrap()]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("no trapdesk is running on"), "{err}");
}

/// The attached console says so, and to which host, on the editor's border.
#[tokio::test]
async fn the_attached_console_names_its_host() {
    let mut app = tui_common::app();
    app.set_computers(tui_common::three_computers());
    app.attached = Some("trapdesk@mc-server at 127.0.0.1:7000".into());
    insta::assert_snapshot!(tui_common::screen(&app, 100, 30));
}

/// Detaching loses nothing (the host keeps every request), so an attached console does not
/// ask before it leaves; the host's own console still does.
#[tokio::test]
async fn an_attached_console_detaches_without_asking_about_pending_requests() {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use trapdesk::session::Origin;
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    for attached in [false, true] {
        let mut app = tui_common::app();
        app.set_computers(tui_common::three_computers());
        let p = tui_common::pending(&app, "r1", "7:miner", Origin::Person, 1000);
        app.set_pending(vec![p]);
        app.attached = attached.then(|| "trapdesk@mc at 127.0.0.1:7000".to_owned());
        app.on_key(ctrl_c);
        assert_eq!(app.quit, attached, "attached: {attached}");
        assert_eq!(app.popup.is_some(), !attached, "attached: {attached}");
    }
}

//! Linking as a real computer does it: the installer served by the gateway, run inside an
//! emulated computer, links it; a linked computer comes back after the host restarts.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use serde_json::json;
use support::{SECRET, emulated, start_host, start_host_with, wait_until};
use trapdesk::emu::{Computer, ComputerSpec};
use trapdesk::session::{Origin, RequestSpec};

/// Boots a computer without the client, its disk prepared by `prepare`.
fn bare_computer(
    host: &support::TestHost,
    id: u64,
    label: &str,
    prepare: impl FnOnce(&std::path::Path),
) -> (Computer, std::path::PathBuf) {
    let root = host.dir.path().join(label);
    std::fs::create_dir_all(&root).unwrap();
    prepare(&root);
    let computer = Computer::spawn(
        ComputerSpec::new(id, Some(label.into()), root.clone()),
        tokio::runtime::Handle::current(),
    )
    .unwrap();
    (computer, root)
}

/// Does on `computer` what `wget run http://HOST/install.lua SECRET` does: fetch, load, run
/// with the argument. The installer starts the client and then keeps the player's shell
/// running, so it does not return: tests watch the session and abort the task.
fn run_installer(
    host: &support::TestHost,
    computer: &Computer,
) -> tokio::task::JoinHandle<Result<String, trapdesk::emu::EmuError>> {
    run_installer_with(host, computer, SECRET)
}

fn run_installer_with(
    host: &support::TestHost,
    computer: &Computer,
    secret: &str,
) -> tokio::task::JoinHandle<Result<String, trapdesk::emu::EmuError>> {
    let code = format!(
        r#"local h = assert(http.get("http://{}/install.lua"))
           local src = h.readAll() h.close()
           local f = assert(load(src, "install.lua", "t", _ENV))
           f("{secret}")"#,
        host.gateway_addr
    );
    let c = computer.clone();
    tokio::spawn(async move { c.run_lua(&code).await })
}

/// A wrong secret is said on the computer, with what to do, and shows in the session log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installer_says_when_the_host_refuses_the_secret() {
    let host = start_host().await;
    let (computer, _root) = bare_computer(&host, 6, "wrong", |_| {});
    let run = run_installer_with(&host, &computer, "not-the-secret");
    let screen = || computer.screen_text().join("\n");
    wait_until(|| screen().contains("trapdesk refused this computer")).await;
    let text = screen();
    assert!(text.contains("set sandbox.password"), "{text}");
    assert!(!text.contains("Linked to trapdesk"), "{text}");
    wait_until(|| {
        host.session
            .recent(50)
            .iter()
            .any(|e| e.event.as_str() == "refused")
    })
    .await;
    let e = host
        .session
        .recent(50)
        .into_iter()
        .find(|e| e.event.as_str() == "refused")
        .unwrap();
    assert_eq!(e.who.as_deref(), Some("6:wrong"));
    assert!(e.detail.contains("wrong secret"), "{e:?}");
    run.abort();
    computer.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installer_links_a_fresh_computer() {
    let host = start_host().await;
    let (computer, root) = bare_computer(&host, 5, "fresh", |_| {});
    let run = run_installer(&host, &computer);
    wait_until(|| host.session.computer("5:fresh").is_some_and(|c| c.online)).await;
    // The installer waited for the welcome and said so.
    wait_until(|| {
        computer
            .screen_text()
            .join("\n")
            .contains("Linked to trapdesk as 5:fresh")
    })
    .await;
    assert!(root.join("startup.lua").is_file());
    assert!(root.join("trapdesk/servers/sandbox.lua").is_file());
    let r = host
        .session
        .request(
            "fresh",
            RequestSpec::new(
                trapdesk::protocol::Kind::ExecLua,
                json!({"code": "return settings.get('sandbox.url')"}),
            ),
            Origin::Person,
        )
        .await
        .unwrap();
    assert_eq!(
        r["returns"][0]["value"],
        format!("ws://{}/gateway", host.gateway_addr)
    );
    // Reboot: the installed startup links it again.
    let before = host.session.computer("5:fresh").unwrap().connected_at;
    computer.reboot();
    // The new link may replace the old one before the old socket's close is seen, so wait
    // for a newer connection rather than for an offline moment.
    wait_until(|| {
        host.session
            .computer("5:fresh")
            .is_some_and(|c| c.online && c.connected_at > before)
    })
    .await;
    run.abort();
    computer.shutdown();
}

/// An old-style `/startup` *file* (CC runs it as the startup program, before `/startup.lua`):
/// the installer moves it to `/startup.player.lua`, where the wrapper runs it at every boot,
/// and `/startup.lua` is the wrapper; the computer links.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installer_moves_a_startup_file_aside_and_still_links() {
    let host = start_host().await;
    let (computer, root) = bare_computer(&host, 6, "oldstyle", |root| {
        std::fs::write(root.join("startup"), "print('mine')\n").unwrap();
    });
    let run = run_installer(&host, &computer);
    wait_until(|| {
        host.session
            .computer("6:oldstyle")
            .is_some_and(|c| c.online)
    })
    .await;
    assert!(!root.join("startup").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("startup.player.lua")).unwrap(),
        "print('mine')\n"
    );
    assert!(
        std::fs::read(root.join("startup.lua"))
            .unwrap()
            .starts_with(b"-- trapdesk-startup-wrapper")
    );
    assert!(root.join("trapdesk/startup.lua").is_file());
    run.abort();
    computer.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_computer_relinks_after_the_host_restarts() {
    let first = start_host().await;
    let computer = emulated(&first, 1, Some("miner")).await;
    let addr = first.gateway_addr;
    let support::TestHost { host, dir } = first;
    host.stop().await;
    let second = start_host_with(|s| s.gateway_bind = addr).await;
    wait_until(|| {
        second
            .session
            .computer("1:miner")
            .is_some_and(|c| c.online && !c.serves.is_empty())
    })
    .await;
    let r = second
        .session
        .request(
            "miner",
            RequestSpec::new(
                trapdesk::protocol::Kind::ExecLua,
                json!({"code": "return 42"}),
            ),
            Origin::Person,
        )
        .await
        .unwrap();
    assert_eq!(r["returns"][0]["value"], 42);
    computer.shutdown();
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_computers_link_with_sample_programs() {
    let mut host = start_host().await;
    host.start_demo(2);
    wait_until(|| {
        ["1:miner", "2:farm"].iter().all(|id| {
            host.session
                .computer(id)
                .is_some_and(|c| c.online && c.serves.iter().any(|s| s == "run-file"))
        })
    })
    .await;
    let r = host
        .session
        .request(
            "farm",
            RequestSpec::new(
                trapdesk::protocol::Kind::RunFile,
                json!({"path": "programs/dig.lua", "args": ["2", "deep shaft"]}),
            ),
            Origin::Person,
        )
        .await
        .unwrap();
    assert_eq!(r["ok"], true, "{r}");
    assert!(
        r["output"]
            .as_str()
            .unwrap()
            .starts_with("Digging \"deep shaft\" down 2 layers\nlayer 1: "),
        "{r}"
    );
    assert_eq!(r["returns"][0]["value"], 2);
}

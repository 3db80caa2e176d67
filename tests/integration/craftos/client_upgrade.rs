//! A computer installed by an older host is brought up to date without a player: the 0.1
//! client (frozen in `tests/fixtures/client-0.1.0`, the `lua/` of the last release before
//! clients upgraded themselves) links, the host sees a trapdesk client that names no
//! `client_version` and upgrades it once through `exec-lua`; the files on disk become the served
//! ones and the startup arrangement is migrated (the wrapper at `/startup.lua`, no
//! `/startup/trapdesk.lua`), while the old client keeps serving. At the next boot the new client
//! links, names its version, and the host leaves it alone. One body, both runtimes.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{self, craftos, world};

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::world::on_both_runtimes;
use serde_json::json;
use support::{SECRET, start_host};
use trapdesk::protocol::Kind;
use trapdesk::session::{Origin, RequestSpec};
use world::Runtime;

/// The frozen 0.1 client, as its installer laid it out: every file under `/trapdesk/`, and
/// `startup.lua` also as `/startup/trapdesk.lua` (the player's `/startup.lua` untouched).
fn lay_out_old_client(root: &Path) {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/client-0.1.0");
    fn copy(from: &Path, to: &Path) {
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                std::fs::create_dir_all(&target).unwrap();
                copy(&e.path(), &target);
            } else if e.file_name() != "README.md" {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }
    std::fs::create_dir_all(root.join("trapdesk")).unwrap();
    copy(&fixture, &root.join("trapdesk"));
    std::fs::create_dir_all(root.join("startup")).unwrap();
    std::fs::copy(
        fixture.join("startup.lua"),
        root.join("startup/trapdesk.lua"),
    )
    .unwrap();
}

/// The computer, by runtime (dropping it stops CraftOS-PC).
enum Machine {
    Emu(trapdesk::emu::Computer),
    Craft(craftos::CraftComputer),
}

async fn an_old_client_is_upgraded_by_the_host(rt: Runtime) {
    let host = start_host().await;
    let port = host.gateway_addr.port();
    let url = format!("ws://127.0.0.1:{port}/gateway");
    let (files, machine) = match rt {
        Runtime::Emulator => {
            let root = host.dir.path().join("computers/1");
            std::fs::create_dir_all(&root).unwrap();
            // The settings as any install writes them; then the new client's files are
            // replaced by the old client's layout.
            trapdesk::emu::install_client(&root, &url, SECRET).unwrap();
            std::fs::remove_dir_all(root.join("trapdesk")).unwrap();
            std::fs::remove_file(root.join("startup.lua")).unwrap();
            lay_out_old_client(&root);
            let spec = trapdesk::emu::ComputerSpec::new(1, Some("old".into()), root.clone());
            let c =
                trapdesk::emu::Computer::spawn(spec, tokio::runtime::Handle::current()).unwrap();
            (root, Machine::Emu(c))
        }
        Runtime::CraftOs => {
            // CraftOS-PC starts its process at once: its startup waits for the old client's
            // files (written below), sets the settings the old installer set and reboots, so
            // the old client starts as it does at every boot (from /startup/trapdesk.lua).
            let startup = format!(
                "while not fs.exists(\"/go\") do sleep(0.1) end\n\
                 fs.delete(\"/go\")\n\
                 settings.set(\"sandbox.url\", \"{url}\")\n\
                 settings.set(\"sandbox.password\", \"{SECRET}\")\n\
                 settings.save()\n\
                 fs.delete(shell.getRunningProgram())\n\
                 os.reboot()\n"
            );
            let c = craftos::CraftComputer::spawn_program(&craftos::launcher(), 1, "old", &startup);
            let root = c.files();
            lay_out_old_client(&root);
            std::fs::write(root.join("go"), "").unwrap();
            (root, Machine::Craft(c))
        }
    };

    let session = host.session.clone();
    let id = "1:old";
    let limit = rt.patience(Duration::from_secs(60));
    let linked = |client: &'static str| {
        let session = session.clone();
        let log = files.join("trapdesk/daemon.log");
        async move {
            let serving = || {
                session.computer(id).is_some_and(|c| {
                    c.online
                        && c.client.as_deref() == Some(client)
                        && c.serves.iter().any(|s| s == "exec-lua")
                })
            };
            if support::holds_within(limit, serving).await {
                return Ok(());
            }
            Err(format!(
                "never linked as {client}: {:?}; daemon.log: {}",
                session.computer(id),
                std::fs::read_to_string(&log).unwrap_or_default()
            ))
        }
    };
    let screen = || match &machine {
        Machine::Craft(c) => c.screen(),
        Machine::Emu(c) => c.screen_text().join("\n"),
    };
    if let Err(e) = linked("trapdesk-lua/0.1.0").await {
        panic!("{e}\nscreen:\n{}", screen());
    }

    // The host upgrades it: the served files, with their version, and the startup migrated.
    let version = trapdesk::lua_files::version();
    // The installer writes the files, then the version, then the startup arrangement.
    let upgraded = || {
        std::fs::read_to_string(files.join("trapdesk/version"))
            .unwrap_or_default()
            .trim()
            == version
            && std::fs::read(files.join("startup.lua"))
                .is_ok_and(|w| w.starts_with(b"-- trapdesk-startup-wrapper"))
            && !files.join("startup/trapdesk.lua").exists()
    };
    support::wait_for(limit, upgraded, || {
        format!("never upgraded; log: {:?}", session.recent(20))
    })
    .await;
    for (path, bytes) in trapdesk::lua_files::FILES {
        if *path == "install.lua" {
            continue;
        }
        let on_disk = std::fs::read(files.join("trapdesk").join(path))
            .unwrap_or_else(|e| panic!("{path} not written: {e}"));
        assert_eq!(&on_disk[..], *bytes, "{path} differs from the served file");
    }
    let wrapper =
        String::from_utf8_lossy(&std::fs::read(files.join("startup.lua")).unwrap()).into_owned();
    assert!(
        wrapper.starts_with("-- trapdesk-startup-wrapper"),
        "{wrapper}"
    );
    assert!(!files.join("startup/trapdesk.lua").exists());

    // The old client still serves until the computer boots again.
    let r = session
        .request(
            id,
            RequestSpec::new(Kind::ExecLua, json!({"code": "return 1 + 1"})),
            Origin::Person,
        )
        .await
        .unwrap();
    assert_eq!(r["ok"], true, "{r}");

    // A reboot (the old client's screen server serves it): the new client links, names its
    // version, and is not upgraded again.
    let _ = session
        .request(
            id,
            RequestSpec::new(Kind::Input, json!({"steps": [{"key": "reboot"}]})),
            Origin::Person,
        )
        .await;
    if let Err(e) = linked("trapdesk-lua/0.2.0").await {
        panic!("{e}\nscreen:\n{}", screen());
    }
    // The quiet period is the test: a second upgrade, were there one, would be asked meanwhile.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let upgrades = session
        .recent(500)
        .iter()
        .filter(|e| e.who.as_deref() == Some("host") && e.event.as_str() == "request")
        .count();
    assert_eq!(
        upgrades,
        1,
        "the host upgrades once: {:?}",
        session.recent(50)
    );
}

on_both_runtimes!(an_old_client_is_upgraded_by_the_host);

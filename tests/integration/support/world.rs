//! One test body on both runtimes: a host, its computers and an MCP client named `test-agent`,
//! the computers either emulated (`crates/trapdesk-emu/src`, always available) or headless CraftOS-PC (a real
//! CC runtime, `tests/integration/support/craftos.rs`). A test file writes each behaviour once, as
//! an `async fn body(rt: Runtime)`, and [`on_both_runtimes!`] makes its two tests:
//!
//! ```ignore
//! use crate::support::world::{Runtime, World, on_both_runtimes};
//!
//! async fn my_case(rt: Runtime) {
//!     let w = World::boot(rt, &["miner"]).await;
//!     let r = w.call("exec-lua", json!({"traposId": "miner", "code": "return 1"})).await;
//! }
//!
//! // `my_case_on_the_emulator` and `my_case_on_craftos_pc` (ignored without CraftOS-PC).
//! on_both_runtimes!(my_case);
//! ```
//!
//! Where the runtimes differ in a way the behaviour does not (CraftOS-PC is slower, its ROM
//! has more programs, its headless screen is always 51x19 unless started in raw mode), the
//! body asks [`Runtime`] and says why in a comment.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rmcp::model::{CallToolResult, ProgressNotificationParam};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::craftos::{self, CraftComputer};
use crate::support::mcp_fake::{Client, call, connect};
use crate::support::{SECRET, TestHost, emulated_with, start_host_with, wait_for};

/// Two tests from one `async fn body(rt: Runtime)`: `<name>_on_the_emulator`, and
/// `<name>_on_craftos_pc`, which is ignored with the reason when the build has no CraftOS-PC
/// (`cfg(craftos_pc)`, set by `build.rs`), so it never passes without running.
///
/// - `on_both_runtimes!(body)` names the tests after the body;
/// - `on_both_runtimes!(name: body)` names them `name_on_...`;
/// - `on_both_runtimes!(#[ignore = "why"] body)` ignores both (a measurement run on demand).
// examples/craftos_harness includes this module and makes no tests.
#[allow(unused_macros)]
macro_rules! on_both_runtimes {
    ($body:ident) => {
        $crate::support::world::on_both_runtimes!($body: $body);
    };
    ($name:ident : $body:ident) => {
        pastey::paste! {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn [<$name _on_the_emulator>]() {
                $body($crate::support::world::Runtime::Emulator).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[cfg_attr(
                not(craftos_pc),
                ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary"
            )]
            async fn [<$name _on_craftos_pc>]() {
                $body($crate::support::world::Runtime::CraftOs).await;
            }
        }
    };
    (#[ignore = $why:literal] $body:ident) => {
        pastey::paste! {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = $why]
            async fn [<$body _on_the_emulator>]() {
                $body($crate::support::world::Runtime::Emulator).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = $why]
            async fn [<$body _on_craftos_pc>]() {
                $body($crate::support::world::Runtime::CraftOs).await;
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use on_both_runtimes;

/// Which runtime a test body runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// The embedded emulator (`crates/trapdesk-emu/src`), in the test process or as a `trapdesk emulate`
    /// process ([`Spec::process`]).
    Emulator,
    /// Headless CraftOS-PC, named by `CRAFTOS_PC` (a test on it is ignored without it).
    CraftOs,
}

impl Runtime {
    /// The runtime's name in printed figures and failure messages.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Emulator => "emulator",
            Runtime::CraftOs => "CraftOS-PC",
        }
    }

    /// `d` on the emulator, twice `d` on CraftOS-PC: a deadline for work that takes longer on a
    /// real runtime (a C Lua with CC's event loop and its own HTTP stack, one process per
    /// computer on cores shared with the test) without being a different behaviour.
    pub fn patience(self, d: Duration) -> Duration {
        match self {
            Runtime::Emulator => d,
            Runtime::CraftOs => d * 2,
        }
    }

    /// How long booting and linking may take.
    pub fn link_timeout(self) -> Duration {
        match self {
            Runtime::Emulator => Duration::from_secs(30),
            Runtime::CraftOs => craftos::LINK_TIMEOUT,
        }
    }
}

/// What one computer is. Turtles and pocket computers are emulator-only: CraftOS-PC has no
/// turtle or pocket computer (a body on it panics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Kind {
    /// A computer (51x19).
    #[default]
    Computer,
    /// A turtle (39x13, the `turtle` API), with [`Spec::fuel`] and [`Spec::slots`].
    Turtle,
    /// A pocket computer (26x20, the `pocket` API).
    Pocket,
}

impl Kind {
    /// `trapdesk emulate --kind`'s word for it.
    pub fn flag(self) -> &'static str {
        match self {
            Kind::Computer => "computer",
            Kind::Turtle => "turtle",
            Kind::Pocket => "pocket",
        }
    }
}

/// How one computer is started beyond the defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spec {
    /// A computer, a turtle or a pocket computer (emulator only).
    pub kind: Kind,
    /// A turtle's fuel at boot (0 unless set).
    pub fuel: Option<u32>,
    /// A turtle's items at boot: (slot 1..=16, item name, count). Not for an emulate process.
    pub slots: &'static [(usize, &'static str, u32)],
    /// The terminal's size (columns, rows), e.g. a turtle's 39x13.
    pub size: Option<(u16, u16)>,
    /// On the emulator, run the computer as a `trapdesk emulate` process instead of in the test
    /// process, so that [`World::kill9`] kills it as kill -9 would (CraftOS-PC computers are
    /// always processes).
    pub process: bool,
    /// On the emulator, a disk of this many bytes instead of a default computer's 1,000,000
    /// (a server whose `computer_space_limit` was raised). CraftOS-PC does not limit writes.
    pub disk_space: Option<u64>,
    /// The largest websocket message the computer may send or receive, in bytes, as the
    /// server's http rule for the host sets it (`max_websocket_message`); on CraftOS-PC its
    /// `http_max_websocket_message`. `None` is CC: Tweaked's default, 131072. 0 is no limit
    /// on the emulator (CC: Tweaked's meaning; not tried on CraftOS-PC). Not for an emulate
    /// process.
    pub max_websocket_message: Option<usize>,
    /// An empty disk drive on this side of the computer: on the emulator from boot (put a
    /// floppy in with `Computer::insert_disk`), on CraftOS-PC attached with `periphemu.create`
    /// once the computer has linked (it has no setting for peripherals at boot; put a floppy
    /// in with the drive's `insertDisk`). Not for an emulate process.
    pub disk_drive: Option<&'static str>,
}

/// One `trapdesk emulate` process (a computer running the real client) on a disk that outlives
/// it. Killed with SIGKILL and reaped on drop.
pub struct EmuProcess {
    child: Option<Child>,
    url: String,
    id: u64,
    label: String,
    disk: tempfile::TempDir,
    disk_space: u64,
    kind: Kind,
    fuel: Option<u32>,
}

impl EmuProcess {
    fn start(url: &str, id: u64, label: &str, spec: &Spec) -> EmuProcess {
        let mut p = EmuProcess {
            child: None,
            url: url.to_owned(),
            id,
            label: label.to_owned(),
            disk: tempfile::tempdir().unwrap(),
            disk_space: spec
                .disk_space
                .unwrap_or(trapdesk::emu::COMPUTER_SPACE_LIMIT),
            kind: spec.kind,
            fuel: spec.fuel,
        };
        p.restart();
        p
    }

    fn restart(&mut self) {
        self.kill9();
        let child = Command::new(crate::support::trapdesk_exe())
            .args(["emulate", "--url", &self.url, "--id", &self.id.to_string()])
            .args(["--label", &self.label])
            // In the environment, not the arguments: every user's `ps` shows those.
            .env("SANDBOX_PASSWORD", SECRET)
            .args(["--disk-space", &self.disk_space.to_string()])
            .args(["--kind", self.kind.flag()])
            .args(self.fuel.map(|f| format!("--fuel={f}")))
            .arg("--data-dir")
            .arg(self.disk.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn files(&self) -> PathBuf {
        self.disk.path().join("computers").join(self.id.to_string())
    }
}

impl Drop for EmuProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// What runs one computer.
pub enum Machine {
    /// An emulated computer in the test process.
    Emu(trapdesk::emu::Computer),
    /// An emulated computer in a process of its own.
    EmuProcess(EmuProcess),
    /// A CraftOS-PC process.
    Craft(CraftComputer),
}

/// One computer of a [`World`].
pub struct Computer {
    pub id: u64,
    pub label: String,
    /// `id:label`, as the session and MCP name it.
    pub trapos_id: String,
    files: PathBuf,
    pub machine: Machine,
}

impl Computer {
    /// The computer's own files (what its `/` shows).
    pub fn files(&self) -> PathBuf {
        self.files.clone()
    }

    /// What the screen showed, and the client's log where there is one: for failure messages.
    pub fn dump(&self) -> String {
        let log =
            std::fs::read_to_string(self.files.join("trapdesk/daemon.log")).unwrap_or_default();
        let screen = match &self.machine {
            Machine::Emu(c) => c.screen_text().join("\n"),
            Machine::EmuProcess(_) => String::from("(an emulate process: no screen here)"),
            Machine::Craft(c) => c.screen(),
        };
        format!("daemon.log:\n{log}\nscreen:\n{screen}")
    }

    /// What the screen shows: on the emulator the rows it shows now; on CraftOS-PC every row
    /// its headless renderer drew since boot, in drawing order (it prints rows as they
    /// change, and the test reads them from its stdout). Panics for an emulate process.
    pub fn screen(&self) -> String {
        match &self.machine {
            Machine::Emu(c) => c.screen_text().join("\n"),
            Machine::EmuProcess(_) => panic!("an emulate process shows no screen to the test"),
            Machine::Craft(c) => c.screen(),
        }
    }

    /// The emulated computer in the test process; panics on another machine.
    pub fn emu(&self) -> &trapdesk::emu::Computer {
        match &self.machine {
            Machine::Emu(c) => c,
            _ => panic!(
                "{} is not an emulated computer in the test process",
                self.trapos_id
            ),
        }
    }

    /// The CraftOS-PC computer; panics on another machine.
    pub fn craft(&self) -> &CraftComputer {
        match &self.machine {
            Machine::Craft(c) => c,
            _ => panic!("{} is not a CraftOS-PC computer", self.trapos_id),
        }
    }

    /// Whether the computer is still on (its emulator thread or its process running).
    pub fn running(&mut self) -> bool {
        match &mut self.machine {
            Machine::Emu(c) => !c.is_stopped(),
            Machine::EmuProcess(p) => p
                .child
                .as_mut()
                .is_some_and(|c| matches!(c.try_wait(), Ok(None))),
            Machine::Craft(c) => c.running(),
        }
    }

    /// Resizes the terminal, as dragging a window would (`term_resize` on the computer).
    /// A CraftOS-PC computer must have been started with a [`Spec::size`].
    pub fn resize(&mut self, width: u16, height: u16) {
        match &mut self.machine {
            Machine::Emu(c) => c.resize(usize::from(width), usize::from(height)),
            Machine::EmuProcess(_) => panic!("an emulate process cannot be resized"),
            Machine::Craft(c) => c.resize(width, height),
        }
    }
}

/// A host, its computers (linked) and an MCP client named `test-agent`.
pub struct World {
    pub runtime: Runtime,
    pub client: Client,
    /// Progress notifications (live output) the client received.
    pub progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    pub computers: Vec<Computer>,
    // Dropped after the computers, so they never see their host vanish first.
    pub host: TestHost,
}

impl World {
    /// Starts a host and one computer per label (ids 1, 2, ...) on `runtime`, waits until every
    /// one has linked and serves exec-lua, and connects the MCP client. On CraftOS-PC, panics
    /// when `CRAFTOS_PC` is unset or its launcher cannot start.
    pub async fn boot(runtime: Runtime, labels: &[&str]) -> World {
        let with: Vec<(&str, Spec)> = labels.iter().map(|l| (*l, Spec::default())).collect();
        Self::boot_with(runtime, &with).await
    }

    /// [`World::boot`] with a [`Spec`] per computer.
    pub async fn boot_with(runtime: Runtime, computers: &[(&str, Spec)]) -> World {
        Self::boot_adjusted(runtime, |_| {}, computers).await
    }

    /// [`World::boot_with`] on a host whose settings the test adjusts first.
    pub async fn boot_adjusted(
        runtime: Runtime,
        adjust: impl FnOnce(&mut trapdesk::config::Settings),
        computers: &[(&str, Spec)],
    ) -> World {
        let host = start_host_with(adjust).await;
        let launcher = (runtime == Runtime::CraftOs).then(craftos::launcher);
        let mut started = Vec::new();
        for (i, (label, spec)) in computers.iter().enumerate() {
            let id = i as u64 + 1;
            let (files, machine) = match (&launcher, spec.process) {
                (Some(l), _) => {
                    assert_eq!(
                        spec.kind,
                        Kind::Computer,
                        "CraftOS-PC cannot be a turtle or a pocket computer: emulator only"
                    );
                    let opts = craftos::Options {
                        size: spec.size,
                        max_websocket_message: spec.max_websocket_message,
                    };
                    let port = host.gateway_addr.port();
                    let c = CraftComputer::spawn_with(l, id, label, port, SECRET, opts);
                    (c.files(), Machine::Craft(c))
                }
                (None, true) => {
                    assert!(
                        spec.size.is_none()
                            && spec.max_websocket_message.is_none()
                            && spec.disk_drive.is_none()
                            && spec.slots.is_empty(),
                        "an emulate process has the default size and message limit, no drive, \
                         no items"
                    );
                    let p = EmuProcess::start(&host.gateway_url(), id, label, spec);
                    (p.files(), Machine::EmuProcess(p))
                }
                (None, false) => {
                    let c = emulated_with(&host, id, Some(label), |s| {
                        let s = match spec.kind {
                            Kind::Computer => s,
                            Kind::Turtle => spec.slots.iter().fold(
                                s.turtle().with_fuel(spec.fuel.unwrap_or(0)),
                                |s, (i, n, c)| s.with_slot(*i, n, *c),
                            ),
                            Kind::Pocket => s.pocket(),
                        };
                        let s = match spec.size {
                            Some((w, h)) => s.with_size((usize::from(w), usize::from(h))),
                            None => s,
                        };
                        let s = match spec.disk_drive {
                            Some(side) => s.with_disk_drive(side, None),
                            None => s,
                        };
                        let s = match spec.max_websocket_message {
                            Some(bytes) => s.with_max_websocket_message(bytes),
                            None => s,
                        };
                        match spec.disk_space {
                            Some(bytes) => s.with_disk_space(bytes),
                            None => s,
                        }
                    })
                    .await;
                    let files = host.dir.path().join("computers").join(id.to_string());
                    (files, Machine::Emu(c))
                }
            };
            started.push(Computer {
                id,
                label: (*label).to_owned(),
                trapos_id: format!("{id}:{label}"),
                files,
                machine,
            });
        }
        let (client, progress) = connect(&host.mcp_url(), &host.local_token).await;
        let world = World {
            runtime,
            client,
            progress,
            computers: started,
            host,
        };
        for c in &world.computers {
            world.wait_linked(&c.label, runtime.link_timeout()).await;
        }
        for (c, (_, spec)) in world.computers.iter().zip(computers) {
            if let (Machine::Craft(_), Some(side)) = (&c.machine, spec.disk_drive) {
                let code = format!("return periphemu.create({side:?}, \"drive\")");
                let r = world
                    .session()
                    .request(
                        &c.trapos_id,
                        trapdesk::session::RequestSpec::new(
                            trapdesk::protocol::Kind::ExecLua,
                            json!({ "code": code }),
                        ),
                        trapdesk::session::Origin::Person,
                    )
                    .await
                    .unwrap_or_else(|e| panic!("no drive on {}: {e}", c.trapos_id));
                assert_eq!(
                    r["returns"][0]["value"],
                    json!(true),
                    "no drive on {}: {r}",
                    c.trapos_id
                );
            }
        }
        world
    }

    /// The host's session.
    pub fn session(&self) -> &trapdesk::session::Session {
        &self.host.session
    }

    /// The computer labelled `label`.
    pub fn computer(&self, label: &str) -> &Computer {
        self.computers
            .iter()
            .find(|c| c.label == label)
            .unwrap_or_else(|| panic!("no computer labelled {label}"))
    }

    /// The computer labelled `label`, to kill, restart or resize it.
    pub fn computer_mut(&mut self, label: &str) -> &mut Computer {
        self.computers
            .iter_mut()
            .find(|c| c.label == label)
            .unwrap_or_else(|| panic!("no computer labelled {label}"))
    }

    /// `id:label` of the computer labelled `label`.
    pub fn trapos(&self, label: &str) -> String {
        self.computer(label).trapos_id.clone()
    }

    /// The files of the computer labelled `label`.
    pub fn files(&self, label: &str) -> PathBuf {
        self.computer(label).files()
    }

    /// Whether the session lists `label` online and serving exec-lua.
    pub fn linked(&self, label: &str) -> bool {
        self.session()
            .computer(&self.trapos(label))
            .is_some_and(|s| s.online && s.serves.iter().any(|x| x == "exec-lua"))
    }

    /// Whether the session lists `label` online.
    pub fn online(&self, label: &str) -> bool {
        self.session()
            .computer(&self.trapos(label))
            .is_some_and(|s| s.online)
    }

    /// Waits until `label` is linked; panics with its screen and log after `limit`.
    pub async fn wait_linked(&self, label: &str, limit: Duration) {
        wait_for(
            limit,
            || self.linked(label),
            || {
                format!(
                    "{} did not link in {limit:?} on {}; {}",
                    self.trapos(label),
                    self.runtime.name(),
                    self.computer(label).dump()
                )
            },
        )
        .await;
    }

    /// Waits until `label` serves every one of `kinds` (the screen server links a moment after
    /// exec-lua).
    pub async fn wait_serves(&self, label: &str, kinds: &[&str]) {
        let id = self.trapos(label);
        let serves = || {
            self.session()
                .computer(&id)
                .is_some_and(|c| kinds.iter().all(|k| c.serves.iter().any(|s| s == k)))
        };
        wait_for(Duration::from_secs(30), serves, || {
            format!("{id} never served {kinds:?}")
        })
        .await;
    }

    /// Waits until the session lists `label` offline; panics after `limit`.
    pub async fn wait_offline(&self, label: &str, limit: Duration) {
        wait_for(
            limit,
            || !self.online(label),
            || format!("{} never unlinked", self.trapos(label)),
        )
        .await;
    }

    /// kill -9 of the computer's process (the computer dies mid-whatever), reaped. Panics for
    /// an emulated computer in the test process (boot it with [`Spec::process`]).
    pub fn kill9(&mut self, label: &str) {
        match &mut self.computer_mut(label).machine {
            Machine::Emu(_) => {
                panic!("kill -9 needs a process: boot with Spec {{ process: true }}")
            }
            Machine::EmuProcess(p) => p.kill9(),
            Machine::Craft(c) => c.kill9(),
        }
    }

    /// kill -9 of the computer, then the same computer (same disk) booted again and linked.
    pub async fn kill_and_reboot(&mut self, label: &str) {
        self.kill9(label);
        self.wait_offline(label, Duration::from_secs(30)).await;
        match &mut self.computer_mut(label).machine {
            Machine::Emu(_) => unreachable!("kill9 refused it"),
            Machine::EmuProcess(p) => p.restart(),
            Machine::Craft(c) => c.restart(),
        }
        self.wait_linked(label, self.runtime.link_timeout()).await;
    }

    /// Text typed at the computer itself, not through a request that reads the screen back: a
    /// key event per character on the emulator, and on CraftOS-PC (whose headless mode takes
    /// no keyboard) the session's `input` request alone.
    pub async fn type_at(&self, label: &str, text: &str) {
        let c = self.computer(label);
        match &c.machine {
            Machine::Emu(e) => e.type_text(text),
            _ => {
                self.session()
                    .send_input(
                        &c.trapos_id,
                        vec![json!({ "text": text })],
                        trapdesk::session::Origin::Person,
                    )
                    .await
                    .unwrap();
            }
        }
    }

    /// Calls an MCP tool with JSON arguments through the client.
    pub async fn call(&self, tool: &'static str, args: Value) -> CallToolResult {
        call(&self.client, tool, args).await
    }
}

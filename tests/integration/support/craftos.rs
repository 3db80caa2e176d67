//! CraftOS-PC harness: real ComputerCraft computers (CraftOS-PC, headless) linked to a host
//! started in-process on port 0, driven through the MCP endpoint with a real rmcp client.
//!
//! Each computer gets its own data directory (`config/global.json` enabling HTTP and
//! WebSockets to every address, loopback included, which a world's default config denies;
//! `abortTimeout` 7000 so "Too long without yielding" fires after 7 s as in a world, where
//! CraftOS-PC's own default is longer; `http_max_websocket_message` CC: Tweaked's default
//! 131072 unless [`Options`] sets another; a label) and a `startup.lua` that types the installer one-liner exactly as a player
//! would: `wget run http://127.0.0.1:PORT/install.lua SECRET`. The startup file deletes itself
//! first, so a reboot comes back through what the installer left (`/startup/trapdesk.lua`),
//! not through a second install.
//!
//! The suite runs only when `CRAFTOS_PC` names a CraftOS-PC launcher that accepts
//! `--headless -d DATA_DIR --id N` (this repo's CI sets it, see `.ci/run`). `build.rs` sets
//! `cfg(craftos_pc)` when it is set at build time; every test that needs CraftOS-PC carries
//! `#[cfg_attr(not(craftos_pc), ignore = "needs CraftOS-PC: set CRAFTOS_PC to its binary")]`,
//! so without it the test is reported ignored with that reason. With it,
//! a launcher that is missing or cannot start fails the test ([`launcher`] panics): nothing here
//! returns early and passes.
//!
//! A test boots its computers through [`crate::support::world::World`] with
//! `Runtime::CraftOs` (one harness for both runtimes); this file is what starts and reads one
//! CraftOS-PC computer. Boot from the test body (not from `spawn_blocking`): each CraftOS-PC
//! process is told to die with the thread that started it, so a killed test binary leaves none
//! behind. Dropping a [`CraftComputer`] (also while a test panics) kills and reaps its process.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;

use crate::support::{SECRET, wait_for};

/// The environment variable naming the CraftOS-PC launcher.
pub const ENV: &str = "CRAFTOS_PC";

/// How long booting and linking may take. CraftOS-PC boots in well under a second alone; ten
/// of them installing at once on two busy cores take longer.
pub const LINK_TIMEOUT: Duration = Duration::from_secs(120);

/// Raw screen bytes kept per computer (the newest ones): a chunk that prints a megabyte
/// redraws the screen thousands of times.
const SCREEN_KEEP: usize = 256 * 1024;

/// The launcher named by `CRAFTOS_PC`. Panics, saying what to do, when it is unset or names no
/// file: a test that needs CraftOS-PC runs only in a build with `cfg(craftos_pc)` (see the top
/// of this file), and there it must not pass without running.
pub fn launcher() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "{ENV}={} names no file: it must name a CraftOS-PC launcher \
                 (CI's is set in .ci/run)",
                p.display()
            );
            p
        }
        _ => panic!(
            "{ENV} is unset, but this test was built with it set (cfg craftos_pc): \
             set {ENV} to a CraftOS-PC launcher, or unset it and rebuild to have the test ignored"
        ),
    }
}

/// How a computer is started beyond the defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// The terminal's size (columns, rows), e.g. a turtle's 39x13. CraftOS-PC's headless
    /// renderer is always 51x19, so a size starts the computer with `--raw` (its binary
    /// terminal protocol on stdout and stdin), which takes the size from the `defaultWidth` /
    /// `defaultHeight` settings and can be resized (see [`CraftComputer::resize`]).
    pub size: Option<(u16, u16)>,
    /// The largest websocket message the computer may send or receive, in bytes
    /// (`http_max_websocket_message`; CC: Tweaked's `max_websocket_message` of the http rule
    /// that allows the host). `None` is CC: Tweaked's default, [`DEFAULT_WEBSOCKET_MESSAGE`].
    pub max_websocket_message: Option<usize>,
}

/// CC: Tweaked's default `max_websocket_message` (its default `*` http rule, `AddressRule`'s
/// `WEBSOCKET_MESSAGE`), written explicitly so the suites do not depend on CraftOS-PC's own
/// default (131072 in v2.8.2 too). CraftOS-PC has one limit for every address, not one per
/// rule.
pub const DEFAULT_WEBSOCKET_MESSAGE: usize = 131_072;

/// One headless CraftOS-PC computer. Killed and reaped on drop.
pub struct CraftComputer {
    pub id: u64,
    pub label: String,
    /// `id:label`, as the session and MCP name it.
    pub trapos_id: String,
    /// The CraftOS-PC data directory (`config/`, `computer/<id>/`).
    pub data: tempfile::TempDir,
    launcher: PathBuf,
    child: Child,
    /// Only in raw mode (a sized computer): resize messages go here.
    stdin: Option<ChildStdin>,
    screen: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl CraftComputer {
    /// Writes the data directory and starts CraftOS-PC; the computer installs the client from
    /// `gateway_port` at boot.
    pub fn spawn(launcher: &Path, id: u64, label: &str, gateway_port: u16) -> CraftComputer {
        Self::spawn_with_secret(launcher, id, label, gateway_port, SECRET)
    }

    /// [`CraftComputer::spawn`] with the secret the player types (a wrong one, to test refusals).
    pub fn spawn_with_secret(
        launcher: &Path,
        id: u64,
        label: &str,
        gateway_port: u16,
        secret: &str,
    ) -> CraftComputer {
        Self::spawn_with(
            launcher,
            id,
            label,
            gateway_port,
            secret,
            Options::default(),
        )
    }

    /// [`CraftComputer::spawn_with_secret`] with [`Options`].
    pub fn spawn_with(
        launcher: &Path,
        id: u64,
        label: &str,
        gateway_port: u16,
        secret: &str,
        opts: Options,
    ) -> CraftComputer {
        let startup = format!(
            "-- Once, as a player would type it at the prompt.\n\
             fs.delete(shell.getRunningProgram())\n\
             shell.run(\"wget run http://127.0.0.1:{gateway_port}/install.lua {secret}\")\n"
        );
        Self::spawn_startup(launcher, id, label, &startup, opts)
    }

    /// A computer whose `startup.lua` is `startup` and nothing else: no client, not linked
    /// (another player's computer on the same server).
    pub fn spawn_program(launcher: &Path, id: u64, label: &str, startup: &str) -> CraftComputer {
        Self::spawn_program_with(launcher, id, label, startup, Options::default())
    }

    /// [`CraftComputer::spawn_program`] with [`Options`].
    pub fn spawn_program_with(
        launcher: &Path,
        id: u64,
        label: &str,
        startup: &str,
        opts: Options,
    ) -> CraftComputer {
        Self::spawn_startup(launcher, id, label, startup, opts)
    }

    fn spawn_startup(
        launcher: &Path,
        id: u64,
        label: &str,
        startup: &str,
        opts: Options,
    ) -> CraftComputer {
        let data = tempfile::tempdir().unwrap();
        let root = data.path();
        std::fs::create_dir_all(root.join("config")).unwrap();
        let files = root.join("computer").join(id.to_string());
        std::fs::create_dir_all(&files).unwrap();
        let size = opts
            .size
            .map(|(w, h)| format!(", \"defaultWidth\": {w}, \"defaultHeight\": {h}"))
            .unwrap_or_default();
        // In bytes, as CC: Tweaked's: CraftOS-PC refuses a send longer than it with "Message
        // is too large" and reads at most that many bytes per incoming frame.
        let max_message = opts
            .max_websocket_message
            .unwrap_or(DEFAULT_WEBSOCKET_MESSAGE);
        std::fs::write(
            root.join("config/global.json"),
            format!(
                r#"{{ "http_enable": true, "http_websocket_enabled": true, "http_whitelist": ["*"],
  "http_blacklist": [], "checkUpdates": false, "keepOpenOnShutdown": false,
  "abortTimeout": 7000, "default_computer_settings": "motd.enable=false",
  "http_max_websocket_message": {max_message}{size} }}
"#
            ),
        )
        .unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(label);
        std::fs::write(
            root.join(format!("config/{id}.json")),
            format!("{{ \"base64\": true, \"isColor\": true, \"label\": \"{b64}\" }}\n"),
        )
        .unwrap();
        std::fs::write(files.join("startup.lua"), startup).unwrap();

        let (child, stdin, screen, reader) = start_process(launcher, root, id, opts.size.is_some());
        CraftComputer {
            id,
            label: label.to_owned(),
            trapos_id: format!("{id}:{label}"),
            data,
            launcher: launcher.to_owned(),
            child,
            stdin,
            screen,
            reader: Some(reader),
        }
    }

    /// kill -9 of the CraftOS-PC process (the computer dies mid-whatever), reaped.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }

    /// Boots the same computer (same data directory) again after [`CraftComputer::kill9`]:
    /// what the client installed relinks it. The screen starts empty.
    pub fn restart(&mut self) {
        self.kill9();
        let raw = self.stdin.is_some();
        let (child, stdin, screen, reader) =
            start_process(&self.launcher, self.data.path(), self.id, raw);
        self.child = child;
        self.stdin = stdin;
        self.screen = screen;
        self.reader = Some(reader);
    }

    /// Resizes the terminal of a sized (raw-mode) computer, as dragging its window would:
    /// CraftOS-PC's raw protocol "terminal change" message (type 4) with the new size, framed
    /// as `!CPC`, 4 hex digits of length, the base64 payload and its CRC-32 in 8 hex digits.
    /// CraftOS-PC resizes the terminal and queues `term_resize`.
    pub fn resize(&mut self, width: u16, height: u16) {
        let mut payload = vec![4u8, 0, 0, 0];
        payload.extend_from_slice(&width.to_le_bytes());
        payload.extend_from_slice(&height.to_le_bytes());
        self.send_raw(&payload);
    }

    /// One message of CraftOS-PC's raw protocol to a sized (raw-mode) computer.
    fn send_raw(&mut self, payload: &[u8]) {
        let b64 = base64::engine::general_purpose::STANDARD.encode(payload);
        let msg = format!("!CPC{:04x}{b64}{:08x}\n", b64.len(), crc32(b64.as_bytes()));
        let stdin = self
            .stdin
            .as_mut()
            .expect("raw input needs a sized (raw-mode) computer");
        stdin.write_all(msg.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Queues the CC event `name` with `params` on a sized (raw-mode) computer, as its keyboard
    /// would: the raw protocol's "generic event" message (type 3), which CraftOS-PC queues as
    /// it is. This is how a test types at a computer that is not linked.
    pub fn queue_event(&mut self, name: &str, params: &[RawParam<'_>]) {
        let mut payload = vec![3u8, 0, u8::try_from(params.len()).unwrap()];
        payload.extend_from_slice(name.as_bytes());
        payload.push(0);
        for p in params {
            match p {
                RawParam::Int(n) => {
                    payload.push(0);
                    payload.extend_from_slice(&n.to_le_bytes());
                }
                RawParam::Bool(b) => payload.extend_from_slice(&[2, u8::from(*b)]),
                RawParam::Str(s) => {
                    payload.push(3);
                    payload.extend_from_slice(s.as_bytes());
                    payload.push(0);
                }
            }
        }
        self.send_raw(&payload);
    }

    /// A line typed at a sized (raw-mode) computer's prompt: pasted (`paste`, which `read()`
    /// inserts as typed), then Enter (`key` 28).
    pub fn type_line(&mut self, text: &str) {
        self.queue_event("paste", &[RawParam::Str(text)]);
        self.queue_event("key", &[RawParam::Int(28), RawParam::Bool(false)]);
    }

    /// The rows a sized (raw-mode) computer's screen shows now (trailing blanks trimmed), from
    /// the newest terminal frame it wrote: the raw protocol's type 0, whose text is run-length
    /// pairs of (character, count) for width x height cells.
    pub fn raw_rows(&self) -> Vec<String> {
        let raw = self.screen.lock().unwrap().clone();
        let text = String::from_utf8_lossy(&raw);
        for frame in text.rsplit("!CPC") {
            let Some(body) = frame.get(4..).and_then(|b| b.split('\n').next()) else {
                continue;
            };
            let Some(b64) = body.get(..body.len().saturating_sub(8)) else {
                continue;
            };
            let Ok(p) = base64::engine::general_purpose::STANDARD.decode(b64) else {
                continue;
            };
            if p.len() < 16 || p[0] != 0 || p[1] != 0 || p[2] != 0 {
                continue;
            }
            let w = usize::from(u16::from_le_bytes([p[4], p[5]]));
            let h = usize::from(u16::from_le_bytes([p[6], p[7]]));
            let mut cells = Vec::with_capacity(w * h);
            for pair in p[16..].chunks_exact(2) {
                if cells.len() >= w * h {
                    break;
                }
                cells.extend(std::iter::repeat_n(pair[0], usize::from(pair[1])));
            }
            return cells
                .chunks(w.max(1))
                .take(h)
                .map(|r| String::from_utf8_lossy(r).trim_end().to_owned())
                .collect();
        }
        Vec::new()
    }

    /// The computer's own files (`computer/<id>/` of its data directory).
    pub fn files(&self) -> PathBuf {
        self.data.path().join("computer").join(self.id.to_string())
    }

    /// What the screen showed: headless CraftOS-PC writes a row whenever it changes, so this
    /// is every drawn row in drawing order, trailing blanks trimmed and empty rows dropped.
    pub fn screen(&self) -> String {
        let raw = self.screen.lock().unwrap().clone();
        String::from_utf8_lossy(&raw)
            .split(['\r', '\n'])
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// CPU time (user + system) the CraftOS-PC process has used so far, from
    /// `/proc/PID/stat`; `None` where there is no procfs. On a shared machine this is far
    /// steadier than wall time: other processes delay the computer but do not add to it.
    pub fn cpu_ms(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
        // Fields after the command name (which is in parentheses and may hold spaces):
        // state is field 3, utime 14, stime 15.
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
        // SAFETY: sysconf only reads a constant of the system.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        (hz > 0).then(|| ticks * 1000.0 / hz as f64)
    }

    /// Whether the CraftOS-PC process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits until the screen satisfies `cond`; panics with the screen after `limit`.
    pub async fn wait_screen(&self, limit: Duration, cond: impl Fn(&str) -> bool) {
        wait_for(
            limit,
            || cond(&self.screen()),
            || {
                format!(
                    "screen of {} did not show it in {limit:?}:\n{}",
                    self.trapos_id,
                    self.screen()
                )
            },
        )
        .await;
    }
}

/// A parameter of an event queued with [`CraftComputer::queue_event`].
#[derive(Debug, Clone, Copy)]
pub enum RawParam<'a> {
    Int(i32),
    Bool(bool),
    Str(&'a str),
}

/// CRC-32 (IEEE, as zlib and Poco compute it), bit by bit: a few bytes per message.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for b in bytes {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

impl Drop for CraftComputer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

type Started = (
    Child,
    Option<ChildStdin>,
    Arc<Mutex<Vec<u8>>>,
    std::thread::JoinHandle<()>,
);

/// Starts CraftOS-PC on data directory `root` as computer `id`, its screen read into a buffer;
/// `raw` (a sized computer) keeps its stdin for resize messages.
fn start_process(launcher: &Path, root: &Path, id: u64, raw: bool) -> Started {
    let mut cmd = Command::new(launcher);
    if raw {
        // The launcher passes --headless first; the later renderer flag wins.
        cmd.arg("--raw");
    }
    cmd.arg("-d")
        .arg(root)
        .args(["--id", &id.to_string()])
        // Raw mode reads its input messages from stdin: keep it open (at EOF its reader
        // would spin).
        .stdin(if raw { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // If the test binary dies without unwinding (SIGKILL, abort), take the computer with it.
    #[cfg(target_os = "linux")]
    unsafe {
        use std::os::unix::process::CommandExt as _;
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {} ({ENV}): {e}", launcher.display()));
    let stdin = child.stdin.take();
    let screen = Arc::new(Mutex::new(Vec::new()));
    let mut out = child.stdout.take().unwrap();
    let sink = screen.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut s = sink.lock().unwrap();
            s.extend_from_slice(&buf[..n]);
            if s.len() > 2 * SCREEN_KEEP {
                let cut = s.len() - SCREEN_KEEP;
                s.drain(..cut);
            }
        }
    });
    (child, stdin, screen, reader)
}

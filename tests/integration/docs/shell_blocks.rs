//! Every shell block of README.md and docs/*.md, run as written, command by command, against a
//! real headless host (`trapdesk --mcp-only --demo` on free ports with its own data dir: the
//! demo's `1:miner`, `2:farm`, `3:lab`, `4:turtle` and `5:pocket`), the way the docs' reader
//! meets them after the Quick start:
//!
//! - `trapdesk` on PATH is the binary cargo built, and so is `cargo run [--release] -- ARGS`
//!   (a `cargo` first on PATH that runs it: a release build inside a test would take minutes);
//! - the environment is the host's data dir (`TRAPDESK_DATA_DIR`; found through its
//!   `host.json`, no `--connect`), a temporary HOME, and a working folder per document holding
//!   `src/main.lua`, the project folder that `sync ./src` lines presume;
//! - each logical line runs in `bash -e -o pipefail` (a `zsh` block's in zsh), so every command on it must succeed, and
//!   must end within [`LINE_LIMIT`], except those that keep running until Ctrl-C (a watching
//!   `sync`, a following `transcript -f`, a `--mcp-only` host): they must get to what they say
//!   they do, keep running, and stop on SIGINT; a line that starts a host gets a data dir and
//!   free ports of its own (`TRAPDESK_DATA_DIR`, `TRAPDESK_GATEWAY_BIND`, `MCP_PORT`).
//!
//! A block that cannot run here says why on the line before its fence (docs/blocks.rs has the
//! reasons allowed). Every failing line of every block is reported in one message.

use super::blocks::{self, Block};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::support::{holds_within_blocking, trapdesk_exe};

/// How long a line that ends may take (the slowest, `run miner programs/dig.lua 3`, takes
/// 1.5 s on the demo's clock).
const LINE_LIMIT: Duration = Duration::from_secs(30);
/// How long a following command (`transcript -f`) must keep running to count as following.
const QUIET: Duration = Duration::from_secs(2);
/// The demo's computers (three, a turtle and a pocket computer).
const DEMO_COMPUTERS: usize = 5;

/// What the shell of the blocks has: PATH, HOME, the host's data dir.
struct Shell {
    home: tempfile::TempDir,
    bin: tempfile::TempDir,
    data_dir: PathBuf,
}

impl Shell {
    fn new(data_dir: &Path) -> Shell {
        let bin = tempfile::tempdir().unwrap();
        let cargo = bin.path().join("cargo");
        std::fs::write(&cargo, cargo_shim()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
        Shell {
            home: tempfile::tempdir().unwrap(),
            bin,
            data_dir: data_dir.to_owned(),
        }
    }

    fn path(&self) -> std::ffi::OsString {
        let ours = [
            self.bin.path().to_owned(),
            Path::new(trapdesk_exe()).parent().unwrap().to_owned(),
        ];
        let theirs = std::env::var_os("PATH").unwrap_or_default();
        std::env::join_paths(ours.into_iter().chain(std::env::split_paths(&theirs))).unwrap()
    }

    /// `bash -e -o pipefail -c LINE` (zsh for a `zsh` block) in `cwd`, in a process group of
    /// its own (so SIGINT reaches the command as Ctrl-C would), its output into `out`.
    fn command(&self, sh: &str, line: &str, cwd: &Path, out: &Path) -> Command {
        use std::os::unix::process::CommandExt;
        let home = self.home.path();
        let mut c = Command::new(sh);
        c.args(["-e", "-o", "pipefail", "-c", line])
            .current_dir(cwd)
            .env("PATH", self.path())
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("TRAPDESK_DATA_DIR", &self.data_dir)
            .env("NO_COLOR", "1");
        for var in [
            "TRAPDESK_CONNECT",
            "TRAPDESK_TOKEN",
            "TRAPDESK_MCP_TOKEN",
            "TRAPDESK_AGENT_TOKEN",
            "TRAPDESK_CONTROL_TOKEN",
            "TRAPDESK_GATEWAY_BIND",
            "MCP_PORT",
            "SANDBOX_PASSWORD",
            "RUST_LOG",
        ] {
            c.env_remove(var);
        }
        if starts_a_host(line) {
            let own = out.join("host-data");
            std::fs::create_dir_all(&own).unwrap();
            c.env("TRAPDESK_DATA_DIR", &own)
                .env("TRAPDESK_GATEWAY_BIND", "127.0.0.1:0")
                .env("MCP_PORT", "0");
        }
        c.stdin(Stdio::null())
            .stdout(std::fs::File::create(out.join("stdout")).unwrap())
            .stderr(std::fs::File::create(out.join("stderr")).unwrap())
            .process_group(0);
        c
    }
}

/// `cargo run [--release] -- ARGS` runs the trapdesk this test run built; any other cargo
/// command fails, saying so.
fn cargo_shim() -> String {
    format!(
        "#!/bin/sh\n\
         if [ \"$1\" != run ]; then echo \"this test's cargo runs only 'cargo run -- ARGS', not: cargo $*\" >&2; exit 97; fi\n\
         shift\n\
         if [ \"$1\" = --release ]; then shift; fi\n\
         if [ \"$1\" = -- ]; then shift; fi\n\
         exec '{}' \"$@\"\n",
        trapdesk_exe()
    )
}

/// A line that starts a host of its own.
fn starts_a_host(line: &str) -> bool {
    line.contains("--mcp-only") || line.starts_with("cargo run")
}

/// How a line is expected to end.
enum Ends {
    /// On its own, with 0.
    Exits,
    /// It keeps running: once its output has a line with the first text, which must also hold
    /// the second, it is stopped with SIGINT.
    Ready(&'static str, &'static str),
    /// It keeps running and may say nothing (a follow): it must still run after [`QUIET`].
    Quiet,
}

fn how_it_ends(line: &str) -> Ends {
    if line.contains("trapdesk sync") && !line.contains("--once") {
        if line.contains("--run") {
            Ends::Ready("sync: ran ", ": ok")
        } else {
            Ends::Ready("sync: watching", "")
        }
    } else if starts_a_host(line) {
        Ends::Ready("MCP http://", "")
    } else if line.contains("transcript -f") || line.contains("transcript --follow") {
        Ends::Quiet
    } else {
        Ends::Exits
    }
}

fn read(dir: &Path) -> String {
    let get = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap_or_default();
    format!("{}{}", get("stdout"), get("stderr"))
}

/// Ctrl-C to the line's process group, then its exit.
fn interrupt(child: &mut Child) -> Result<ExitStatus, String> {
    Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .map_err(|e| format!("kill: {e}"))?;
    let mut status = None;
    let ended = holds_within_blocking(Duration::from_secs(15), || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    match status {
        Some(s) if ended => Ok(s),
        _ => {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            Err("did not stop within 15 s of Ctrl-C".into())
        }
    }
}

/// Runs one line; `Err` says how it failed, with its output.
fn run_line(shell: &Shell, sh: &str, cwd: &Path, line: &str) -> Result<(), String> {
    let out = tempfile::tempdir().unwrap();
    let mut child = match shell.command(sh, line, cwd, out.path()).spawn() {
        Ok(c) => c,
        Err(e) => return Err(format!("{sh} does not start: {e}")),
    };
    let start = Instant::now();
    let verdict = match how_it_ends(line) {
        Ends::Exits => {
            let mut status = None;
            holds_within_blocking(LINE_LIMIT, || {
                status = child.try_wait().ok().flatten();
                status.is_some()
            });
            match status {
                Some(s) if s.success() => Ok(()),
                Some(s) => Err(format!("exited with {s}")),
                None => interrupt(&mut child)
                    .map(|_| ())
                    .and(Err(format!("still running after {LINE_LIMIT:?}"))),
            }
        }
        Ends::Ready(want, also) => {
            let mut ready = None;
            holds_within_blocking(LINE_LIMIT, || {
                ready = read(out.path())
                    .lines()
                    .find(|l| l.contains(want))
                    .map(str::to_owned);
                ready.is_some() || matches!(child.try_wait(), Ok(Some(_)))
            });
            keeps_running(&mut child, ready.as_deref(), want, also)
        }
        Ends::Quiet => {
            let ran = !holds_within_blocking(QUIET, || matches!(child.try_wait(), Ok(Some(_))));
            keeps_running(&mut child, ran.then_some(""), "", "")
        }
    };
    verdict.map_err(|why| {
        format!(
            "{why} after {:.1} s; its output:\n{}",
            start.elapsed().as_secs_f64(),
            indent(&read(out.path()))
        )
    })
}

/// The verdict on a line that keeps running: it got to `ready` (a line with `want`, holding
/// `also`), was still running, and stopped on Ctrl-C with 0 or 130 (or died of it).
fn keeps_running(
    child: &mut Child,
    ready: Option<&str>,
    want: &str,
    also: &str,
) -> Result<(), String> {
    if let Ok(Some(s)) = child.try_wait() {
        return Err(format!("exited with {s}; it should keep running"));
    }
    let stopped = interrupt(child)?;
    let Some(ready) = ready else {
        return Err(format!("never printed {want:?} in {LINE_LIMIT:?}"));
    };
    if !ready.contains(also) {
        return Err(format!("said {ready:?}, without {also:?}"));
    }
    // A program that leaves SIGINT to its default dies of it, which a shell shows as 130.
    use std::os::unix::process::ExitStatusExt;
    match (stopped.code(), stopped.signal()) {
        (Some(0 | 130), _) | (None, Some(2)) => Ok(()),
        _ => Err(format!(
            "ended with {stopped} on Ctrl-C (0 or 130 expected)"
        )),
    }
}

fn indent(s: &str) -> String {
    let s: String = s.lines().take(20).map(|l| format!("    | {l}\n")).collect();
    if s.is_empty() {
        "    (none)\n".into()
    } else {
        s
    }
}

/// The demo host every block talks to; stopped (SIGINT) when dropped.
struct DemoHost {
    child: Child,
    dir: tempfile::TempDir,
}

impl DemoHost {
    fn start() -> DemoHost {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let log = std::fs::File::create(dir.path().join("host.log")).unwrap();
        use std::os::unix::process::CommandExt;
        // A group of its own, which `interrupt` signals.
        let child = Command::new(trapdesk_exe())
            .args(["--mcp-only", "--demo", "--gateway-bind", "127.0.0.1:0"])
            .args(["--mcp-bind", "127.0.0.1:0", "--data-dir"])
            .arg(&data)
            .env_remove("TRAPDESK_DATA_DIR")
            .env_remove("SANDBOX_PASSWORD")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap();
        let host = DemoHost { child, dir };
        host.wait_for_the_demo();
        host
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Until `trapdesk computers` lists the whole demo online.
    fn wait_for_the_demo(&self) {
        let mut seen = String::new();
        let linked = holds_within_blocking(Duration::from_secs(60), || {
            let Ok(out) = Command::new(trapdesk_exe())
                .args(["computers", "--data-dir"])
                .arg(self.data_dir())
                .env_remove("TRAPDESK_CONNECT")
                .output()
            else {
                return false;
            };
            seen = String::from_utf8_lossy(&out.stdout).into_owned();
            seen.matches("\tonline").count() == DEMO_COMPUTERS
        });
        let log = std::fs::read_to_string(self.dir.path().join("host.log"));
        assert!(
            linked,
            "the demo did not link in 60 s: {seen}\n{}",
            log.unwrap_or_default()
        );
    }
}

impl Drop for DemoHost {
    fn drop(&mut self) {
        let _ = interrupt(&mut self.child);
    }
}

/// A working folder for one document: `src/main.lua`, the project a `sync ./src` presumes.
fn work_dir() -> tempfile::TempDir {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("src")).unwrap();
    std::fs::write(
        work.path().join("src/main.lua"),
        "print('main.lua ran with', ...)\n",
    )
    .unwrap();
    work
}

/// Runs every unmarked shell block of one document, in order; each failing line as a report.
fn run_document(shell: &Shell, blocks: &[&Block]) -> Vec<String> {
    let work = work_dir();
    let mut failed = Vec::new();
    for block in blocks {
        let sh = if block.tag == "zsh" { "zsh" } else { "bash" };
        for line in block.commands() {
            if let Err(why) = run_line(shell, sh, work.path(), &line) {
                failed.push(format!("{} `{line}`: {why}", block.place()));
            }
        }
    }
    failed
}

#[test]
fn every_shell_block_of_the_docs_runs_as_written_or_says_why_not() {
    let all = blocks::all_blocks();
    let mut failed = blocks::bad_markers(&all);
    let host = DemoHost::start();
    let shell = Shell::new(&host.data_dir());
    let to_run: Vec<&Block> = all
        .iter()
        .filter(|b| b.is_shell() && b.marker.is_none())
        .collect();
    let mut ran = 0;
    for doc in blocks::documents() {
        let name = doc
            .strip_prefix(blocks::root())
            .unwrap_or(&doc)
            .display()
            .to_string();
        let mine: Vec<&Block> = to_run.iter().copied().filter(|b| b.file == name).collect();
        ran += mine.len();
        failed.extend(run_document(&shell, &mine));
    }
    drop(host);
    assert!(ran > 0, "no shell block found to run");
    assert!(
        failed.is_empty(),
        "{} shell line(s) of the docs fail as written (fix the doc, or mark the block \
         `<!-- not run: REASON -->` with an allowed reason):\n\n{}",
        failed.len(),
        failed.join("\n\n")
    );
}

//! The real binary in a real terminal: `trapdesk --demo 1` runs under tmux, keys go in with
//! `send-keys`, and the screen comes back with `capture-pane`. It checks what no `TestBackend`
//! can: F5 and F6 reach a linked (emulated) computer and its output comes back on screen, a
//! long chunk can be cancelled from the Requests pane, and quitting ends the process with the
//! terminal restored (no alternate screen, no mouse capture, cooked mode) and the editor
//! history saved in the data directory.
//!
//! tmux is required: CI installs it (`.ci/run`); without it these tests fail and say so.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long the screen may take to show what a test waits for.
const PATIENCE: Duration = Duration::from_secs(15);

/// One tmux server of its own (own socket) with one session running trapdesk; killed on drop,
/// failed test or not.
pub(super) struct Tmux {
    socket: String,
    pub(super) session: String,
    _data: tempfile::TempDir,
    pub(super) data_dir: std::path::PathBuf,
}

impl Tmux {
    /// Starts `trapdesk --demo 1` in a 100x30 terminal. After trapdesk exits the shell prints
    /// its exit status and the terminal's mode, then idles so the pane can still be read.
    pub(super) fn start(name: &str) -> Tmux {
        Tmux::launch(name, "--secret tui-pty-secret-7kq2")
    }

    /// [`Tmux::start`] with `flags` for the secret: empty for one generated and stored in
    /// the data directory, which `trapdesk secret rotate` can change under the console.
    pub(super) fn launch(name: &str, flags: &str) -> Tmux {
        static N: AtomicUsize = AtomicUsize::new(0);
        let unique = format!(
            "trapdesk-pty-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        match Command::new("tmux").arg("-V").output() {
            Ok(o) if o.status.success() => {}
            _ => panic!(
                "tmux is not installed: the terminal tests need it (apt-get install tmux; \
                 .ci/run installs it in CI)"
            ),
        }
        let data = tempfile::tempdir().unwrap();
        let data_dir = data.path().to_path_buf();
        let bin = env!("CARGO_BIN_EXE_trapdesk");
        let cmd = format!(
            "'{bin}' --demo 1 --data-dir '{}' --gateway-bind 127.0.0.1:0 \
             --mcp-bind 127.0.0.1:0 {flags}; \
             echo \"trapdesk exited: $?\"; stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\?icanon'; \
             sleep 600",
            data_dir.display()
        );
        let t = Tmux {
            socket: unique.clone(),
            session: unique,
            _data: data,
            data_dir,
        };
        let out = t.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            &t.session,
            "-x",
            "100",
            "-y",
            "30",
            &cmd,
        ]);
        assert!(out.status.success(), "tmux new-session failed: {out:?}");
        t
    }

    pub(super) fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .output()
            .unwrap()
    }

    /// The screen as text.
    pub(super) fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-t", &self.session]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A tmux format value of the pane, e.g. `alternate_on`.
    pub(super) fn format(&self, var: &str) -> String {
        let out = self.tmux(&["display-message", "-p", "-t", &self.session, var]);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Types text literally.
    pub(super) fn text(&self, s: &str) {
        self.tmux(&["send-keys", "-t", &self.session, "-l", s]);
    }

    /// Presses named keys (`F5`, `Enter`, `C-c`, ...).
    pub(super) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.session];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Polls the screen until `pred` holds; fails with the last screen after [`PATIENCE`].
    pub(super) fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let mut screen = String::new();
        let held = crate::support::holds_within_blocking(PATIENCE, || {
            screen = self.screen();
            pred(&screen)
        });
        assert!(
            held,
            "waited {PATIENCE:?} for {what}; the screen is:\n{screen}"
        );
        screen
    }

    pub(super) fn wait_text(&self, needle: &str) -> String {
        self.wait_for(&format!("{needle:?}"), |s| s.contains(needle))
    }

    /// Waits until the demo computer (and the demo's turtle and pocket computer beside it) is
    /// linked and idle.
    pub(super) fn wait_linked(&self) {
        self.wait_for("the demo computers to link", |s| {
            s.contains("Computers 3") && s.contains("idle")
        });
    }

    /// Ctrl-C, then checks the process ended cleanly with the terminal given back.
    pub(super) fn quit_and_check(&self) {
        self.keys(&["C-c"]);
        let screen = self.wait_text("trapdesk exited:");
        assert!(
            screen.contains("trapdesk exited: 0"),
            "trapdesk did not exit with 0:\n{screen}"
        );
        // The shell's `stty -a` ran after trapdesk: raw mode must be off again.
        let screen = self.wait_text("icanon");
        assert!(
            !screen.contains("-icanon"),
            "the terminal was left in raw mode:\n{screen}"
        );
        assert_eq!(
            self.format("#{alternate_on}"),
            "0",
            "still on the alternate screen"
        );
        assert_eq!(
            self.format("#{mouse_any_flag}"),
            "0",
            "mouse capture left on"
        );
        assert_eq!(
            self.format("#{mouse_standard_flag}"),
            "0",
            "mouse capture left on"
        );
        assert_eq!(self.format("#{cursor_flag}"), "1", "cursor left hidden");
    }

    pub(super) fn history(&self) -> serde_json::Value {
        let path: &Path = &self.data_dir.join("history.json");
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("no editor history at {}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // tmux leaves its socket file behind when the server is killed; remove it too.
        let socket = self.format("#{socket_path}");
        let _ = self.tmux(&["kill-server"]);
        if !socket.is_empty() {
            let _ = std::fs::remove_file(socket);
        }
    }
}

#[test]
fn f5_runs_lua_and_quitting_restores_the_terminal() {
    let t = Tmux::start("f5");
    t.wait_linked();
    t.text(r#"print("hello from the test")"#);
    t.keys(&["F5"]);
    // The header repeats the code, so wait for the output line itself and the ending.
    t.wait_for("the printed line", |s| {
        s.lines()
            .any(|l| l.contains("│hello from the test") || l.contains("┃hello from the test"))
            && s.contains("└ ok")
    });
    t.quit_and_check();
    let history = t.history();
    assert_eq!(
        history["entries"],
        serde_json::json!([r#"print("hello from the test")"#]),
        "{history}"
    );
}

#[test]
fn f6_runs_a_file_with_quoted_arguments() {
    let t = Tmux::start("f6");
    t.wait_linked();
    t.text(r#"local f = fs.open("dig.lua","w") f.write("print(...)") f.close() print("written")"#);
    t.keys(&["F5"]);
    t.wait_for("the file to be written", |s| {
        s.lines().any(|l| l.contains("│written")) && s.contains("└ ok")
    });
    t.keys(&["F6"]);
    t.wait_text("Run file");
    t.text(r#"dig.lua 3 "deep shaft""#);
    t.keys(&["Enter"]);
    // `print(...)` joins its two arguments with a tab, which shows as spaces to column 4.
    let screen = t.wait_text("│3   deep shaft");
    assert!(screen.contains("run-file"), "{screen}");
    t.quit_and_check();
}

#[test]
fn a_long_chunk_is_cancelled_from_the_requests_pane() {
    let t = Tmux::start("cancel");
    t.wait_linked();
    t.text("sleep(30)");
    t.keys(&["F5"]);
    t.wait_text("Requests 1");
    // Tab order: editor, computers, requests.
    t.keys(&["Tab", "Tab"]);
    t.wait_text("┏ Requests"); // a focused pane has a thick border
    t.keys(&["c"]);
    let screen = t.wait_text("└ ✗ cancelled");
    assert!(!screen.contains("Requests 1"), "{screen}");
    t.wait_text("Requests 0");
    t.quit_and_check();
}

#[test]
fn the_screen_view_shows_the_demo_prompt_and_attach_types_into_it() {
    let t = Tmux::start("screen");
    t.wait_linked();
    // F9: the demo computer's own terminal beside the output, with the shell's prompt.
    t.keys(&["F9"]);
    t.wait_for("the Screen view with the prompt", |s| {
        s.lines()
            .any(|l| l.contains("Screen ") && l.contains(":miner"))
            && s.lines().any(|l| l.contains("│> ") || l.contains("│>  "))
    });
    // F8: attached; typed keys go to the computer's shell, F8 detaches.
    t.keys(&["F8"]);
    t.wait_text("ATTACHED to");
    t.text("ls");
    t.keys(&["Enter"]);
    t.wait_for("the listing on the computer's screen", |s| {
        s.lines()
            .any(|l| l.contains("startup") && l.contains("trapdesk"))
    });
    t.keys(&["F8"]);
    t.wait_for("detached", |s| !s.contains("ATTACHED"));
    t.quit_and_check();
}

/// A new user's first minutes: computers named as agents name them, the Quick start's
/// `programs/dig.lua 60` cancelled from Requests (said in words, not by an internal id), the
/// message log one key away, and the secret rotated from another terminal shown by `s` at
/// once.
#[test]
fn what_the_console_shows_follows_its_sources() {
    let t = Tmux::launch("truth", "");
    t.wait_linked();
    t.wait_for("the computer named by its traposId", |s| {
        s.lines()
            .any(|l| l.contains(":miner") && l.contains("idle"))
    });
    t.keys(&["F6"]);
    t.wait_text("Run file");
    t.text(r#"programs/dig.lua 60 "deep shaft""#);
    t.keys(&["Enter"]);
    t.wait_text("Requests 1");
    t.keys(&["Tab", "Tab"]);
    t.wait_text("┏ Requests");
    t.keys(&["c"]);
    // Once the run has ended, the status line says so (not that it is still being cancelled).
    let screen = t.wait_text("cancelled run-file programs/dig.lua 60");
    assert!(!screen.contains("cancelling h-"), "{screen}");
    t.wait_text("└ ✗ cancelled");
    // The message log has what the status line said, whole: both steps.
    t.keys(&["m"]);
    let log = t.wait_text("Messages (");
    assert!(
        log.contains("cancelling run-file programs/dig.lua 60"),
        "{log}"
    );
    t.keys(&["Escape"]);
    t.wait_for("the log to close", |s| !s.contains("Messages ("));
    // `s` shows the stored secret; a rotation in another terminal shows when it opens again.
    let old = std::fs::read_to_string(t.data_dir.join("secret")).unwrap();
    t.keys(&["s"]);
    t.wait_text(old.trim());
    t.keys(&["Escape"]);
    let out = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args(["secret", "rotate", "--data-dir"])
        .arg(&t.data_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let new = std::fs::read_to_string(t.data_dir.join("secret")).unwrap();
    assert_ne!(old, new);
    t.keys(&["s"]);
    let screen = t.wait_text(new.trim());
    assert!(!screen.contains(old.trim()), "{screen}");
    t.keys(&["Escape"]);
    t.quit_and_check();
}

#[test]
fn attached_ctrl_t_terminates_a_runaway_program_and_esc_opens_the_menu() {
    let t = Tmux::start("terminate");
    t.wait_linked();
    // The program says it runs (a word the typed line does not hold) before it spins.
    t.text(r#"local f = fs.open("spin.lua","w") f.write("print('spin'..'ning') while true do os.pullEvent() end") f.close() print("written")"#);
    t.keys(&["F5"]);
    t.wait_for("the file to be written", |s| {
        s.lines().any(|l| l.contains("│written")) && s.contains("└ ok")
    });
    t.keys(&["F9"]);
    t.wait_text("Screen 1:miner");
    t.keys(&["F8"]);
    t.wait_text("ATTACHED to");
    t.text("spin.lua");
    t.keys(&["Enter"]);
    // One Ctrl-T: CC's terminate reaches the program, which the shell reports.
    t.wait_text("spinning");
    t.keys(&["C-t"]);
    t.wait_text("Terminated");
    // Esc opens the computer menu; Esc again closes it with nothing sent.
    t.keys(&["Escape"]);
    t.wait_text("reboot the computer");
    t.keys(&["Escape"]);
    t.wait_for("the menu closed", |s| !s.contains("reboot the computer"));
    t.keys(&["F8"]);
    t.wait_for("detached", |s| !s.contains("ATTACHED"));
    // The F6 prompt edits as a line: Ctrl-W erases a word, Ctrl-C closes it, not the console.
    t.keys(&["F6"]);
    t.wait_text("Run file");
    t.text("spin.lua deep");
    t.wait_text("run spin.lua deep");
    t.keys(&["C-w"]);
    t.wait_for("the word erased", |s| {
        s.contains("run spin.lua ") && !s.contains("spin.lua deep")
    });
    t.keys(&["C-c"]);
    t.wait_for("the prompt closed", |s| !s.contains("Run file"));
    t.quit_and_check();
}

/// A `put` of several pieces, as the CLI runs it beside the console, is one entry in Output
/// and in Agent activity: the file, its size, how it went.
#[test]
fn a_put_of_many_pieces_is_one_entry() {
    let t = Tmux::start("put");
    t.wait_linked();
    let work = tempfile::tempdir().unwrap();
    let local = work.path().join("big.bin");
    // Five pieces of 64 KiB.
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&local, &data).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trapdesk"))
        .args(["put"])
        .arg(&local)
        .arg("miner:/big.bin")
        .env("TRAPDESK_DATA_DIR", &t.data_dir)
        .env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let screen = t.wait_text("cli put /big.bin (300000 bytes in 5 pieces) · ok");
    assert!(!screen.contains("file-info"), "{screen}");
    assert!(!screen.contains("write-file"), "{screen}");
    assert!(!screen.contains("(append)"), "{screen}");
    assert!(!screen.contains("move-file"), "{screen}");
    assert!(screen.contains("Agent activity 1"), "{screen}");
    t.quit_and_check();
}

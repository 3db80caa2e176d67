//! The editor recipes of docs/editors.md, run as written (each block read from that file, so
//! the docs cannot drift from what works): the Makefile with `make`, the Neovim `init.lua`
//! autocmd and `:make` with `nvim --headless`, and the VS Code tasks.json, whose commands run
//! for real and whose problem-matcher patterns must match what those commands print. Each
//! talks to a real host with an emulated computer labelled `miner`, found through
//! `TRAPDESK_CONNECT` and `trapdesk` on PATH.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{TestHost, emulated, start_host};

/// The body of the first fenced block in docs/editors.md whose fence is ```` ```LANG ```` and
/// whose body starts with `first_line` (when given).
fn recipe(lang: &str, first_line: Option<&str>) -> String {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/editors.md")).unwrap();
    let fence = format!("```{lang}\n");
    let mut rest = doc.as_str();
    while let Some(i) = rest.find(&fence) {
        let body = &rest[i + fence.len()..];
        let end = body.find("\n```").unwrap();
        let block = &body[..=end];
        if first_line.is_none_or(|f| block.starts_with(f)) {
            return block.to_owned();
        }
        rest = &body[end..];
    }
    panic!("docs/editors.md has no ```{lang} block starting {first_line:?}");
}

/// A command with `trapdesk` on PATH, pointed at the host.
fn command(program: &str, host: &TestHost, cwd: &Path) -> Command {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_trapdesk"));
    let path = std::env::join_paths(std::iter::once(bin.parent().unwrap().to_owned()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut c = Command::new(program);
    c.current_dir(cwd)
        .env("PATH", path)
        .env("TRAPDESK_CONNECT", host.mcp_url())
        .env("TRAPDESK_DATA_DIR", &host.settings.data_dir)
        .env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN")
        .stdin(Stdio::null());
    c
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_make_recipe_pushes_runs_and_fails_on_a_lua_error() {
    let host = start_host().await;
    let _c = emulated(&host, 1, Some("miner")).await;
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    std::fs::write(w.join("Makefile"), recipe("make", None)).unwrap();
    std::fs::create_dir_all(w.join("src")).unwrap();
    std::fs::write(
        w.join("src/main.lua"),
        "print('hello from make') return 42\n",
    )
    .unwrap();

    let mut make = command("make", &host, w);
    make.arg("run");
    let ok = output(make).await;
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let out = text(&ok.stdout);
    assert!(out.contains("hello from make\n"), "{out}");
    assert!(out.contains("\n42\n"), "the returned value: {out}");
    assert_eq!(
        std::fs::read_to_string(host.dir.path().join("computers/1/prog/main.lua")).unwrap(),
        "print('hello from make') return 42\n"
    );

    std::fs::write(
        w.join("src/main.lua"),
        "print('before the error')\nerror('boom')\n",
    )
    .unwrap();
    let mut make = command("make", &host, w);
    make.arg("run");
    let failed = output(make).await;
    assert_ne!(
        failed.status.code(),
        Some(0),
        "make went on past a Lua error"
    );
    assert!(text(&failed.stdout).contains("before the error"));
    assert!(
        text(&failed.stderr).contains("/prog/main.lua:2: boom"),
        "{}",
        text(&failed.stderr)
    );
    host.host.stop().await;
}

/// Whether `nvim` can run here. CI installs it (.ci/run); elsewhere a build without it ignores
/// its test (build/tools.rs).
fn have_nvim() -> bool {
    let found = Command::new("nvim")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "nvim is missing on CI; .ci/run installs it"
        );
        eprintln!("skipped: no nvim on this machine (apt-get install neovim)");
    }
    found
}

/// CI installs nvim (.ci/run): there a build without it fails here, where elsewhere the Neovim
/// test is reported ignored.
#[cfg(not(has_nvim))]
#[test]
fn nvim_is_on_path_on_ci() {
    assert!(
        std::env::var_os("CI").is_none(),
        "nvim is missing on CI; .ci/run installs it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(has_nvim), ignore = "needs nvim (Neovim) on PATH")]
async fn the_neovim_recipes_push_on_write_and_fill_the_quickfix_list() {
    assert!(
        have_nvim(),
        "nvim was on PATH when the tests were built (cfg has_nvim, build/tools.rs), and does not run"
    );
    let host = start_host().await;
    let _c = emulated(&host, 1, Some("miner")).await;
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let config = tempfile::tempdir().unwrap();
    let init = config.path().join("init.lua");
    std::fs::write(&init, recipe("lua", Some("-- init.lua"))).unwrap();
    std::fs::write(w.join("main.lua"), "print('before')\n").unwrap();
    let remote = host.dir.path().join("computers/1/prog/main.lua");

    // The autocmd: `:w` pushes the file. Neovim waits (up to 15 s) for it to arrive, since
    // quitting would end the recipe's job.
    let mut nvim = command("nvim", &host, w);
    nvim.env("REMOTE", &remote)
        .env("XDG_STATE_HOME", config.path())
        .env("XDG_DATA_HOME", config.path())
        .args(["--headless", "-n", "-i", "NONE", "-u"])
        .arg(&init)
        .args([
            "main.lua",
            "-c",
            r#"call setline(1, 'print("saved from nvim")')"#,
            "-c",
            "w",
            "-c",
            "lua vim.wait(15000, function() local f = io.open(os.getenv('REMOTE')) \
             if not f then return false end local s = f:read('*a') f:close() \
             return s == 'print(\"saved from nvim\")\\n' end, 20)",
            "-c",
            "qa!",
        ]);
    let started = Instant::now();
    let done = output(nvim).await;
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(
        std::fs::read_to_string(&remote).unwrap(),
        "print(\"saved from nvim\")\n",
        "the write did not reach the computer"
    );

    // `:make`: pushes, runs, and the Lua error lands in the quickfix list at its line.
    let make_init = config.path().join("make.lua");
    std::fs::write(&make_init, recipe("lua", Some("-- :make"))).unwrap();
    std::fs::write(
        w.join("main.lua"),
        "print('line one')\nlocal x = nil\nx()\n",
    )
    .unwrap();
    let qf = config.path().join("qf.json");
    let mut nvim = command("nvim", &host, w);
    nvim.env("XDG_STATE_HOME", config.path())
        .env("XDG_DATA_HOME", config.path())
        .args(["--headless", "-n", "-i", "NONE", "-u"])
        .arg(&make_init)
        .args(["main.lua", "-c", "silent make", "-c"])
        .arg(format!(
            "call writefile([json_encode(getqflist())], '{}')",
            qf.display()
        ))
        .args(["-c", "qa!"]);
    let done = output(nvim).await;
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let list: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&qf).unwrap()).unwrap();
    let hit = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["valid"] == 1)
        .unwrap_or_else(|| panic!("no quickfix entry: {list}"));
    assert_eq!(hit["lnum"], 3, "{hit}");
    assert!(
        hit["text"]
            .as_str()
            .unwrap()
            .contains("attempt to call local 'x'"),
        "{hit}"
    );
    assert_eq!(hit["bufnr"], 1, "the entry is not main.lua: {hit}");
    host.host.stop().await;
}

/// The one regex of a problem matcher field.
fn regex(v: &serde_json::Value) -> regex::Regex {
    regex::Regex::new(v.as_str().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vscode_tasks_run_and_their_matchers_match_what_they_print() {
    let tasks: serde_json::Value = serde_json::from_str(&recipe("json", None)).unwrap();
    assert_eq!(tasks["version"], "2.0.0");
    let list = tasks["tasks"].as_array().unwrap();
    let task = |label: &str| {
        list.iter()
            .find(|t| t["label"] == label)
            .unwrap_or_else(|| panic!("no task {label}"))
            .clone()
    };
    let background = task("trapdesk sync");
    let build = task("trapdesk run once");
    assert_eq!(background["isBackground"], true);
    assert_eq!(build["group"]["kind"], "build");

    let host = start_host().await;
    let _c = emulated(&host, 1, Some("miner")).await;
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    std::fs::create_dir_all(w.join("src")).unwrap();
    std::fs::write(
        w.join("src/main.lua"),
        "print('one')\nlocal t = nil\nt.x = 1\n",
    )
    .unwrap();
    let shell_line = |t: &serde_json::Value| {
        assert_eq!(t["type"], "shell");
        t["command"]
            .as_str()
            .unwrap()
            .replace("${workspaceFolder}", w.to_str().unwrap())
    };

    // The build task: pushes, runs once, fails as the program did; its pattern finds the
    // file and the line.
    let mut sh = command("sh", &host, w);
    sh.args(["-c", &shell_line(&build)]);
    let once = output(sh).await;
    assert_eq!(once.status.code(), Some(1), "{}", text(&once.stderr));
    assert_eq!(text(&once.stdout), "one\n");
    let pattern = &build["problemMatcher"]["pattern"];
    let re = regex(&pattern["regexp"]);
    let stderr = text(&once.stderr);
    let caps = stderr
        .lines()
        .find_map(|l| re.captures(l))
        .unwrap_or_else(|| panic!("the pattern matches no line of {stderr:?}"));
    let group = |k: &str| &caps[pattern[k].as_u64().unwrap() as usize];
    assert_eq!(group("file"), "main.lua");
    assert_eq!(group("line"), "3");
    assert!(group("message").contains("attempt to index"), "{stderr}");
    assert_eq!(
        build["problemMatcher"]["fileLocation"][1],
        "${workspaceFolder}/src"
    );

    // The background task: a watch whose push-and-run begins and ends where its matcher says.
    let matcher = &background["problemMatcher"];
    assert_eq!(matcher["pattern"], build["problemMatcher"]["pattern"]);
    // Only keys VS Code knows (a misspelt one is silently ignored there).
    for key in matcher["background"].as_object().unwrap().keys() {
        assert!(
            ["activeAtBeginning", "beginsPattern", "endsPattern"].contains(&key.as_str()),
            "VS Code has no background key {key:?}"
        );
    }
    assert_eq!(matcher["background"]["activeAtBeginning"], true);
    let begins = regex(&matcher["background"]["beginsPattern"]);
    let ends = regex(&matcher["background"]["endsPattern"]);
    let mut sh = command("sh", &host, w);
    sh.args(["-c", &format!("exec {}", shell_line(&background))])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = sh.spawn().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for l in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let next = |want: &regex::Regex, seen: &mut Vec<String>| {
        let start = Instant::now();
        loop {
            if let Ok(l) = rx.recv_timeout(Duration::from_millis(50)) {
                seen.push(l.clone());
                if want.is_match(&l) {
                    return l;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no line matching {want} in {seen:?}"
            );
        }
    };
    // Active at the beginning: the first run ends the first cycle.
    next(&ends, &mut seen);
    std::fs::write(w.join("src/main.lua"), "print('two')\n").unwrap();
    next(&begins, &mut seen);
    let end = next(&ends, &mut seen);
    assert!(end.starts_with("sync: ran "), "{end}");
    let _ = child.kill();
    let _ = child.wait();
    host.host.stop().await;
}

//! `trapdesk put`, `get` and `ls` through a real running host with an emulated computer:
//! binary content byte-exact both ways, files larger than one piece, stdin/stdout, exit codes.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use support::{emulated, emulated_with, start_host, wait_until};

/// The binary against `host`, finding the host's local token in its data dir as it does on a
/// person's machine (no token in the environment).
fn trapdesk(host: &trapdesk::host::Host, args: &[&str]) -> Command {
    let mut c = trapdesk_at(&host.mcp_url(), args);
    c.env("TRAPDESK_DATA_DIR", &host.settings.data_dir);
    c
}

/// The binary against whatever answers at `url`, with no token at all.
fn trapdesk_at(url: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.env_remove("TRAPDESK_DATA_DIR");
    c.arg(args[0]).args(["--connect", url]).args(&args[1..]);
    c.env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN");
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

/// Every byte value, then enough pseudo-random bytes to need several pieces both ways.
fn binary(len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..=255u8).collect();
    let mut x: u32 = 0x1234_5678;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push((x >> 24) as u8);
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_and_get_are_byte_exact_for_binary_files_of_many_pieces() {
    let host = start_host().await;
    let _c = emulated(&host, 4, Some("store")).await;
    let work = tempfile::tempdir().unwrap();
    let data = binary(200_000);
    let local = work.path().join("blob.bin");
    std::fs::write(&local, &data).unwrap();

    let put = output(trapdesk(
        &host,
        &["put", local.to_str().unwrap(), "store:/data/blob.bin"],
    ))
    .await;
    assert_eq!(put.status.code(), Some(0), "{}", text(&put.stderr));
    let on_disk = std::fs::read(host.dir.path().join("computers/4/data/blob.bin")).unwrap();
    assert!(on_disk == data, "the computer's copy differs");

    let back = work.path().join("back.bin");
    let get = output(trapdesk(
        &host,
        &["get", "4:store:/data/blob.bin", back.to_str().unwrap()],
    ))
    .await;
    assert_eq!(get.status.code(), Some(0), "{}", text(&get.stderr));
    assert!(
        std::fs::read(&back).unwrap() == data,
        "the copy back differs"
    );

    // stdin in, stdout out.
    let mut cmd = trapdesk(&host, &["put", "-", "store:/small.txt"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"h\x00\xffi\n")
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let got = output(trapdesk(&host, &["get", "store:/small.txt", "-"])).await;
    assert_eq!(got.stdout, b"h\x00\xffi\n");

    let ls = output(trapdesk(&host, &["ls", "store:/data"])).await;
    assert_eq!(ls.status.code(), Some(0));
    assert_eq!(text(&ls.stdout), "   200000  blob.bin\n");
    let ls = output(trapdesk(&host, &["ls", "store", "--json"])).await;
    let v: serde_json::Value = serde_json::from_slice(&ls.stdout).unwrap();
    assert!(
        v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "data" && e["dir"] == true),
        "{v}"
    );

    let missing = output(trapdesk(&host, &["get", "store:/nope.txt", "-"])).await;
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(missing.stdout, b"");
    assert_eq!(text(&missing.stderr).lines().count(), 1);

    let gone = output(trapdesk(
        &host,
        &["put", local.to_str().unwrap(), "nobody:/x"],
    ))
    .await;
    assert_eq!(gone.status.code(), Some(3));

    let no_file = output(trapdesk(&host, &["put", "/no/such/file", "store:/x"])).await;
    assert_eq!(no_file.status.code(), Some(2));
    host.host.stop().await;
}

/// The hidden part files of puts still going (or interrupted) in `dir`.
fn parts(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".trapdesk-part"))
                .collect()
        })
        .unwrap_or_default()
}

/// Starts a put of `data` and returns once a part file of its own (a name not in `before`)
/// is on the computer, with that name. A part an earlier interrupted put left, or one whose
/// last piece lands late, is never taken for this put's.
async fn put_started(
    host: &trapdesk::host::Host,
    local: &std::path::Path,
    dir: &std::path::Path,
    before: &[String],
) -> (std::process::Child, String) {
    let mut cmd = trapdesk(
        host,
        &["put", local.to_str().unwrap(), "store:/data/big.bin"],
    );
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    // Its own poll, every 2 ms rather than support::wait_for's 10: the part file lives only
    // as long as the put does, and the put must be caught while it runs.
    loop {
        if let Some(own) = parts(dir).into_iter().find(|p| !before.contains(p)) {
            return (child, own);
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the put ended ({status}) before it could be interrupted");
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "no part file appeared"
        );
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}

async fn wait(child: std::process::Child) -> Output {
    tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_put_leaves_the_old_file_intact() {
    let host = start_host().await;
    // 1.5 MB in many pieces, so that there is a middle to interrupt: more than a default
    // computer's 1,000,000 bytes, so the quota is raised, as a server's `computer_space_limit`
    // can be.
    let raised = |s: trapdesk::emu::ComputerSpec| s.with_disk_space(4_000_000);
    let c = emulated_with(&host, 4, Some("store"), raised).await;
    let work = tempfile::tempdir().unwrap();
    let dir = host.dir.path().join("computers/4/data");
    let target = dir.join("big.bin");
    std::fs::create_dir_all(&dir).unwrap();
    let old = b"the old content\n".to_vec();
    std::fs::write(&target, &old).unwrap();
    // Many pieces, so that there is a middle to interrupt.
    let data = binary(1_500_000);
    let local = work.path().join("big.bin");
    std::fs::write(&local, &data).unwrap();

    // Killed outright: nothing can clean up, and still the target is untouched.
    let (mut child, killed) = put_started(&host, &local, &dir, &[]).await;
    child.kill().unwrap();
    let _ = wait(child).await;
    wait_until(|| host.session.pending().is_empty()).await;
    assert!(
        std::fs::read(&target).unwrap() == old,
        "a killed put changed the file"
    );
    // Its part stays behind (hidden, beside the target). Its last piece may still land on the
    // computer after the host cancelled it (the cancel does not reach a piece already sent),
    // so the checks below name each put's own part rather than counting what is there.
    assert!(parts(&dir).contains(&killed), "{:?}", parts(&dir));

    // Ctrl-C: exit 130, the target untouched, its own part deleted.
    let (child, own) = put_started(&host, &local, &dir, &parts(&dir)).await;
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let out = wait(child).await;
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    wait_until(|| host.session.pending().is_empty()).await;
    assert!(
        std::fs::read(&target).unwrap() == old,
        "a cancelled put changed the file"
    );
    assert!(
        !parts(&dir).contains(&own),
        "the cancelled put left its part {own} behind: {:?}",
        parts(&dir)
    );

    // The computer unlinks mid-put: exit 3, the target untouched.
    let (child, _) = put_started(&host, &local, &dir, &parts(&dir)).await;
    c.shutdown();
    c.wait_stopped().await;
    let out = wait(child).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        std::fs::read(&target).unwrap() == old,
        "an unlink mid-put changed the file"
    );

    // Back again, a whole put replaces it in one step.
    let _c = emulated_with(&host, 4, Some("store"), raised).await;
    let out = output(trapdesk(
        &host,
        &[
            "put",
            local.to_str().unwrap(),
            "store:/data/big.bin",
            "--json",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["bytes"], 1_500_000, "{v}");
    assert!(
        std::fs::read(&target).unwrap() == data,
        "the whole put differs"
    );
    host.host.stop().await;
}

/// `put hi.lua miner:/programs` copies into the folder when the computer
/// says it is one, like `cp`; a path that is no folder is still the file's new name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_onto_a_folder_copies_into_it() {
    let host = start_host().await;
    let _c = emulated(&host, 5, Some("miner")).await;
    let root = host.dir.path().join("computers/5");
    std::fs::create_dir_all(root.join("programs")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("hi.lua");
    std::fs::write(&local, "print('hi')").unwrap();

    let put = output(trapdesk(
        &host,
        &["put", local.to_str().unwrap(), "miner:/programs"],
    ))
    .await;
    assert_eq!(put.status.code(), Some(0), "{}", text(&put.stderr));
    assert_eq!(
        std::fs::read_to_string(root.join("programs/hi.lua")).unwrap(),
        "print('hi')"
    );
    assert!(
        text(&put.stdout).contains("miner:/programs/hi.lua"),
        "{}",
        text(&put.stdout)
    );

    let renamed = output(trapdesk(
        &host,
        &["put", local.to_str().unwrap(), "miner:/programs/hello.lua"],
    ))
    .await;
    assert_eq!(renamed.status.code(), Some(0), "{}", text(&renamed.stderr));
    assert!(root.join("programs/hello.lua").is_file());
    host.host.stop().await;
}

/// The README's line of `get` and `put`, each command run word for word: its `put` on a
/// computer that has no `/programs` yet lands in the folder, as its comment says, and its
/// `get` then fetches the file back into an empty folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_get_and_put_line_does_what_it_says() {
    let readme = include_str!("../../../README.md");
    let line = readme
        .lines()
        .find(|l| l.starts_with("trapdesk get miner:") && l.contains("trapdesk put"))
        .expect("the README's get/put line");
    let (commands, comment) = line.split_once('#').unwrap();
    assert!(comment.contains("into the folder"), "{line}");
    let (get, put) = commands.split_once(';').expect("get; put");
    let host = start_host().await;
    let _c = emulated(&host, 5, Some("miner")).await;
    let root = host.dir.path().join("computers/5");
    assert!(!root.join("programs").exists());
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("dig.lua"), "print('dig')").unwrap();
    let back = tempfile::tempdir().unwrap();
    for (command, dir) in [(put, work.path()), (get, back.path())] {
        let words: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(words[0], "trapdesk", "{command}");
        let mut c = trapdesk(&host, &words[1..]);
        c.current_dir(dir);
        let out = output(c).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "{command}: {}",
            text(&out.stderr)
        );
    }
    assert!(root.join("programs").is_dir(), "/programs is not a folder");
    assert_eq!(
        std::fs::read_to_string(root.join("programs/dig.lua")).unwrap(),
        "print('dig')"
    );
    assert_eq!(
        std::fs::read_to_string(back.path().join("dig.lua")).unwrap(),
        "print('dig')"
    );
    // Without the `/`, a missing PATH is the file's new name, as `cp` makes it.
    let put = output(trapdesk(
        &host,
        &[
            "put",
            work.path().join("dig.lua").to_str().unwrap(),
            "miner:/tools",
        ],
    ))
    .await;
    assert_eq!(put.status.code(), Some(0), "{}", text(&put.stderr));
    assert!(root.join("tools").is_file());
    host.host.stop().await;
}

/// `get` onto a local file that exists refuses, changes nothing and fetches nothing; the
/// command it gives to overwrite works when pasted into a shell as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_refuses_to_overwrite_a_local_file_and_its_hint_works() {
    let host = start_host().await;
    let _c = emulated(&host, 5, Some("miner")).await;
    let root = host.dir.path().join("computers/5");
    std::fs::write(
        root.join("startup.player.lua"),
        "print('from the computer')",
    )
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    let mine = work.path().join("startup.player.lua");
    std::fs::write(&mine, "-- my unsaved edits").unwrap();

    let mut c = trapdesk(&host, &["get", "miner:/startup.player.lua"]);
    c.current_dir(work.path());
    let refused = output(c).await;
    assert_eq!(refused.status.code(), Some(1));
    let err = text(&refused.stderr);
    assert!(
        err.contains("startup.player.lua already exists; nothing was fetched and it is unchanged. Give another LOCAL path, or overwrite it with: "),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&mine).unwrap(),
        "-- my unsaved edits"
    );

    // The hint, pasted as it is.
    let hint = err.trim_end().rsplit("overwrite it with: ").next().unwrap();
    assert!(hint.contains(" get -f "), "{hint}");
    let again = output({
        let mut sh = Command::new("sh");
        sh.args(["-c", hint])
            .current_dir(work.path())
            .env("TRAPDESK_DATA_DIR", &host.settings.data_dir)
            .env_remove("TRAPDESK_TOKEN");
        sh
    })
    .await;
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(
        std::fs::read_to_string(&mine).unwrap(),
        "print('from the computer')"
    );
    // --force says the same, into a folder too.
    std::fs::write(&mine, "-- edits again").unwrap();
    let forced = output(trapdesk(
        &host,
        &[
            "get",
            "--force",
            "miner:/startup.player.lua",
            work.path().to_str().unwrap(),
        ],
    ))
    .await;
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced.stderr));
    assert_eq!(
        std::fs::read_to_string(&mine).unwrap(),
        "print('from the computer')"
    );
    host.host.stop().await;
}

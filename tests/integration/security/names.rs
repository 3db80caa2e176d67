//! Attacks on names (docs/security.md, "A name means one computer"): a label shaped like
//! another computer's traposId, a relabel onto a label bound with `trapdesk secret add`, an
//! enrolment of a bound id under another label, labels of any length or with terminal escapes,
//! and a CLI that names what the person typed rather than what it reached. Each runs against a
//! real host over real sockets: scripted computers speaking the protocol, the emulator running
//! the real Lua client, and the `trapdesk` binary as the person's CLI.

use std::process::Command;

use serde_json::{Value, json};
use trapdesk::session::{Origin, RequestSpec};
use trapdesk::trust::secrets::{self, ComputerSecret};

use super::cli::{output, text};
use super::support::{self, FakeComputer, SECRET, TestHost, hello, start_host, wait_until};

fn exec(code: &str) -> RequestSpec {
    RequestSpec::new(trapdesk::protocol::Kind::ExecLua, json!({ "code": code }))
        .timeout(Some(std::time::Duration::from_secs(5)))
}

/// The `trapdesk` binary against `host`, with the host's local token from its data dir.
fn trapdesk(host: &TestHost, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trapdesk"));
    c.arg(args[0])
        .args(["--connect", &host.mcp_url()])
        .args(&args[1..]);
    c.env("TRAPDESK_DATA_DIR", &host.settings.data_dir)
        .env_remove("TRAPDESK_TOKEN")
        .env_remove("TRAPDESK_MCP_TOKEN");
    c
}

fn binding(host: &TestHost, computer: &str) -> Option<ComputerSecret> {
    secrets::list(host.dir.path())
        .unwrap()
        .into_iter()
        .find(|c| c.computer == computer)
}

fn with_secret(mut h: Value, secret: &str, enrol: bool) -> Value {
    h["secret"] = json!(secret);
    if enrol {
        h["enrol"] = json!(true);
    }
    h
}

/// Sends `hello` on a fresh socket and returns the close code and what came before it.
async fn refused(host: &TestHost, hello: &Value) -> (Option<u16>, Vec<Value>) {
    let mut c = FakeComputer::connect_raw(host).await;
    c.send(hello).await;
    c.recv_close().await
}

/// The squatter's next request is `marker`'s: nothing addressed to the victim came before it.
async fn next_is_ours(host: &TestHost, squatter: &mut FakeComputer, own_name: &str) {
    let mine = host
        .session
        .start(own_name, exec("return 'marker'"), Origin::Person)
        .unwrap();
    let req = squatter.recv_request().await;
    assert_eq!(req["payload"]["code"], "return 'marker'", "{req}");
    let id = req["id"].as_str().unwrap().to_owned();
    squatter.respond(&id, json!({"returns": []})).await;
    mine.wait().await.unwrap();
}

/// While computer 7 (`7:vault`) is offline, a computer labelled `7:vault` (by its hello, or by
/// `label set 7:vault` once linked) gets nothing addressed to `7:vault`, from the session or
/// the CLI: no code, no file, and no forged answer comes back as success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_squatting_a_traposid_reaches_nothing() {
    let host = start_host().await;
    let victim = FakeComputer::link(&host, 7, Some("vault")).await;
    victim.close().await;
    wait_until(|| host.session.computer("7:vault").is_some_and(|c| !c.online)).await;

    // A squatter that says so in its hello, and one that relabels itself once linked.
    let mut by_hello = FakeComputer::link(&host, 12, Some("7:vault")).await;
    let mut by_label = FakeComputer::link(&host, 13, Some("plain")).await;
    by_label
        .send(&json!({"type": "label", "label": "7:VAULT"}))
        .await;
    wait_until(|| host.session.computer("13:7:VAULT").is_some()).await;

    for query in ["7:vault", "7:VAULT", " 7:vault "] {
        let err = host
            .session
            .request(query, exec("return 'secret code'"), Origin::Person)
            .await
            .unwrap_err();
        assert!(
            matches!(err.code(), "unknown_computer" | "shut_down"),
            "{query:?}: {err}"
        );
    }
    // The person's CLI: the put fails as unreachable, its file never leaves the host.
    let work = tempfile::tempdir().unwrap();
    let local = work.path().join("plans.txt");
    std::fs::write(&local, "the vault's combination").unwrap();
    let out = output(trapdesk(
        &host,
        &["put", local.to_str().unwrap(), "7:vault:/plans.txt"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("7:vault"),
        "{}",
        text(&out.stderr)
    );
    let out = output(trapdesk(&host, &["exec", "7:vault", "return 1"])).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));

    next_is_ours(&host, &mut by_hello, "12:7:vault").await;
    next_is_ours(&host, &mut by_label, "13:7:VAULT").await;

    // The real one back: the name reaches it, and only it.
    let mut real = FakeComputer::link(&host, 7, Some("vault")).await;
    let t = host
        .session
        .start("7:vault", exec("return 'for the vault'"), Origin::Person)
        .unwrap();
    let req = real.recv_request().await;
    assert_eq!(req["payload"]["code"], "return 'for the vault'");
    real.respond(req["id"].as_str().unwrap(), json!({"returns": []}))
        .await;
    t.wait().await.unwrap();
}

/// `trapdesk secret add miner` binds the label: a computer that linked with the shared secret
/// and then says `label miner` is closed with `auth_failed`, never known as `miner`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relabel_to_a_bound_label_is_refused() {
    let host = start_host().await;
    let miner_secret = secrets::add(host.dir.path(), "miner").unwrap();
    let mut squatter = FakeComputer::link(&host, 9, None).await;
    squatter
        .send(&json!({"type": "label", "label": "miner"}))
        .await;
    let (code, seen) = squatter.recv_close().await;
    assert_eq!(code, Some(4001), "{seen:?}");
    assert!(
        seen.iter()
            .any(|m| m["type"] == "error" && m["code"] == "auth_failed"),
        "{seen:?}"
    );
    assert!(host.session.computer("9:miner").is_none());
    assert!(host.session.resolve("miner").is_err());
    assert!(
        host.session
            .recent(50)
            .iter()
            .any(|e| e.event.as_str() == "refused" && e.detail.contains("9:")),
        "the refusal is in the session log"
    );

    // The computer holding the label's secret may take it.
    // Under another label the label's secret is nobody's: refused.
    let (code, _) = refused(
        &host,
        &with_secret(hello(4, Some("farm")), &miner_secret, false),
    )
    .await;
    assert_eq!(code, Some(4001), "a secret links only what it binds");
    let mut real = FakeComputer::link(&host, 4, None).await;
    real.send(&json!({"type": "label", "label": "miner"})).await;
    let (code, _) = real.recv_close().await;
    assert_eq!(
        code,
        Some(4001),
        "the shared secret does not take a bound label"
    );
    let (_real, welcome) = FakeComputer::link_with(
        &host,
        with_secret(hello(4, Some("miner")), &miner_secret, false),
    )
    .await;
    assert_eq!(welcome["trapos_id"], "4:miner");
}

/// Enrolling the id of a computer bound by label (`secret add miner`) under another label is
/// refused once that computer linked with its secret; an enrolment made before it ever linked
/// gives way when it does. Either way the bound computer still links.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enrolling_a_bound_id_under_another_label_does_not_lock_it_out() {
    let host = start_host().await;
    let miner = secrets::add(host.dir.path(), "miner").unwrap();
    let real_hello = with_secret(hello(7, Some("miner")), &miner, true);

    // The attacker enrols id 7 first, before the real computer ever linked.
    let (early, welcome) =
        FakeComputer::link_with(&host, with_secret(hello(7, Some("other")), SECRET, true)).await;
    let stolen = welcome["secret"].as_str().unwrap().to_owned();
    early.close().await;
    // The real one still links, and its id is bound to the label from now on.
    let (real, _) = FakeComputer::link_with(&host, real_hello.clone()).await;
    wait_until(|| binding(&host, "miner").is_some_and(|b| b.ids == vec![7])).await;
    assert!(
        binding(&host, "7").is_none(),
        "the early enrolment gave way"
    );
    real.close().await;

    // Now neither the shared secret nor the stolen one links id 7, under any label.
    for h in [
        with_secret(hello(7, Some("other")), SECRET, true),
        with_secret(hello(7, None), SECRET, false),
        with_secret(hello(7, Some("other")), &stolen, true),
    ] {
        let (code, _) = refused(&host, &h).await;
        assert_eq!(code, Some(4001), "{h}");
    }
    assert!(binding(&host, "7").is_none());
    let (_real, welcome) = FakeComputer::link_with(&host, real_hello).await;
    assert_eq!(welcome["trapos_id"], "7:miner");
}

/// A 200,000-character label links as its first 32 characters, as CC keeps a label, in the
/// hello and in a `label` message alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200000_character_label_links_as_its_normalised_32_character_form() {
    let host = start_host().await;
    let long = "L".repeat(200_000);
    let (mut c, welcome) = FakeComputer::link_with(&host, hello(5, Some(&long))).await;
    let short = format!("5:{}", "L".repeat(32));
    assert_eq!(welcome["trapos_id"], short.as_str());
    wait_until(|| host.session.computer(&short).is_some_and(|c| c.online)).await;
    c.send(&json!({"type": "label", "label": "M".repeat(200_000)}))
        .await;
    let again = format!("5:{}", "M".repeat(32));
    wait_until(|| host.session.computer(&again).is_some_and(|c| c.online)).await;
    assert!(
        host.session
            .computers()
            .iter()
            .all(|c| c.trapos_id.chars().count() <= 2 + 32)
    );
}

/// A label carrying a terminal escape (an OSC 52 clipboard write) or other control characters
/// has each replaced by `?`, as CC's `StringUtil.normaliseLabel` does, so no name the host
/// shows or prints carries one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unprintable_characters_in_a_label_are_replaced_as_cc_does() {
    let host = start_host().await;
    let osc52 = "a\u{1b}]52;c;aGk=\u{7}b";
    let (mut c, welcome) = FakeComputer::link_with(&host, hello(6, Some(osc52))).await;
    assert_eq!(welcome["trapos_id"], "6:a?]52;c;aGk=?b");
    c.send(&json!({"type": "label", "label": "x\ty\u{7f}z\n"}))
        .await;
    wait_until(|| host.session.computer("6:x?y?z?").is_some_and(|c| c.online)).await;
    // Bytes CC keeps stay: the wire's `\u00c3\u00a9` is "é".
    c.send_text(r#"{"type":"label","label":"caf\u00c3\u00a9"}"#)
        .await;
    wait_until(|| host.session.computer("6:café").is_some_and(|c| c.online)).await;
    // An empty label is no label, as CC's `label clear`.
    c.send(&json!({"type": "label", "label": ""})).await;
    wait_until(|| host.session.computer("6:").is_some_and(|c| c.online)).await;
}

/// What `trapdesk put`, `get` and `exec` print names the computer the host reached (its
/// traposId), not the name the person typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_names_the_computer_it_reached() {
    let host = start_host().await;
    let _c = support::emulated(&host, 4, Some("store")).await;
    let work = tempfile::tempdir().unwrap();
    let local = work.path().join("a.txt");
    std::fs::write(&local, "hello").unwrap();
    let out = output(trapdesk(
        &host,
        &["put", local.to_str().unwrap(), "store:/a.txt"],
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "5 bytes → 4:store:/a.txt");
    let back = work.path().join("b.txt");
    let out = output(trapdesk(
        &host,
        &["get", "4:STORE:/a.txt", back.to_str().unwrap()],
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("from 4:store:/a.txt"),
        "{}",
        text(&out.stdout)
    );
    let out = output(trapdesk(&host, &["exec", "4", "error('boom', 0)"])).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("on 4:store"),
        "{}",
        text(&out.stderr)
    );
}

/// A flood of hellos asking to enrol, each with a new id and the shared secret, rewrites the
/// bindings file at most `ENROL_PER_MINUTE` (60) times a minute: past that they link unbound,
/// with no secret in their `welcome`, and the file does not grow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_enrolments_grows_the_bindings_file_no_further_than_its_bound() {
    let host = start_host().await;
    let mut enrolled = 0;
    let mut unbound = 0;
    for id in 100..(100 + 2 * u64::from(secrets::ENROL_PER_MINUTE)) {
        let (c, welcome) =
            FakeComputer::link_with(&host, with_secret(hello(id, None), SECRET, true)).await;
        if welcome["secret"].is_string() {
            enrolled += 1;
        } else {
            unbound += 1;
        }
        c.close().await;
    }
    assert_eq!(enrolled, secrets::ENROL_PER_MINUTE);
    assert_eq!(unbound, secrets::ENROL_PER_MINUTE);
    assert_eq!(
        secrets::list(host.dir.path()).unwrap().len(),
        secrets::ENROL_PER_MINUTE as usize
    );
}

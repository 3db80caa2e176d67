//! Attacks on hello: what a computer's hello claims of its detached runs (`detached`) is a
//! claim, bounded and never believed about who started a run (docs/security.md, "What a
//! computer's hello claims"; RELIABILITY.md, "Adopted runs and per-id bookkeeping").

use serde_json::{Value, json};

use super::support::{self, FakeComputer, wait_until};
use trapdesk::host::Host;
use trapdesk::protocol::Kind;
use trapdesk::session::{Origin, RequestSpec, RequestState, Status};

/// Hellos in the flood, and the runs each claims (the red team's figures).
const HELLOS: u64 = 20;
const CLAIMS: usize = 15_000;

/// A claim of `CLAIMS` runs of every shape, each saying the person started it.
fn flood(computer_id: u64) -> Value {
    let runs: Vec<Value> = (0..CLAIMS)
        .map(|i| {
            let id = match i % 3 {
                // The shape this host's ids have, with an earlier start's tag.
                0 => format!("h-{computer_id:06}-{i}"),
                1 => format!("not-an-id-of-ours-{i}"),
                _ => "z".repeat(i % 400),
            };
            json!({"id": id, "request": "exec-lua", "by": "person", "status": "running"})
        })
        .collect();
    let mut hello = support::hello(computer_id, Some("flood"));
    hello["detached"] = Value::Array(runs);
    hello
}

/// Links `HELLOS` computers from `first_id` on, each with a flood, and drops their links.
async fn flood_round(host: &support::TestHost, first_id: u64) {
    let mut computers = Vec::new();
    for c in 0..HELLOS {
        let (fc, welcome) = FakeComputer::link_with(host, flood(first_id + c)).await;
        assert_eq!(welcome["type"], "welcome");
        computers.push(fc);
    }
    let max = host.session.settings().max_detached;
    wait_until(|| {
        host.session
            .pending()
            .iter()
            .filter(|p| p.trapos_id.starts_with(&format!("{first_id}:")))
            .count()
            == max
    })
    .await;
    for fc in computers {
        fc.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_hellos_claiming_fifteen_thousand_runs_each_keep_the_host_within_its_bounds() {
    // Frames big enough for the whole claim (about 2 MB each): the bound is what is kept of
    // it, not the frame.
    let host = support::start_host_with(|s| s.max_message = 8 << 20).await;
    let max = host.session.settings().max_detached;
    let kept = 2 * HELLOS as usize * max;
    // Two floods: the first takes the allocator to its working size (the frames and their
    // parse are transient); the second must find the room freed, where a host keeping every
    // claim grew 353 MiB a flood.
    let rss_start = rss_bytes();
    flood_round(&host, 300).await;
    let rss_first = rss_bytes();
    flood_round(&host, 400).await;
    wait_until(|| host.session.bookkeeping().orphaned == kept).await;
    let rss_second = rss_bytes();
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    eprintln!(
        "resident memory: {:.1} MiB over the first flood, {:.1} MiB over the second \
         ({HELLOS} hellos naming {CLAIMS} runs each)",
        mib(rss_first.saturating_sub(rss_start)),
        mib(rss_second.saturating_sub(rss_first)),
    );
    // The whole process (other tests of this binary too): a bound well above the flood's own
    // share, far below what keeping the claims cost.
    assert!(
        rss_second.saturating_sub(rss_first) < 64 << 20,
        "the second flood grew the host by {:.1} MiB",
        mib(rss_second - rss_first)
    );
    let b = host.session.bookkeeping();
    // 600 000 runs claimed; what is kept: max_detached (4) per computer, each recorded once,
    // now waiting for their computers.
    assert_eq!(b.pending, kept, "{b:?}");
    assert_eq!(b.orphaned, kept, "{b:?}");
    assert_eq!(b.runs_running, kept, "{b:?}");
    assert!(b.orphaned <= trapdesk::session::detached::ORPHANS_KEPT);
    for p in host.session.pending() {
        assert!(p.request_id.starts_with("h-000"), "{}", p.request_id);
        assert_eq!(
            p.origin,
            Origin::Agent(format!("computer {}", p.trapos_id)),
            "the computer's, never the person's"
        );
        assert!(!p.no_deadline, "an adopted run has a deadline");
        assert!(p.timeout_ms <= 600_000);
    }
    let log = host.session.recent(100_000);
    assert!(
        log.iter().all(|e| e.who.as_deref() != Some("person")),
        "the claimed `by: person` reached the log"
    );
    let refusals = log
        .iter()
        .filter(|e| e.event.as_str() == "detached" && e.detail.contains("dropped"))
        .count();
    assert_eq!(
        refusals, 1,
        "one line for the floods, not one per hello or run"
    );
    // Nor in what the host wrote: the transcript and history in its data dir.
    for entry in std::fs::read_dir(host.dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains("\"who\":\"person\""),
                "{} names the person",
                path.display()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_saying_the_person_started_a_run_is_not_believed_after_a_host_restart() {
    let dir = tempfile::tempdir().unwrap();
    let settings = support::settings(dir.path());
    let host = Host::start(settings.clone(), true).await.unwrap();
    let mut fc = FakeComputer::link(&host, 5, Some("worker")).await;
    let spec = RequestSpec::new(Kind::ExecLua, json!({"code": "sleep(600)"})).detached();
    let ticket = host
        .session
        .start("5:worker", spec, Origin::Agent("real-starter".into()))
        .unwrap();
    let id = ticket.id.clone();
    ticket.detach();
    let sent = fc.recv_request().await;
    assert_eq!(sent["id"], id.as_str());
    host.stop().await;
    drop(fc);

    // The next host on the same data dir; the computer names the run, claiming the person
    // started it, among runs of every shape.
    let host = Host::start(settings, true).await.unwrap();
    let mut hello = support::hello(5, Some("worker"));
    let mut runs =
        vec![json!({"id": id, "request": "exec-lua", "by": "person", "status": "running"})];
    for i in 0..100 {
        runs.push(json!({"id": format!("h-000000-{i}"), "request": "exec-lua", "by": "person"}));
    }
    hello["detached"] = Value::Array(runs);
    let (mut fc, _) = FakeComputer::link_with(&host, hello).await;
    wait_until(|| host.session.pending().iter().any(|p| p.request_id == id)).await;
    let real = host
        .session
        .pending()
        .into_iter()
        .find(|p| p.request_id == id)
        .unwrap();
    assert_eq!(real.origin, Origin::Agent("real-starter".into()));
    let record = host.session.run_record(&id).unwrap();
    assert_eq!(record.origin, Origin::Agent("real-starter".into()));
    let adopted = host
        .session
        .recent(1000)
        .into_iter()
        .find(|e| e.event.as_str() == "adopted" && e.request_id.as_deref() == Some(id.as_str()))
        .unwrap();
    assert_eq!(adopted.who.as_deref(), Some("real-starter"));
    let max = host.session.settings().max_detached;
    assert_eq!(
        host.session.pending().len(),
        max,
        "its own, and the rest up to max_detached"
    );
    // Its answer ends it, and the record says so.
    fc.respond(&id, json!({"ok": true, "returns": [], "output": ""}))
        .await;
    wait_until(|| {
        matches!(
            host.session.request_state(&id),
            Some(RequestState::Ended(_))
        )
    })
    .await;
    if let Some(RequestState::Ended(f)) = host.session.request_state(&id) {
        assert_eq!(f.status, Status::Ok);
    }
    let record = host.session.run_record(&id).unwrap();
    assert_eq!(record.ended.map(|e| e.code), Some("ok".to_owned()));
}

/// The process's resident memory, from `/proc/self/statm` (0 where there is none).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

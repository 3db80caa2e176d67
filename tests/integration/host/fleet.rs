//! Fleets: `probe-computers` pages through hundreds of computers by glob and cursor and returns
//! each exactly once while others link and unlink between pages; `exec-lua-many` runs a chunk
//! on fifty computers and reports every one of them, whether it answered, failed, timed out or
//! unlinked mid-call. Driven by rmcp's client over real HTTP, with scripted computers linked
//! straight into the session.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::support::{mcp_fake as fake, world};

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::support::world::on_both_runtimes;
use fake::{call, connect, connect_stateless, data, host_with, start_call, text};
use rmcp::model::ServerResult;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use trapdesk::config::Settings;
use trapdesk::gateway::protocol::{Hello, Response};
use trapdesk::session::{Link, Outbound, Session, Stream};
use world::{Runtime, World};

fn hello(id: u64, label: &str) -> Hello {
    Hello {
        protocol: 1,
        computer_id: id,
        label: Some(label.to_owned()),
        secret: "s".into(),
        serves: vec!["exec-lua".into()],
        client: Some("fleet-test/1".into()),
        host: Some("test".into()),
        max_message: None,
    }
}

/// An idle computer: linked while the returned pair lives, never answers.
fn idle(session: &Session, id: u64, label: &str) -> (Link, mpsc::Receiver<Outbound>) {
    let (tx, rx) = mpsc::channel(1024);
    (session.link(&hello(id, label), tx), rx)
}

#[tokio::test]
async fn probe_pages_return_each_computer_once_while_others_come_and_go() {
    let h = host_with(Settings::default()).await;
    let mut links: HashMap<u64, (Link, mpsc::Receiver<Outbound>)> = (1..=500)
        .map(|i| (i, idle(&h.session, i, &format!("node-{i}"))))
        .collect();
    let (client, _) = connect(&h.url, &h.token).await;
    let mut seen: Vec<String> = Vec::new();
    let mut unlinked: HashSet<String> = HashSet::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0u64;
    loop {
        let mut args = json!({"ping": false, "limit": 37});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let r = call(&client, "probe-computers", args).await;
        assert_eq!(r.is_error, Some(false), "{}", text(&r));
        let d = data(&r);
        if pages == 0 {
            assert!(
                text(&r).starts_with("500 linked; this page: 37 (1:node-1 … 37:node-37)"),
                "{}",
                text(&r)
            );
            assert_eq!(d["matched"], 500);
        }
        // The text block is the page as a table: a header, then one row per computer in the
        // page's order, each starting with its traposId (a client that reads only the text
        // sees the same page).
        let page_ids: Vec<&str> = d["computers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["traposId"].as_str().unwrap())
            .collect();
        let t = text(&r);
        let mut table = t.split("\n\n").nth(1).unwrap_or_default().lines();
        // The serves every row shares, said once above the table.
        assert_eq!(table.next(), Some("serves (* below): exec-lua"), "{t}");
        assert_eq!(d["serves"], json!(["exec-lua"]), "{d}");
        assert!(
            table.next().is_some_and(|h| h.starts_with("traposId\t")),
            "{t}"
        );
        let rows: Vec<&str> = table.map(|l| l.split('\t').next().unwrap()).collect();
        assert_eq!(rows, page_ids, "{t}");
        seen.extend(page_ids.iter().map(|t| t.to_string()));
        pages += 1;
        // Between pages: one computer already returned and one not yet reached unlink, one
        // computer links beyond the end and one before the cursor.
        let behind = pages * 37 - 5;
        let ahead = (pages * 37 + 20).min(500);
        for id in [behind, ahead] {
            if let Some(_gone) = links.remove(&id) {
                unlinked.insert(format!("{id}:node-{id}"));
            }
        }
        let late = 1000 + pages;
        links.insert(late, idle(&h.session, late, "late"));
        links.insert(
            pages + 500_000_000,
            idle(&h.session, 0, &format!("early-{pages}")),
        );
        match d["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => {
                assert!(text(&r).contains("last page"), "{}", text(&r));
                break;
            }
        }
        assert!(pages < 100, "the walk does not end");
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "a computer came twice");
    for id in 1..=500u64 {
        let t = format!("{id}:node-{id}");
        if !unlinked.contains(&t) {
            assert!(
                unique.contains(&t),
                "{t} was linked throughout and never returned"
            );
        }
    }
    // The ones that linked beyond the cursor were found too.
    assert!(seen.iter().any(|t| t.ends_with(":late")));

    // A glob narrows the walk and the summary counts the matches.
    let r = call(
        &client,
        "probe-computers",
        json!({"ping": false, "match": "NODE-1?", "limit": 4}),
    )
    .await;
    let d = data(&r);
    let matched = d["matched"].as_u64().unwrap();
    assert!((8..=10).contains(&matched), "{d}");
    assert!(
        text(&r).starts_with(&format!("{matched} of ")),
        "{}",
        text(&r)
    );
    assert_eq!(d["computers"].as_array().unwrap().len(), 4);
    assert!(d["nextCursor"].is_string());
    drop(links);
}

#[tokio::test]
async fn a_page_too_big_for_one_result_ends_early_and_loses_nobody() {
    let h = host_with(Settings {
        max_result_bytes: 4 * 1024,
        ..Settings::default()
    })
    .await;
    let _links: Vec<_> = (1..=120)
        .map(|i| idle(&h.session, i, &format!("n{i}")))
        .collect();
    let (client, _) = connect_stateless(&h.url, &h.token).await;
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"ping": false, "limit": 500});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let r = call(&client, "probe-computers", args).await;
        let size = fake::largest_block(&r);
        assert!(size <= 4 * 1024, "{size}");
        let d = data(&r);
        let page = d["computers"].as_array().unwrap();
        assert!(!page.is_empty() && page.len() < 120, "{}", page.len());
        assert!(
            d.get("computersTruncated").is_none(),
            "the sizing cut the list: {d}"
        );
        seen.extend(page.iter().map(|c| c["id"].as_u64().unwrap()));
        match d["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, (1..=120).collect::<Vec<_>>());
}

/// A scripted computer for the broadcast: by id, it answers, fails, never answers, or unlinks
/// when the request arrives.
fn scripted(session: &Session, id: u64) {
    let (tx, mut rx) = mpsc::channel(1024);
    let link = session.link(&hello(id, &format!("farm-{id}")), tx);
    tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            let Outbound::Request(req) = msg else {
                continue;
            };
            let respond = |payload: Value| {
                link.response(Response {
                    id: req.id.clone(),
                    ok: true,
                    payload: Some(payload),
                    error: None,
                })
            };
            match id {
                25 => {
                    // Unlinks mid-call: dropping the link is the socket closing.
                    link.output(&req.id, Stream::Out, "going\n");
                    break;
                }
                i if i % 10 == 3 => {
                    respond(json!({"ok": false, "error": format!("exec:1: broken {i}"),
                    "output": "half\n", "returns": [], "n": 0}))
                }
                i if i % 10 == 7 => {} // never answers: times out
                i => respond(
                    json!({"ok": true, "returns": [{"type": "number", "value": i}], "n": 1,
                    "output": format!("hello from {i}\n")}),
                ),
            }
        }
        drop(link);
    });
}

#[tokio::test]
async fn exec_lua_many_reports_every_computer_however_it_ended() {
    let h = host_with(Settings::default()).await;
    for id in 1..=50 {
        scripted(&h.session, id);
    }
    let (client, mut progress) = connect(&h.url, &h.token).await;
    let handle = start_call(
        &client,
        "exec-lua-many",
        json!({"match": "farm-*", "code": "return os.getComputerID()", "timeoutMs": 300, "concurrency": 8}),
    )
    .await;
    let ServerResult::CallToolResult(r) = handle.await_response().await.unwrap() else {
        panic!("not a tool result")
    };
    assert_eq!(r.is_error, Some(true), "some failed: {}", text(&r));
    let d = data(&r);
    let results = d["results"].as_array().unwrap();
    assert_eq!(results.len(), 50, "{}", text(&r));
    assert_eq!(d["computers"], 50);
    let by: HashMap<u64, &Value> = results
        .iter()
        .map(|e| {
            (
                e["traposId"]
                    .as_str()
                    .unwrap()
                    .split(':')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap(),
                e,
            )
        })
        .collect();
    assert_eq!(by.len(), 50);
    for (id, e) in &by {
        let status = e["status"].as_str().unwrap();
        match id {
            25 => assert_eq!(status, "disconnected", "{e}"),
            i if i % 10 == 3 => {
                assert_eq!(status, "error", "{e}");
                assert_eq!(e["error"], format!("exec:1: broken {i}"));
                assert_eq!(e["output"], "half\n");
            }
            i if i % 10 == 7 => {
                assert_eq!(status, "timeout", "{e}");
                assert_eq!(e["error"]["code"], "timeout");
            }
            i => {
                assert_eq!(status, "ok", "{e}");
                assert_eq!(e["returns"][0]["value"], *i);
                assert_eq!(e["output"], format!("hello from {i}\n"));
            }
        }
        assert!(e["requestId"].as_str().unwrap().starts_with("h-"), "{e}");
    }
    // Failures first, and the first line counts each kind.
    assert_ne!(results[0]["status"], "ok");
    let line = text(&r);
    assert!(line.starts_with("50 computers: "), "{line}");
    for part in ["5 error", "5 timeout", "1 disconnected", "39 ok"] {
        assert!(line.contains(part), "{part} missing from {line}");
    }
    assert_eq!(d["okCount"], 39);
    // Progress: one notification per computer, increasing, out of 50.
    let mut notes = Vec::new();
    while let Ok(p) = progress.try_recv() {
        notes.push(p);
    }
    assert_eq!(notes.len(), 50);
    assert!(notes.windows(2).all(|w| w[1].progress > w[0].progress));
    assert!(notes.iter().all(|n| n.total == Some(50.0)));
    // Each run is an ordinary request in the session log.
    let finished = h
        .session
        .recent(1000)
        .iter()
        .filter(|e| e.event.as_str() == "finished" && e.who.as_deref() == Some("test-agent"))
        .count();
    assert_eq!(finished, 50);
}

#[tokio::test]
async fn exec_lua_many_by_list_reports_unknown_names_and_checks_its_arguments() {
    let h = host_with(Settings::default()).await;
    for id in [1, 2] {
        scripted(&h.session, id);
    }
    let (client, _) = connect_stateless(&h.url, &h.token).await;
    let r = call(
        &client,
        "exec-lua-many",
        json!({"computers": ["1", "farm-2", "farm-1", "nope"], "code": "return 1"}),
    )
    .await;
    let d = data(&r);
    assert_eq!(d["computers"], 3, "{d}");
    assert_eq!(d["results"][0]["traposId"], "nope");
    assert_eq!(d["results"][0]["error"]["code"], "unknown_computer");
    assert_eq!(d["okCount"], 2);
    let r = call(&client, "exec-lua-many", json!({"code": "return 1"})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(data(&r)["error"]["code"], "invalid_arguments");
    assert_eq!(data(&r)["field"], "match");
    let r = call(
        &client,
        "exec-lua-many",
        json!({"match": "zzz*", "code": "return 1"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false));
    assert!(
        text(&r).starts_with("no linked computer matches"),
        "{}",
        text(&r)
    );
}

/// The most of `windows` (half-open `[start, end)` in milliseconds) that overlap at any moment.
fn most_at_once(windows: &[(u64, u64)]) -> usize {
    // Ends sort before starts at the same millisecond: a run that starts as another ends is
    // the next one in its slot, not a second one beside it.
    let mut edges: Vec<(u64, i8)> = windows
        .iter()
        .flat_map(|&(a, b)| [(a, 1), (b, -1)])
        .collect();
    edges.sort_unstable();
    let (mut now, mut most) = (0i64, 0i64);
    for (_, d) in edges {
        now += i64::from(d);
        most = most.max(now);
    }
    most as usize
}

/// Runs a chunk that holds each computer for a while on all of `w`'s computers and returns
/// the most that ran it at once, as the computers' own clocks saw it.
async fn most_running(w: &World, concurrency: Option<u64>, hold_ms: u64) -> usize {
    let code = format!(
        "local a = os.epoch(\"utc\") sleep({}) return a, os.epoch(\"utc\")",
        hold_ms as f64 / 1000.0
    );
    let mut args = json!({"match": "*", "code": code, "timeoutMs": 60_000});
    if let Some(c) = concurrency {
        args["concurrency"] = json!(c);
    }
    let r = w.call("exec-lua-many", args).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let d = data(&r);
    let results = d["results"].as_array().unwrap();
    assert_eq!(results.len(), w.computers.len(), "{d}");
    let windows: Vec<(u64, u64)> = results
        .iter()
        .map(|e| {
            let at = |i: usize| e["returns"][i]["value"].as_f64().unwrap() as u64;
            (at(0), at(1))
        })
        .collect();
    most_at_once(&windows)
}

/// `exec-lua-many` runs at most 4 computers at once unless asked (CC: Tweaked's one Lua thread
/// for every computer of a server: docs/mcp.md), and an explicit `concurrency` is that number,
/// both seen by the computers themselves: each returns when it started and ended the chunk.
async fn broadcast_concurrency(rt: Runtime) {
    let labels: Vec<String> = (1..=10).map(|i| format!("farm-{i}")).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let w = World::boot(rt, &labels).await;
    // Long enough that every slot fills before the first run ends, on either runtime.
    let hold = rt.patience(Duration::from_millis(400)).as_millis() as u64;
    assert_eq!(most_running(&w, None, hold).await, 4, "the default");
    assert_eq!(most_running(&w, Some(7), hold).await, 7, "concurrency: 7");
    assert_eq!(most_running(&w, Some(1), hold).await, 1, "concurrency: 1");
    // Above the computers there are, all of them at once.
    assert_eq!(
        most_running(&w, Some(256), hold).await,
        10,
        "concurrency: 256"
    );
}

on_both_runtimes!(exec_lua_many_runs_four_at_once_by_default: broadcast_concurrency);

#[test]
fn overlapping_windows_are_counted_at_their_peak() {
    assert_eq!(most_at_once(&[]), 0);
    assert_eq!(most_at_once(&[(0, 10), (10, 20), (20, 30)]), 1);
    assert_eq!(most_at_once(&[(0, 10), (5, 15), (9, 12), (12, 30)]), 3);
}

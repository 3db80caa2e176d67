//! Linking computers: finding them by id or label, paging them, relabelling, and one back
//! after a hard abort.

use super::*;

#[tokio::test]
async fn targets_resolve_by_full_id_bare_id_or_unique_label() {
    let s = session();
    let (tx, _rx) = mpsc::channel(1024);
    let _a = s.link(&hello(7, Some("miner")), tx.clone());
    let _b = s.link(&hello(8, Some("miner")), tx.clone());
    let _c = s.link(&hello(9, Some("farm")), tx);
    assert_eq!(s.resolve("7:miner"), Ok("7:miner".into()));
    assert_eq!(s.resolve("9"), Ok("9:farm".into()));
    assert_eq!(s.resolve("farm"), Ok("9:farm".into()));
    assert!(
        matches!(s.resolve("miner"), Err(RequestError::Ambiguous { matches, .. }) if matches.len() == 2)
    );
    assert!(
        matches!(s.resolve("nope"), Err(RequestError::UnknownComputer { linked, .. }) if linked.len() == 3)
    );
}

/// A page of linked computers without a glob comes from the ordered index; with a glob (or
/// offline ones) from a scan. Both must give the same pages whatever linked, unlinked and
/// relinked in between: the index is checked against the scan here.
#[test]
fn the_ordered_page_is_the_scanned_page() {
    use crate::session::fleet::{PageQuery, page};
    let s = session();
    let mut links = std::collections::HashMap::new();
    // Ids out of order, labels that sort against their ids, one id under two labels.
    let names: Vec<(u64, Option<String>)> = (0..120u64)
        .map(|i| ((i * 37) % 101, Some(format!("c{}", 120 - i))))
        .chain([(5, None), (5, Some("zz".into())), (0, None)])
        .collect();
    for (step, (id, label)) in names.iter().enumerate() {
        let (tx, rx) = mpsc::channel(8);
        let l = s.link(&hello(*id, label.as_deref()), tx);
        links.insert(step, (l, rx));
        // Every fourth one unlinks again, and every seventh relinks under the same name.
        if step % 4 == 3 {
            links.remove(&(step - 1));
        }
        if step % 7 == 6 {
            let (tx, rx) = mpsc::channel(8);
            let l = s.link(&hello(*id, label.as_deref()), tx);
            links.insert(step, (l, rx));
        }
    }
    for limit in [1, 3, 10, 200] {
        let mut cursor: Option<String> = None;
        loop {
            let query = PageQuery {
                glob: None,
                limit,
                cursor: cursor.clone(),
                offline: false,
            };
            let ordered = s.computers_page(&query);
            let scanned = {
                let st = s.lock();
                page(st.computers.values().map(|c| &c.info), &query)
            };
            assert_eq!(ordered, scanned, "limit {limit}, after {cursor:?}");
            match ordered.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
    }
    drop(links);
}

#[tokio::test(start_paused = true)]
async fn a_relabel_takes_the_place_of_an_old_entry_of_the_same_computer() {
    let s = session();
    // 7 was "digger" on an earlier link, then linked as "miner".
    let (tx, _rx) = mpsc::channel(1024);
    let old = s.link(&hello(7, Some("digger")), tx);
    drop(old);
    let (tx, mut rx) = mpsc::channel(1024);
    let mut link = s.link(&hello(7, Some("miner")), tx);
    let ticket = s
        .start("miner", exec("sleep(5)", 30), Origin::Person)
        .unwrap();
    assert!(matches!(rx.recv().await, Some(Outbound::Request(_))));
    assert_eq!(
        link.rename(Some("digger".into())).as_deref(),
        Some("7:digger")
    );
    assert_eq!(
        link.rename(Some("digger".into())),
        None,
        "no change, nothing done"
    );
    let ids: Vec<String> = s.computers().into_iter().map(|c| c.trapos_id).collect();
    assert_eq!(ids, vec!["7:digger".to_owned()], "one entry, online");
    assert!(
        s.computer("7:digger")
            .is_some_and(|c| c.online && c.running == 1)
    );
    // The request sent under the old name is answered under the new one.
    assert_eq!(s.pending()[0].trapos_id, "7:digger");
    link.response(Response {
        id: ticket.id.clone(),
        ok: true,
        payload: Some(json!({"ok": true})),
        error: None,
    });
    assert!(ticket.wait().await.is_ok());
    // Unlinking now unlinks the new name.
    drop(link);
    assert!(s.computer("7:digger").is_some_and(|c| !c.online));
}

#[tokio::test]
async fn a_relabel_onto_a_name_another_link_holds_is_refused() {
    let s = session();
    // Two worlds' computers 7, linked at once.
    let (tx, _rx) = mpsc::channel(1024);
    let _a = s.link(&hello(7, Some("miner")), tx);
    let (tx, _rx2) = mpsc::channel(1024);
    let mut b = s.link(&hello(7, Some("farm")), tx);
    assert_eq!(b.rename(Some("miner".into())), None);
    assert!(s.computer("7:miner").is_some_and(|c| c.online));
    assert!(s.computer("7:farm").is_some_and(|c| c.online));
    assert_eq!(b.trapos_id(), "7:farm");
    assert!(s.recent(10).iter().any(|e| e.event.as_str() == "relabelled"
        && e.detail == "7:farm was labelled 7:miner, which another link holds: still 7:farm"));
}

#[tokio::test(start_paused = true)]
async fn a_computer_back_after_a_hard_abort_is_logged_as_back() {
    let s = session();
    let (tx, mut rx) = mpsc::channel(1024);
    let mut link = s.link(&hello(7, Some("miner")), tx);
    let ticket = s
        .start("miner", exec("while true do end", 60), Origin::Person)
        .unwrap();
    assert!(matches!(rx.recv().await, Some(Outbound::Request(_))));
    tokio::time::advance(Duration::from_secs(9)).await;
    link.set_reason("connection closed");
    drop(link);
    let err = ticket.wait().await.unwrap_err();
    assert_eq!(err.code(), "shut_down", "{err}");
    assert_eq!(s.resolve("miner").unwrap_err().code(), "shut_down");
    assert_eq!(s.resolve("7").unwrap_err().code(), "shut_down");
    let (tx, _rx) = mpsc::channel(1024);
    let _again = s.link(&hello(7, Some("miner")), tx);
    assert_eq!(s.resolve("miner").as_deref(), Ok("7:miner"));
    let events: Vec<&str> = s.recent(10).iter().map(|e| e.event.as_str()).collect();
    assert_eq!(events.last(), Some(&"back"), "{events:?}");
    // A link the host ended itself (here: the heartbeat) is never taken for the abort.
    let (tx, mut rx) = mpsc::channel(1024);
    let mut link = s.link(&hello(8, Some("quiet")), tx);
    let ticket = s
        .start("quiet", exec("sleep(60)", 90), Origin::Person)
        .unwrap();
    assert!(matches!(rx.recv().await, Some(Outbound::Request(_))));
    tokio::time::advance(Duration::from_secs(45)).await;
    link.set_reason("3 heartbeats missed");
    drop(link);
    assert_eq!(ticket.wait().await.unwrap_err().code(), "disconnected");
}

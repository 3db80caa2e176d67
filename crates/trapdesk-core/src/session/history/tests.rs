use std::time::Duration;

use super::*;
use crate::session::model::{OutputEntry, Stream};
use crate::session::output::OutputRing;

fn settings() -> Settings {
    Settings::default()
}

fn lines(items: &[OutputItem]) -> Vec<(u64, String, bool)> {
    items
        .iter()
        .filter_map(|i| match &i.entry {
            OutputEntry::Line { text, complete, .. } => Some((i.seq, text.clone(), *complete)),
            _ => None,
        })
        .collect()
}

#[test]
fn what_is_committed_reads_back_as_the_ring_held_it_and_a_restart_numbers_above_it()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let h = History::open(dir.path(), &settings())?;
    assert_eq!(h.first_seq(), 1);
    let mut ring = OutputRing::starting_at(100, h.first_seq());
    for piece in ["a", "b\nc", "d\n", "e\n"] {
        let mut changes = Vec::new();
        ring.push_text_to(Some("h-1"), Stream::Out, piece, Some(&mut changes));
        h.output("7:miner", changes);
    }
    h.log(
        1,
        1000,
        r#"{"seq":1,"timeMs":1000,"event":"linked","detail":"x"}"#.into(),
    );
    assert!(h.flush(Duration::from_secs(10)));
    let stored = h.output_between("7:miner", 0, u64::MAX, 100);
    assert_eq!(stored, ring.since(0));
    assert_eq!(
        lines(&stored),
        vec![
            (1, "ab".into(), true),
            (2, "cd".into(), true),
            (3, "e".into(), true)
        ]
    );
    assert!(h.has_request("7:miner", "h-1"));
    assert!(!h.has_request("7:miner", "h-2"));
    assert!(h.knows_computer("7:miner"));
    assert_eq!(h.recent_log(10)[0].event.as_str(), "linked");
    drop(h);
    // The next start numbers above anything the first could have given out.
    let again = History::open(dir.path(), &settings())?;
    assert_eq!(again.first_seq(), (1 << 32) | 1);
    assert!(again.knows_computer("7:miner"));
    assert!(!again.knows_computer("8:"));
    assert_eq!(again.output_between("7:miner", 1, u64::MAX, 100).len(), 2);
    let page = again.lines_before("7:miner", u64::MAX, None, 2);
    assert_eq!(
        lines(&page),
        vec![(3, "e".into(), true), (2, "cd".into(), true)]
    );
    Ok(())
}

#[test]
fn pruning_drops_the_oldest_by_age_and_by_size() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let conn = store::open(&dir.path().join(FILE))?;
    let now = crate::session::model::epoch_ms(std::time::SystemTime::now()) as i64;
    let day = 24 * 3600 * 1000;
    let text = "x".repeat(200);
    for seq in 1..=5000i64 {
        // The first 1000 are 40 days old.
        let at = if seq <= 1000 { now - 40 * day } else { now };
        conn.execute(
            "INSERT INTO output (trapos_id, seq, at_ms, kind, text) VALUES ('7:m', ?1, ?2, 0, ?3)",
            rusqlite::params![seq, at, text],
        )?;
        conn.execute(
            "INSERT INTO log (seq, time_ms, line) VALUES (?1, ?2, '{}')",
            rusqlite::params![seq, at],
        )?;
    }
    let count = |table: &str| -> rusqlite::Result<i64> {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
    };
    let min = |sql: &str| -> rusqlite::Result<i64> { conn.query_row(sql, [], |r| r.get(0)) };
    let roomy = Bounds {
        max_bytes: 1 << 30,
        max_age: Duration::from_secs(30 * 24 * 3600),
    };
    store::prune(&conn, roomy)?;
    assert_eq!(count("output")?, 4000);
    assert_eq!(count("log")?, 4000);
    assert_eq!(min("SELECT min(seq) FROM output")?, 1001);
    // Now by size: about 1 MiB of rows, bounded to 256 KiB.
    let before = store::used_bytes(&conn)?;
    assert!(before > 512 << 10, "{before}");
    let tight = Bounds {
        max_bytes: 256 << 10,
        max_age: roomy.max_age,
    };
    store::prune(&conn, tight)?;
    assert!(store::used_bytes(&conn)? <= 256 << 10);
    let left = count("output")?;
    assert!(left > 0 && left < 4000, "{left}");
    // The newest stay, oldest first gone.
    assert_eq!(min("SELECT max(seq) FROM output")?, 5000);
    assert_eq!(min("SELECT min(seq) FROM output")?, 5001 - left);
    Ok(())
}

#[test]
fn a_full_channel_drops_and_counts_and_never_blocks() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let s = Settings {
        history_queue: 1,
        ..settings()
    };
    let h = History::open(dir.path(), &s)?;
    let started = std::time::Instant::now();
    for i in 0..10_000u64 {
        h.log(i + 1, 0, "{}".into());
    }
    // Ten thousand sends, none of them waiting for the disk.
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(h.flush(Duration::from_secs(10)));
    let (committed, _) = h.stats();
    assert_eq!(
        committed + h.lost(),
        10_000,
        "every record committed or counted"
    );
    Ok(())
}

#[test]
fn the_queue_is_bounded_in_bytes_too() -> Result<(), Box<dyn std::error::Error>> {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir()?;
    let h = History::open(dir.path(), &settings())?;
    // 16 KiB lines, three times QUEUE_BYTES of them at once: what the writer has not taken yet
    // past QUEUE_BYTES is dropped and counted rather than held, whatever the record count.
    let big = "x".repeat(16 * 1024);
    let n = 3 * QUEUE_BYTES / big.len() as u64;
    for i in 0..n {
        h.log(i + 1, 0, big.clone());
        assert!(h.stats.queued_bytes.load(Ordering::Relaxed) <= QUEUE_BYTES);
    }
    assert!(h.flush(Duration::from_secs(60)));
    let (committed, _) = h.stats();
    assert_eq!(committed + h.lost(), n);
    assert_eq!(h.stats.queued_bytes.load(Ordering::Relaxed), 0);
    Ok(())
}

//! Console frame time and key-to-screen latency, printed as a table.
//!
//! `cargo bench --bench tui` (release). The cases:
//! 1. drawing a 120x40 screen whose output pane holds 10,000 lines of scrollback;
//! 2. drawing a 200x60 screen with 1,000 computers in the Computers pane (flat, grouped by
//!    label prefix, filtered) and 10,000 lines of scrollback (target: <= 2 ms a frame);
//! 3. 50 fake computers printing as fast as they can through a real session while keys are
//!    typed into the app: each sample is one loop turn (drain events, handle a key, pull what
//!    changed, draw), which is what stands between a key press and the screen showing it.

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::mpsc;
use trapdesk::config::Settings;
use trapdesk::gateway::protocol::Hello;
use trapdesk::session::{OutputEntry, OutputItem, Session, Stream};
use trapdesk::tui::App;
use trapdesk::tui::theme::Theme;

fn stats(name: &str, mut samples: Vec<Duration>, extra: &str) -> f64 {
    samples.sort();
    let n = samples.len().max(1);
    let pct = |p: f64| samples[((n as f64 * p) as usize).min(n - 1)];
    let mean = samples.iter().sum::<Duration>() / n as u32;
    println!(
        "| {name:<34} | {n:>6} | {:>8.2} | {:>8.2} | {:>8.2} | {:>8.2} | {extra}",
        mean.as_secs_f64() * 1e3,
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        pct(1.0).as_secs_f64() * 1e3,
    );
    mean.as_secs_f64()
}

fn settings() -> Settings {
    Settings {
        secret: "x".into(),
        data_dir: std::env::temp_dir(),
        ..Settings::default()
    }
}

fn hello(id: u64) -> Hello {
    Hello {
        protocol: 1,
        computer_id: id,
        label: Some(format!("c{id}")),
        secret: "x".into(),
        serves: vec!["exec-lua".into()],
        client: None,
        host: None,
        max_message: None,
    }
}

/// Mean frame time with `lines` of scrollback.
/// `lines` lines of scrollback, every seventh on stderr, as both frame cases draw them.
fn scrollback(lines: u64) -> Vec<OutputItem> {
    (1..=lines)
        .map(|i| OutputItem {
            seq: i,
            at_ms: 0,
            entry: OutputEntry::Line {
                request_id: None,
                stream: if i % 7 == 0 { Stream::Err } else { Stream::Out },
                text: format!(
                    "line {i}: the quick brown fox jumps over the lazy dog {}",
                    i * 31
                ),
                complete: true,
            },
        })
        .collect()
}

fn frame_time(lines: u64) -> f64 {
    let mut app = App::new(settings(), Theme::default(), false);
    let session = Session::new(settings(), false);
    let (tx, _rx) = mpsc::channel(1024);
    let _link = session.link(&hello(1), tx);
    app.pull(&session);
    app.output.ingest("1:c1", scrollback(lines));
    app.set_editor_text(&"local x = turtle.getFuelLevel() -- comment\nprint(x)\n".repeat(50));
    let mut term = match Terminal::new(TestBackend::new(120, 40)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return 0.0;
        }
    };
    app.size = ratatui::layout::Rect::new(0, 0, 120, 40);
    let mut samples = Vec::new();
    for i in 0..500 {
        // Alternate following and scrolled far up, so both ends of the ring are drawn.
        if let Some(rows) = app.rows() {
            let mut s = app.output.scroll.clone();
            if i % 2 == 0 {
                s.to_end(rows)
            } else {
                s.by((lines / 2) as isize, rows)
            }
            app.output.scroll = s;
        }
        let t = Instant::now();
        let _ = term.draw(|f| app.draw(f));
        samples.push(t.elapsed());
    }
    stats(
        &format!("frame, {lines}-line scrollback, 120x40"),
        samples,
        "",
    )
}

/// A thousand computers (one in ten busy, one in twenty offline, labels in 50 groups) with
/// 10,000 lines of scrollback on the selected one, at 200x60: mean frame time, drawing only.
/// `how` is `flat`, `grouped` or `filtered`.
fn fleet_frame(how: &str) -> f64 {
    let mut app = App::new(settings(), Theme::default(), false);
    let list: Vec<trapdesk::session::ComputerInfo> = (1..=1000u64)
        .map(|id| trapdesk::session::ComputerInfo {
            trapos_id: format!("{id}:node{}-{id}", id % 50),
            id,
            label: Some(format!("node{}-{id}", id % 50)),
            online: id % 20 != 0,
            connected_at: std::time::SystemTime::now(),
            disconnected_at: (id % 20 == 0).then(std::time::SystemTime::now),
            serves: vec!["exec-lua".into(), "run-file".into()],
            running: usize::from(id % 10 == 0),
            queued: 0,
            detached: 0,
            last_rtt_ms: Some(id % 40),
            client: None,
            host: None,
            max_message: 131_072,
            machine: Default::default(),
            status: None,
        })
        .collect();
    // What one pull of a changed list costs the console (filter, groups, counts, rows).
    let t = Instant::now();
    app.set_computers(list.clone());
    let rebuild = t.elapsed();
    let id = "500:node0-500";
    app.output.ingest(id, scrollback(10_000));
    match how {
        "grouped" => {
            app.computers.grouped = true;
            app.refresh_computers();
        }
        "filtered" => app.set_filter("node1*"),
        _ => {}
    }
    app.selected = Some(id.to_owned());
    app.focus = trapdesk::tui::Focus::Computers;
    app.size = ratatui::layout::Rect::new(0, 0, 200, 60);
    let mut term = match Terminal::new(TestBackend::new(200, 60)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return 0.0;
        }
    };
    let mut samples = Vec::new();
    for i in 0..500 {
        // Move the cursor each frame, so the visible window of the list moves too.
        let row = app.selected_index();
        let next = if i % 2 == 0 {
            row + 1
        } else {
            row.saturating_sub(1)
        };
        app.select_index(next);
        let t = Instant::now();
        let _ = term.draw(|f| app.draw(f));
        samples.push(t.elapsed());
    }
    // The rebuild once more under the filter or grouping, where it does the most.
    let t = Instant::now();
    app.set_computers(list);
    let rebuild = rebuild.max(t.elapsed());
    stats(
        &format!("frame, 1000 computers {how}, 200x60"),
        samples,
        &format!(
            "10,000-line scrollback; list rebuild {:.2} ms",
            rebuild.as_secs_f64() * 1e3
        ),
    )
}

async fn flood() {
    let session = Session::new(settings(), false);
    let mut links = Vec::new();
    for id in 0..50 {
        let (tx, rx) = mpsc::channel(1024);
        links.push((session.link(&hello(id), tx), rx));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut producers = Vec::new();
    for (link, rx) in links {
        let stop = stop.clone();
        producers.push(tokio::spawn(async move {
            let _rx = rx;
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for _ in 0..20 {
                    n += 1;
                    link.output(
                        "none",
                        Stream::Out,
                        &format!("line {n} of a busy computer\n"),
                    );
                }
                // 20 lines per 2 ms per computer: far beyond what CC's gateway coalescing
                // delivers, yet it leaves the runtime room to run the console.
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            n
        }));
    }
    let mut app = App::new(settings(), Theme::default(), false);
    app.size = ratatui::layout::Rect::new(0, 0, 120, 40);
    let mut events = session.subscribe();
    let mut term = match Terminal::new(TestBackend::new(120, 40)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    app.pull(&session);
    app.select_index(0); // "All computers": the busiest view
    let mut samples = Vec::new();
    let start = Instant::now();
    let mut frames = 0;
    while start.elapsed() < Duration::from_secs(3) {
        let t = Instant::now();
        // As the console's loop: drain at most a bounded batch of notifications per turn.
        for _ in 0..4096 {
            match events.try_recv() {
                Ok(e) => app.note(&e),
                Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => app.mark_all_dirty(),
                Err(_) => break,
            }
        }
        app.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
        app.pull(&session);
        let _ = term.draw(|f| app.draw(f));
        samples.push(t.elapsed());
        frames += 1;
        tokio::time::sleep(Duration::from_millis(16)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut lines = 0;
    for p in producers {
        lines += p.await.unwrap_or(0);
    }
    let secs = start.elapsed().as_secs_f64();
    stats(
        "key→screen, 50 computers flooding",
        samples,
        &format!("{:.0} lines/s pushed, {frames} frames", lines as f64 / secs),
    );
}

/// Resident memory of this process, from `/proc/self/status` (Linux), in KiB.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// What the console's own display rows cost on top of the session's rings: 50 computers with
/// 10,000 lines of 60 bytes each, in each computer's view and in "All computers".
fn display_memory() {
    let before = rss_kib();
    let mut model = trapdesk::tui::output::OutputModel::new(10_000);
    for c in 0..50u64 {
        let items: Vec<OutputItem> = (1..=10_000u64)
            .map(|i| OutputItem {
                seq: i,
                at_ms: 0,
                entry: OutputEntry::Line {
                    request_id: None,
                    stream: Stream::Out,
                    text: format!("{i:>8} {}", "x".repeat(51)),
                    complete: true,
                },
            })
            .collect();
        model.ingest(&format!("{c}:c"), items);
    }
    if let (Some(a), Some(b)) = (before, rss_kib()) {
        println!(
            "console rows: 50 computers x 10,000 lines = {:.1} MiB resident ({:.0} bytes per line, both views)",
            b.saturating_sub(a) as f64 / 1024.0,
            b.saturating_sub(a) as f64 * 1024.0 / 500_000.0
        );
    }
    drop(model);
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    println!(
        "| case                               | frames |  mean ms |   p50 ms |   p99 ms |   max ms |"
    );
    println!(
        "|------------------------------------|--------|----------|----------|----------|----------|"
    );
    display_memory();
    let small = frame_time(100);
    let large = frame_time(10_000);
    for how in ["flat", "grouped", "filtered"] {
        fleet_frame(how);
    }
    flood().await;
    println!();
    println!(
        "frame time, 10,000 vs 100 lines of scrollback: {:.2}x (1.0 = independent of scrollback)",
        large / small.max(f64::MIN_POSITIVE)
    );
}

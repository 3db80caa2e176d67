//! What one run of the harness found, and the Markdown table it prints: every figure beside
//! its floor, the ratio and its target.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// Timings of one series.
#[derive(Debug, Clone, Default)]
pub struct Series(pub Vec<Duration>);

impl Series {
    pub fn sorted(&self) -> Vec<Duration> {
        let mut s = self.0.clone();
        s.sort();
        s
    }
    pub fn median(&self) -> Duration {
        let s = self.sorted();
        s.get(s.len() / 2).copied().unwrap_or_default()
    }
    pub fn p99(&self) -> Duration {
        let s = self.sorted();
        s.get((s.len() * 99 / 100).min(s.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    }
    fn list_ms(&self) -> String {
        self.0
            .iter()
            .map(|d| format!("{:.1}", ms(*d)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Events the player's counting program was resumed with over a window.
#[derive(Debug, Clone, Default)]
pub struct Events {
    pub count: u64,
    pub by_name: BTreeMap<String, u64>,
    pub secs: f64,
}

impl Events {
    pub fn names(&self) -> String {
        if self.by_name.is_empty() {
            return "none".into();
        }
        self.by_name
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One kind of content moved both ways.
#[derive(Debug, Clone)]
pub struct Transfer {
    /// `binary` (all 256 byte values: base64 over MCP) or `text` (ASCII lines: UTF-8).
    pub kind: &'static str,
    pub size: usize,
    pub write: Series,
    pub read: Series,
    /// `read-file` calls to read the file to its end (the same every repetition).
    pub read_calls: usize,
    pub floor_write: Series,
    pub floor_read: Series,
    /// Events during the first repetition's write and read.
    pub events_write: Events,
    pub events_read: Events,
}

/// The client's files on the computer's disk: everything the installer left, before the
/// harness writes anything.
#[derive(Debug, Clone, Default)]
pub struct Disk {
    pub files: usize,
    pub dirs: usize,
    pub bytes: u64,
    /// What CC: Tweaked counts against the computer's capacity: each file at least 500 bytes
    /// and each folder 500 (`MountConstants.MINIMUM_FILE_SIZE`, `WritableFileMount`).
    pub counted: u64,
    /// Of `bytes`, the client's logs (they grow as it runs).
    pub log_bytes: u64,
    /// The names at the disk's root.
    pub top: Vec<String>,
}

/// A default computer's disk in CC: Tweaked (`Config.computerSpaceLimit`, `1000 * 1000`).
/// CraftOS-PC gives its computers the host's free space instead, so what the client leaves
/// free is worked out from [`Disk::counted`] the way `WritableFileMount` counts.
pub const DEFAULT_DISK: u64 = 1_000_000;

/// Where and when the run happened.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    pub date: String,
    pub cpu: String,
    pub cores: usize,
    pub load_before: String,
    pub load_after: String,
    pub profile: &'static str,
    pub commit: String,
    pub client_version: String,
    pub runtime: String,
}

/// Everything one run measured.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub machine: Machine,
    pub exec: Series,
    pub echo: Series,
    /// MCP `ping`s through the same endpoint, beside exec-lua: the SDK's share of it.
    pub ping: Series,
    pub exec_events: Events,
    pub idle: Events,
    pub transfers: Vec<Transfer>,
    pub disk: Disk,
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "**no**" }
}

fn size_name(bytes: usize) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{} bytes", thousands(bytes as u64))
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn calls(n: usize) -> String {
    if n == 1 {
        "1 call".into()
    } else {
        format!("{n} calls")
    }
}

impl Report {
    /// The table: the machine and build above it, every target a row (figure,
    /// floor, ratio, target, met), and every sample below it.
    pub fn markdown(&self) -> String {
        let m = &self.machine;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "CraftOS-PC harness, {}: {} ({} cores), load average {} before and {} after; \
             {} build at {}, client {}; {}.\n",
            m.date,
            m.cpu,
            m.cores,
            m.load_before,
            m.load_after,
            m.profile,
            m.commit,
            m.client_version,
            m.runtime
        );
        let _ = writeln!(
            s,
            "| what | figure | floor, same run | ratio | target | met |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|");
        let (e, x) = (&self.echo, &self.exec);
        let r = ratio(x.median(), e.median());
        let _ = writeln!(
            s,
            "| exec-lua `return 1`, median of {} (p99) | {:.2} ms ({:.2}) | bare WebSocket echo {:.2} ms ({:.2}) | {r:.1}x | <= 5x | {} |",
            x.0.len(),
            ms(x.median()),
            ms(x.p99()),
            ms(e.median()),
            ms(e.p99()),
            yes(r <= 5.0)
        );
        let p = &self.ping;
        let _ = writeln!(
            s,
            "| of which an MCP `ping` through the same endpoint (no tool, no computer), median (p99) | {:.2} ms ({:.2}) | bare WebSocket echo | {:.1}x | | |",
            ms(p.median()),
            ms(p.p99()),
            ratio(p.median(), e.median()),
        );
        let past = x.median().saturating_sub(p.median());
        let _ = writeln!(
            s,
            "| of which past the SDK (exec-lua's median less `ping`'s): host, gateway, the client on the computer | {:.2} ms | bare WebSocket echo | {:.1}x | | |",
            ms(past),
            ratio(past, e.median()),
        );
        for t in &self.transfers {
            let size = size_name(t.size);
            let how = if t.kind == "binary" {
                "binary, base64 over MCP"
            } else {
                "text"
            };
            let r = ratio(t.write.median(), t.floor_write.median());
            let _ = writeln!(
                s,
                "| `write-file` {size} {how}, median of {} | {:.1} ms | bare WebSocket + `fs` write {:.1} ms | {r:.1}x | <= 3x | {} |",
                t.write.0.len(),
                ms(t.write.median()),
                ms(t.floor_write.median()),
                yes(r <= 3.0)
            );
            let r = ratio(t.read.median(), t.floor_read.median());
            let _ = writeln!(
                s,
                "| `read-file` {size} {}, to the end in {} calls, median of {} | {:.1} ms | bare `fs` read + WebSocket {:.1} ms | {r:.1}x | <= 10x | {} |",
                t.kind,
                t.read_calls,
                t.read.0.len(),
                ms(t.read.median()),
                ms(t.floor_read.median()),
                yes(r <= 10.0)
            );
        }
        let i = &self.idle;
        let rate = i.count as f64 / i.secs.max(1e-9);
        let _ = writeln!(
            s,
            "| events a player's program at the shell wakes for, idle {:.0} s | {rate:.2}/s ({}: {}) | | | < 1/s | {} |",
            i.secs,
            i.count,
            i.names(),
            yes(rate < 1.0)
        );
        let x = &self.exec_events;
        let _ = writeln!(
            s,
            "| the same during the {} exec-lua calls | {} ({}) | | | none the client could avoid (at most 1 a call) | {} |",
            self.exec.0.len(),
            x.count,
            x.names(),
            yes(x.count <= self.exec.0.len() as u64)
        );
        for t in &self.transfers {
            for (what, ev, n) in [
                ("write-file", &t.events_write, 1),
                ("paged read-file", &t.events_read, t.read_calls),
            ] {
                let _ = writeln!(
                    s,
                    "| the same during one {} {} {what} ({}, {:.2} s) | {} ({}) | | | at most 1 a call | {} |",
                    size_name(t.size),
                    t.kind,
                    calls(n),
                    ev.secs,
                    ev.count,
                    ev.names(),
                    yes(ev.count <= n as u64)
                );
            }
        }
        let d = &self.disk;
        let _ = writeln!(
            s,
            "| the client's files on the disk (`/{}`) | {} bytes in {} files, {} of them logs; CC counts {}, so a default computer keeps {} of {} free | | | <= 65,536 bytes | {} |",
            d.top.join("`, `/"),
            thousands(d.bytes),
            d.files,
            thousands(d.log_bytes),
            thousands(d.counted),
            thousands(DEFAULT_DISK.saturating_sub(d.counted)),
            thousands(DEFAULT_DISK),
            yes(d.bytes - d.log_bytes <= 65_536)
        );
        let _ = writeln!(
            s,
            "\nEvery sample, in ms: exec-lua {}; MCP ping {}; echo {}.",
            self.exec_summary(&self.exec),
            self.exec_summary(&self.ping),
            self.exec_summary(&self.echo)
        );
        for t in &self.transfers {
            let _ = writeln!(
                s,
                "{} {}: write {} (floor {}); read {} (floor {}).",
                size_name(t.size),
                t.kind,
                t.write.list_ms(),
                t.floor_write.list_ms(),
                t.read.list_ms(),
                t.floor_read.list_ms()
            );
        }
        s
    }

    fn exec_summary(&self, x: &Series) -> String {
        let s = x.sorted();
        let at = |q: f64| {
            s.get(((s.len() as f64 * q) as usize).min(s.len().saturating_sub(1)))
                .map_or(0.0, |d| ms(*d))
        };
        format!(
            "min {:.2}, p10 {:.2}, p50 {:.2}, p90 {:.2}, max {:.2}",
            at(0.0),
            at(0.1),
            at(0.5),
            at(0.9),
            at(1.0)
        )
    }
}

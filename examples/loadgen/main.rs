//! Load harness: links scripted computers to a real host and drives `exec-lua` through the
//! session API and through the MCP HTTP endpoint (rmcp's client, both eras), links thousands
//! of computers at once, probes them by page, and reports each figure beside the floor measured
//! in the same run (a bare WebSocket echo and a bare HTTP/1.1 POST, same libraries).
//!
//! ```text
//! cargo run --release --example loadgen                       # the full run (BENCHMARKS.md)
//! cargo run --release --example loadgen -- --quick            # seconds, small N
//! cargo run --release --example loadgen -- --json out.json --benchmarks BENCHMARKS.md
//! cargo run --release --example loadgen -- --era stateless --link 0   # one era, to profile
//! cargo run --release --example loadgen -- --max-result-bytes 100000  # larger probe pages
//! ```
//!
//! The idle computers of the link storm run in a child process (this binary with
//! `--role computers`), so that the host's resident memory per link is the host's alone.

mod computers;
mod floor;
mod mcp;
mod report;

use std::collections::HashSet;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use trapdesk::config::Settings;
use trapdesk::host::Host;
use trapdesk::session::{Origin, RequestSpec, Session};

use report::{HEADER, Series, round};

const SECRET: &str = "loadgen";

#[derive(Parser, Debug, Clone)]
#[command(about = "Load harness for trapdesk (see BENCHMARKS.md)")]
struct Args {
    /// Scripted computers answering exec-lua at once.
    #[arg(long, default_value_t = 100)]
    computers: u64,
    /// Calls in flight for the throughput series.
    #[arg(long, default_value_t = 64)]
    in_flight: usize,
    /// Calls per throughput series.
    #[arg(long, default_value_t = 6000)]
    calls: usize,
    /// Calls per sequential (latency) series.
    #[arg(long, default_value_t = 2000)]
    seq: usize,
    /// Idle computers linked at once in the link storm (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    link: u64,
    /// Handshakes at once in the link storm.
    #[arg(long, default_value_t = 256)]
    handshakes: usize,
    /// Small numbers everywhere: a run of seconds that checks the harness, not the speed.
    #[arg(long)]
    quick: bool,
    /// Only this MCP era (`initialize` or `stateless`), e.g. to profile one; the report then
    /// holds that era alone and `--benchmarks` is refused.
    #[arg(long, value_parser = ["initialize", "stateless"])]
    era: Option<String>,
    /// The host's result budget (`--max-result-bytes`; the default when absent): how many
    /// computers a `probe-computers` page holds, so how many pages the cursor walk takes.
    #[arg(long)]
    max_result_bytes: Option<usize>,
    /// Cursor walks over every computer; the median one is reported.
    #[arg(long, default_value_t = 5)]
    walks: usize,
    /// Run the host without its transcript (to measure what the transcript costs).
    #[arg(long)]
    no_transcript: bool,
    /// Only this many sequential calls of `--profile-tool` on one computer after a short
    /// warm-up, and nothing else: for `valgrind --tool=callgrind`, where two runs of different
    /// counts give the instructions one call costs (their difference over the difference in
    /// calls; start-up and warm-up cancel out). See BENCHMARKS.md ("The host's own share").
    #[arg(long)]
    profile_calls: Option<usize>,
    /// What `--profile-calls` calls: `exec-lua` (`return 1`), `ping` (rmcp's own ping), or
    /// `walk`: `--profile-calls` cursor walks over `--link` idle computers linked first.
    #[arg(long, default_value = "exec-lua", value_parser = ["exec-lua", "ping", "walk"])]
    profile_tool: String,
    /// Write the figures as JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Rewrite the loadgen section of this BENCHMARKS.md.
    #[arg(long)]
    benchmarks: Option<std::path::PathBuf>,
    /// Internal: run as the child that holds the idle computers.
    #[arg(long, hide = true)]
    role: Option<String>,
    #[arg(long, hide = true)]
    url: Option<String>,
    #[arg(long, hide = true, default_value_t = 1)]
    first_id: u64,
}

fn main() {
    let mut args = Args::parse();
    if (args.era.is_some() || args.max_result_bytes.is_some()) && args.benchmarks.is_some() {
        eprintln!(
            "loadgen: --benchmarks is the default run of both eras; leave out --era and --max-result-bytes"
        );
        std::process::exit(2);
    }
    if args.quick {
        args.computers = args.computers.min(10);
        args.in_flight = args.in_flight.min(8);
        args.calls = args.calls.min(200);
        args.seq = args.seq.min(50);
        args.link = args.link.min(50);
        args.handshakes = args.handshakes.min(16);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("loadgen: no runtime: {e}");
            std::process::exit(2);
        }
    };
    if args.role.as_deref() == Some("computers") {
        let url = args.url.clone().unwrap_or_default();
        rt.block_on(computers::child(
            url,
            SECRET.into(),
            args.first_id,
            args.link,
            args.handshakes,
        ));
        return;
    }
    if let Some(n) = args.profile_calls {
        if let Err(e) = rt.block_on(profile(&args, n)) {
            eprintln!("loadgen: {e}");
            std::process::exit(2);
        }
        return;
    }
    match rt.block_on(run(args)) {
        Ok(0) => {}
        Ok(errors) => {
            eprintln!("loadgen: {errors} errors");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::exit(2);
        }
    }
}

/// Resident memory of this process in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

/// Bytes the allocator has handed out and not had back (glibc's `mallinfo2`, all arenas):
/// beside the RSS, it tells what the host holds from what the allocator keeps around it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_bytes() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's counters; it has no preconditions.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as u64
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap_bytes() -> u64 {
    0
}

/// `TcpExt: ListenOverflows` and `ListenDrops` from /proc/net/netstat (whole machine).
fn listen_drops() -> (u64, u64) {
    let Ok(text) = std::fs::read_to_string("/proc/net/netstat") else {
        return (0, 0);
    };
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("TcpExt:")).collect();
    let (Some(names), Some(values)) = (lines.first(), lines.get(1)) else {
        return (0, 0);
    };
    let get = |key: &str| {
        names
            .split_whitespace()
            .position(|n| n == key)
            .and_then(|i| values.split_whitespace().nth(i))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (get("ListenOverflows"), get("ListenDrops"))
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

async fn wait_linked(session: &Session, n: usize, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while session.linked_count() < n {
        if Instant::now() > end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    true
}

/// exec-lua through the session API: sequential, then `in_flight` at a time over `targets`.
async fn session_series(
    session: &Session,
    targets: &[String],
    seq: usize,
    calls: usize,
    in_flight: usize,
) -> (Series, Series) {
    let spec = || {
        RequestSpec::new(
            trapdesk::protocol::Kind::ExecLua,
            json!({"code": "return 1", "name": "=exec"}),
        )
    };
    let mut lat = Series::new("session API exec-lua, 1 computer, sequential");
    let t = Instant::now();
    for _ in 0..seq {
        let s = Instant::now();
        let ok = session
            .request(&targets[0], spec(), Origin::Person)
            .await
            .is_ok();
        lat.push(s.elapsed(), ok);
    }
    lat.wall = t.elapsed();
    let left = Arc::new(AtomicUsize::new(calls));
    let shared = Arc::new(targets.to_vec());
    let t = Instant::now();
    let workers: Vec<_> = (0..in_flight)
        .map(|w| {
            let (session, left, targets) = (session.clone(), left.clone(), shared.clone());
            tokio::spawn(async move {
                let mut out = Vec::new();
                let mut i = w;
                while floor::take(&left) {
                    let target = &targets[i % targets.len()];
                    i += in_flight;
                    let s = Instant::now();
                    let ok = session
                        .request(target, spec(), Origin::Person)
                        .await
                        .is_ok();
                    out.push((s.elapsed(), ok));
                }
                out
            })
        })
        .collect();
    let mut tp = Series::new(&format!(
        "session API exec-lua, {} computers, {in_flight} in flight",
        targets.len()
    ));
    for w in workers {
        for (d, ok) in w.await.unwrap_or_default() {
            tp.push(d, ok);
        }
    }
    tp.wall = t.elapsed();
    (lat, tp)
}

/// What the link storm measured.
struct Storm {
    linked: u64,
    errors: u64,
    seconds: f64,
    overflows: u64,
    drops: u64,
    rss_per_link_kib: f64,
    rss_before_kib: u64,
    rss_after_kib: u64,
    heap_per_link_kib: f64,
    /// CPU seconds (user + system) spent during the storm by the host's process and by the
    /// computers' child: the two share the machine's 2 cores, so the storm cannot take less
    /// than their sum over 2.
    host_cpu_s: f64,
    computers_cpu_s: f64,
}

/// CPU seconds (user + system) a process has used so far, from `/proc/PID/stat`.
fn cpu_seconds(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // The command name in parentheses may hold spaces: count fields after its closing one.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5); `rest` starts at field 3.
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|v| v.parse::<u64>().ok()))
        .sum();
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    ticks as f64 / hz
}

async fn link_storm(
    host: &Host,
    args: &Args,
    already: usize,
) -> Result<(Storm, tokio::process::Child), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = tokio::process::Command::new(exe)
        .args([
            "--role",
            "computers",
            "--url",
            &host.gateway_url(),
            "--first-id",
            "100001",
        ])
        .args([
            "--link",
            &args.link.to_string(),
            "--handshakes",
            &args.handshakes.to_string(),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the computers' process: {e}"))?;
    // Let the child start its runtime before the clock starts.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_before = rss_kib();
    let heap_before = heap_bytes();
    let (o0, d0) = listen_drops();
    let child_pid = child.id().map(|p| p.to_string()).unwrap_or_default();
    let (host_cpu0, child_cpu0) = (cpu_seconds("self"), cpu_seconds(&child_pid));
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    use tokio::io::AsyncWriteExt;
    let t = Instant::now();
    stdin.write_all(b"go\n").await.map_err(|e| e.to_string())?;
    let all = wait_linked(
        &host.session,
        already + args.link as usize,
        Duration::from_secs(120),
    )
    .await;
    let seconds = t.elapsed().as_secs_f64();
    let (host_cpu1, child_cpu1) = (cpu_seconds("self"), cpu_seconds(&child_pid));
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let errors = match tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await {
        Ok(Ok(Some(l))) => l
            .strip_prefix("linked ")
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(u64::MAX),
        _ => u64::MAX,
    };
    let (o1, d1) = listen_drops();
    // Idle: let the last handshakes' buffers go and the allocator settle.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let rss_after = rss_kib();
    let heap_after = heap_bytes();
    let linked = host.session.linked_count().saturating_sub(already) as u64;
    // Keep the child's stdin open (closing it would end the child); it is dropped with it.
    std::mem::forget(stdin);
    let errors = if all { errors } else { errors.max(1) };
    Ok((
        Storm {
            linked,
            errors,
            seconds,
            overflows: o1.saturating_sub(o0),
            drops: d1.saturating_sub(d0),
            rss_per_link_kib: rss_after.saturating_sub(rss_before) as f64 / linked.max(1) as f64,
            rss_before_kib: rss_before,
            rss_after_kib: rss_after,
            heap_per_link_kib: heap_after.saturating_sub(heap_before) as f64
                / 1024.0
                / linked.max(1) as f64,
            host_cpu_s: host_cpu1 - host_cpu0,
            computers_cpu_s: child_cpu1 - child_cpu0,
        },
        child,
    ))
}

/// probe-computers with everything linked: one page, and every page by cursor.
async fn probe(
    client: &mcp::Client,
    era: mcp::Era,
    expect: usize,
    walks: usize,
) -> (Series, Series, usize, u64, Vec<f64>) {
    let peer = client.peer().clone();
    let mut page = Series::new(&format!(
        "probe-computers ping:false, {}, one page (default limit)",
        era.name()
    ));
    let t = Instant::now();
    for _ in 0..20 {
        let s = Instant::now();
        let ok = mcp::call(&peer, "probe-computers", json!({"ping": false}))
            .await
            .is_ok();
        page.push(s.elapsed(), ok);
    }
    page.wall = t.elapsed();
    // The walk is a few hundred milliseconds, so one walk is at the mercy of whatever else the
    // machine does then: `walks` of them, and the median one is reported (with all the times).
    let mut done: Vec<(Series, usize, u64)> = Vec::new();
    for _ in 0..walks.max(1) {
        done.push(walk_once(&peer, era).await);
    }
    // In the order they ran: a trend would show something growing from walk to walk.
    let all_ms: Vec<f64> = done.iter().map(|w| w.0.wall.as_secs_f64() * 1e3).collect();
    done.sort_by_key(|w| w.0.wall);
    let missing = done
        .iter()
        .map(|w| expect.saturating_sub(w.1))
        .max()
        .unwrap_or(expect);
    let dup = done.iter().map(|w| w.2).sum();
    let errors = done.iter().map(|w| w.0.errors).sum();
    let mut walk = done.swap_remove(done.len() / 2).0;
    // Every walk's failures count, not only the median one's.
    walk.errors = errors;
    (page, walk, missing, dup, all_ms)
}

/// One walk of every page by cursor: its series, how many computers it saw, and how many of
/// them came twice.
async fn walk_once(
    peer: &rmcp::service::Peer<rmcp::RoleClient>,
    era: mcp::Era,
) -> (Series, usize, u64) {
    let mut walk = Series::new(&format!(
        "probe-computers ping:false, {}, all by cursor",
        era.name()
    ));
    let mut seen = HashSet::new();
    let mut dup = 0u64;
    let t = Instant::now();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"ping": false, "limit": 500});
        if let (Some(c), Some(obj)) = (&cursor, args.as_object_mut()) {
            obj.insert("cursor".into(), json!(c));
        }
        let s = Instant::now();
        let r = mcp::call(peer, "probe-computers", args).await;
        walk.push(s.elapsed(), r.is_ok());
        let Ok(d) = r else { break };
        for c in d["computers"].as_array().into_iter().flatten() {
            if !seen.insert(c["traposId"].as_str().unwrap_or_default().to_owned()) {
                dup += 1;
            }
        }
        match d["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    walk.wall = t.elapsed();
    (walk, seen.len(), dup)
}

/// A host with its transcript and one scripted computer, as [`run`] starts them.
async fn start_host(args: &Args, dir: &std::path::Path) -> Result<Host, String> {
    let settings = Settings {
        gateway_bind: "127.0.0.1:0".parse().map_err(|_| "addr")?,
        mcp_bind: "127.0.0.1:0".parse().map_err(|_| "addr")?,
        secret: SECRET.into(),
        data_dir: dir.to_owned(),
        ..Settings::default()
    };
    let settings = Settings {
        max_result_bytes: args.max_result_bytes.unwrap_or(settings.max_result_bytes),
        ..settings
    };
    Host::start(settings, !args.no_transcript)
        .await
        .map_err(|e| e.to_string())
}

/// `--profile-calls`: `n` sequential calls of one kind and nothing else (see [`Args`]).
async fn profile(args: &Args, n: usize) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let host = start_host(args, dir.path()).await?;
    tokio::spawn(computers::computer(
        host.gateway_url(),
        1,
        "load".into(),
        SECRET.into(),
        None,
        None,
    ));
    if !wait_linked(&host.session, 1, Duration::from_secs(60)).await {
        return Err("the computer did not link".into());
    }
    let era = match args.era.as_deref() {
        Some("stateless") => mcp::Era::Stateless,
        _ => mcp::Era::Initialize,
    };
    let mut child = None;
    if args.profile_tool == "walk" {
        child = Some(link_storm(&host, args, 1).await?.1);
    }
    let client = mcp::connect(&host.mcp_url(), &host.local_token, era).await?;
    // Both kinds warm up, so that the two tools' runs differ only in what they call.
    let _ = mcp::sequential(&client, era, "1:load", 20).await;
    let _ = mcp::ping(&client, era, 20).await;
    let s = match args.profile_tool.as_str() {
        "ping" => mcp::ping(&client, era, n).await,
        "walk" => {
            let peer = client.peer().clone();
            let mut all = report::Series::new("cursor walks");
            for _ in 0..n {
                let (walk, seen, dup) = walk_once(&peer, era).await;
                println!(
                    "walk: {} pages, {seen} computers, {dup} twice, {:.1} ms",
                    walk.samples.len(),
                    walk.wall.as_secs_f64() * 1e3
                );
                all.push(walk.wall, walk.errors == 0 && dup == 0);
            }
            all
        }
        _ => mcp::sequential(&client, era, "1:load", n).await,
    };
    if let Some(mut c) = child {
        let _ = c.kill().await;
    }
    let _ = client.cancel().await;
    host.stop().await;
    println!("{}", s.text(""));
    if s.errors > 0 {
        return Err(format!("{} errors", s.errors));
    }
    Ok(())
}

async fn run(args: Args) -> Result<u64, String> {
    let started = chrono::Utc::now();
    let load_start = loadavg();
    println!(
        "loadgen: {} | load {} | {}",
        machine(),
        load_start,
        started.format("%Y-%m-%d %H:%M UTC")
    );
    let (seq, calls, inf) = (args.seq, args.calls, args.in_flight);

    let (ws_lat, ws_tp) = floor::ws_echo(seq, calls, inf)
        .await
        .map_err(|e| e.to_string())?;
    let (http_lat, http_tp) = floor::http_post(seq, calls, inf)
        .await
        .map_err(|e| e.to_string())?;
    let floor_ms = ws_lat.median_ms() + http_lat.median_ms();
    let echo_per_s = ws_tp.per_s();

    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let host = start_host(&args, dir.path()).await?;
    let n = args.computers.max(1);
    for id in 1..=n {
        tokio::spawn(computers::computer(
            host.gateway_url(),
            id,
            "load".into(),
            SECRET.into(),
            None,
            None,
        ));
    }
    if !wait_linked(&host.session, n as usize, Duration::from_secs(60)).await {
        return Err(format!(
            "only {} of {n} computers linked",
            host.session.linked_count()
        ));
    }
    let targets: Vec<String> = (1..=n).map(|i| format!("{i}:load")).collect();
    let (s_lat, s_tp) = session_series(&host.session, &targets, seq, calls, inf).await;

    let mut mcp_rows = Vec::new();
    let eras: Vec<mcp::Era> = [mcp::Era::Initialize, mcp::Era::Stateless]
        .into_iter()
        .filter(|e| {
            args.era
                .as_deref()
                .is_none_or(|only| e.name().starts_with(only))
        })
        .collect();
    for &era in &eras {
        let client = mcp::connect(&host.mcp_url(), &host.local_token, era).await?;
        // Warm up the connection pool and the server's first-call paths.
        let _ = mcp::sequential(&client, era, &targets[0], 20).await;
        let ping = mcp::ping(&client, era, seq).await;
        let lat = mcp::sequential(&client, era, &targets[0], seq).await;
        let tp = mcp::concurrent(&client, era, &targets, calls, inf).await;
        let ping_tp = mcp::ping_concurrent(&client, era, calls, inf).await;
        mcp_rows.push((era, ping, lat, tp, ping_tp));
        let _ = client.cancel().await;
    }

    let mut storm = None;
    let mut probe_rows = Vec::new();
    let mut child = None;
    if args.link > 0 {
        let (s, c) = link_storm(&host, &args, n as usize).await?;
        child = Some(c);
        for &era in &eras {
            let client = mcp::connect(&host.mcp_url(), &host.local_token, era).await?;
            let (page, walk, missing, dup, all_ms) =
                probe(&client, era, host.session.linked_count(), args.walks).await;
            probe_rows.push((era, page, walk, missing, dup, all_ms));
            let _ = client.cancel().await;
        }
        storm = Some(s);
    }
    if let Some(mut c) = child {
        let _ = c.kill().await;
    }
    host.stop().await;

    // The report.
    let mut errors = ws_lat.errors
        + ws_tp.errors
        + http_lat.errors
        + http_tp.errors
        + s_lat.errors
        + s_tp.errors;
    println!("\n{HEADER}");
    println!("{}", ws_lat.text("floor (WS)"));
    println!("{}", http_lat.text("floor (HTTP)"));
    println!("{}", ws_tp.text("floor (throughput)"));
    println!("{}", http_tp.text(""));
    println!(
        "{}",
        s_lat.text(&format!(
            "{:.2}× WS echo",
            s_lat.median_ms() / ws_lat.median_ms()
        ))
    );
    println!(
        "{}",
        s_tp.text(&format!("{:.3}× echo/s", s_tp.per_s() / echo_per_s))
    );
    let mut json_mcp = Vec::new();
    for (era, ping, lat, tp, ping_tp) in &mcp_rows {
        errors += ping.errors + lat.errors + tp.errors + ping_tp.errors;
        println!(
            "{}",
            ping.text(&format!("{:.2}× floor", ping.median_ms() / floor_ms))
        );
        println!(
            "{}",
            lat.text(&format!(
                "{:.2}× floor, {:.2}× ping",
                lat.median_ms() / floor_ms,
                lat.median_ms() / ping.median_ms()
            ))
        );
        println!(
            "{}",
            tp.text(&format!(
                "{:.3}× echo/s, {:.2}× ping/s",
                tp.per_s() / echo_per_s,
                tp.per_s() / ping_tp.per_s().max(f64::MIN_POSITIVE)
            ))
        );
        println!(
            "{}",
            ping_tp.text(&format!("{:.3}× echo/s", ping_tp.per_s() / echo_per_s))
        );
        json_mcp.push(json!({"era": era.name(), "ping": ping.json(), "sequential": lat.json(), "concurrent": tp.json(),
            "pingConcurrent": ping_tp.json(), "pingThroughputVsEcho": round(ping_tp.per_s() / echo_per_s),
            "pingVsFloor": round(ping.median_ms() / floor_ms),
            "latencyVsFloor": round(lat.median_ms() / floor_ms), "throughputVsEcho": round(tp.per_s() / echo_per_s),
            // The host's own share (BENCHMARKS.md, "The host's own share"): against rmcp's own `ping` through the
            // same endpoint, in the same run.
            "latencyVsPing": round(lat.median_ms() / ping.median_ms().max(f64::MIN_POSITIVE)),
            "throughputVsPing": round(tp.per_s() / ping_tp.per_s().max(f64::MIN_POSITIVE))}));
    }
    let mut out = json!({
        "date": started.to_rfc3339(), "machine": machine(), "loadStart": load_start, "loadEnd": loadavg(),
        "args": {"computers": n, "inFlight": inf, "calls": calls, "seq": seq, "link": args.link, "handshakes": args.handshakes},
        "floor": {"wsEcho": ws_lat.json(), "wsEchoConcurrent": ws_tp.json(), "httpPost": http_lat.json(),
                  "httpPostConcurrent": http_tp.json(), "latencyMs": round(floor_ms)},
        "session": {"sequential": s_lat.json(), "concurrent": s_tp.json(),
                    "latencyVsWsEcho": round(s_lat.median_ms() / ws_lat.median_ms()),
                    "throughputVsEcho": round(s_tp.per_s() / echo_per_s)},
        "mcp": json_mcp,
    });
    if let Some(s) = &storm {
        errors += s.errors;
        println!(
            "\nlink storm: {} computers, {} handshakes at once: {:.2} s ({:.2}× the 2 s target), {} errors, ListenOverflows +{}, ListenDrops +{} (whole machine)",
            s.linked,
            args.handshakes,
            s.seconds,
            s.seconds / 2.0,
            s.errors,
            s.overflows,
            s.drops
        );
        println!(
            "link storm CPU: host {:.2} s ({:.0} µs a link), computers' process {:.2} s; (host + computers) / 2 cores = {:.2} s",
            s.host_cpu_s,
            s.host_cpu_s * 1e6 / s.linked.max(1) as f64,
            s.computers_cpu_s,
            (s.host_cpu_s + s.computers_cpu_s) / 2.0
        );
        println!(
            "host RSS {:.1} MiB → {:.1} MiB: {:.1} KiB per idle link ({:.2}× the 8 KiB target)",
            s.rss_before_kib as f64 / 1024.0,
            s.rss_after_kib as f64 / 1024.0,
            s.rss_per_link_kib,
            s.rss_per_link_kib / 8.0
        );
        println!(
            "host heap in use (malloc): {:.1} KiB per idle link",
            s.heap_per_link_kib
        );
        if let Some(obj) = out.as_object_mut() {
            obj.insert("linkStorm".into(), json!({"computers": s.linked, "handshakes": args.handshakes,
                "seconds": round(s.seconds), "errors": s.errors, "listenOverflows": s.overflows, "listenDrops": s.drops,
                "rssBeforeKib": s.rss_before_kib, "rssAfterKib": s.rss_after_kib, "rssPerLinkKib": round(s.rss_per_link_kib),
                "heapPerLinkKib": round(s.heap_per_link_kib),
                "hostCpuSeconds": round(s.host_cpu_s), "computersCpuSeconds": round(s.computers_cpu_s)}));
        }
    }
    let mut json_probe = Vec::new();
    for (era, page, walk, missing, dup, all_ms) in &probe_rows {
        errors += page.errors + walk.errors + *missing as u64 + dup;
        println!(
            "{}",
            page.text(&format!("{:.2}× the 20 ms target", page.median_ms() / 20.0))
        );
        println!(
            "{:<58} {:>6} {:>4}  all pages {:.1} ms ({:.2}× the 200 ms target; median of {} walks, in the order they ran: {}), {missing} missing, {dup} twice",
            walk.name,
            walk.samples.len(),
            walk.errors,
            walk.wall.as_secs_f64() * 1e3,
            walk.wall.as_secs_f64() * 1e3 / 200.0,
            all_ms.len(),
            all_ms
                .iter()
                .map(|ms| format!("{ms:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        json_probe.push(json!({"era": era.name(), "page": page.json(), "walk": walk.json(),
            "walkMs": round(walk.wall.as_secs_f64() * 1e3), "walksMs": all_ms.iter().map(|&ms| round(ms)).collect::<Vec<_>>(),
            "missing": missing, "duplicates": dup}));
    }
    if let (false, Some(obj)) = (json_probe.is_empty(), out.as_object_mut()) {
        obj.insert("probe".into(), Value::Array(json_probe));
    }
    if let Some(obj) = out.as_object_mut() {
        obj.insert("errors".into(), json!(errors));
    }
    println!("\nerrors: {errors}; load at the end {}", loadavg());
    println!("{out}");
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&out).unwrap_or_default())
            .map_err(|e| e.to_string())?;
    }
    if let (Some(path), None, None) = (&args.benchmarks, &args.era, args.max_result_bytes) {
        write_benchmarks(path, &out, &args).map_err(|e| e.to_string())?;
    }
    let _ = std::io::stdout().flush();
    Ok(errors)
}

const BEGIN: &str = "<!-- loadgen:begin -->";
const END: &str = "<!-- loadgen:end -->";

/// Replaces the section between the loadgen markers of BENCHMARKS.md with this run's table.
fn write_benchmarks(path: &std::path::Path, r: &Value, args: &Args) -> std::io::Result<()> {
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    let mcp = |i: usize, k: &str| r["mcp"][i][k].clone();
    let lat = |i: usize| {
        format!(
            "{:.3} ms = **{:.2} × ping** = {:.2} × floor (an MCP `ping`: {:.3} ms = {:.2} × floor)",
            f(&mcp(i, "sequential")["medianMs"]),
            f(&mcp(i, "latencyVsPing")),
            f(&mcp(i, "latencyVsFloor")),
            f(&mcp(i, "ping")["medianMs"]),
            f(&mcp(i, "pingVsFloor"))
        )
    };
    let tp = |i: usize| {
        format!(
            "{:.0}/s = **{:.2} × ping's** = {:.3} × bare echo, {} errors (MCP `ping`s, same load: {:.0}/s = {:.3} ×)",
            f(&mcp(i, "concurrent")["perSecond"]),
            f(&mcp(i, "throughputVsPing")),
            f(&mcp(i, "throughputVsEcho")),
            mcp(i, "concurrent")["errors"],
            f(&mcp(i, "pingConcurrent")["perSecond"]),
            f(&mcp(i, "pingThroughputVsEcho"))
        )
    };
    let s = &r["linkStorm"];
    let probe = |i: usize| {
        let p = &r["probe"][i];
        format!(
            "page {:.1} ms median; all by cursor {:.1} ms in {} pages (the median of {} walks), {} missing, {} twice",
            f(&p["page"]["medianMs"]),
            f(&p["walkMs"]),
            p["walk"]["calls"],
            p["walksMs"].as_array().map_or(0, Vec::len),
            p["missing"],
            p["duplicates"],
        )
    };
    let table = format!(
        "{BEGIN}\n\
Command: `cargo run --release --example loadgen -- --benchmarks BENCHMARKS.md{}` \
(`examples/loadgen/`). Date: {}. Machine: {}; load average {} at the start, {} at the end \
(absolute figures move with the machine and its load; the ratios to the floor measured in \
the same run are the figures to compare).\n\n\
Floor in this run: bare WebSocket echo {:.3} ms median, {:.0}/s with {} in flight; bare HTTP/1.1 POST \
{:.3} ms median; latency floor (one POST + one echo) {:.3} ms.\n\n\
| what | this run | target |\n| --- | --- | --- |\n\
| exec-lua over MCP HTTP, 1 computer, sequential, median | initialize {}; stateless {} | ≤ 1.5 × ping; ≤ 2 × floor |\n\
| exec-lua over MCP HTTP, {} computers, {} in flight | initialize {}; stateless {} | ≥ 0.6 × ping's; ≥ 0.25 × bare echo; zero errors |\n\
| exec-lua through the session API, same load | {:.3} ms sequential = {:.2} × WS echo; {:.0}/s = {:.3} × bare echo | — |\n\
| {} computers linking at once ({} concurrent handshakes) | {:.2} s, ListenOverflows +{}, errors {}; CPU in the storm: host {:.2} s, the computers' process {:.2} s | ≤ 2 s, none dropped |\n\
| resident memory per idle link | {:.1} KiB (heap in use: +{:.1} KiB per link) | ≤ 8 KiB |\n\
| `probe-computers` (`ping:false`) with {} linked | initialize {}; stateless {} | ≤ 20 ms a page; all in ≤ 200 ms |\n\
{END}",
        if args.quick { " --quick" } else { "" },
        r["date"].as_str().unwrap_or_default(),
        r["machine"].as_str().unwrap_or_default(),
        r["loadStart"].as_str().unwrap_or_default(),
        r["loadEnd"].as_str().unwrap_or_default(),
        f(&r["floor"]["wsEcho"]["medianMs"]),
        f(&r["floor"]["wsEchoConcurrent"]["perSecond"]),
        args.in_flight,
        f(&r["floor"]["httpPost"]["medianMs"]),
        f(&r["floor"]["latencyMs"]),
        lat(0),
        lat(1),
        args.computers,
        args.in_flight,
        tp(0),
        tp(1),
        f(&r["session"]["sequential"]["medianMs"]),
        f(&r["session"]["latencyVsWsEcho"]),
        f(&r["session"]["concurrent"]["perSecond"]),
        f(&r["session"]["throughputVsEcho"]),
        s["computers"],
        args.handshakes,
        f(&s["seconds"]),
        s["listenOverflows"],
        s["errors"],
        f(&s["hostCpuSeconds"]),
        f(&s["computersCpuSeconds"]),
        f(&s["rssPerLinkKib"]),
        f(&s["heapPerLinkKib"]),
        s["computers"].as_u64().unwrap_or(0) + args.computers,
        probe(0),
        probe(1),
    );
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let new = match (text.find(BEGIN), text.find(END)) {
        (Some(a), Some(b)) if b > a => format!("{}{table}{}", &text[..a], &text[b + END.len()..]),
        _ => format!("{text}\n{table}\n"),
    };
    std::fs::write(path, new)
}

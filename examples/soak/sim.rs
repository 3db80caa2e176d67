//! The soak simulation, shared by `examples/soak` (long runs, figures for RELIABILITY.md) and
//! `tests/integration/host/soak.rs` (a quick run inside `cargo test`).
//!
//! One in-process host with its real gateway and MCP listeners; N scripted computers on real
//! WebSockets that answer, fail, stall, drop and relink, answer twice, late, with a wrong id,
//! in fragments, or after a flood of output, at random; and callers on the session API and over
//! MCP (rmcp client, Streamable HTTP) at once, some of which cancel. It checks guarantee 1
//! (every request ends exactly once; the pending table, queues and slots are empty afterwards)
//! and guarantee 2 (RSS at the end within 10 % of the start) and reports every outcome count.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as Ws;

use trapdesk::config::Settings;
use trapdesk::host::Host;
use trapdesk::session::{Event, Origin, RequestError, RequestSpec, Session};

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub computers: u64,
    /// Total requests (ignored with `duration`).
    pub requests: u64,
    /// Run for this long instead of a request count.
    pub duration: Option<Duration>,
    /// Session-API callers working at once.
    pub workers: usize,
    /// MCP agents (rmcp clients) working at once.
    pub agents: usize,
    /// Request deadline; stalls and late answers end as timeouts after it.
    pub timeout: Duration,
    pub seed: u64,
    /// One session call in this many is cancelled by its caller a moment after it starts.
    /// Only a cancel that finds its request still queued on the host, or stalled on its
    /// computer, ends as `cancelled` (every other one is answered first), so a short run
    /// needs a larger share to see that outcome at all.
    pub cancel_one_in: u32,
    /// Print progress every few seconds.
    pub verbose: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            computers: 100,
            requests: 10_000,
            duration: None,
            workers: 64,
            agents: 4,
            timeout: Duration::from_millis(1500),
            seed: 1,
            cancel_one_in: 10,
            verbose: false,
        }
    }
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Report {
    pub requests: u64,
    pub elapsed: Duration,
    /// Outcome → count, per origin ("session", "mcp").
    pub outcomes: BTreeMap<String, BTreeMap<&'static str, u64>>,
    /// Requests the session started (from its events).
    pub started: u64,
    /// Requests that ended once.
    pub finished_once: u64,
    /// Requests that ended more than once (must be 0).
    pub finished_twice: u64,
    /// Started and never ended (must be 0).
    pub never_finished: u64,
    /// Events the checker missed because it lagged (0 means the exactly-once check is complete).
    pub lagged: u64,
    pub pending_after: usize,
    pub busy_computers_after: usize,
    pub relinks: u64,
    pub computer_behaviours: BTreeMap<&'static str, u64>,
    pub rss_base_kb: u64,
    /// Every computer linked (both ends of each socket are in this process).
    pub rss_linked_kb: u64,
    /// After the fill phase (every ring at its bound), before the warm-up.
    pub rss_filled_kb: u64,
    pub rss_start_kb: u64,
    pub rss_peak_kb: u64,
    pub rss_end_kb: u64,
}

impl Report {
    /// Guarantee 1 held.
    pub fn exactly_once(&self) -> bool {
        self.finished_twice == 0
            && self.never_finished == 0
            && self.pending_after == 0
            && self.busy_computers_after == 0
    }

    /// Guarantee 2 held: RSS at the end within 10 % of the start.
    pub fn memory_returned(&self) -> bool {
        self.rss_end_kb <= self.rss_start_kb + self.rss_start_kb / 10
    }

    pub fn per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn print(&self) {
        println!("requests          {}", self.requests);
        println!("elapsed           {:.1} s", self.elapsed.as_secs_f64());
        println!("requests/s        {:.0}", self.per_second());
        for (origin, counts) in &self.outcomes {
            let parts: Vec<String> = counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!("outcomes {origin:<8} {}", parts.join(" "));
        }
        let parts: Vec<String> = self
            .computer_behaviours
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!("computers did     {}", parts.join(" "));
        println!("relinks           {}", self.relinks);
        println!(
            "exactly once      started={} ended_once={} ended_twice={} never_ended={} lagged_events={}",
            self.started, self.finished_once, self.finished_twice, self.never_finished, self.lagged
        );
        println!(
            "after             pending={} computers_with_running_or_queued={}",
            self.pending_after, self.busy_computers_after
        );
        println!(
            "rss (KiB)         base={} linked={} filled={} start={} peak={} end={} (end/start {:+.1} %)",
            self.rss_base_kb,
            self.rss_linked_kb,
            self.rss_filled_kb,
            self.rss_start_kb,
            self.rss_peak_kb,
            self.rss_end_kb,
            (self.rss_end_kb as f64 / self.rss_start_kb.max(1) as f64 - 1.0) * 100.0
        );
        println!(
            "guarantee 1 (exactly once, back to bounds): {}",
            if self.exactly_once() {
                "HOLDS"
            } else {
                "BROKEN"
            }
        );
        println!(
            "guarantee 2 (rss end within 10 % of start): {}",
            if self.memory_returned() {
                "HOLDS"
            } else {
                "BROKEN"
            }
        );
    }
}

/// The `hello` of a scripted computer that serves only `exec-lua` (the soak's and the abuse
/// run's computers alike); `name` is both its client and its host name.
pub fn hello(id: u64, secret: &str, name: &str) -> Ws {
    let hello = json!({"type": "hello", "protocol": 1, "computer_id": id, "label": null,
        "secret": secret, "serves": ["exec-lua"], "client": format!("{name}/1"), "host": name,
        "max_message": 131072});
    Ws::Text(hello.to_string().into())
}

/// Resident set size of this process in KiB (Linux; 0 elsewhere).
pub fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

const SECRET: &str = "soak-secret";

/// Output lines kept per computer in the soak's host.
const SCROLLBACK: usize = 200;

/// The code of the fill phase's requests (the scripted computers flood for it).
const FILL_CODE: &str = "soak:fill";

/// Request numbers the exactly-once checker tracks at once (one byte each).
const CHECK_RING: usize = 1 << 20;
const OPEN: u8 = 1;
const ENDED: u8 = 2;

/// `h-<start tag>-17` → 17.
fn request_number(id: &str) -> Option<usize> {
    id.rsplit('-').next()?.parse().ok()
}

/// The outcome class of a request error, as RELIABILITY.md names them.
fn class(e: &RequestError) -> &'static str {
    match e {
        RequestError::Timeout { .. } => "timeout",
        RequestError::Cancelled { .. } => "cancelled",
        RequestError::Disconnected => "disconnected",
        RequestError::Busy { .. } | RequestError::DetachedLimit { .. } => "busy",
        RequestError::UnknownComputer { .. }
        | RequestError::Ambiguous { .. }
        | RequestError::ShuttingDown
        | RequestError::Policy { .. } => "refused",
        RequestError::Remote { .. } | RequestError::Lost { .. } => "error",
    }
}

fn mcp_class(code: &str) -> &'static str {
    match code {
        "timeout" => "timeout",
        "cancelled" => "cancelled",
        "disconnected" => "disconnected",
        "busy" => "busy",
        "unknown_computer" | "ambiguous_computer" | "shutting_down" | "denied" | "refused"
        | "not_answered" | "no_approver" => "refused",
        _ => "error",
    }
}

type Counts = Arc<Mutex<BTreeMap<String, BTreeMap<&'static str, u64>>>>;

fn count(counts: &Counts, origin: &str, outcome: &'static str) {
    let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
    *c.entry(origin.to_owned())
        .or_default()
        .entry(outcome)
        .or_default() += 1;
}

/// Runs the simulation.
///
/// # Errors
/// When the host cannot start or the MCP agents cannot connect.
pub async fn run(cfg: Config) -> anyhow::Result<Report> {
    let rss_base_kb = rss_kb();
    let dir = tempfile::tempdir()?;
    let settings = Settings {
        gateway_bind: "127.0.0.1:0".parse()?,
        mcp_bind: "127.0.0.1:0".parse()?,
        secret: SECRET.into(),
        data_dir: dir.path().to_owned(),
        heartbeat: Duration::from_secs(5),
        max_queued: 16,
        scrollback_lines: SCROLLBACK,
        ..Settings::default()
    };
    let scrollback = settings.scrollback_lines as u64;
    let host = Host::start(settings, false).await?;
    let session = host.session.clone();

    // The computers.
    let stop = Arc::new(AtomicBool::new(false));
    let relinks = Arc::new(AtomicU64::new(0));
    let behaviours: Arc<Mutex<BTreeMap<&'static str, u64>>> = Arc::default();
    let mut computer_tasks = Vec::new();
    for id in 0..cfg.computers {
        let url = host.gateway_url();
        let (stop, relinks, behaviours) = (stop.clone(), relinks.clone(), behaviours.clone());
        let timeout = cfg.timeout;
        let seed = cfg.seed.wrapping_mul(1_000_003).wrapping_add(id);
        computer_tasks.push(tokio::spawn(async move {
            computer(id, url, seed, timeout, stop, relinks, behaviours).await;
        }));
    }
    let linked_all = Instant::now();
    while session.computers().iter().filter(|c| c.online).count() < cfg.computers as usize {
        if linked_all.elapsed() > Duration::from_secs(120) {
            anyhow::bail!("computers did not all link within 120 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let rss_linked_kb = rss_kb();
    // Fill phase: every bounded structure that holds output or history is filled to its
    // configured bound before "start" is sampled (each computer's output ring, the recent log,
    // the event broadcast's ring), so that growth after the start sample means memory that is
    // not bounded, not a ring filling up. Each flood is 51 lines; one more round than needed.
    let fill_rounds = scrollback / 51 + 2;
    let fill_started = Instant::now();
    {
        let mut fillers = Vec::new();
        let ids: Vec<u64> = (0..cfg.computers).collect();
        let per = ids.len().div_ceil(cfg.workers.max(1)).max(1);
        for chunk in ids.chunks(per) {
            let (session, chunk, timeout) = (session.clone(), chunk.to_vec(), cfg.timeout);
            fillers.push(tokio::spawn(async move {
                for _ in 0..fill_rounds {
                    for id in &chunk {
                        let spec = RequestSpec::new(
                            trapdesk::protocol::Kind::ExecLua,
                            json!({"code": FILL_CODE}),
                        )
                        .timeout(Some(timeout));
                        // A computer relinking now simply misses a round.
                        let _ = session.request(&id.to_string(), spec, Origin::Person).await;
                    }
                }
            }));
        }
        for f in fillers {
            f.await?;
        }
    }
    let fill_elapsed = fill_started.elapsed();
    let rss_filled_kb = rss_kb();
    if cfg.verbose {
        println!(
            "  filled rings: {} rounds in {:.1} s, rss {} KiB",
            fill_rounds,
            fill_elapsed.as_secs_f64(),
            rss_filled_kb
        );
    }

    // The exactly-once checker: every RequestStarted must meet exactly one RequestFinished.
    // It subscribes after the fill phase, whose floods would overrun the broadcast's ring.
    // Its memory is fixed: one state byte per request number in a ring of `CHECK_RING` slots
    // (a start that finds its slot still open counts that older request as never ended), so
    // the checker itself cannot show up as growth in the RSS figures.
    let checker = {
        let mut events = session.subscribe();
        tokio::spawn(async move {
            let mut slots = vec![0u8; CHECK_RING];
            let (mut started, mut once, mut twice, mut never, mut lagged) =
                (0u64, 0u64, 0u64, 0u64, 0u64);
            loop {
                match events.recv().await {
                    Ok(Event::RequestStarted { info }) => {
                        started += 1;
                        if let Some(n) = request_number(&info.request_id) {
                            let slot = &mut slots[n % CHECK_RING];
                            if *slot == OPEN {
                                never += 1;
                            }
                            *slot = OPEN;
                        }
                    }
                    Ok(Event::RequestFinished { request_id, .. }) => {
                        if let Some(n) = request_number(&request_id) {
                            let slot = &mut slots[n % CHECK_RING];
                            match *slot {
                                OPEN => {
                                    *slot = ENDED;
                                    once += 1;
                                }
                                ENDED => twice += 1,
                                // Started before we subscribed, or its start was lost to lag.
                                _ => {}
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => lagged += n,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
            never += slots.iter().filter(|s| **s == OPEN).count() as u64;
            (started, once, twice, never, lagged)
        })
    };

    // RSS sampler.
    let peak = Arc::new(AtomicU64::new(rss_kb()));
    let sampler = {
        let (peak, stop) = (peak.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kb(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };

    let counts: Counts = Arc::default();
    let issued = Arc::new(AtomicU64::new(0));
    let started_at = Instant::now();
    let deadline = cfg.duration.map(|d| started_at + d);
    // A request number is handed out per call; the first 5 % warm up, after which RSS "start"
    // is taken, so that the start figure includes the allocator's steady state.
    // With --duration, the warm-up is the first 5 % of the time instead.
    let warmup = (cfg.requests / 20).max(1);
    let warm_until = cfg.duration.map(|d| started_at + d / 20);
    let rss_start = Arc::new(AtomicU64::new(0));
    let next = {
        let issued = issued.clone();
        let rss_start = rss_start.clone();
        let total = cfg.requests;
        move || -> Option<u64> {
            let n = issued.fetch_add(1, Ordering::Relaxed);
            let warm = match warm_until {
                Some(t) => Instant::now() >= t,
                None => n >= warmup,
            };
            if warm && rss_start.load(Ordering::Relaxed) == 0 {
                // Several callers may race here; the first sample wins.
                let _ =
                    rss_start.compare_exchange(0, rss_kb(), Ordering::Relaxed, Ordering::Relaxed);
            }
            match deadline {
                Some(d) => (Instant::now() < d).then_some(n),
                None => (n < total).then_some(n),
            }
        }
    };
    let next = Arc::new(next);

    let mut callers = Vec::new();
    for w in 0..cfg.workers {
        let (session, counts, next) = (session.clone(), counts.clone(), next.clone());
        let cfg = cfg.clone();
        callers.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(cfg.seed ^ (0xABCD + w as u64));
            while let Some(n) = next() {
                session_call(&session, &cfg, &mut rng, n, &counts).await;
            }
        }));
    }
    for a in 0..cfg.agents {
        let url = host.mcp_url();
        let (counts, next) = (counts.clone(), next.clone());
        let cfg = cfg.clone();
        let client = mcp_client(&url, &host.local_token, a).await?;
        callers.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(cfg.seed ^ (0x5EED + a as u64));
            while let Some(_n) = next() {
                mcp_call(&client, &cfg, &mut rng, &counts).await;
            }
            let _ = client.cancel().await;
        }));
    }
    let progress = {
        let (issued, stop, verbose) = (issued.clone(), stop.clone(), cfg.verbose);
        tokio::spawn(async move {
            while verbose && !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_secs(5)).await;
                eprintln!(
                    "… {} requests, rss {} KiB",
                    issued.load(Ordering::Relaxed),
                    rss_kb()
                );
            }
        })
    };
    for c in callers {
        c.await?;
    }
    let elapsed = started_at.elapsed();
    let requests: u64 = counts
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .flat_map(|m| m.values())
        .sum();

    // Let late answers, relinks and timers settle; then everything must be back to bounds.
    let settle = Instant::now();
    while !session.pending().is_empty() && settle.elapsed() < cfg.timeout * 4 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(cfg.timeout.min(Duration::from_secs(1))).await;
    let pending_after = session.pending().len();
    let busy_computers_after = session
        .computers()
        .iter()
        .filter(|c| c.running > 0 || c.queued > 0)
        .count();
    let rss_end_kb = rss_kb();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    let _ = progress.await;
    for t in &computer_tasks {
        t.abort();
    }
    let rss_peak_kb = peak.load(Ordering::Relaxed).max(rss_end_kb);
    host.stop().await;
    drop(session);
    let (started, once, twice, never, lagged) =
        match tokio::time::timeout(Duration::from_secs(10), checker).await {
            Ok(Ok(r)) => r,
            _ => (0, 0, 0, u64::MAX, 0),
        };
    let outcomes = std::mem::take(&mut *counts.lock().unwrap_or_else(|p| p.into_inner()));
    let computer_behaviours =
        std::mem::take(&mut *behaviours.lock().unwrap_or_else(|p| p.into_inner()));
    let mut start = rss_start.load(Ordering::Relaxed);
    if start == 0 {
        start = rss_base_kb;
    }
    Ok(Report {
        requests,
        elapsed,
        outcomes,
        started,
        finished_once: once,
        finished_twice: twice,
        never_finished: never,
        lagged,
        pending_after,
        busy_computers_after,
        relinks: relinks.load(Ordering::Relaxed),
        computer_behaviours,
        rss_base_kb,
        rss_linked_kb,
        rss_filled_kb,
        rss_start_kb: start,
        rss_peak_kb,
        rss_end_kb,
    })
}

/// A target: usually a linked computer; 1 % of calls name one that does not exist.
fn target(rng: &mut StdRng, computers: u64) -> String {
    if rng.random_range(0..100) == 0 {
        "no-such-computer".into()
    } else {
        rng.random_range(0..computers).to_string()
    }
}

async fn session_call(session: &Session, cfg: &Config, rng: &mut StdRng, n: u64, counts: &Counts) {
    let spec = RequestSpec::new(
        trapdesk::protocol::Kind::ExecLua,
        json!({"code": format!("return {n}")}),
    )
    .timeout(Some(cfg.timeout));
    let to = target(rng, cfg.computers);
    // One call in `cancel_one_in` is cancelled by its caller a moment after it started.
    let cancel_after = (rng.random_range(0..cfg.cancel_one_in.max(1)) == 0).then(|| {
        Duration::from_millis(rng.random_range(0..(cfg.timeout.as_millis() as u64 / 2).max(1)))
    });
    let origin = Origin::Person;
    let result = match session.start(&to, spec, origin) {
        Err(e) => Err(e),
        Ok(ticket) => match cancel_after {
            None => ticket.wait().await,
            Some(after) => {
                let id = ticket.id.clone();
                let s = session.clone();
                let canceller = tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let _ = s.cancel(&id);
                });
                let r = ticket.wait().await;
                canceller.abort();
                r
            }
        },
    };
    let outcome = match &result {
        Ok(_) => "ok",
        Err(e) => class(e),
    };
    count(counts, "session", outcome);
}

type McpClient = rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig>;

async fn mcp_client(url: &str, token: &str, n: usize) -> anyhow::Result<McpClient> {
    use rmcp::ServiceExt;
    let info = rmcp::model::ClientConfig::new(
        rmcp::model::ClientCapabilities::default(),
        rmcp::model::Implementation::new(format!("soak-agent-{n}"), "1"),
    );
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.to_owned(),
        )
        .auth_header(token.to_owned()),
    );
    Ok(info.serve(transport).await?)
}

async fn mcp_call(client: &McpClient, cfg: &Config, rng: &mut StdRng, counts: &Counts) {
    let args = json!({
        "traposId": target(rng, cfg.computers),
        "code": "return 1",
        "timeoutMs": cfg.timeout.as_millis() as u64,
    });
    let Value::Object(args) = args else { return };
    let params = rmcp::model::CallToolRequestParams::new("exec-lua").with_arguments(args);
    let outcome = match client.call_tool(params).await {
        Err(_) => "transport_error",
        Ok(r) if r.is_error != Some(true) => "ok",
        Ok(r) => {
            let data = r.structured_content.unwrap_or(Value::Null);
            let code = data["error"]["code"]
                .as_str()
                .or_else(|| data["code"].as_str())
                .unwrap_or("error")
                .to_owned();
            mcp_class(&code)
        }
    };
    count(counts, "mcp", outcome);
}

/// What a scripted computer does with one request.
#[derive(Clone, Copy)]
enum Act {
    Answer,
    Fail,
    Slow,
    Stall,
    Twice,
    Late,
    WrongIdFirst,
    Drop,
    Flood,
    Fragments,
}

fn pick(rng: &mut StdRng) -> Act {
    match rng.random_range(0..100) {
        0..55 => Act::Answer,
        55..63 => Act::Fail,
        63..71 => Act::Slow,
        71..75 => Act::Stall,
        75..80 => Act::Twice,
        80..83 => Act::Late,
        83..86 => Act::WrongIdFirst,
        86..88 => Act::Drop,
        88..94 => Act::Flood,
        _ => Act::Fragments,
    }
}

fn act_name(a: Act) -> &'static str {
    match a {
        Act::Answer => "answer",
        Act::Fail => "fail",
        Act::Slow => "slow",
        Act::Stall => "stall",
        Act::Twice => "twice",
        Act::Late => "late",
        Act::WrongIdFirst => "wrong_id",
        Act::Drop => "drop",
        Act::Flood => "flood",
        Act::Fragments => "fragments",
    }
}

fn ok_response(id: &str) -> String {
    json!({"type": "computer_response", "id": id, "ok": true,
        "payload": {"ok": true, "returns": [{"type": "number", "value": 1}], "n": 1}})
    .to_string()
}

/// One scripted computer: links, serves until it decides to drop, relinks with jittered
/// back-off, until the run stops.
async fn computer(
    id: u64,
    url: String,
    seed: u64,
    timeout: Duration,
    stop: Arc<AtomicBool>,
    relinks: Arc<AtomicU64>,
    behaviours: Arc<Mutex<BTreeMap<&'static str, u64>>>,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut first = true;
    while !stop.load(Ordering::Relaxed) {
        if !first {
            relinks.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(rng.random_range(20..300))).await;
        }
        first = false;
        let Ok((ws, _)) = tokio_tungstenite::connect_async(url.as_str()).await else {
            tokio::time::sleep(Duration::from_millis(rng.random_range(50..500))).await;
            continue;
        };
        let (mut sink, mut stream) = ws.split();
        if sink.send(hello(id, SECRET, "soak")).await.is_err() {
            continue;
        }
        // Frames to send go through one writer so delayed answers can be sent from timers.
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let writer = tokio::spawn(async move {
            while let Some(t) = rx.recv().await {
                if sink.send(Ws::Text(t.into())).await.is_err() {
                    break;
                }
            }
        });
        let mut stalled: Vec<String> = Vec::new();
        loop {
            let Some(Ok(frame)) = stream.next().await else {
                break;
            };
            let Ws::Text(text) = frame else { continue };
            let Ok(v) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            match v["type"].as_str() {
                Some("ping") => {
                    let _ = tx.send(json!({"type": "pong", "t": v["t"]}).to_string());
                }
                Some("cancel") => {
                    let rid = v["id"].as_str().unwrap_or_default().to_owned();
                    if let Some(i) = stalled.iter().position(|s| *s == rid) {
                        stalled.swap_remove(i);
                        let _ = tx.send(
                            json!({"type": "computer_response", "id": rid, "ok": false,
                            "error": {"code": "cancelled", "message": "cancelled", "output": "so far\n"}})
                            .to_string(),
                        );
                    }
                }
                Some("gateway_request") => {
                    let rid = v["id"].as_str().unwrap_or_default().to_owned();
                    // The fill phase's requests always flood, so that every ring reaches its
                    // bound before the start sample.
                    let act = if v["payload"]["code"].as_str() == Some(FILL_CODE) {
                        Act::Flood
                    } else {
                        pick(&mut rng)
                    };
                    *behaviours
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .entry(act_name(act))
                        .or_default() += 1;
                    match act {
                        Act::Answer => {
                            let _ = tx.send(
                                json!({"type": "output", "id": rid, "text": "hi\n"}).to_string(),
                            );
                            let _ = tx.send(ok_response(&rid));
                        }
                        Act::Fail => {
                            let _ = tx.send(
                                json!({"type": "computer_response", "id": rid, "ok": false,
                                "error": {"code": "lua_error", "message": "exec:1: boom"}})
                                .to_string(),
                            );
                        }
                        Act::Slow => {
                            let tx = tx.clone();
                            let wait = Duration::from_millis(
                                rng.random_range(0..(timeout.as_millis() as u64 / 2).max(1)),
                            );
                            tokio::spawn(async move {
                                tokio::time::sleep(wait).await;
                                let _ = tx.send(ok_response(&rid));
                            });
                        }
                        Act::Stall => stalled.push(rid),
                        Act::Twice => {
                            let _ = tx.send(ok_response(&rid));
                            let _ = tx.send(ok_response(&rid));
                        }
                        Act::Late => {
                            let tx = tx.clone();
                            let wait = timeout + Duration::from_millis(100);
                            tokio::spawn(async move {
                                tokio::time::sleep(wait).await;
                                let _ = tx.send(ok_response(&rid));
                            });
                        }
                        Act::WrongIdFirst => {
                            let _ = tx.send(ok_response("h-0"));
                            let _ = tx.send(ok_response(&format!("{rid}x")));
                            let _ = tx.send(ok_response(&rid));
                        }
                        Act::Drop => break,
                        Act::Flood => {
                            for i in 0..50 {
                                let _ = tx.send(
                                    json!({"type": "output", "id": rid,
                                        "text": format!("{i} {}\n", "x".repeat(200))})
                                    .to_string(),
                                );
                            }
                            let _ = tx.send(
                                json!({"type": "output", "id": rid, "text": "no newline ".repeat(100)})
                                    .to_string(),
                            );
                            let _ = tx.send(ok_response(&rid));
                        }
                        Act::Fragments => {
                            let body = ok_response(&rid);
                            let pieces: Vec<&[u8]> = body.as_bytes().chunks(24).collect();
                            let n = pieces.len();
                            for (i, p) in pieces.into_iter().enumerate() {
                                let _ = tx.send(
                                    json!({"type": "fragment", "mid": format!("f-{rid}"),
                                        "seq": i, "last": i + 1 == n,
                                        "data": String::from_utf8_lossy(p)})
                                    .to_string(),
                                );
                            }
                        }
                    }
                }
                _ => {}
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        // Dropping the stream half and aborting the writer drops the TCP link without a close.
        writer.abort();
    }
}

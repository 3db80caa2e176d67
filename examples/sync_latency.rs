//! Save-to-push latency of `trapdesk sync`: the 300 ms bound from a save to the
//! computer (BENCHMARKS.md), measured.
//!
//! A real host (gateway + MCP endpoint on loopback ports) with one emulated computer that runs
//! the real Lua client, and `trapdesk sync` watching a temporary folder from its own thread and
//! tokio runtime (as a separate process would, through the MCP endpoint over HTTP). Each
//! iteration saves one file with new content (alternately written in place and written beside
//! then renamed over it, as editors do) and times from the start of the save until the
//! computer's disk holds exactly the new content. Saves are spaced by `--gap` so that each is
//! its own push, as a person's saves are.
//!
//! ```sh
//! cargo run --release --example sync_latency -- --saves 200
//! ```
//!
//! Prints min, median, p90, p99 and max, and how many saves missed 300 ms, then where the time
//! went by the host's transcript (each request between host and computer, each MCP tool call).
//! Exits 1 when the p99 is over the bound.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use trapdesk::commands::remote::ClientArgs;
use trapdesk::commands::sync::SyncArgs;
use trapdesk::config::Settings;
use trapdesk::emu::{Computer, ComputerSpec, install_client};
use trapdesk::host::Host;

const BOUND: Duration = Duration::from_millis(300);
const SECRET: &str = "bench-secret";

struct Opts {
    saves: usize,
    gap: Duration,
    size: usize,
}

fn opts() -> Result<Opts, String> {
    let mut o = Opts {
        saves: 200,
        gap: Duration::from_millis(150),
        size: 2_000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or(format!("{name} needs a number"))
        };
        match a.as_str() {
            "--saves" => o.saves = value("--saves")? as usize,
            "--gap-ms" => o.gap = Duration::from_millis(value("--gap-ms")?),
            "--size" => o.size = value("--size")? as usize,
            "-h" | "--help" => {
                return Err(
                    "sync_latency [--saves N (200)] [--gap-ms MS (150)] [--size BYTES (2000)]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(o)
}

/// A file body of about `size` bytes that differs for every `i`.
fn body(i: usize, size: usize) -> String {
    let mut s = format!("-- save {i}\nprint(\"save {i}\")\n");
    while s.len() < size {
        s.push_str("-- padding so the push carries a program-sized file ........\n");
    }
    s
}

fn save(path: &Path, text: &str, rename: bool) -> std::io::Result<()> {
    if rename {
        // What vim (backupcopy=no) and many editors do: write beside, rename over.
        let tmp = path.with_extension("lua~");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path)
    } else {
        std::fs::write(path, text)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

async fn wait_for(path: &Path, want: &str, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if std::fs::read_to_string(path).is_ok_and(|s| s == want) {
            return Some(start.elapsed());
        }
        if start.elapsed() > limit {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let o = match opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let code = match run(o).await {
        Ok(ok) => i32::from(!ok),
        Err(e) => {
            eprintln!("sync_latency: {e}");
            2
        }
    };
    // The sync thread watches until its process ends.
    std::process::exit(code);
}

async fn run(o: Opts) -> Result<bool, String> {
    let data = tempfile::tempdir().map_err(|e| e.to_string())?;
    let settings = Settings {
        gateway_bind: "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?,
        mcp_bind: "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?,
        secret: SECRET.into(),
        data_dir: data.path().to_owned(),
        ..Settings::default()
    };
    let host = Host::start(settings, true)
        .await
        .map_err(|e| e.to_string())?;
    let disk = data.path().join("computers/1");
    std::fs::create_dir_all(&disk).map_err(|e| e.to_string())?;
    install_client(&disk, &host.gateway_url(), SECRET).map_err(|e| e.to_string())?;
    let spec = ComputerSpec::new(1, Some("bench".into()), disk.clone());
    let _computer =
        Computer::spawn(spec, tokio::runtime::Handle::current()).map_err(|e| e.to_string())?;
    let start = Instant::now();
    while !host
        .session
        .computer("1:bench")
        .is_some_and(|c| c.online && c.serves.iter().any(|s| s == "write-file"))
    {
        if start.elapsed() > Duration::from_secs(20) {
            return Err("the emulated computer did not link".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let folder = tempfile::tempdir().map_err(|e| e.to_string())?;
    let local = folder.path().join("main.lua");
    std::fs::write(&local, body(0, o.size)).map_err(|e| e.to_string())?;
    let remote: PathBuf = disk.join("prog/main.lua");
    let args = SyncArgs {
        local: folder.path().to_owned(),
        target: "bench:/prog".into(),
        run: None,
        once: false,
        delete: false,
        ignore: vec!["*.lua~".into()],
        pull: false,
        client: ClientArgs {
            connect: Some(host.mcp_url()),
            timeout: None,
            json: false,
            data_dir: Some(host.settings.data_dir.clone()),
        },
    };
    // Its own runtime on its own thread: the sync is a separate client, as its process is.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        if let Ok(rt) = rt
            && let Err(f) = rt.block_on(trapdesk::commands::sync::sync(args))
        {
            eprintln!("sync ended: {f}");
        }
    });
    if wait_for(&remote, &body(0, o.size), Duration::from_secs(20))
        .await
        .is_none()
    {
        return Err("the first push did not arrive".into());
    }
    // Let the watcher settle before the first timed save.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut times = Vec::with_capacity(o.saves);
    let mut lost = 0;
    for i in 1..=o.saves {
        let text = body(i, o.size);
        let t0 = Instant::now();
        save(&local, &text, i % 2 == 0).map_err(|e| e.to_string())?;
        match wait_for(&remote, &text, Duration::from_secs(5)).await {
            Some(_) => times.push(t0.elapsed()),
            None => lost += 1,
        }
        tokio::time::sleep(o.gap).await;
    }
    times.sort();
    let over = times.iter().filter(|t| **t > BOUND).count();
    let p99 = percentile(&times, 99.0);
    println!(
        "sync save→on-computer latency, {} saves of {} bytes ({} in place, {} renamed over), gap {}:",
        o.saves,
        o.size,
        o.saves.div_ceil(2),
        o.saves / 2,
        ms(o.gap)
    );
    println!(
        "  min {}  median {}  p90 {}  p99 {}  max {}",
        ms(times.first().copied().unwrap_or_default()),
        ms(percentile(&times, 50.0)),
        ms(percentile(&times, 90.0)),
        ms(p99),
        ms(times.last().copied().unwrap_or_default()),
    );
    println!(
        "  over {}: {over}; never arrived (5 s): {lost}; debounce {}",
        ms(BOUND),
        ms(trapdesk::commands::sync::DEBOUNCE)
    );
    host.stop().await;
    // Where the time goes, from the host's own record: how long each request spent between
    // the host and the computer (gateway, socket, the Lua client's decoding and writing), and
    // each MCP tool call as the endpoint saw it. The rest of a save's time is the debounce and
    // the sync client itself (reading, hashing, base64, HTTP).
    breakdown(&data.path().join(trapdesk::session::transcript::FILE));
    Ok(lost == 0 && p99 <= BOUND)
}

fn breakdown(transcript: &Path) {
    let Ok(text) = std::fs::read_to_string(transcript) else {
        println!("  (no transcript to break the time down)");
        return;
    };
    let mut by: std::collections::BTreeMap<String, Vec<Duration>> = Default::default();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let event = v["event"].as_str().unwrap_or_default();
        let (Some(what), Some(ms)) = (v["what"].as_str(), v["durationMs"].as_u64()) else {
            continue;
        };
        let key = match event {
            "finished" => format!("host↔computer {what}"),
            "tool_result" => format!("MCP tool call {what}"),
            _ => continue,
        };
        by.entry(key).or_default().push(Duration::from_millis(ms));
    }
    for (key, mut times) in by {
        times.sort();
        println!(
            "  {key}: {} calls, median {}, p90 {}, max {}",
            times.len(),
            ms(percentile(&times, 50.0)),
            ms(percentile(&times, 90.0)),
            ms(times.last().copied().unwrap_or_default()),
        );
    }
}

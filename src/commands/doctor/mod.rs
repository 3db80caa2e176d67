//! `trapdesk doctor`: what a newcomer needs when a real computer will not link. Which
//! addresses the gateway listens on and which a Minecraft server here or elsewhere could use,
//! whether the port answers, the server's `computercraft-server.toml` read and judged as
//! CC: Tweaked would (may a computer open the gateway? does a rule open more than its port?),
//! the `[[http.rules]]` lines to add, where the secret is and the installer line, and the last
//! refused links with their reasons.
//!
//! It asks the running host over the local control channel (`crate::control`: its gateway's
//! address and port, its data dir, its secret, the linked computers and the refused links), so
//! what it checks is the live host, not the defaults; with no host answering it says so and
//! shows what the flags would give. It writes nothing, not even a secret on an empty HOME.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use serde_json::json;

use crate::commands::remote::{ClientArgs, Failure, exit};
use trapdesk_core::config;

pub mod ccrules;
pub mod server_config;

mod checks;
mod minecraft;
mod report;

pub use checks::{Reach, http_rule, reachable_addresses};
use checks::{health, lan_address, secret_without_host};
use report::Report;

/// `trapdesk doctor`.
#[derive(Debug, Args, Clone)]
pub struct DoctorArgs {
    /// Address the gateway was started with [default: as the host resolves it].
    #[arg(long, env = "TRAPDESK_GATEWAY_BIND", value_name = "ADDR")]
    pub gateway_bind: Option<SocketAddr>,
    /// Configuration file of the host.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The Minecraft server's or a world's folder (or .minecraft, or the file) to read
    /// computercraft-server.toml from [default: looked for from the current directory].
    #[arg(long, value_name = "DIR")]
    pub minecraft: Option<PathBuf>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// A refused link as one line: `HH:MM:SS UTC who detail`.
fn refusal_line(r: &crate::control::Refusal) -> String {
    let when = i64::try_from(r.time_ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.format("%H:%M:%S UTC ").to_string())
        .unwrap_or_default();
    let who = r.who.as_deref().unwrap_or("unknown computer");
    format!("{when}{who} {}", r.detail)
}

/// `trapdesk doctor`. It asks the running host over the control channel (its gateway's
/// address, its data dir, its secret, its linked computers and refused links) and writes
/// nothing: not the data dir, not a secret, not a token.
///
/// # Errors
/// A [`Failure`] with exit code 3 when no trapdesk answers, its gateway does not answer, or a
/// `computercraft-server.toml` it read lets no computer open the gateway (after printing
/// everything it could check; a warning alone does not change the code); 2 for a `--minecraft` that does not exist or no data dir to look in.
pub async fn doctor(a: DoctorArgs) -> Result<(), Failure> {
    if let Some(d) = a.minecraft.as_deref().filter(|d| !d.exists()) {
        return Err(Failure::new(
            exit::USAGE,
            format!("--minecraft {}: no such file or folder", d.display()),
        ));
    }
    let data_dir = data_dir_of(&a)?;
    // With no host named and none recorded, nothing is asked (no token leaves this process);
    // what follows describes a host on the default address.
    let found = crate::commands::control_client::target(a.client.connect.as_deref(), &data_dir);
    let url = found.clone().unwrap_or_else(|_| {
        let bind = config::Settings::default().mcp_bind;
        format!("http://{bind}/mcp")
    });
    let base = crate::commands::control_client::base_of(&url).ok_or_else(|| {
        Failure::new(
            exit::USAGE,
            format!("--connect {url:?} is not an http:// or https:// URL"),
        )
    })?;
    let asked: Result<crate::control::Status, String> = match found {
        Ok(_) => crate::commands::control_client::ask(&base, &data_dir, "status")
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let mut report = Report::new(a.client.json);
    let mut problems = 0;

    let running = host_section(&mut report, asked, &base, a.gateway_bind, &data_dir);
    if running.is_none() {
        problems += 1;
    }
    let bind = running.as_ref().map_or_else(
        || {
            a.gateway_bind
                .unwrap_or(config::Settings::default().gateway_bind)
        },
        |st| st.gateway,
    );
    let reach = reachable_addresses(bind, lan_address());

    let answered = gateway_section(&mut report, bind, running.as_ref(), &reach).await;
    if !answered {
        problems += 1;
    }
    problems += minecraft::server_config_section(
        &mut report,
        &a,
        &url,
        bind,
        running.is_some(),
        answered,
        &reach,
    )
    .await;
    let secret = match &running {
        Some(st) => Some(st.secret.clone()),
        None => secret_without_host(&data_dir),
    };
    secret_section(&mut report, secret, bind, &reach);
    if let Some(st) = &running {
        session_section(&mut report, st);
    }
    report.finish();
    if problems > 0 {
        Err(Failure::new(exit::UNREACHABLE, ""))
    } else {
        Ok(())
    }
}

/// The data dir: `--data-dir`, else the platform's.
fn data_dir_of(a: &DoctorArgs) -> Result<PathBuf, Failure> {
    a.client
        .data_dir
        .clone()
        .or_else(config::default_data_dir)
        .ok_or_else(|| {
            Failure::new(
                exit::USAGE,
                "no home directory to find the data dir in: pass --data-dir",
            )
        })
}

/// The Host section: whether a host answered and where, and what it said of itself.
fn host_section(
    report: &mut Report,
    asked: Result<crate::control::Status, String>,
    base: &str,
    gateway_bind: Option<std::net::SocketAddr>,
    data_dir: &std::path::Path,
) -> Option<crate::control::Status> {
    report.head("Host");
    match asked {
        Ok(st) => {
            report.line(&format!(
                "trapdesk {} (process {}) answers at {base}; its data dir is {}",
                st.version,
                st.pid,
                st.data_dir.display()
            ));
            if let Some(g) = gateway_bind.filter(|g| *g != st.gateway) {
                report.line(&format!(
                    "(--gateway-bind {g} left aside: the running host's gateway is {})",
                    st.gateway
                ));
            }
            report.data(
                "host",
                json!({"reachable": true, "url": base, "pid": st.pid, "version": st.version,
                       "dataDir": st.data_dir, "gateway": st.gateway.to_string(), "mcp": st.mcp.to_string()}),
            );
            Some(st)
        }
        Err(e) => {
            report.line(&e);
            report.line(&format!(
                "what follows is what a host on {} with these flags would use",
                data_dir.display()
            ));
            report.data(
                "host",
                json!({"reachable": false, "url": base, "error": e.to_string()}),
            );
            None
        }
    }
}

/// Where the gateway listens, from where it is reachable, and whether it answers (`/health`).
async fn gateway_section(
    report: &mut Report,
    bind: SocketAddr,
    running: Option<&crate::control::Status>,
    reach: &[Reach],
) -> bool {
    report.head("Gateway");
    match running {
        Some(r) => report.line(&format!(
            "listens on {bind} (the running host's, process {}, as it says itself)",
            r.pid,
        )),
        None => report.line(&format!("listens on {bind}")),
    }
    for r in reach {
        report.line(&format!(
            "  ws://{}/gateway  reachable from {}",
            r.addr, r.from
        ));
    }
    if bind.ip().is_loopback() {
        report.line(&format!(
            "  a Minecraft server on another machine cannot reach it: start trapdesk with --gateway-bind 0.0.0.0:{}",
            bind.port()
        ));
    }
    let probe = reach.first().map_or(bind, |r| r.addr);
    let answers = tokio::task::spawn_blocking(move || health(probe))
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
    match &answers {
        Ok(()) => report.line(&format!("port {} answers (/health ok)", bind.port())),
        Err(e) if running.is_some() => {
            report.line(&format!(
                "port {} does not answer at {probe} ({e}), though the host says its gateway listens there: a firewall, or the host is stopping",
                bind.port()
            ));
        }
        Err(e) => {
            report.line(&format!(
                "port {} does not answer at {probe} ({e}): start `trapdesk` (or `trapdesk --mcp-only`) with these settings",
                bind.port()
            ));
        }
    }
    report.data("gateway", json!({"bind": bind.to_string(), "reachable": reach.iter().map(|r| json!({"address": r.addr.to_string(), "from": r.from})).collect::<Vec<_>>(), "answers": answers.is_ok()}));

    answers.is_ok()
}

/// Where the secret comes from, and the line to type on a computer.
fn secret_section(
    report: &mut Report,
    secret: Option<crate::control::SecretInfo>,
    bind: SocketAddr,
    reach: &[Reach],
) {
    report.head("Secret and installer");
    let Some(secret) = secret else {
        report.line("no secret yet: trapdesk makes one at its first start (`trapdesk secret show` prints it then)");
        report.data("secret", json!({"where": null, "installer": null}));
        return;
    };
    report.line(&format!("secret: {}", secret.source));
    let install_addr = reach.last().map_or(bind, |r| r.addr);
    // doctor's output is what gets pasted into a bug report or a chat, and a pipe is often a
    // file: the secret goes only to a person's terminal. `secret show` prints it anywhere,
    // since printing it is what it is asked for.
    if !std::io::stdout().is_terminal() {
        report.line(&format!(
            "the line to type on the computer (wget run http://{install_addr}/install.lua and the secret) is not printed here, since this is no terminal: run `trapdesk secret show` on a terminal for it"
        ));
        report.data(
            "secret",
            json!({"where": secret.source, "installer": null, "installerFrom": "trapdesk secret show"}),
        );
        return;
    }
    let one_liner = format!(
        "wget run http://{install_addr}/install.lua {}",
        secret.secret
    );
    report.line("type this on the computer:");
    report.line(&format!("  {one_liner}"));
    report.data(
        "secret",
        json!({"where": secret.source, "installer": one_liner}),
    );
}

/// What the running host says of its computers: the linked ones and the last refused links.
fn session_section(report: &mut Report, st: &crate::control::Status) {
    report.head("Session");
    if st.linked.is_empty() {
        report.line("no computer linked yet");
    } else {
        report.line(&format!("linked: {}", st.linked.join(", ")));
    }
    if let Some(p) = &st.paused {
        report.line(&format!(
            "agents are stopped (set from the {}): `trapdesk resume` lets them run again",
            p.by
        ));
    }
    let last: Vec<String> = st.refused.iter().map(refusal_line).collect();
    if last.is_empty() {
        report.line("no refused links");
    } else {
        report.line("last refused links (wrong secret: copy it again; bad hello or version: reinstall with the line above):");
        for r in &last {
            report.line(&format!("  {r}"));
        }
    }
    report.data(
        "session",
        json!({"reachable": true, "linked": st.linked, "refused": last, "paused": st.paused.is_some()}),
    );
}

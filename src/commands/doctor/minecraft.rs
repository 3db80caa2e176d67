//! `doctor`'s section on the Minecraft server's `computercraft-server.toml`: each file found,
//! judged for the gateway and the MCP endpoint, and the one change to make, worded for the file
//! it read (nothing, a rule to move, or the lines to add and where).

use std::net::SocketAddr;

use serde_json::{Value, json};

use super::DoctorArgs;
use super::checks::{Reach, find_server_config, http_rule, resolve, url_host_port};
use super::report::Report;
use super::server_config::{self, Advice, Search, Target};

/// CC: Tweaked reloads the file when it is saved (docs/cc-tweaked.md, "The server's http
/// rules"), so no advice says to restart the server.
const APPLIES: &str = "CC: Tweaked applies the saved file at once, without a restart";

/// The Minecraft server's HTTP rules for the gateway and the MCP endpoint, and what to change:
/// the number of files in which no computer can open the gateway.
pub(super) async fn server_config_section(
    report: &mut Report,
    a: &DoctorArgs,
    url: &str,
    bind: SocketAddr,
    running: bool,
    answered: bool,
    reach: &[Reach],
) -> usize {
    report.head("computercraft-server.toml");
    let gateway: Vec<Target> = reach
        .iter()
        .map(|r| Target {
            domain: r.addr.ip().to_string(),
            addr: r.addr,
            from: r.from,
        })
        .collect();
    // Where a computer asking for the MCP endpoint would land (a name needs a DNS lookup, so
    // off the runtime's threads, like the /health probe).
    let mcp = match url_host_port(url) {
        Some((host, port)) => {
            let name = host.clone();
            tokio::task::spawn_blocking(move || resolve(&name, port))
                .await
                .ok()
                .flatten()
                .map(|addr| Target {
                    domain: host,
                    addr,
                    from: "this machine",
                })
        }
        None => None,
    };
    let search = find_server_config(a.minecraft.as_deref());
    let (verdicts, advice) = server_config_report(report, &search, &gateway, mcp.as_ref());
    let problems = verdicts.iter().filter(|v| v["ok"] == false).count();
    report.data(
        "minecraft",
        json!({"looked": search.looked, "read": verdicts}),
    );
    let mut rules: Vec<String> = reach
        .iter()
        .map(|r| http_rule(r.addr.ip(), r.addr.port()))
        .collect();
    rules.dedup();
    report.data("httpRules", json!(rules));
    if advise(report, advice.as_ref(), search.found.is_empty(), problems) {
        port_note(report, bind, running, answered);
        for r in &rules {
            report.line("");
            for l in r.lines() {
                report.line(&format!("  {l}"));
            }
        }
    }
    problems
}

/// Says what to change in the rules; true when the lines to add follow.
fn advise(report: &Report, advice: Option<&Advice>, none_found: bool, problems: usize) -> bool {
    match advice {
        None if none_found => {
            report.line(&format!("in <world>/serverconfig/computercraft-server.toml, put these lines ABOVE the rule with host = \"$private\" (the first matching rule wins; {APPLIES}):"));
            true
        }
        // A file that could not be read: what it says is above.
        None => false,
        Some(Advice::InPlace(rule)) if problems == 0 => {
            report.line(&format!(
                "the rule for the gateway is in place, {rule}: nothing to change"
            ));
            false
        }
        Some(Advice::InPlace(rule)) => {
            report.line(&format!("the rule for the gateway is in place, {rule}, but the settings named above stop the link: change them ({APPLIES})"));
            false
        }
        Some(Advice::TooLate {
            allow,
            allow_index,
            deny,
            deny_index,
        }) => {
            report.line(&format!("{allow} is there but comes too late: {deny} matches the gateway first and denies it (the first matching rule with an action wins)"));
            report.line(&format!("move rule {allow_index}, its whole [[http.rules]] block, ABOVE rule {deny_index} ({APPLIES})"));
            false
        }
        Some(Advice::InsertAbove(rule)) => {
            report.line(&format!("to let computers reach the gateway, put these lines ABOVE {rule} of that file (the first matching rule wins; {APPLIES}):"));
            true
        }
        Some(Advice::Add) => {
            report.line(&format!("to let computers reach the gateway, add these lines to that file's [[http.rules]] ({APPLIES}):"));
            true
        }
    }
}

/// Why the port in the lines to add is that one.
fn port_note(report: &Report, bind: SocketAddr, running: bool, answered: bool) {
    report.line("(keep the port: a rule without one opens every local service on that machine, the MCP endpoint, databases, admin panels, to every computer of every player in the world)");
    if running {
        report.line(&format!(
            "(port {} is the running gateway's, as the host says itself)",
            bind.port()
        ));
    } else if answered {
        report.line(&format!(
            "(port {} is the running gateway's: it answered /health)",
            bind.port()
        ));
    } else {
        report.line(&format!(
            "(port {} is from the flags and defaults: no gateway answered there; give doctor the --gateway-bind trapdesk was started with)",
            bind.port()
        ));
    }
}

/// The files found, each read and judged for the gateway and the MCP endpoint; or where it
/// looked. Returns each file's data (`ok` false when no computer can open the gateway) and the
/// advice of the first file that needs a change (else of the first file).
fn server_config_report(
    report: &mut Report,
    search: &Search,
    gateway: &[Target],
    mcp: Option<&Target>,
) -> (Vec<Value>, Option<Advice>) {
    if search.found.is_empty() {
        report.line("found no computercraft-server.toml; looked in:");
        for l in &search.looked {
            report.line(&format!("  {l}"));
        }
        report.line("give the Minecraft server's folder or the world's with --minecraft DIR");
    }
    let mut out = Vec::new();
    let (mut first, mut needed) = (None, None);
    for (path, role) in &search.found {
        report.line(&format!("read {} ({})", path.display(), role.note()));
        let (path_s, role_s) = (path.display().to_string(), role.as_str());
        match server_config::read(path) {
            Err(e) => {
                report.line(&format!("  cannot read it: {e}"));
                out.push(json!({"path": path_s, "role": role_s, "ok": false, "error": e}));
            }
            Ok(cfg) => {
                let v = server_config::check(&cfg, gateway, mcp);
                for l in &v.lines {
                    report.line(&format!("  {l}"));
                }
                for w in &v.warnings {
                    report.line(&format!("  warning: {w}"));
                }
                if !v.gateway_ok && needed.is_none() {
                    needed.clone_from(&v.advice);
                }
                if first.is_none() {
                    first.clone_from(&v.advice);
                }
                let mut d = v.data;
                d["path"] = json!(path_s);
                d["role"] = json!(role_s);
                // Whether a computer can link through this file; warnings do not change it.
                d["ok"] = json!(v.gateway_ok);
                out.push(d);
            }
        }
    }
    (out, needed.or(first))
}

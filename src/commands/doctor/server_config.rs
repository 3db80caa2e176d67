//! The Minecraft server's `computercraft-server.toml`: where it is, what it says about the
//! gateway's address and the MCP endpoint's.
//!
//! Which file a server reads (CC: Tweaked registers a server config of that name):
//! - Forge (and NeoForge for 1.20.1): `<world>/serverconfig/` (`src/main/java/net/minecraftforge/
//!   server/ServerLifecycleHooks.java:96` in
//!   neoforged/NeoForge branch 1.20.1 at a3317fc07); a world without one gets a copy of
//!   `<server>/defaultconfigs/computercraft-server.toml` when that exists, else CC's defaults
//!   (Forge's loader as forked in neoforged/FancyModLoader branch 1.20.1 at 21267b88a:
//!   `core/src/main/java/net/minecraftforge/fml/config/ConfigFileTypeHandler.java:69-80`, the
//!   folder's name from `loader/.../fml/loading/FMLConfig.java:31`).
//! - NeoForge for 1.21: `<server>/config/`, unless the world has its own
//!   `serverconfig/computercraft-server.toml`, which then wins (`ServerLifecycleHooks.java:97`
//!   on branch 1.21.1 at 718fd71c7; `ConfigTracker.java:149-158` in neoforged/FancyModLoader at
//!   e8c54b8a0, and `:250-258` for the copy from `defaultconfigs/` when neither exists).
//! - Fabric: CC: Tweaked loads it itself: from `<world>/serverconfig/` on mc-1.20.x
//!   (`projects/fabric/src/main/java/dan200/computercraft/shared/ComputerCraft.java:91`); on
//!   mc-1.21.x from the first of that and `<server>/config/` that exists
//!   (`ComputerCraft.java:107-110`, `FabricConfigFile.java:56-61`).
//! - Single player: the same under `.minecraft/saves/<world>/`.
//!
//! So a world's own file always wins; without one, `config/` is the live file on NeoForge and
//! Fabric for 1.21, and `defaultconfigs/` is what a new Forge world will get.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::ccrules::{self, Action, DEFAULT_WEBSOCKET_MESSAGE, Rule};

pub const FILE: &str = "computercraft-server.toml";

/// Why a file found is the one that counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The file named with `--minecraft`.
    Given,
    /// `<world>/serverconfig/computercraft-server.toml`.
    World,
    /// `<server>/config/computercraft-server.toml`, read when the world has none.
    Instance,
    /// `<server>/defaultconfigs/computercraft-server.toml`, copied into worlds that have none.
    Template,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Given => "given",
            Role::World => "world",
            Role::Instance => "instance",
            Role::Template => "template",
        }
    }

    /// One line on what the file is to the server.
    pub fn note(self) -> &'static str {
        match self {
            Role::Given => "the file given with --minecraft",
            Role::World => "the world's own: it wins over every other",
            Role::Instance => {
                "no world here has its own, so NeoForge and Fabric for Minecraft 1.21 read this one; Forge and 1.20 Fabric give the world its own at its next start instead"
            }
            Role::Template => {
                "no world here has its own: Forge and NeoForge copy this one into a world that has none when it starts"
            }
        }
    }
}

/// Where `doctor` looked and which files count.
#[derive(Debug, Default)]
pub struct Search {
    /// The places tried, `*` for "every folder here".
    pub looked: Vec<String>,
    pub found: Vec<(PathBuf, Role)>,
}

/// At most this many worlds are read (a single-player `saves/` can hold hundreds).
const MAX_WORLDS: usize = 8;

/// Looks for the file from `dir`: a server's folder, a world's, a `.minecraft`, a
/// `serverconfig` folder or the file itself.
pub fn locate(dir: &Path, s: &mut Search) {
    if dir.is_file() {
        s.looked.push(dir.display().to_string());
        s.found.push((dir.to_owned(), Role::Given));
        return;
    }
    let in_world = |w: &Path| w.join("serverconfig").join(FILE);
    let before = s.found.len();
    let check = |s: &mut Search, p: PathBuf, role: Role| {
        s.looked.push(p.display().to_string());
        if p.is_file() && !s.found.iter().any(|(f, _)| *f == p) {
            s.found.push((p, role));
        }
    };
    if dir.file_name().is_some_and(|n| n == "serverconfig") {
        check(s, dir.join(FILE), Role::World);
    }
    // A world folder: it has level.dat, or a serverconfig folder of its own.
    check(s, in_world(dir), Role::World);
    // A dedicated server names its world in server.properties (`level-name`, "world" unless set).
    let level = level_name(dir);
    if let Some(level) = &level {
        check(s, in_world(&dir.join(level)), Role::World);
    } else {
        check(s, in_world(&dir.join("world")), Role::World);
        let any = |s: &mut Search, parent: PathBuf| {
            s.looked
                .push(in_world(&parent.join("*")).display().to_string());
            for w in subdirs(&parent) {
                let p = in_world(&w);
                if p.is_file() && !s.found.iter().any(|(f, _)| *f == p) {
                    s.found.push((p, Role::World));
                }
            }
        };
        any(s, dir.to_owned());
        any(s, dir.join("saves"));
    }
    s.found.truncate(before + MAX_WORLDS);
    // `config/` and `defaultconfigs/` sit beside the worlds: in `dir` when it is the server's
    // (or the launcher's) folder, above it when it is a world (two levels up under `saves/`).
    let mut instance = dir.to_owned();
    if dir.join("level.dat").is_file()
        && let Some(up) = dir.parent()
    {
        instance = match up.parent() {
            Some(top) if up.file_name().is_some_and(|n| n == "saves") => top.to_owned(),
            _ => up.to_owned(),
        };
    }
    if s.found.len() == before {
        check(s, instance.join("config").join(FILE), Role::Instance);
    }
    if s.found.len() == before {
        check(
            s,
            instance.join("defaultconfigs").join(FILE),
            Role::Template,
        );
    }
}

/// `level-name` from `dir/server.properties`, when there is one.
fn level_name(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("server.properties")).ok()?;
    let name = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("level-name"))
        .filter_map(|rest| rest.trim_start().strip_prefix(['=', ':']))
        .map(str::trim)
        .next_back()?;
    // An unset level-name is "world" (Minecraft's default).
    Some(if name.is_empty() { "world" } else { name }.to_owned())
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// The default launcher's folder, where single-player worlds are (`saves/`).
pub fn launcher_dir() -> Option<PathBuf> {
    let base = directories::BaseDirs::new()?;
    Some(if cfg!(windows) {
        base.data_dir().join(".minecraft")
    } else if cfg!(target_os = "macos") {
        base.data_dir().join("minecraft")
    } else {
        base.home_dir().join(".minecraft")
    })
}

/// The `[http]` part of one file, as CC: Tweaked would load it.
#[derive(Debug)]
pub struct HttpConfig {
    pub enabled: bool,
    pub websocket_enabled: bool,
    pub rules: Vec<Rule>,
    /// The file has no usable `[[http.rules]]`, so CC: Tweaked's own are in force (its config
    /// spec writes them back, `ConfigSpec.java:217`).
    pub default_rules: bool,
}

/// Reads the `[http]` settings of a `computercraft-server.toml`.
///
/// # Errors
/// The file cannot be read or is not TOML.
pub fn read(path: &Path) -> Result<HttpConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let t: toml::Table = toml::from_str(&text).map_err(|e| e.to_string())?;
    let http = t.get("http").and_then(toml::Value::as_table);
    let flag = |k: &str| {
        http.and_then(|h| h.get(k))
            .and_then(toml::Value::as_bool)
            .unwrap_or(true)
    };
    // A list with anything but tables in it fails CC's check (`ConfigSpec.java:217`) and is
    // replaced as a whole by the default rules, as is a missing one.
    let rules: Option<Vec<Rule>> = http
        .and_then(|h| h.get("rules"))
        .and_then(toml::Value::as_array)
        .and_then(|a| {
            a.iter()
                .enumerate()
                .map(|(i, v)| v.as_table().map(|t| Rule::parse(i + 1, t)))
                .collect()
        });
    Ok(HttpConfig {
        enabled: flag("enabled"),
        websocket_enabled: flag("websocket_enabled"),
        default_rules: rules.is_none(),
        rules: rules.unwrap_or_else(ccrules::default_rules),
    })
}

/// An address a computer would open: what it types (`domain`) and where that leads.
#[derive(Debug, Clone)]
pub struct Target {
    pub domain: String,
    pub addr: SocketAddr,
    /// `this machine`, `other machines`.
    pub from: &'static str,
}

/// What one file means for the gateway and the MCP endpoint.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Lines for a person, in order.
    pub lines: Vec<String>,
    pub warnings: Vec<String>,
    /// Whether some computer may reach the gateway.
    pub gateway_ok: bool,
    /// What to change in the rules for the gateway (the first address's, or one allowed).
    pub advice: Option<Advice>,
    pub data: Value,
}

/// What the file's rules need so that a computer may open the gateway, each rule named as
/// [`Rule::describe`] writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advice {
    /// This rule allows it: nothing to change in the rules.
    InPlace(String),
    /// `allow` would allow it, but `deny` matches first (the first matching rule with an action
    /// wins): `allow` is to move above `deny`.
    TooLate {
        allow: String,
        allow_index: usize,
        deny: String,
        deny_index: usize,
    },
    /// This rule denies it and none allows it: the allow rule goes above it.
    InsertAbove(String),
    /// No rule matches, which CC: Tweaked denies: the allow rule goes anywhere in the list.
    Add,
}

/// Checks `cfg` for the gateway at `gateway` (each address a computer could use) and the MCP
/// endpoint at `mcp`.
pub fn check(cfg: &HttpConfig, gateway: &[Target], mcp: Option<&Target>) -> Verdict {
    let mut v = Verdict::default();
    settings(cfg, &mut v);
    let gw_data: Vec<Value> = gateway
        .iter()
        .map(|t| gateway_target(cfg, t, &mut v))
        .collect();
    let mcp_data = mcp.map(|t| mcp_target(cfg, t, &mut v));
    v.data = json!({
        "httpEnabled": cfg.enabled, "websocketEnabled": cfg.websocket_enabled,
        "defaultRules": cfg.default_rules, "gateway": gw_data, "mcp": mcp_data,
        "warnings": v.warnings,
    });
    v
}

/// What the file's settings and its rules say, whatever the addresses.
fn settings(cfg: &HttpConfig, v: &mut Verdict) {
    if cfg.default_rules {
        v.lines.push("no [[http.rules]] in it: CC: Tweaked's own apply ($private denied, everything else allowed)".into());
    }
    if !cfg.enabled {
        v.warnings.push("http.enabled = false: computers have no http API at all, so neither the installer nor the link can work; set it to true".into());
    }
    if !cfg.websocket_enabled {
        v.warnings
            .push("http.websocket_enabled = false: the link is a websocket; set it to true".into());
    }
    for r in &cfg.rules {
        if let Some(why) = &r.malformed {
            v.warnings.push(format!(
                "rule {} is malformed ({why}); CC: Tweaked denies every address in its place",
                r.index
            ));
        }
        if !r.former_keys.is_empty() {
            v.lines.push(format!(
                "{} has {}, which CC: Tweaked wrote before 1.105.0 and now passes over: harmless, no change needed",
                r.describe(),
                r.former_keys.join(", ")
            ));
        }
        if !r.ignored_keys.is_empty() {
            v.warnings.push(format!(
                "{} has keys CC: Tweaked ignores: {} (the keys it reads: host, port, action, max_download, max_upload, max_websocket_message, use_proxy)",
                r.describe(),
                r.ignored_keys.join(", ")
            ));
        }
    }
}

/// Whether a computer may open the gateway at `t`, and what of its rule may hurt; its data.
fn gateway_target(cfg: &HttpConfig, t: &Target, v: &mut Verdict) -> Value {
    let o = ccrules::evaluate(&cfg.rules, &t.domain, t.addr);
    let allowed = o.action == Action::Allow && cfg.enabled && cfg.websocket_enabled;
    let by = o.decided_by.map_or(
        "no rule matches, and CC: Tweaked denies what no rule allows".into(),
        Rule::describe,
    );
    if o.action == Action::Allow {
        v.lines.push(format!(
            "a computer may open ws://{}/gateway ({}): allowed by {by}",
            t.addr, t.from
        ));
    } else {
        v.lines.push(format!(
            "a computer may NOT open ws://{}/gateway ({}): denied by {by}",
            t.addr, t.from
        ));
    }
    let advice = advice(cfg, t, &o);
    // One address a computer can open is enough: its rule is the one to name.
    if !matches!(v.advice, Some(Advice::InPlace(_)))
        && (v.advice.is_none() || o.action == Action::Allow)
    {
        v.advice = Some(advice);
    }
    v.gateway_ok |= allowed;
    if o.action == Action::Allow
        && let Some(r) = o.decided_by
        && r.port.is_none()
        && Rule::is_private(t.addr.ip())
    {
        v.warnings.push(format!(
            "{} allows {} on every port: every local service on that machine (trapdesk's MCP endpoint, databases, admin panels) is open to every computer of every player in the world; add port = {} to it",
            r.describe(),
            t.addr.ip(),
            t.addr.port()
        ));
    }
    let limit = o.max_websocket_message;
    if o.action == Action::Allow && limit < 0 {
        let from = o.websocket_from.map(Rule::describe).unwrap_or_default();
        // CC refuses to send any message when the limit is negative (`WebsocketHandle.java:82`).
        v.warnings.push(format!(
            "max_websocket_message = {limit}, set by {from}, is negative: CC: Tweaked then refuses every message a computer sends (\"Message is too large\"); set it to {DEFAULT_WEBSOCKET_MESSAGE} (0: no limit)"
        ));
    } else if o.action == Action::Allow && limit > 0 && limit < DEFAULT_WEBSOCKET_MESSAGE {
        let from = o.websocket_from.map(Rule::describe).unwrap_or_default();
        v.warnings.push(format!(
            "max_websocket_message = {limit}, set by {from}, is below the {DEFAULT_WEBSOCKET_MESSAGE} bytes the client sends and receives in one message: larger ones fail (\"Message is too large\"); set it to {DEFAULT_WEBSOCKET_MESSAGE} or more (0: no limit)"
        ));
    }
    json!({
        "address": t.addr.to_string(), "from": t.from, "allowed": o.action == Action::Allow,
        "rule": o.decided_by.map(|r| r.index), "maxWebsocketMessage": limit,
    })
}

/// What the rules need for the gateway at `t`, given what they decide there (`o`).
fn advice(cfg: &HttpConfig, t: &Target, o: &ccrules::Outcome<'_>) -> Advice {
    match (o.action, o.decided_by) {
        (Action::Allow, Some(r)) => Advice::InPlace(r.describe()),
        // Only a rule with an action allows; an outcome of allow always names it.
        (Action::Allow, None) | (Action::Deny, None) => Advice::Add,
        (Action::Deny, Some(deny)) => match ccrules::first_allow(&cfg.rules, &t.domain, t.addr) {
            Some(allow) => Advice::TooLate {
                allow: allow.describe(),
                allow_index: allow.index,
                deny: deny.describe(),
                deny_index: deny.index,
            },
            None => Advice::InsertAbove(deny.describe()),
        },
    }
}

/// Whether the MCP endpoint at `t` is out of the computers' reach, as it should be; its data.
fn mcp_target(cfg: &HttpConfig, t: &Target, v: &mut Verdict) -> Value {
    let o = ccrules::evaluate(&cfg.rules, &t.domain, t.addr);
    let allowed = o.action == Action::Allow && cfg.enabled;
    if allowed {
        v.warnings.push(format!(
                "the MCP endpoint {} is allowed by {}: any computer in the world can send it requests; the rules should allow the gateway's port only",
                t.addr,
                o.decided_by.map(Rule::describe).unwrap_or_default()
            ));
    } else {
        v.lines.push(format!(
            "the MCP endpoint {} is out of the computers' reach, as it should be",
            t.addr
        ));
    }
    json!({"address": t.addr.to_string(), "allowed": allowed, "rule": o.decided_by.map(|r| r.index)})
}

#[cfg(test)]
mod tests;

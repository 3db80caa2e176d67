//! CC: Tweaked's `[[http.rules]]`, evaluated the way CC: Tweaked evaluates them, so that
//! `doctor` can say whether a computer may open the gateway's address, and what else the rules
//! open on this machine.
//!
//! Everything here follows cc-tweaked/CC-Tweaked, branch mc-1.20.x at c271ed7c7 (mc-1.21.x at
//! 63181e73a has the same code; only its `AddressRuleConfig.java` is 7 lines longer from line 72):
//! - a rule's keys and their types: `projects/common/src/main/java/dan200/computercraft/shared/
//!   config/AddressRuleConfig.java:87-118`; a rule CC: Tweaked cannot parse is replaced by
//!   "deny everything" in its place (`:27`, `:78-85`);
//! - host patterns: `projects/core/src/main/java/dan200/computercraft/core/apis/http/options/
//!   AddressRule.java:38-51` (CIDR, `$private`, else a `*` glob) and `AddressPredicate.java`
//!   (`HostRange` :32-92, `DomainPattern` :94-110, `PrivatePattern` :112-157);
//! - one rule against one address: `AddressRule.java:62-67` (a rule with a `port` matches that
//!   port only; without one, every port), then the URL's host name or the resolved address;
//! - the rules together: `AddressRule.java:69-83` with `PartialOptions.java:56-67`: the options
//!   of every matching rule are merged, the earlier rule winning, so each option comes from the
//!   earliest matching rule that sets it. No action at all means deny (`PartialOptions.java:42`),
//!   no `max_websocket_message` means 128 KiB (`AddressRule.java:26`, `PartialOptions.java:45`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The websocket frame size CC: Tweaked allows when no rule sets `max_websocket_message`
/// (`AddressRule.java:26`), which is also what the Lua client assumes (`lua/servers/sandbox.lua`,
/// `LIMIT`).
pub const DEFAULT_WEBSOCKET_MESSAGE: i64 = 128 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Allow,
    Deny,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Predicate {
    /// `a.b.c.d/n`: every address between `min` and `max`, byte by byte.
    Range { min: Vec<u8>, max: Vec<u8> },
    /// `$private`.
    Private,
    /// Anything else: a name or address, `*` standing for any run of characters.
    Pattern(String),
}

/// One `[[http.rules]]` entry as CC: Tweaked reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Its place in the file, from 1.
    pub index: usize,
    /// The `host` as written (empty when it has none).
    pub host: String,
    pub port: Option<i64>,
    pub action: Option<Action>,
    pub max_websocket_message: Option<i64>,
    /// Why CC: Tweaked refuses the rule; it then denies every address in its place.
    pub malformed: Option<String>,
    /// Keys CC: Tweaked does not read (a misspelt `port` leaves the rule open on every port).
    pub ignored_keys: Vec<String>,
    /// Keys an older CC: Tweaked read and wrote, which today's passes over: harmless.
    pub former_keys: Vec<String>,
    predicate: Predicate,
}

/// What the rules decide for one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome<'a> {
    pub action: Action,
    /// The earliest matching rule with an action; `None`: no rule matched, so denied.
    pub decided_by: Option<&'a Rule>,
    /// The message limit for a websocket there, both ways: 0 is none (`Websocket.java:101`,
    /// `WebsocketHandle.java:82`); below 0 every send fails (`:82`) and receiving is unlimited.
    pub max_websocket_message: i64,
    /// The rule that set it; `None`: CC: Tweaked's default.
    pub websocket_from: Option<&'a Rule>,
}

/// Keys CC: Tweaked reads (`AddressRuleConfig.java:88-101`; `websocket_message` is the old
/// spelling it still accepts). Its own list of known keys (`:29-30`) lacks `port`, so its log
/// says "Unknown config option port in address rule." for every rule with a port, although it
/// reads and uses it (`:92`).
const READ_KEYS: [&str; 8] = [
    "host",
    "action",
    "port",
    "max_download",
    "max_upload",
    "max_websocket_message",
    "websocket_message",
    "use_proxy",
];

/// Keys CC: Tweaked read once and no longer does. Its default `*` rule wrote `timeout = 30000`
/// until 1.105.0 (`AddressRuleConfig.java:35-36` at 2ae14b4c0^, removed by 2ae14b4c0 "Add
/// support for HTTP timeouts", since a program now gives its own), and a file written then
/// keeps it: CC: Tweaked only logs it as unknown, so it decides nothing and needs no change.
pub const FORMER_KEYS: [&str; 1] = ["timeout"];

impl Rule {
    /// Reads rule number `index` (from 1) from its TOML table. Never fails: a rule CC: Tweaked
    /// would refuse is kept as the deny-everything rule it becomes, with the reason.
    pub fn parse(index: usize, t: &toml::Table) -> Rule {
        let (former_keys, ignored_keys): (Vec<String>, Vec<String>) = t
            .keys()
            .filter(|k| !READ_KEYS.contains(&k.as_str()))
            .cloned()
            .partition(|k| FORMER_KEYS.contains(&k.as_str()));
        let host = t
            .get("host")
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_owned();
        match Self::parse_fields(t) {
            Ok((predicate, port, action, max_websocket_message)) => Rule {
                index,
                host,
                port,
                action,
                max_websocket_message,
                malformed: None,
                ignored_keys,
                former_keys,
                predicate,
            },
            Err(why) => Rule {
                index,
                host,
                port: None,
                action: Some(Action::Deny),
                max_websocket_message: None,
                malformed: Some(why),
                ignored_keys,
                former_keys,
                predicate: Predicate::Pattern("*".into()),
            },
        }
    }

    /// The fields in CC: Tweaked's order, with its messages (`AddressRuleConfig.java:87-152`).
    #[allow(clippy::type_complexity)]
    fn parse_fields(
        t: &toml::Table,
    ) -> Result<(Predicate, Option<i64>, Option<Action>, Option<i64>), String> {
        let host = match t.get("host") {
            None => return Err("No 'host' specified".into()),
            Some(toml::Value::String(s)) => s.clone(),
            Some(v) => return Err(wrong_type("host", "String", v)),
        };
        let action = match t.get("action") {
            None => None,
            Some(toml::Value::String(s)) if s.eq_ignore_ascii_case("allow") => Some(Action::Allow),
            Some(toml::Value::String(s)) if s.eq_ignore_ascii_case("deny") => Some(Action::Deny),
            Some(toml::Value::String(s)) => {
                return Err(format!(
                    "Field 'action' should be one of [ALLOW, DENY], but is '{s}'."
                ));
            }
            Some(v) => return Err(wrong_type("action", "String", v)),
        };
        let port = number(t, "port")?;
        number(t, "max_upload")?;
        number(t, "max_download")?;
        let websocket = match number(t, "max_websocket_message")? {
            Some(n) => Some(n),
            None => number(t, "websocket_message")?,
        };
        if let Some(v) = t.get("use_proxy")
            && !v.is_bool()
        {
            return Err(wrong_type("use_proxy", "Boolean", v));
        }
        Ok((parse_host(&host)?, port, action, websocket))
    }

    /// Whether this rule applies to `domain` (the URL's host) at `addr` (what it resolved to).
    fn matches(&self, domain: &str, addr: SocketAddr) -> bool {
        if self.port.is_some_and(|p| p != i64::from(addr.port())) {
            return false;
        }
        let ip = addr.ip().to_canonical();
        self.predicate.matches_domain(domain)
            || self.predicate.matches_addr(ip)
            || six_to_four(ip).is_some_and(|v4| self.predicate.matches_addr(IpAddr::V4(v4)))
    }

    /// `host = "…"` with the port when it has one, for messages.
    pub fn describe(&self) -> String {
        match self.port {
            Some(p) => format!("rule {} (host = \"{}\", port = {p})", self.index, self.host),
            None => format!("rule {} (host = \"{}\")", self.index, self.host),
        }
    }

    /// Whether CC: Tweaked's `$private` rule covers `ip`: the loopback, private, link-local,
    /// carrier-grade NAT and multicast ranges (`AddressPredicate.java:121-130`).
    pub fn is_private(ip: IpAddr) -> bool {
        Predicate::Private.matches_addr(ip.to_canonical())
    }
}

/// CC: Tweaked's rules when the file has none: `$private` denied, everything else allowed
/// (`AddressRuleConfig.java:33-70`).
pub fn default_rules() -> Vec<Rule> {
    let mut private = toml::Table::new();
    private.insert("host".into(), "$private".into());
    private.insert("action".into(), "deny".into());
    let mut rest = toml::Table::new();
    rest.insert("host".into(), "*".into());
    rest.insert("action".into(), "allow".into());
    vec![Rule::parse(1, &private), Rule::parse(2, &rest)]
}

/// What `rules` decide for a request to `domain` resolving to `addr`.
pub fn evaluate<'a>(rules: &'a [Rule], domain: &str, addr: SocketAddr) -> Outcome<'a> {
    let mut decided_by = None;
    let mut websocket_from = None;
    for r in rules.iter().filter(|r| r.matches(domain, addr)) {
        if decided_by.is_none() && r.action.is_some() {
            decided_by = Some(r);
        }
        if websocket_from.is_none() && r.max_websocket_message.is_some() {
            websocket_from = Some(r);
        }
    }
    Outcome {
        action: decided_by.and_then(|r| r.action).unwrap_or(Action::Deny),
        decided_by,
        max_websocket_message: websocket_from
            .and_then(|r| r.max_websocket_message)
            .unwrap_or(DEFAULT_WEBSOCKET_MESSAGE),
        websocket_from,
    }
}

/// The earliest rule that allows `domain` at `addr` and is written for it: when [`evaluate`]
/// denies, this is an allow rule that comes too late (after the rule that decided). Left out:
/// `$private` and any rule that also allows a public host (CC: Tweaked's own `host = "*"`),
/// which belong below the deny: moved above it they would open far more than `addr`.
pub fn first_allow<'a>(rules: &'a [Rule], domain: &str, addr: SocketAddr) -> Option<&'a Rule> {
    // A documentation address (RFC 5737) on the same port: public, and nobody's name.
    let public = SocketAddr::from(([192, 0, 2, 1], addr.port()));
    rules.iter().find(|r| {
        r.action == Some(Action::Allow)
            && r.matches(domain, addr)
            && r.predicate != Predicate::Private
            && !r.matches("example.org", public)
    })
}

fn wrong_type(field: &str, want: &str, v: &toml::Value) -> String {
    let is = match v {
        toml::Value::String(_) => "String",
        toml::Value::Integer(_) => "Long",
        toml::Value::Float(_) => "Double",
        toml::Value::Boolean(_) => "Boolean",
        toml::Value::Datetime(_) => "OffsetDateTime",
        toml::Value::Array(_) => "ArrayList",
        toml::Value::Table(_) => "Config",
    };
    format!("Field '{field}' should be a '{want}' but is a {is}.")
}

/// A numeric field. CC: Tweaked takes any number and keeps its `int` value (`:139-141`): a float
/// is truncated, a large integer keeps its low 32 bits.
fn number(t: &toml::Table, field: &str) -> Result<Option<i64>, String> {
    match t.get(field) {
        None => Ok(None),
        // `as i32` truncates (and saturates a float) as Java's `Number.intValue` does.
        Some(toml::Value::Integer(n)) => Ok(Some(i64::from(*n as i32))),
        Some(toml::Value::Float(f)) => Ok(Some(i64::from(*f as i32))),
        Some(v) => Err(wrong_type(field, "Number", v)),
    }
}

/// `AddressRule.parse` (`AddressRule.java:38-51`).
fn parse_host(filter: &str) -> Result<Predicate, String> {
    if let Some((addr, prefix)) = filter.split_once('/') {
        let size: i32 = prefix.parse().map_err(|_| {
            format!("Invalid host '{filter}': Cannot extract size of CIDR mask from '{prefix}'.")
        })?;
        let ip: IpAddr = addr.parse().map_err(|_| {
            format!("Invalid host '{filter}': Cannot extract IP address from '{addr}'.")
        })?;
        let bytes = ip_bytes(ip.to_canonical());
        let (mut min, mut max) = (bytes.clone(), bytes);
        // The same masking loop as `HostRange.parse` (`AddressPredicate.java:76-88`).
        let mut size = size;
        for i in 0..min.len() {
            if size <= 0 {
                min[i] = 0;
                max[i] = 0xFF;
            } else if size < 8 {
                let keep = 0xFFu8 << (8 - size);
                min[i] &= keep;
                max[i] |= !keep;
            }
            size -= 8;
        }
        Ok(Predicate::Range { min, max })
    } else if filter.eq_ignore_ascii_case("$private") {
        Ok(Predicate::Private)
    } else {
        Ok(Predicate::Pattern(filter.to_owned()))
    }
}

impl Predicate {
    fn matches_domain(&self, domain: &str) -> bool {
        match self {
            Predicate::Pattern(p) => glob(p.as_bytes(), domain.as_bytes()),
            _ => false,
        }
    }

    fn matches_addr(&self, ip: IpAddr) -> bool {
        match self {
            Predicate::Range { min, max } => {
                let b = ip_bytes(ip);
                b.len() == min.len()
                    && b.iter()
                        .zip(min.iter().zip(max))
                        .all(|(v, (lo, hi))| v >= lo && v <= hi)
            }
            // The textual address, as Java's `getHostAddress` writes it.
            Predicate::Pattern(p) => glob(p.as_bytes(), java_host_address(ip).as_bytes()),
            Predicate::Private => match ip {
                IpAddr::V4(v4) => {
                    let [a, b, ..] = v4.octets();
                    v4.is_unspecified()
                        || v4.is_loopback()
                        || v4.is_link_local()
                        || v4.is_private()
                        || v4.is_multicast()
                        || (a == 100 && (64..=127).contains(&b))
                        || v4 == Ipv4Addr::new(192, 0, 0, 192)
                }
                IpAddr::V6(v6) => {
                    let o = v6.octets();
                    v6.is_unspecified()
                        || v6.is_loopback()
                        // fe80::/10 link-local, fec0::/10 site-local (Java's Inet6Address).
                        || (o[0] == 0xfe && o[1] & 0xc0 == 0x80)
                        || (o[0] == 0xfe && o[1] & 0xc0 == 0xc0)
                        || o[0] == 0xff
                        || o[0] == 0xfd
                }
            },
        }
    }
}

fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// The IPv4 address inside a 6to4 address (2002::/16), which CC: Tweaked also checks
/// (`AddressRule.java:74-75`).
fn six_to_four(ip: IpAddr) -> Option<Ipv4Addr> {
    match ip {
        IpAddr::V6(v6) => {
            let o = v6.octets();
            (o[0] == 0x20 && o[1] == 0x02).then(|| Ipv4Addr::new(o[2], o[3], o[4], o[5]))
        }
        IpAddr::V4(_) => None,
    }
}

/// Java's `InetAddress.getHostAddress`: dotted IPv4, and IPv6 as eight hex groups without `::`.
fn java_host_address(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => a
            .segments()
            .iter()
            .map(|s| format!("{s:x}"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

/// The whole of `text` against `pattern`, where `*` is any run of characters and letters match
/// either case: the regex CC: Tweaked builds (`AddressRule.java:48`, `CASE_INSENSITIVE`, which
/// folds ASCII only).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // Where the last `*` was and how much of the text it has taken, to backtrack to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p].eq_ignore_ascii_case(&text[t]) {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests;

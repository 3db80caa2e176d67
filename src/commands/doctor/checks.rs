//! What `trapdesk doctor` probes and computes before it reports: the addresses a Minecraft
//! server could reach the gateway at, this machine's LAN address, the `[[http.rules]]` line to
//! add, the MCP endpoint's host and port, name resolution, where `computercraft-server.toml`
//! files are, whether the gateway answers `/health`, and the secret read without a host.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::server_config::{self, Search};

/// One address a Minecraft server could use, and from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    pub addr: SocketAddr,
    /// `this machine` or `other machines`.
    pub from: &'static str,
}

/// Which addresses of a gateway bound to `bind` a Minecraft server could use. `lan` is this
/// machine's address towards the network, when known.
pub fn reachable_addresses(bind: SocketAddr, lan: Option<IpAddr>) -> Vec<Reach> {
    let port = bind.port();
    let ip = bind.ip();
    if ip.is_loopback() {
        return vec![Reach {
            addr: bind,
            from: "this machine",
        }];
    }
    if ip.is_unspecified() {
        let mut v = vec![Reach {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
            from: "this machine",
        }];
        if let Some(lan) = lan.filter(|l| !l.is_loopback()) {
            v.push(Reach {
                addr: SocketAddr::new(lan, port),
                from: "other machines",
            });
        }
        return v;
    }
    vec![Reach {
        addr: bind,
        from: "this machine and other machines",
    }]
}

/// This machine's address towards the network: the source address the system would use for
/// a route outwards (a UDP "connect" sends nothing).
pub(super) fn lan_address() -> Option<IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    s.local_addr().ok().map(|a| a.ip())
}

/// The `[[http.rules]]` lines that let CC: Tweaked's computers reach the gateway at `host:port`
/// and nothing else there: without `port` a rule matches every port of the host
/// (`AddressRule.java:63`).
pub fn http_rule(host: IpAddr, port: u16) -> String {
    let port_line = format!("port = {port}");
    format!(
        "[[http.rules]]\nhost = \"{host}\"\n{port_line:<23}# the gateway's own port\naction = \"allow\""
    )
}

/// Host and port of an `http://` or `https://` URL (the MCP endpoint's), default ports
/// included; `None` for anything else.
pub(super) fn url_host_port(url: &str) -> Option<(String, u16)> {
    let (rest, default) = if let Some(r) = url.strip_prefix("http://") {
        (r, 80)
    } else {
        (url.strip_prefix("https://")?, 443)
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None => default,
        };
        return Some((host.to_owned(), port));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => Some((h.to_owned(), p.parse().ok()?)),
        None => Some((authority.to_owned(), default)),
    }
}

/// Where a computer asking for `host:port` would be sent: CC: Tweaked resolves the name and
/// checks the rules against both (`Websocket.java:82-83`).
pub(super) fn resolve(host: &str, port: u16) -> Option<SocketAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, port));
    }
    std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .ok()?
        .next()
}

/// Which `computercraft-server.toml` files count: from `--minecraft DIR`, else from the current
/// directory, else from the default launcher's folder (single player).
pub(super) fn find_server_config(dir: Option<&Path>) -> Search {
    let mut s = Search::default();
    match dir {
        Some(d) => server_config::locate(d, &mut s),
        None => {
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            server_config::locate(&cwd, &mut s);
            if s.found.is_empty()
                && let Some(l) = server_config::launcher_dir().filter(|l| l.is_dir())
            {
                server_config::locate(&l, &mut s);
            }
        }
    }
    s
}

/// Whether the gateway answers `/health` at `addr` (plain HTTP over a TCP socket).
pub(super) fn health(addr: SocketAddr) -> Result<(), String> {
    let mut s =
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(|e| e.to_string())?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    write!(s, "GET /health HTTP/1.0\r\nHost: {addr}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut buf = String::new();
    let _ = s.take(4096).read_to_string(&mut buf);
    match buf.split_whitespace().nth(1) {
        Some("200") => Ok(()),
        Some(code) => Err(format!(
            "it answered HTTP {code}: something else holds the port"
        )),
        None => Err("it accepted the connection but said nothing".into()),
    }
}

/// The shared secret as a host on `data_dir` would start with it, read without writing: the
/// environment's, else the stored file's; `None` when there is none yet (a host makes one at
/// its first start; doctor never does).
pub(super) fn secret_without_host(data_dir: &Path) -> Option<crate::control::SecretInfo> {
    if let Some(s) = std::env::var("SANDBOX_PASSWORD")
        .ok()
        .filter(|s| !s.is_empty())
    {
        return Some(crate::control::SecretInfo {
            secret: s,
            source: "from the environment variable SANDBOX_PASSWORD".into(),
            installer: String::new(),
        });
    }
    let path = data_dir.join("secret");
    let s = trapdesk_core::config::private::read_checked(&path)
        .ok()?
        .trim()
        .to_owned();
    (!s.is_empty()).then(|| crate::control::SecretInfo {
        secret: s,
        source: format!("stored in {}", path.display()),
        installer: String::new(),
    })
}

#[cfg(test)]
mod tests;

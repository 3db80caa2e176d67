//! Unit tests of `trapdesk doctor`'s checks in `src/commands/doctor/checks.rs`.

use super::*;

#[test]
fn loopback_is_this_machine_only_and_any_adds_the_lan() {
    let lo: SocketAddr = "127.0.0.1:4444".parse().unwrap_or_else(|_| unreachable!());
    assert_eq!(reachable_addresses(lo, None).len(), 1);
    let any: SocketAddr = "0.0.0.0:4444".parse().unwrap_or_else(|_| unreachable!());
    let lan: IpAddr = "192.168.1.20".parse().unwrap_or_else(|_| unreachable!());
    let r = reachable_addresses(any, Some(lan));
    assert_eq!(r.len(), 2);
    assert_eq!(r[1].addr.to_string(), "192.168.1.20:4444");
    assert_eq!(r[1].from, "other machines");
}

#[test]
fn the_rule_is_toml_for_cc() {
    let ip: IpAddr = "10.0.0.5".parse().unwrap_or_else(|_| unreachable!());
    assert_eq!(
        http_rule(ip, 4444),
        "[[http.rules]]\nhost = \"10.0.0.5\"\nport = 4444            # the gateway's own port\naction = \"allow\""
    );
}

#[test]
fn the_mcp_url_gives_host_and_port() {
    assert_eq!(
        url_host_port("http://127.0.0.1:4445/mcp"),
        Some(("127.0.0.1".into(), 4445))
    );
    assert_eq!(url_host_port("http://[::1]:9/mcp"), Some(("::1".into(), 9)));
    assert_eq!(
        url_host_port("https://example.org/mcp"),
        Some(("example.org".into(), 443))
    );
    assert_eq!(url_host_port("ws://x:1/"), None);
}

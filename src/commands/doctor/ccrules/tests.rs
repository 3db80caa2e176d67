//! Unit tests of the `[[http.rules]]` evaluation in `src/commands/doctor/ccrules.rs`.

use super::*;

fn rules(toml_text: &str) -> Vec<Rule> {
    let t: toml::Table = toml::from_str(toml_text).unwrap_or_default();
    t.get("http")
        .and_then(|h| h.get("rules"))
        .and_then(toml::Value::as_array)
        .map(|a| {
            a.iter()
                .enumerate()
                .filter_map(|(i, r)| r.as_table().map(|t| Rule::parse(i + 1, t)))
                .collect()
        })
        .unwrap_or_default()
}

fn at(s: &str) -> SocketAddr {
    s.parse().unwrap_or_else(|_| unreachable!("{s}"))
}

#[test]
fn earliest_rule_with_an_action_decides_and_a_port_narrows_it() {
    let r = rules(
        r#"
            [[http.rules]]
            host = "127.0.0.1"
            port = 4444
            action = "allow"
            [[http.rules]]
            host = "$private"
            action = "deny"
            [[http.rules]]
            host = "*"
            action = "allow"
            "#,
    );
    let gw = evaluate(&r, "127.0.0.1", at("127.0.0.1:4444"));
    assert_eq!(gw.action, Action::Allow);
    assert_eq!(gw.decided_by.map(|r| r.index), Some(1));
    let mcp = evaluate(&r, "127.0.0.1", at("127.0.0.1:4445"));
    assert_eq!(mcp.action, Action::Deny);
    assert_eq!(mcp.decided_by.map(|r| r.index), Some(2));
    // A name that resolves to loopback is caught by $private through its address.
    let name = evaluate(&r, "localhost", at("127.0.0.1:8080"));
    assert_eq!(name.action, Action::Deny);
    assert_eq!(
        evaluate(&r, "example.org", at("93.184.215.14:80")).action,
        Action::Allow
    );
}

#[test]
fn options_merge_from_every_matching_rule() {
    // The first rule sets only the frame size; the action comes from a later one.
    let r = rules(
        r#"
            [[http.rules]]
            host = "127.0.0.0/8"
            max_websocket_message = 4096
            [[http.rules]]
            host = "127.0.0.1"
            action = "allow"
            "#,
    );
    let o = evaluate(&r, "127.0.0.1", at("127.0.0.1:4444"));
    assert_eq!(o.action, Action::Allow);
    assert_eq!(o.decided_by.map(|r| r.index), Some(2));
    assert_eq!(o.max_websocket_message, 4096);
    assert_eq!(o.websocket_from.map(|r| r.index), Some(1));
    // Nothing matches: denied, with CC's default frame size.
    let none = evaluate(&r, "10.0.0.1", at("10.0.0.1:1"));
    assert_eq!(none.action, Action::Deny);
    assert!(none.decided_by.is_none());
    assert_eq!(none.max_websocket_message, DEFAULT_WEBSOCKET_MESSAGE);
}

#[test]
fn cidr_globs_and_private_ranges() {
    let r = rules(
        r#"
            [[http.rules]]
            host = "192.168.0.0/23"
            action = "allow"
            [[http.rules]]
            host = "*.Example.org"
            action = "allow"
            "#,
    );
    assert_eq!(
        evaluate(&r, "x", at("192.168.1.200:1")).action,
        Action::Allow
    );
    assert_eq!(evaluate(&r, "x", at("192.168.2.1:1")).action, Action::Deny);
    assert_eq!(
        evaluate(&r, "mc.example.ORG", at("1.2.3.4:1")).action,
        Action::Allow
    );
    assert_eq!(
        evaluate(&r, "example.org", at("1.2.3.4:1")).action,
        Action::Deny
    );
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "172.31.0.1",
        "100.64.0.1",
        "::1",
        "fd00::1",
    ] {
        let ip: IpAddr = ip.parse().unwrap_or_else(|_| unreachable!());
        assert!(Rule::is_private(ip), "{ip}");
    }
    for ip in ["8.8.8.8", "100.128.0.1", "2001:db8::1"] {
        let ip: IpAddr = ip.parse().unwrap_or_else(|_| unreachable!());
        assert!(!Rule::is_private(ip), "{ip}");
    }
    // An IPv6 pattern matches Java's long form of the address.
    let v6 = rules("[[http.rules]]\nhost = \"0:0:0:0:0:0:0:1\"\naction = \"allow\"");
    assert_eq!(evaluate(&v6, "[::1]", at("[::1]:1")).action, Action::Allow);
}

#[test]
fn a_malformed_rule_denies_everything_in_its_place_and_typos_are_named() {
    let r = rules(
        r#"
            [[http.rules]]
            host = "127.0.0.1"
            port = "4444"
            action = "allow"
            [[http.rules]]
            host = "127.0.0.1"
            ports = 4444
            action = "allow"
            "#,
    );
    assert_eq!(
        r[0].malformed.as_deref(),
        Some("Field 'port' should be a 'Number' but is a String.")
    );
    let o = evaluate(&r, "127.0.0.1", at("127.0.0.1:4444"));
    assert_eq!(
        (o.action, o.decided_by.map(|r| r.index)),
        (Action::Deny, Some(1))
    );
    assert_eq!(r[1].ignored_keys, vec!["ports".to_owned()]);
    assert_eq!(r[1].port, None);
}

#[test]
fn glob_is_anchored_and_backtracks() {
    assert!(glob(b"*", b""));
    assert!(glob(b"a*b*c", b"aXXbYYbc"));
    assert!(!glob(b"a*b", b"aXXbY"));
    assert!(glob(b"127.0.0.1", b"127.0.0.1"));
    assert!(!glob(b"127.0.0.1", b"127.0.0.10"));
}

#[test]
fn an_allow_rule_too_late_is_found_but_not_the_catch_all() {
    let late = rules(
        r#"
            [[http.rules]]
            host = "$private"
            action = "deny"
            [[http.rules]]
            host = "127.0.0.1"
            port = 4444
            action = "allow"
            [[http.rules]]
            host = "*"
            action = "allow"
            "#,
    );
    let gw = at("127.0.0.1:4444");
    assert_eq!(evaluate(&late, "127.0.0.1", gw).action, Action::Deny);
    assert_eq!(
        first_allow(&late, "127.0.0.1", gw).map(|r| r.index),
        Some(2)
    );
    // Only CC's `*` rule allows it after the deny: moving that up would open everything.
    assert_eq!(first_allow(&late[2..], "127.0.0.1", gw), None);
}

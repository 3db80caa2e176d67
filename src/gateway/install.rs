//! The HTTP side of the gateway: the installer with this host's address baked in, the client
//! files, and `/health`.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::GatewayState;
use trapdesk_client::lua_files;

/// Placeholder in `lua/install.lua` replaced by `host:port` of this gateway.
pub const HOST_PLACEHOLDER: &str = "__TRAPDESK_HOST__";
/// Placeholder replaced by a Lua table constructor of every client file path.
pub const FILES_PLACEHOLDER: &str = "__TRAPDESK_FILES__";
/// Placeholder replaced by the client's version ([`lua_files::version`]).
pub const VERSION_PLACEHOLDER: &str = "__TRAPDESK_VERSION__";

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

/// Accepts only what a host name, IPv4, bracketed IPv6 and a port can contain, so a hostile
/// `Host` header cannot inject Lua into the installer.
pub fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '_'))
}

/// The installer source for a gateway reachable at `host`.
pub fn render_installer(host: &str) -> Option<String> {
    let template = lua_files::get("install.lua")?;
    let files: Vec<String> = lua_files::FILES
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| *p != "install.lua")
        .map(|p| format!("{p:?}"))
        .collect();
    let table = format!("{{{}}}", files.join(", "));
    Some(
        String::from_utf8_lossy(template)
            .replace(HOST_PLACEHOLDER, host)
            .replace(FILES_PLACEHOLDER, &table)
            .replace(VERSION_PLACEHOLDER, lua_files::version()),
    )
}

/// `host` with `port` added when it names none. A client that reaches the default port of its
/// scheme sends a `Host` without one, and so does CraftOS-PC for `localhost` on any port; the
/// installer needs the port it must dial, which is this gateway's own.
pub fn with_port(host: &str, port: u16) -> String {
    let named = match host.strip_prefix('[') {
        Some(v6) => v6.contains("]:"),
        // One colon is host:port; more is a bare IPv6 address, which cannot take one.
        None => host.contains(':'),
    };
    // Port 0 is "any": the gateway does not know here which one it was given.
    if named || port == 0 {
        host.to_owned()
    } else {
        format!("{host}:{port}")
    }
}

pub async fn installer(State(state): State<GatewayState>, headers: HeaderMap) -> Response {
    let fallback = state.settings.gateway_bind.to_string();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or(&fallback);
    if !valid_host(host) {
        return text(StatusCode::BAD_REQUEST, "bad Host header\n");
    }
    let host = with_port(host, state.settings.gateway_bind.port());
    match render_installer(&host) {
        Some(src) => text(StatusCode::OK, src),
        None => text(StatusCode::NOT_FOUND, "this build has no lua/install.lua\n"),
    }
}

pub async fn lua_file(Path(path): Path<String>) -> Response {
    match lua_files::get(&path) {
        Some(bytes) => (
            StatusCode::OK,
            // A packed file holds bytes above 127 that are not UTF-8 (docs/lua-client.md, "The
            // served client"); the installer fetches in binary mode either way.
            [(
                header::CONTENT_TYPE,
                if std::str::from_utf8(bytes).is_ok() {
                    "text/plain; charset=utf-8"
                } else {
                    "application/octet-stream"
                },
            )],
            bytes,
        )
            .into_response(),
        None => text(StatusCode::NOT_FOUND, format!("no client file {path:?}\n")),
    }
}

/// `/`: what this port is and how to use it, for a person who opens it in a browser or curl.
/// The secret is not shown: anyone who can reach the port could read it.
pub async fn index(State(state): State<GatewayState>, headers: HeaderMap) -> Response {
    let fallback = state.settings.gateway_bind.to_string();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| valid_host(h))
        .unwrap_or(&fallback);
    text(StatusCode::OK, index_text(host))
}

/// The body of `/` for a gateway reachable at `host`.
pub fn index_text(host: &str) -> String {
    // The rule names this port: CC: Tweaked matches a rule without one on every port of the
    // host, which would open every local service to every computer in the world. A Host
    // without a port was port 80 (CC's default for http URLs).
    let (name, port) = match host.strip_prefix('[') {
        Some(v6) => v6
            .split_once("]:")
            .unwrap_or((v6.trim_end_matches(']'), "80")),
        None if host.matches(':').count() == 1 => host.split_once(':').unwrap_or((host, "80")),
        None => (host, "80"),
    };
    format!(
        "trapdesk {} gateway\n\n\
         Link a ComputerCraft computer: on it, type\n\n    wget run http://{host}/install.lua <secret>\n\n\
         The secret: press s in the trapdesk console, or run `trapdesk secret show` on the machine\n\
         trapdesk runs on (with its --data-dir DIR if it was started with one). `trapdesk --mcp-only`\n\
         prints the whole line only when started in a terminal: into a log or a pipe it writes no\n\
         secret, only that command.\n\n\
         \"Domain not permitted\"? In the server's computercraft-server.toml, above the rule with\n\
         host = \"$private\", add (keep the port: without it every local service on that machine is\n\
         open to every computer of every player in the world):\n\n    \
         [[http.rules]]\n    host = \"{name}\"\n    port = {port}\n    action = \"allow\"\n\n\
         `trapdesk doctor --minecraft DIR` checks the server's file.\n\n\
         GET /install.lua   the installer\n\
         GET /lua/<path>    the client files\n\
         GET /health        JSON status\n\
         GET /gateway       the computers' WebSocket (docs/protocol.md)\n",
        env!("CARGO_PKG_VERSION")
    )
}

pub async fn health(State(state): State<GatewayState>) -> Response {
    let linked = state
        .session
        .computers()
        .iter()
        .filter(|c| c.online)
        .count();
    axum::Json(serde_json::json!({
        "ok": true,
        "computers": linked,
        "version": env!("CARGO_PKG_VERSION"),
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_checked() {
        assert!(valid_host("127.0.0.1:4444"));
        assert!(valid_host("[::1]:4444"));
        assert!(valid_host("my-host.example"));
        assert!(!valid_host("x\"; os.shutdown() --"));
        assert!(!valid_host(""));
    }

    #[test]
    fn the_help_page_gives_the_rule_with_this_port() {
        let page = index_text("192.168.1.20:4444");
        assert!(
            page.contains("    host = \"192.168.1.20\"\n    port = 4444\n"),
            "{page}"
        );
        assert!(index_text("[::1]:9").contains("host = \"::1\"\n    port = 9\n"));
        assert!(index_text("mc.example").contains("port = 80\n"));
    }

    #[test]
    fn a_host_without_a_port_gets_the_gateways() {
        assert_eq!(with_port("localhost", 4444), "localhost:4444");
        assert_eq!(with_port("mc.example", 4444), "mc.example:4444");
        assert_eq!(with_port("[::1]", 4444), "[::1]:4444");
        assert_eq!(with_port("127.0.0.1:9", 4444), "127.0.0.1:9");
        assert_eq!(with_port("[::1]:9", 4444), "[::1]:9");
    }

    #[test]
    fn the_installer_carries_the_version_and_no_placeholder() {
        let src = render_installer("127.0.0.1:4444").expect("this build has lua/install.lua");
        assert!(src.contains(lua_files::version()));
        for p in [HOST_PLACEHOLDER, FILES_PLACEHOLDER, VERSION_PLACEHOLDER] {
            assert!(!src.contains(p), "{p} left in the installer");
        }
    }
}

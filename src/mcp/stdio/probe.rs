//! What `mcp-stdio` checks before it forwards anything: that something listens at the URL,
//! and that it does not refuse the token (so the agent's server list shows a failed server at
//! once, with what to do, rather than every call failing later).

pub(super) enum Reach {
    BadUrl,
    Down(String),
}

/// Whether something listens at the URL's host and port (a TCP connect, nothing more: the
/// first forwarded request says the rest).
pub(super) async fn reachable(url: &str) -> Result<(), Reach> {
    let (rest, default_port) = if let Some(r) = url.strip_prefix("http://") {
        (r, 80)
    } else if let Some(r) = url.strip_prefix("https://") {
        (r, 443)
    } else {
        return Err(Reach::BadUrl);
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.contains(']'));
    let addr = if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    };
    let addr = addr.replace(['[', ']'], "");
    let connect = tokio::net::TcpStream::connect(addr.as_str());
    match tokio::time::timeout(std::time::Duration::from_secs(3), connect).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Reach::Down(e.to_string())),
        Err(_) => Err(Reach::Down("no answer within 3 s".into())),
    }
}

/// Whether the host at the plain `http://` `url` answers `token` with 401. One `GET` with
/// the token and nothing else: the guard answers it before rmcp (which would refuse a `GET`
/// without a session), so it opens no MCP session. `false` when it cannot tell (https, a
/// broken connection): the first real request then says what went wrong.
pub(super) async fn refuses(url: &str, token: Option<&str>) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let addr = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.contains(']'))
    {
        authority.replace(['[', ']'], "")
    } else {
        format!("{}:80", authority.replace(['[', ']'], ""))
    };
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let ask = async {
        let mut s = tokio::net::TcpStream::connect(addr.as_str()).await.ok()?;
        let req =
            format!("GET /{path} HTTP/1.1\r\nHost: {authority}\r\n{auth}Connection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.ok()?;
        let mut head = [0u8; 12];
        s.read_exact(&mut head).await.ok()?;
        Some(head.ends_with(b" 401"))
    };
    tokio::time::timeout(std::time::Duration::from_secs(3), ask)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

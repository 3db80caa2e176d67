//! `http`: websockets and HTTP requests (any method, with a body), run as tokio tasks that talk to the computer only
//! through events, as CC's Java side does. Everything a program sees happens on the machine
//! thread; the blocking forms (`http.websocket`, `http.get`) are written in the bios on top of
//! these asynchronous natives, pulling events while they wait.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use mlua::{IntoLuaMulti, Lua, MultiValue, Table};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::{self, Message, client::IntoClientRequest};

use super::kernel::{Ctx, Msg};
use super::value::{Event, Response, Val};
use super::websocket::{UNLIMITED_MESSAGE, WsCmd, WsHandle};

/// CC's limit on open websockets per computer.
const MAX_WEBSOCKETS: usize = 4;
/// How long a GET may take in all.
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends an event of this power cycle to the machine.
fn post(ctx: &Ctx, name: &str, args: Vec<Val>) {
    // The computer may be off already; then nobody wants the event.
    let _ = ctx
        .tx
        .send(Msg::Event(Event::new(name, args), Some(ctx.generation)));
}

fn headers_of(t: Option<Table>) -> Vec<(String, String)> {
    t.map(|t| t.pairs::<String, String>().flatten().collect())
        .unwrap_or_default()
}

/// Whether CC would accept this URL for the given schemes. CC: Tweaked words a wrong scheme
/// "Invalid protocol 'ftp'" for HTTP (`HttpRequest.checkUri`) and "Invalid scheme 'http'" for
/// websockets (`Websocket.checkUri`).
fn check_url(url: &str, schemes: &[&str]) -> Result<(), String> {
    let ws = schemes.contains(&"ws");
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(if ws {
            "URL malformed".into()
        } else {
            "Must specify http or https".into()
        });
    };
    if !schemes.contains(&scheme.to_ascii_lowercase().as_str()) {
        return Err(if ws {
            format!("Invalid scheme '{scheme}'")
        } else {
            format!("Invalid protocol '{scheme}'")
        });
    }
    if rest.split(['/', '?']).next().unwrap_or("").is_empty() {
        return Err("URL malformed".into());
    }
    Ok(())
}

pub(crate) fn native(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "checkURL",
        lua.create_function(
            |lua, url: String| match check_url(&url, &["http", "https"]) {
                Ok(()) => true.into_lua_multi(lua),
                Err(e) => (false, e).into_lua_multi(lua),
            },
        )?,
    )?;
    let c = ctx.clone();
    t.set(
        "websocket",
        lua.create_function(move |lua, (url, headers): (String, Option<Table>)| {
            if let Err(e) = check_url(&url, &["ws", "wss"]) {
                return (false, e).into_lua_multi(lua);
            }
            if c.websockets.fetch_add(1, Ordering::SeqCst) >= MAX_WEBSOCKETS {
                c.websockets.fetch_sub(1, Ordering::SeqCst);
                return (false, "Too many websockets already open").into_lua_multi(lua);
            }
            c.rt.spawn(ws_task(c.clone(), url, headers_of(headers)));
            true.into_lua_multi(lua)
        })?,
    )?;
    let c = ctx.clone();
    t.set(
        "request",
        lua.create_function(move |lua, (url, headers, binary, method, body): (String, Option<Table>, Option<bool>, Option<String>, Option<mlua::LuaString>)| {
            if let Err(e) = check_url(&url, &["http", "https"]) {
                return (false, e).into_lua_multi(lua);
            }
            let c = c.clone();
            let headers = headers_of(headers);
            let body = body.map(|b| b.as_bytes().to_vec());
            // CC: Tweaked sends POST when there is a body and no method, GET otherwise.
            let method = method.map_or_else(
                || if body.is_some() { "POST".to_owned() } else { "GET".to_owned() },
                |m| m.to_ascii_uppercase(),
            );
            c.rt.clone().spawn(async move {
                let res = tokio::select! {
                    r = tokio::time::timeout(HTTP_TIMEOUT, fetch(&url, &method, &headers, body.as_deref(), binary.unwrap_or(false))) => r,
                    () = c.cancel.cancelled() => return,
                };
                match res {
                    Ok(Ok(r)) if (200..300).contains(&r.code) => {
                        post(&c, "http_success", vec![Val::from(url.as_str()), Val::Response(Arc::new(r))]);
                    }
                    Ok(Ok(r)) => {
                        // CC: Tweaked's message is the status line's reason ("Not Found").
                        let msg = r.reason.clone();
                        post(&c, "http_failure", vec![Val::from(url.as_str()), Val::from(msg.as_str()), Val::Response(Arc::new(r))]);
                    }
                    Ok(Err(e)) => post(&c, "http_failure", vec![Val::from(url.as_str()), Val::from(e.as_str())]),
                    Err(_) => post(&c, "http_failure", vec![Val::from(url.as_str()), Val::from("Timed out")]),
                }
            });
            let out: MultiValue = true.into_lua_multi(lua)?;
            Ok(out)
        })?,
    )?;
    Ok(t)
}

/// CC-like wording of a connection failure.
fn ws_error_text(e: &tungstenite::Error) -> String {
    match e {
        tungstenite::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "Connection refused".into()
        }
        tungstenite::Error::Io(_) => "Could not connect".into(),
        tungstenite::Error::Http(resp) => format!(
            "Invalid handshake response (HTTP {})",
            resp.status().as_u16()
        ),
        other => other.to_string(),
    }
}

async fn ws_task(c: Ctx, url: String, headers: Vec<(String, String)>) {
    run_ws(&c, &url, headers).await;
    c.websockets.fetch_sub(1, Ordering::SeqCst);
}

async fn run_ws(c: &Ctx, url: &str, headers: Vec<(String, String)>) {
    let fail = |e: String| {
        post(
            c,
            "websocket_failure",
            vec![Val::from(url), Val::from(e.as_str())],
        )
    };
    let mut req = match url.into_client_request() {
        Ok(r) => r,
        Err(e) => return fail(ws_error_text(&e)),
    };
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (
            tungstenite::http::HeaderName::from_bytes(k.as_bytes()),
            tungstenite::http::HeaderValue::from_str(&v),
        ) {
            req.headers_mut().insert(k, v);
        }
    }
    // CC: Tweaked gives netty's handshaker the rule's limit as the largest frame payload, 1 GiB
    // when it is 0 (`Websocket.java`, `MAX_MESSAGE_SIZE`).
    let limit = match c.max_websocket_message {
        0 => UNLIMITED_MESSAGE,
        n => n,
    };
    let config = tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit));
    let connected = tokio::select! {
        r = tokio_tungstenite::connect_async_with_config(req, Some(config), true) => r,
        () = c.cancel.cancelled() => return,
    };
    let stream = match connected {
        Ok((s, _)) => s,
        Err(e) => return fail(ws_error_text(&e)),
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let is_closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    post(
        c,
        "websocket_success",
        vec![
            Val::from(url),
            Val::Ws(Arc::new(WsHandle {
                url: url.to_owned(),
                max_message: c.max_websocket_message,
                closed: is_closed.clone(),
                tx,
                watchdog: c.watchdog.clone(),
            })),
        ],
    );
    pump(c, url, stream, rx, &is_closed).await;
}

/// Carries the program's sends and closes to the peer and the peer's messages to the program,
/// until either side closes or the power cycle ends.
async fn pump<S>(
    c: &Ctx,
    url: &str,
    stream: S,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<WsCmd>,
    is_closed: &std::sync::atomic::AtomicBool,
) where
    S: futures_util::Sink<Message>
        + futures_util::Stream<Item = Result<Message, tungstenite::Error>>,
{
    let (mut sink, mut stream) = stream.split();
    let closed = |reason: Val, code: Val| {
        is_closed.store(true, Ordering::SeqCst);
        post(c, "websocket_closed", vec![Val::from(url), reason, code]);
    };
    loop {
        let go_on = tokio::select! {
            cmd = rx.recv() => on_command(cmd, &mut sink, &closed).await,
            msg = stream.next() => on_message(c, url, msg, &closed),
            () = c.cancel.cancelled() => false,
        };
        if !go_on {
            break;
        }
    }
}

/// One command of the program's handle; whether the connection goes on.
async fn on_command<K>(cmd: Option<WsCmd>, sink: &mut K, closed: &impl Fn(Val, Val)) -> bool
where
    K: futures_util::Sink<Message> + Unpin,
{
    match cmd {
        Some(WsCmd::Send(m)) => {
            if sink.send(m).await.is_err() {
                closed(Val::Nil, Val::Num(1006.0));
                return false;
            }
            true
        }
        Some(WsCmd::Close) => {
            // Closed by the program: CC queues no event; the peer may be gone already.
            let _ = sink.close().await;
            false
        }
        // The handle is gone with the Lua state (the computer shut down or rebooted) or
        // was collected: the connection is dropped, as on `cancel`.
        None => false,
    }
}

/// One message from the peer; whether the connection goes on.
fn on_message(
    c: &Ctx,
    url: &str,
    msg: Option<Result<Message, tungstenite::Error>>,
    closed: &impl Fn(Val, Val),
) -> bool {
    match msg {
        // CC: Tweaked queues a text frame as its raw UTF-8 bytes (docs/cc-tweaked.md,
        // "WebSocket text and bytes").
        Some(Ok(Message::Text(t))) => post(
            c,
            "websocket_message",
            vec![
                Val::from(url),
                Val::Str(t.as_bytes().to_vec()),
                Val::Bool(false),
            ],
        ),
        Some(Ok(Message::Binary(b))) => post(
            c,
            "websocket_message",
            vec![Val::from(url), Val::Str(b.to_vec()), Val::Bool(true)],
        ),
        Some(Ok(Message::Close(frame))) => {
            match frame {
                Some(f) => closed(
                    Val::from(f.reason.as_str()),
                    Val::Num(f64::from(u16::from(f.code))),
                ),
                None => closed(Val::Nil, Val::Nil),
            }
            return false;
        }
        Some(Ok(_)) => {}
        Some(Err(tungstenite::Error::Capacity(_))) => {
            // An incoming message above the limit closes the socket with the reason and
            // no code, as CC: Tweaked's `WebsocketHandler.fail` does (docs/cc-tweaked.md,
            // "WebSocket text and bytes").
            closed(Val::from("Message is too large"), Val::Nil);
            return false;
        }
        Some(Err(_)) | None => {
            closed(Val::Nil, Val::Num(1006.0));
            return false;
        }
    }
    true
}

/// A minimal HTTP/1.1 request over a plain TCP stream (`Connection: close`, body by
/// `Content-Length`, chunked, or to the end). HTTPS is not offered: the emulator only ever talks
/// to the local gateway and to test servers.
async fn fetch(
    url: &str,
    method: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
    binary: bool,
) -> Result<Response, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| "HTTPS is not supported by the emulator".to_owned())?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_owned()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_owned()),
    };
    let addr = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let mut s = tokio::net::TcpStream::connect(&addr)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "Connection refused".to_owned(),
            _ => "Could not connect".to_owned(),
        })?;
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("user-agent"))
    {
        req.push_str("User-Agent: computercraft/1.113.0\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    req.push_str("\r\n");
    let mut out = req.into_bytes();
    out.extend_from_slice(body.unwrap_or_default());
    s.write_all(&out).await.map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.map_err(|e| e.to_string())?;
    let mut r = parse_response(&raw, binary)?;
    // A HEAD answer carries the length of a body it does not send.
    if method == "HEAD" {
        r.body.clear();
    }
    Ok(r)
}

fn parse_response(raw: &[u8], binary: bool) -> Result<Response, String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("Malformed response")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("");
    let mut parts = status.splitn(3, ' ');
    let code: u16 = parts
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or("Malformed response")?;
    let reason = parts.next().unwrap_or("").trim().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let mut body = raw[end + 4..].to_vec();
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body)?;
    } else if let Some(len) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.truncate(len);
    }
    Ok(Response {
        code,
        reason,
        headers,
        body,
        binary,
    })
}

fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let nl = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("Malformed chunk")?;
        let size_text = String::from_utf8_lossy(&b[..nl]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "Malformed chunk".to_owned())?;
        b = &b[nl + 2..];
        if size == 0 || b.len() < size {
            return Ok(out);
        }
        out.extend_from_slice(&b[..size]);
        b = b.get(size + 2..).unwrap_or(&[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_chunked_and_sized_bodies() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef", false).ok();
        assert_eq!(r.map(|r| r.body), Some(b"abc".to_vec()));
        let r = parse_response(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", false).ok();
        assert_eq!(r.as_ref().map(|r| r.code), Some(404));
        assert_eq!(r.map(|r| r.body), Some(b"abcde".to_vec()));
    }

    #[test]
    fn urls_are_checked_like_cc() {
        assert!(check_url("http://127.0.0.1:80/x", &["http"]).is_ok());
        assert!(check_url("ftp://x", &["http"]).is_err());
        assert!(check_url("http:///x", &["http"]).is_err());
    }
}

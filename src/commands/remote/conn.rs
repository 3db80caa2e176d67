//! One MCP connection to the running trapdesk, under a clientInfo name that tells the host who
//! calls (`trapdesk-cli` → origin `cli`, `trapdesk-sync` → origin `sync`), and tool calls on it
//! with live output, cancellation on Ctrl-C and exit codes for what went wrong.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, Implementation,
    ProgressNotificationParam, ProgressToken, Request, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::{Failure, exit};

/// Progress routes: a call's token → where its output goes. Progress that arrives before
/// the call registered its token (the token is only known once the request is sent) waits in
/// `early`.
#[derive(Default)]
struct Routes {
    live: HashMap<ProgressToken, mpsc::UnboundedSender<String>>,
    early: HashMap<ProgressToken, Vec<String>>,
}

type SharedRoutes = Arc<Mutex<Routes>>;

struct Handler {
    name: &'static str,
    routes: SharedRoutes,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(self.name, env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        let Some(text) = params.message else { return };
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        match routes.live.get(&params.progress_token) {
            Some(tx) => {
                // The call may have ended already; late output is then dropped.
                let _ = tx.send(text);
            }
            None => routes
                .early
                .entry(params.progress_token)
                .or_default()
                .push(text),
        }
    }
}

/// What a tool call returned.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The tool's `isError`.
    pub is_error: bool,
    /// `structuredContent` (an empty object when there was none).
    pub data: Value,
    /// The first text block: a one-line summary first.
    pub text: String,
}

impl Reply {
    /// Exit code and one-line message for a failed reply: 3 when the host could not get the
    /// work done (not linked, timed out, refused, busy, cancelled), 1 when the work itself
    /// failed (a Lua error, a failed file operation).
    /// The computer the host actually reached (the result's `traposId`), else the name the
    /// person typed: what the CLI prints is the computer it reached, never only the query.
    pub fn reached<'a>(&'a self, query: &'a str) -> &'a str {
        self.data
            .get("traposId")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .unwrap_or(query)
    }

    pub fn failure(&self, what: &str) -> Failure {
        let (code, message) = match self.data.get("error") {
            Some(Value::Object(e)) => (
                e.get("code").and_then(Value::as_str).unwrap_or_default(),
                e.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or(self.text.as_str()),
            ),
            Some(Value::String(s)) => ("", s.as_str()),
            _ => ("", self.text.as_str()),
        };
        // The whole message: a Lua error can span lines (`require`'s lists every file it
        // tried), and its first line alone does not say what went wrong.
        let message = message.trim_end();
        // The host refused the arguments the command line built: a usage error (2), named by
        // the flag a person typed rather than the tool's field.
        if code == "invalid_arguments" {
            let field = self.data.get("field").and_then(Value::as_str);
            let message = match (field, max_millis(message)) {
                (Some("timeoutMs"), Some(max)) => format!(
                    "--timeout is out of range: this host takes more than 0 and at most {}",
                    human_millis(max)
                ),
                _ => message.to_owned(),
            };
            return Failure::new(exit::USAGE, format!("{what}: {message}"));
        }
        let unreachable = matches!(
            code,
            "timeout"
                | "disconnected"
                | "unknown_computer"
                | "ambiguous_computer"
                | "busy"
                | "shutting_down"
                | "cancelled"
                | "unknown_type"
        ) || code.contains("refus")
            || code.contains("denied")
            || code.contains("policy");
        if unreachable {
            let hint = match code {
                "unknown_computer" | "ambiguous_computer" => {
                    "; `trapdesk computers` lists the linked ones"
                }
                "timeout" => "; pass a longer --timeout",
                "disconnected" => "; it unlinked, run it again once it is back",
                "unknown_type" => {
                    "; the computer does not serve that request (its client may be older than this trapdesk: re-run the installer there)"
                }
                _ => "",
            };
            Failure::new(exit::UNREACHABLE, format!("{what}: {message}{hint}"))
        } else {
            Failure::new(exit::FAILED, format!("{what}: {message}"))
        }
    }
}

/// `N` of the host's "expected 1 to N milliseconds".
fn max_millis(message: &str) -> Option<u64> {
    let rest = message.split("expected 1 to ").nth(1)?;
    rest.split(' ').next()?.parse().ok()
}

/// Milliseconds as a person writes a `--timeout`: `10m`, `90s`, `1500ms`.
pub fn human_millis(ms: u64) -> String {
    if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// A connection to the trapdesk MCP endpoint.
pub struct Conn {
    service: RunningService<RoleClient, Handler>,
    routes: SharedRoutes,
    url: String,
}

impl Conn {
    /// Connects to `url` with the bearer token of `credential`, as `name`
    /// ([`trapdesk_core::session::Origin`]).
    ///
    /// # Errors
    /// Exit code 3 with what to do when nothing answers or the token is refused.
    pub async fn open(
        url: &str,
        credential: &trapdesk_core::trust::agents::Credential,
        name: &'static str,
    ) -> Result<Conn, Failure> {
        let token = credential.token();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Failure::new(
                exit::USAGE,
                format!("--connect {url:?} is not an http:// or https:// URL"),
            ));
        }
        // A plain TCP connect first: its error says what is wrong in words a person reads
        // ("connection refused"), where the transport's is a paragraph.
        if let Some(addr) = authority(url) {
            let connect = tokio::net::TcpStream::connect(addr);
            match tokio::time::timeout(Duration::from_secs(5), connect).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(connect_failure(url, &e.to_string(), None)),
                Err(_) => return Err(connect_failure(url, "no answer within 5 s", None)),
            }
        }
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        if let Some(t) = token {
            config = config.auth_header(t.to_owned());
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        let routes = SharedRoutes::default();
        let handler = Handler {
            name,
            routes: routes.clone(),
        };
        let serve = handler.serve(transport);
        let service = match tokio::time::timeout(Duration::from_secs(10), serve).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(connect_failure(url, &e.to_string(), Some(credential))),
            Err(_) => {
                return Err(connect_failure(
                    url,
                    "no answer within 10 s",
                    Some(credential),
                ));
            }
        };
        Ok(Conn {
            service,
            routes,
            url: url.to_owned(),
        })
    }

    /// The endpoint this connection talks to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Calls `tool` with `args` and no live output.
    ///
    /// # Errors
    /// As [`Conn::call_streaming`].
    pub async fn call(&self, tool: &str, args: Value) -> Result<Reply, Failure> {
        self.call_streaming(tool, args, None, |_| {}).await
    }

    /// Calls `tool` with `args`; each live output chunk goes to `on_output` as it arrives.
    /// Gives up after `deadline` (exit 3). Ctrl-C cancels the call on the host, which cancels
    /// the request on the computer, and fails with exit code 130.
    ///
    /// # Errors
    /// Exit code 3 when the host stops answering or the deadline passes; 130 on Ctrl-C.
    pub async fn call_streaming(
        &self,
        tool: &str,
        args: Value,
        deadline: Option<Duration>,
        mut on_output: impl FnMut(&str),
    ) -> Result<Reply, Failure> {
        self.call_until(tool, args, deadline, &mut on_output, ctrl_c())
            .await
    }

    /// [`Conn::call_streaming`] that is cancelled when `stop` resolves (instead of on
    /// Ctrl-C): `sync` cancels a run when a new save arrives.
    ///
    /// # Errors
    /// As [`Conn::call_streaming`]; a stop is exit code 130 with the message "cancelled".
    pub async fn call_until(
        &self,
        tool: &str,
        args: Value,
        deadline: Option<Duration>,
        on_output: &mut impl FnMut(&str),
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Reply, Failure> {
        let arguments = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let peer = self.service.peer();
        let handle = peer
            .send_cancellable_request(
                ClientRequest::CallToolRequest(Request::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(|e| self.lost(&e.to_string()))?;
        // Held to the end of the call, however it ends: its drop forgets the progress route.
        let mut route = self.route(handle.progress_token.clone());
        let id = handle.id.clone();
        let mut streamed = String::new();
        let ended = {
            let response = std::pin::pin!(handle.await_response());
            wait(response, deadline, stop, &mut route.rx, &mut |text| {
                on_output(text);
                streamed.push_str(text);
            })
            .await
        };
        let result = match ended {
            Ok(r) => r,
            Err(code) => {
                let note = rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("cancelled from the command line".into()),
                );
                // If the host is gone, nothing runs there any more.
                let _ = peer.notify_cancelled(note).await;
                return Err(if code == exit::INTERRUPTED {
                    Failure::new(code, "cancelled")
                } else {
                    Failure::new(
                        code,
                        format!("{tool}: no answer in time; pass a longer --timeout"),
                    )
                });
            }
        };
        // Output still queued behind the answer.
        while let Ok(text) = route.rx.try_recv() {
            on_output(&text);
            streamed.push_str(&text);
        }
        let reply = self.reply(tool, result)?;
        rest_of_output(&reply, &streamed, &mut route.rx, on_output).await;
        Ok(reply)
    }

    /// Routes the progress of the call with `token` to the returned receiver, with what
    /// arrived before the call knew its token.
    fn route(&self, token: ProgressToken) -> Route<'_> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        for text in routes.early.remove(&token).unwrap_or_default() {
            let _ = tx.send(text);
        }
        routes.live.insert(token.clone(), tx);
        Route {
            routes: &self.routes,
            token,
            rx,
        }
    }

    /// A tool call's answer as a [`Reply`], or why there is none.
    fn reply(
        &self,
        tool: &str,
        result: Result<ServerResult, rmcp::ServiceError>,
    ) -> Result<Reply, Failure> {
        match result {
            Ok(ServerResult::CallToolResult(r)) => Ok(Reply {
                is_error: r.is_error == Some(true),
                data: r
                    .structured_content
                    .clone()
                    .unwrap_or(Value::Object(Map::new())),
                text: r
                    .content
                    .first()
                    .and_then(|c| c.as_text())
                    .map(|t| t.text.clone())
                    .unwrap_or_default(),
            }),
            Ok(other) => Err(self.lost(&format!("unexpected answer {other:?}"))),
            Err(rmcp::ServiceError::McpError(e)) => Err(Failure::new(
                exit::USAGE,
                format!("{tool}: the host refused the call: {}", e.message),
            )),
            Err(e) => Err(self.lost(&e.to_string())),
        }
    }

    fn lost(&self, why: &str) -> Failure {
        // The host answered, and said the request is over its body limit: the request is to
        // change (2), the host is fine (not 3).
        if why.contains("HTTP 413") {
            let limit = why
                .split("exceeds ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .map_or_else(
                    || "its max_body_bytes".to_owned(),
                    |n| format!("{n} bytes (max_body_bytes in its config.toml)"),
                );
            return Failure::new(
                exit::USAGE,
                format!(
                    "the request is too large for the trapdesk at {}: its limit is {limit}; put a big program on the computer with `trapdesk put` and start it with `trapdesk run`",
                    self.url
                ),
            );
        }
        Failure::new(
            exit::UNREACHABLE,
            format!(
                "lost the trapdesk at {} ({why}); check that it is still running",
                self.url
            ),
        )
    }

    /// Closes the connection (ends the MCP session on the host).
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.service.cancel()).await;
    }
}

/// `host:port` of an http(s) URL.
fn authority(url: &str) -> Option<String> {
    let (rest, port) = url
        .strip_prefix("http://")
        .map(|r| (r, 80))
        .or_else(|| url.strip_prefix("https://").map(|r| (r, 443)))?;
    let auth = rest.split('/').next()?;
    let has_port = auth.rsplit_once(':').is_some_and(|(_, p)| !p.contains(']'));
    let a = if has_port {
        auth.to_owned()
    } else {
        format!("{auth}:{port}")
    };
    Some(a.replace(['[', ']'], ""))
}

/// Resolves on Ctrl-C (never, when the signal cannot be watched).
pub async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// `credential` is what was presented, once the TCP connect succeeded (`None` before).
fn connect_failure(
    url: &str,
    why: &str,
    credential: Option<&trapdesk_core::trust::agents::Credential>,
) -> Failure {
    let lower = why.to_ascii_lowercase();
    let refused = lower.contains("401") || lower.contains("auth") || lower.contains("403");
    let message = if let (true, Some(c)) = (refused, credential) {
        c.refused(url)
    } else {
        format!(
            "no trapdesk is running at {url} ({why}); start `trapdesk` or `trapdesk --mcp-only`, or pass --connect URL"
        )
    };
    Failure::new(exit::UNREACHABLE, message)
}

/// A call's progress route, forgotten when the call ends however it ends.
struct Route<'a> {
    routes: &'a SharedRoutes,
    token: ProgressToken,
    rx: mpsc::UnboundedReceiver<String>,
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        routes.live.remove(&self.token);
        routes.early.remove(&self.token);
    }
}

/// Passes output on until the answer comes: `Err` with the exit code when `stop` (Ctrl-C) or
/// the deadline came first.
async fn wait<R>(
    mut response: std::pin::Pin<&mut impl std::future::Future<Output = R>>,
    deadline: Option<Duration>,
    stop: impl std::future::Future<Output = ()>,
    rx: &mut mpsc::UnboundedReceiver<String>,
    on_output: &mut impl FnMut(&str),
) -> Result<R, u8> {
    let mut stop = std::pin::pin!(stop);
    let sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let mut sleep = std::pin::pin!(sleep);
    loop {
        tokio::select! {
            biased;
            Some(text) = rx.recv() => on_output(&text),
            r = &mut response => return Ok(r),
            () = &mut stop => return Err(exit::INTERRUPTED),
            () = &mut sleep => return Err(exit::UNREACHABLE),
        }
    }
}

/// The output the answer holds that did not stream: the answer's own captured output says
/// how much is missing when it holds all of it; otherwise waits briefly for the rest.
async fn rest_of_output(
    reply: &Reply,
    streamed: &str,
    rx: &mut mpsc::UnboundedReceiver<String>,
    on_output: &mut impl FnMut(&str),
) {
    let full = reply.data.get("output").and_then(Value::as_str);
    let truncated = reply.data.get("outputTruncated").and_then(Value::as_bool) == Some(true);
    match full.and_then(|f| f.strip_prefix(streamed)) {
        Some(rest) if !truncated && !streamed.is_empty() => {
            if !rest.is_empty() {
                on_output(rest);
            }
        }
        _ if !streamed.is_empty() => {
            while let Ok(Some(text)) =
                tokio::time::timeout(Duration::from_millis(200), rx.recv()).await
            {
                on_output(&text);
            }
        }
        // Nothing streamed (the host does not stream this call): the captured output is
        // all there is.
        _ => {
            if let Some(f) = full
                && !f.is_empty()
            {
                on_output(f);
            }
        }
    }
}

//! One MCP connection to the running trapdesk, under a clientInfo name that tells the host who
//! calls (`trapdesk-cli` → origin `cli`, `trapdesk-sync` → origin `sync`), and tool calls on it
//! with live output, cancellation on Ctrl-C and exit codes for what went wrong. The live
//! output's routing is in `conn/progress.rs`, a call's reply and its exit code in
//! `conn/reply.rs`, what stops a call from outside (Ctrl-C, SIGTERM, a closed output pipe) in
//! `conn/interrupt.rs`.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientRequest, ProgressToken, Request, ServerResult};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::{Failure, exit};
use progress::{Handler, Route, SharedRoutes, rest_of_output, wait};

mod interrupt;
mod progress;
mod reply;

pub use interrupt::{Interrupt, signal, stdout_closed};
pub use reply::{Reply, human_millis};

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
        let transport = crate::mcp::upstream::transport(config);
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
    /// Gives up after `deadline` (exit 3). Ctrl-C or SIGTERM cancels the call on the host,
    /// which cancels the request on the computer, and fails with exit code 130 or 143.
    ///
    /// # Errors
    /// Exit code 3 when the host stops answering or the deadline passes; 130 on Ctrl-C, 143 on
    /// SIGTERM.
    pub async fn call_streaming(
        &self,
        tool: &str,
        args: Value,
        deadline: Option<Duration>,
        mut on_output: impl FnMut(&str),
    ) -> Result<Reply, Failure> {
        let stop = async { signal().await.failure(tool) };
        self.call_until(tool, args, deadline, &mut on_output, stop)
            .await
    }

    /// [`Conn::call_streaming`] that is cancelled when `stop` resolves (instead of on
    /// Ctrl-C): `sync` cancels a run when a new save arrives, `exec` when its output pipe
    /// closes.
    ///
    /// # Errors
    /// As [`Conn::call_streaming`]; a stop is the failure `stop` gave.
    pub async fn call_until(
        &self,
        tool: &str,
        args: Value,
        deadline: Option<Duration>,
        on_output: &mut impl FnMut(&str),
        stop: impl std::future::Future<Output = Failure>,
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
            Err(why) => {
                let note = rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("cancelled from the command line".into()),
                );
                // If the host is gone, nothing runs there any more.
                let _ = peer.notify_cancelled(note).await;
                return Err(why.unwrap_or_else(|| {
                    Failure::new(
                        exit::UNREACHABLE,
                        format!("{tool}: no answer in time; pass a longer --timeout"),
                    )
                }));
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

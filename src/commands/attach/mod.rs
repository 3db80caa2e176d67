//! `trapdesk attach [URL]`: the console as a client of a running host, over the control
//! channel's WebSocket (`GET /control/attach`, `control::attach` on the host's side). The
//! console is the same `tui::run` as in the host's process, over [`RemoteHub`] instead of the
//! session; quitting it detaches and leaves the host, its links and its requests running.
//!
//! **Finding the host**: with no URL, the host running on the data dir (its `host.json`);
//! with one, that address (an SSH tunnel: `ssh -L 7000:127.0.0.1:4445 server`, then
//! `trapdesk attach http://127.0.0.1:7000`).
//!
//! **The credential** is the host's local token (the control channel takes no other):
//! `--token-file FILE` (the copy an admin hands over, docs/security.md), else the environment
//! variable [`TOKEN_VAR`], else the data dir's own `mcp-token`. `TRAPDESK_TOKEN` is not read:
//! it usually holds a named agent's token, which the control channel refuses by design.

mod hub;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::{self, Message, client::IntoClientRequest};
use tokio_util::sync::CancellationToken;

pub use hub::RemoteHub;

use super::control_client;
use super::remote::{Failure, exit};
use crate::control::attach::wire::{Down, Hello, MAX_MESSAGE, NAME_PARAM, ROUTE, Up};

/// The environment variable `attach` reads the credential from when no `--token-file` is
/// given.
pub const TOKEN_VAR: &str = "TRAPDESK_CONTROL_TOKEN";

/// `trapdesk attach`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct AttachArgs {
    /// The host: `http://HOST:PORT` (its MCP address, or your end of an SSH tunnel to it)
    /// [default: env TRAPDESK_CONNECT, else the host running on the data dir].
    #[arg(value_name = "URL", env = "TRAPDESK_CONNECT")]
    pub url: Option<String>,
    /// A file holding the host's local token (the copy its admin gave you) [default: env
    /// TRAPDESK_CONTROL_TOKEN, else the data dir's mcp-token].
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Your name on the host: the other consoles say "approved by NAME" [default: USER@HOST].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Data directory: where the host running here keeps its host.json and token, and where
    /// your editor history is kept [default: env TRAPDESK_DATA_DIR, else the platform's].
    #[arg(long, value_name = "DIR", env = "TRAPDESK_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
}

/// Where the token came from, to say it when the host refuses it.
struct Credential {
    token: String,
    from: String,
}

fn credential(a: &AttachArgs, data_dir: &Path) -> Result<Credential, Failure> {
    let refused = |m: String| Failure::new(exit::UNREACHABLE, m);
    if let Some(f) = &a.token_file {
        let text = std::fs::read_to_string(f)
            .map_err(|e| refused(format!("cannot read the token file {}: {e}", f.display())))?;
        let token = text.trim().to_owned();
        if token.is_empty() {
            return Err(refused(format!("the token file {} is empty", f.display())));
        }
        return Ok(Credential {
            token,
            from: format!("the token in {}", f.display()),
        });
    }
    if let Ok(token) = std::env::var(TOKEN_VAR)
        && !token.trim().is_empty()
    {
        return Ok(Credential {
            token: token.trim().to_owned(),
            from: format!("the token in {TOKEN_VAR}"),
        });
    }
    let path = data_dir.join(trapdesk_core::trust::agents::LOCAL_FILE);
    match trapdesk_core::trust::agents::read_local(data_dir) {
        Ok(Some(token)) => Ok(Credential {
            token,
            from: format!("the local token in {}", path.display()),
        }),
        Ok(None) => Err(refused(format!(
            "no credential: no local token at {} (pass --token-file with the host's token, or the host's --data-dir)",
            path.display()
        ))),
        Err(e) => Err(refused(format!("cannot read the local token: {e}"))),
    }
}

/// `USER@HOST` of this side, the default name.
fn default_name() -> String {
    crate::control::host_name()
}

/// `s` as a URL query value.
fn query_value(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~@".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Runs `trapdesk attach` to its end: detached (quit), or the host went away.
///
/// # Errors
/// Exit code 3 when no host answers, it refuses the credential, or the connection is lost;
/// 2 for a URL that is not `http://` or `https://`.
pub async fn attach(a: AttachArgs) -> Result<(), Failure> {
    let data_dir = a
        .data_dir
        .clone()
        .or_else(trapdesk_core::config::default_data_dir)
        .ok_or_else(|| Failure::new(exit::USAGE, "no home directory: pass --data-dir"))?;
    let url = control_client::target(a.url.as_deref(), &data_dir).map_err(|e| {
        Failure::new(
            exit::UNREACHABLE,
            format!(
                "no trapdesk is running on {} (no live host in {}): start `trapdesk --mcp-only`, pass its --data-dir, or name it: trapdesk attach http://127.0.0.1:7000",
                data_dir.display(),
                e.file().display()
            ),
        )
    })?;
    let base = control_client::base_of(&url).ok_or_else(|| {
        Failure::new(
            exit::USAGE,
            format!("{url:?} is not an http:// or https:// URL"),
        )
    })?;
    let cred = credential(&a, &data_dir)?;
    let name = a.name.clone().unwrap_or_else(default_name);
    let conn = connect_with(&base, &cred, &name).await?;
    let Connection { hub, socket, up_rx } = conn;
    let hello = hub.hello().clone();
    let shutdown = CancellationToken::new();
    let lost: Arc<Mutex<Option<String>>> = Arc::default();
    let pump = tokio::spawn(pump(
        hub.clone(),
        socket,
        up_rx,
        shutdown.clone(),
        lost.clone(),
    ));
    let settings = trapdesk_core::config::Settings {
        data_dir,
        gateway_bind: hello.gateway,
        mcp_bind: hello.mcp,
        scrollback_lines: hello.scrollback,
        secret: crate::tui::Hub::secret(&hub),
        ..trapdesk_core::config::Settings::default()
    };
    let ran = crate::tui::run(hub, settings, shutdown.clone()).await;
    shutdown.cancel();
    let _ = pump.await;
    ran.map_err(|e| Failure::new(exit::FAILED, e.to_string()))?;
    let lost = lost.lock().unwrap_or_else(|p| p.into_inner()).take();
    match lost {
        Some(why) => Err(Failure::new(
            exit::UNREACHABLE,
            format!("lost the host {} at {base}: {why}", hello.host),
        )),
        None => {
            println!(
                "detached from {} at {base}; it keeps running (trapdesk attach to come back)",
                hello.host
            );
            Ok(())
        }
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// An open attach connection whose hello and first update have arrived.
pub struct Connection {
    pub hub: RemoteHub,
    socket: Socket,
    up_rx: mpsc::UnboundedReceiver<Up>,
}

impl Connection {
    /// Keeps the mirror current and carries calls up until `stop` is cancelled or the host
    /// goes away (then `stop` is cancelled too). For tests and benchmarks that drive a
    /// [`RemoteHub`] without the terminal.
    pub fn spawn(self, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let lost = Arc::default();
        tokio::spawn(pump(self.hub, self.socket, self.up_rx, stop, lost))
    }
}

/// Opens `GET <base>/control/attach` as `name` and waits for the host's hello and its first
/// update, so that the console's first frame is the host's state.
///
/// # Errors
/// A [`Failure`] saying what to do: nothing answers, the credential is refused, not a
/// trapdesk that can be attached to.
pub async fn connect(base: &str, cred_token: &str, name: &str) -> Result<Connection, Failure> {
    let cred = Credential {
        token: cred_token.to_owned(),
        from: "the token given".to_owned(),
    };
    connect_with(base, &cred, name).await
}

async fn connect_with(base: &str, cred: &Credential, name: &str) -> Result<Connection, Failure> {
    let unreachable = |why: String| Failure::new(exit::UNREACHABLE, why);
    let req = attach_request(base, cred, name)?;
    let config = tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let connecting = tokio_tungstenite::connect_async_with_config(req, Some(config), true);
    let (mut socket, _) = match tokio::time::timeout(std::time::Duration::from_secs(10), connecting)
        .await
    {
        Err(_) => {
            return Err(unreachable(format!(
                "no trapdesk answers at {base} (no answer within 10 s)"
            )));
        }
        Ok(Ok(s)) => s,
        Ok(Err(tungstenite::Error::Http(resp))) => {
            return Err(unreachable(http_refusal(
                base,
                cred,
                resp.status().as_u16(),
            )));
        }
        Ok(Err(e)) => {
            return Err(unreachable(format!(
                "no trapdesk answers at {base} ({}); start `trapdesk --mcp-only` there, or check the tunnel",
                plain(&e)
            )));
        }
    };
    let (hello, first) = greeting(&mut socket, base).await?;
    let label = format!("{} at {}", hello.host, base.trim_start_matches("http://"));
    let (up_tx, up_rx) = mpsc::unbounded_channel();
    let hub = RemoteHub::new(hello, label, up_tx);
    if let Some(u) = first {
        hub.take(*u);
    }
    Ok(Connection { hub, socket, up_rx })
}

/// The websocket request for `<base>/control/attach` as `name`, with the credential.
fn attach_request(
    base: &str,
    cred: &Credential,
    name: &str,
) -> Result<tungstenite::handshake::client::Request, Failure> {
    let ws_url = format!(
        "{}{}/{ROUTE}?{NAME_PARAM}={}",
        base.replacen("http", "ws", 1),
        crate::control::PREFIX,
        query_value(name)
    );
    let mut req = ws_url
        .as_str()
        .into_client_request()
        .map_err(|e| Failure::new(exit::USAGE, format!("{base}: {e}")))?;
    let bearer = format!("Bearer {}", cred.token);
    let value = tungstenite::http::HeaderValue::from_str(&bearer).map_err(|_| {
        Failure::new(
            exit::UNREACHABLE,
            format!("{} is not a token (it holds control characters)", cred.from),
        )
    })?;
    req.headers_mut()
        .insert(tungstenite::http::header::AUTHORIZATION, value);
    Ok(req)
}

/// What an HTTP answer `code` to the upgrade means for the person attaching.
fn http_refusal(base: &str, cred: &Credential, code: u16) -> String {
    match code {
        401 | 403 => format!(
            "the trapdesk at {base} refused {}: attaching takes the host's local token (<its data dir>/mcp-token, or the copy its admin gave you, with --token-file); an agent's token does not open the control channel",
            cred.from
        ),
        404 => format!(
            "the program at {base} has no /control/attach: not a trapdesk, or one too old to attach to"
        ),
        _ => format!(
            "the program at {base} answered HTTP {code}: not a trapdesk that can be attached to"
        ),
    }
}

/// Reads the host's hello and its first update, and checks that the host runs this version.
async fn greeting(
    socket: &mut Socket,
    base: &str,
) -> Result<(Hello, Option<Box<crate::control::attach::wire::Update>>), Failure> {
    let unreachable = |why: String| Failure::new(exit::UNREACHABLE, why);
    let mut hello: Option<Hello> = None;
    let mut first = None;
    while first.is_none() {
        let msg = tokio::time::timeout(std::time::Duration::from_secs(30), socket.next())
            .await
            .map_err(|_| unreachable(format!("the trapdesk at {base} sent nothing within 30 s")))?;
        let text = match msg {
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Close(_))) | None => {
                return Err(unreachable(format!(
                    "the trapdesk at {base} closed the connection"
                )));
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(unreachable(format!("{base}: {}", plain(&e)))),
        };
        match serde_json::from_str::<Down>(text.as_str()) {
            Ok(Down::Hello(h)) => hello = Some(h),
            Ok(Down::Update(u)) => first = Some(u),
            Ok(Down::Reply { .. }) => {}
            Err(e) => {
                return Err(unreachable(format!(
                    "the trapdesk at {base} speaks another attach protocol ({e}): attach with the same version as the host"
                )));
            }
        }
    }
    let hello =
        hello.ok_or_else(|| unreachable(format!("the trapdesk at {base} sent no hello")))?;
    // The attach channel's words are this build's: another version's may not mean the same.
    let ours = env!("CARGO_PKG_VERSION");
    if hello.version != ours {
        return Err(unreachable(format!(
            "the host at {base} runs trapdesk {}, this is {ours}: attach with the host's version",
            hello.version
        )));
    }
    Ok((hello, first))
}

/// A tungstenite error in a person's words (the innermost cause).
fn plain(e: &tungstenite::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    let mut last = e.to_string();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    last
}

/// The connection's loop: the host's messages into the mirror, the console's calls up.
async fn pump(
    hub: RemoteHub,
    socket: Socket,
    mut up_rx: mpsc::UnboundedReceiver<Up>,
    stop: CancellationToken,
    lost: Arc<Mutex<Option<String>>>,
) {
    let (mut tx, mut rx) = socket.split();
    let why = loop {
        tokio::select! {
            () = stop.cancelled() => {
                // Detaching: a clean close, so the host logs a detach, not an error.
                let _ = tx.send(Message::Close(None)).await;
                break None;
            }
            msg = rx.next() => match msg {
                Some(Ok(Message::Text(t))) => match serde_json::from_str::<Down>(t.as_str()) {
                    Ok(Down::Update(u)) => hub.take(*u),
                    Ok(Down::Reply { id, result }) => hub.reply(id, result),
                    Ok(Down::Hello(_)) => {}
                    Err(e) => tracing::warn!("attach: a message not understood: {e}"),
                },
                Some(Ok(Message::Close(Some(f)))) if !f.reason.is_empty() => break Some(f.reason.to_string()),
                Some(Ok(Message::Close(_))) | None => break Some("it closed the connection".to_owned()),
                Some(Ok(_)) => {}
                Some(Err(e)) => break Some(format!("it stopped, or the connection broke ({})", plain(&e))),
            },
            up = up_rx.recv() => {
                let Some(up) = up else { break None };
                let Ok(text) = serde_json::to_string(&up) else { continue };
                if let Err(e) = tx.send(Message::Text(text.into())).await {
                    break Some(plain(&e));
                }
            }
        }
    };
    hub.closed();
    if why.is_some() {
        *lost.lock().unwrap_or_else(|p| p.into_inner()) = why;
        stop.cancel();
    }
}

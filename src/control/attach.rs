//! `GET /control/attach`: a console in another process (`trapdesk attach`) on one WebSocket.
//!
//! The connection is the console: while it is open it holds the approver (the policy's `ask`
//! goes to it), the screens it watches and the keyboards it holds; when it closes they are
//! let go and nothing else changes (the host, its links and its requests go on). The words
//! are `control/attach/wire.rs`; this side keeps the console's mirror current: it drains the
//! session's events in batches, pulls the snapshots they say changed, and sends both in one
//! update, so a flood of output is one message per batch, never one per line. What one console
//! has on the host, and how its mirror is kept, is `attach/console.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use axum::extract::{Query, State, WebSocketUpgrade};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::{broadcast, mpsc};

use crate::control::attach::wire::{Down, Hello, MAX_MESSAGE, NAME_PARAM, Up, Update};
use trapdesk_core::session::Event;

use super::Control;
use console::Conn;

mod console;
pub mod wire;

/// The close frame's reason when the host stops.
pub const STOPPING: &str = "the host is stopping";

/// Events drained into one update at most (then it is sent and the rest follow).
const BATCH: usize = 4096;
/// How often the stored secret is read again for the consoles (another process may rotate
/// it), as the in-process console reads it while shown.
const SECRET_EVERY: Duration = Duration::from_secs(1);

/// The names of the consoles attached now, so that two of the same person get `#2`.
#[derive(Debug, Default)]
pub(super) struct Names(Mutex<HashSet<String>>);

impl Names {
    fn claim(self: &Arc<Self>, wanted: &str) -> NameHold {
        let mut set = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut name = wanted.to_owned();
        let mut n = 2;
        while set.contains(&name) {
            name = format!("{wanted}#{n}");
            n += 1;
        }
        set.insert(name.clone());
        NameHold {
            names: self.clone(),
            name,
        }
    }
}

struct NameHold {
    names: Arc<Names>,
    name: String,
}

impl Drop for NameHold {
    fn drop(&mut self) {
        let mut set = self.names.0.lock().unwrap_or_else(|p| p.into_inner());
        set.remove(&self.name);
    }
}

/// A name a console gives itself: printable, short; anything else reads `console`.
fn clean_name(given: Option<&String>) -> String {
    given
        .map(|s| {
            s.chars()
                .filter(|c| !c.is_control())
                .take(64)
                .collect::<String>()
        })
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "console".to_owned())
}

pub(super) async fn attach(
    ws: WebSocketUpgrade,
    Query(q): Query<HashMap<String, String>>,
    State(c): State<Arc<Control>>,
) -> Response {
    let wanted = clean_name(q.get(NAME_PARAM));
    ws.max_message_size(MAX_MESSAGE)
        .on_upgrade(move |socket| serve(c, socket, wanted))
}

type Tx = futures_util::stream::SplitSink<WebSocket, Message>;

/// What one turn of the console's loop does.
enum Turn {
    /// Sends this to the console.
    Send(Down),
    /// Nothing to send.
    Next,
    /// The connection ends.
    End,
}

async fn serve(c: Arc<Control>, socket: WebSocket, wanted: String) {
    let session = c.session.clone();
    // Subscribed before the first snapshot, so nothing between the two is missed.
    let mut events = session.subscribe();
    let _approver = session.attach_approver();
    let name = c.names.claim(&wanted);
    tracing::info!("a console attached: {}", name.name);
    let (mut tx, mut rx) = socket.split();
    let mut conn = Conn {
        session: session.clone(),
        name: name.name.clone(),
        sent: HashMap::new(),
        screens: HashMap::new(),
        keyboards: HashMap::new(),
        secret: String::new(),
    };
    if !greet(&mut tx, &mut conn).await {
        return;
    }
    // Replies of calls that wait on a computer (list-files, input) come back from tasks.
    let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<Down>();
    let mut secret_tick = tokio::time::interval(SECRET_EVERY);
    secret_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let turn = tokio::select! {
            msg = rx.next() => on_message(msg, &mut conn, &reply_tx),
            ev = events.recv() => on_events(ev, &mut events, &mut conn, &mut tx).await,
            Some(d) = reply_rx.recv() => Turn::Send(d),
            () = c.stop.cancelled() => {
                say_stopping(&mut tx).await;
                Turn::End
            },
            _ = secret_tick.tick() => secret_changed(&mut conn),
        };
        match turn {
            Turn::Send(down) => {
                if send(&mut tx, &down).await.is_err() {
                    break;
                }
            }
            Turn::Next => {}
            Turn::End => break,
        }
    }
    tracing::info!("a console detached: {}", name.name);
}

/// The hello, then everything as the first updates; false when the console is gone.
async fn greet(tx: &mut Tx, conn: &mut Conn) -> bool {
    let settings = conn.session.settings();
    let hello = Down::Hello(Hello {
        host: host_name(),
        name: conn.name.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        gateway: settings.gateway_bind,
        mcp: settings.mcp_bind,
        scrollback: settings.scrollback_lines,
    });
    if send(tx, &hello).await.is_err() {
        return false;
    }
    for update in conn.resync() {
        if send(tx, &Down::Update(Box::new(update))).await.is_err() {
            return false;
        }
    }
    true
}

/// A message from the console: a call, carried out.
fn on_message(
    msg: Option<Result<Message, axum::Error>>,
    conn: &mut Conn,
    reply_tx: &mpsc::UnboundedSender<Down>,
) -> Turn {
    match msg {
        Some(Ok(Message::Text(t))) => match serde_json::from_str::<Up>(t.as_str()) {
            Ok(up) => match conn.call(up, reply_tx) {
                Some(d) => Turn::Send(d),
                None => Turn::Next,
            },
            Err(e) => {
                tracing::warn!("attach: a message that is not a call: {e}");
                Turn::Next
            }
        },
        Some(Ok(Message::Close(_)) | Err(_)) | None => Turn::End,
        Some(Ok(_)) => Turn::Next,
    }
}

/// Session events, with as many more as are waiting (up to [`BATCH`]), as one update.
async fn on_events(
    ev: Result<Event, broadcast::error::RecvError>,
    events: &mut broadcast::Receiver<Event>,
    conn: &mut Conn,
    tx: &mut Tx,
) -> Turn {
    let mut batch = Vec::new();
    let mut lagged = false;
    match ev {
        Ok(e) => batch.push(e),
        Err(broadcast::error::RecvError::Lagged(_)) => lagged = true,
        Err(broadcast::error::RecvError::Closed) => return Turn::End,
    }
    while batch.len() < BATCH {
        match events.try_recv() {
            Ok(e) => batch.push(e),
            Err(broadcast::error::TryRecvError::Lagged(_)) => lagged = true,
            Err(_) => break,
        }
    }
    if lagged {
        // Events were lost: everything is sent again (output from where the
        // console is, so nothing twice).
        let mut ok = true;
        for update in conn.resync() {
            ok &= send(tx, &Down::Update(Box::new(update))).await.is_ok();
        }
        return if ok { Turn::Next } else { Turn::End };
    }
    Turn::Send(Down::Update(Box::new(conn.update(batch))))
}

/// Said, so that the console can tell a stopping host from a broken link.
async fn say_stopping(tx: &mut Tx) {
    let bye = axum::extract::ws::CloseFrame {
        code: axum::extract::ws::close_code::AWAY,
        reason: STOPPING.into(),
    };
    let _ = tx.send(Message::Close(Some(bye))).await;
}

/// The secret as the console should show it, when it changed.
fn secret_changed(conn: &mut Conn) -> Turn {
    let now = crate::tui::words::secret_now(&conn.session);
    if now == conn.secret {
        return Turn::Next;
    }
    conn.secret.clone_from(&now);
    Turn::Send(Down::Update(Box::new(Update {
        secret: Some(now),
        ..Update::default()
    })))
}

async fn send(tx: &mut Tx, down: &Down) -> Result<(), ()> {
    let text = serde_json::to_string(down).map_err(|e| {
        tracing::error!("attach: cannot encode an update: {e}");
    })?;
    tx.send(Message::Text(text.into())).await.map_err(drop)
}

/// `user@machine` of this process: the host's, as the attached console's marker says it, and
/// an attaching console's default name.
pub fn host_name() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .unwrap_or_else(|_| "trapdesk".to_owned());
    let machine = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{user}@{machine}")
}

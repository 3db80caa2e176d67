//! `GET /control/attach`: a console in another process (`trapdesk attach`) on one WebSocket.
//!
//! The connection is the console: while it is open it holds the approver (the policy's `ask`
//! goes to it), the screens it watches and the keyboards it holds; when it closes they are
//! let go and nothing else changes (the host, its links and its requests go on). The words
//! are `session::attach`; this side keeps the console's mirror current: it drains the
//! session's events in batches, pulls the snapshots they say changed, and sends both in one
//! update, so a flood of output is one message per batch, never one per line.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use axum::extract::{Query, State, WebSocketUpgrade};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use trapdesk_core::session::attach::{
    Call, Down, Hello, MAX_MESSAGE, NAME_PARAM, OutputSlice, PolicyView, ScreenSlice, Timed, Up,
    Update,
};
use trapdesk_core::session::screen::Display;
use trapdesk_core::session::{Event, OutputEntry, Session};

use super::Control;

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

/// What one attached console has on the host.
struct Conn {
    session: Session,
    name: String,
    /// Per computer, the output cursor the console is current to.
    sent: HashMap<String, u64>,
    /// Watched screens and held keyboards, let go when the connection ends.
    screens: HashMap<(String, Display), Box<dyn Send>>,
    keyboards: HashMap<String, Vec<Box<dyn Send>>>,
    secret: String,
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
    let settings = session.settings();
    let hello = Down::Hello(Hello {
        host: host_name(),
        name: conn.name.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        gateway: settings.gateway_bind,
        mcp: settings.mcp_bind,
        scrollback: settings.scrollback_lines,
    });
    if send(&mut tx, &hello).await.is_err() {
        return;
    }
    for update in conn.resync() {
        if send(&mut tx, &Down::Update(Box::new(update)))
            .await
            .is_err()
        {
            return;
        }
    }
    // Replies of calls that wait on a computer (list-files, input) come back from tasks.
    let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<Down>();
    let mut secret_tick = tokio::time::interval(SECRET_EVERY);
    secret_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let down = tokio::select! {
            msg = rx.next() => match msg {
                Some(Ok(Message::Text(t))) => match serde_json::from_str::<Up>(t.as_str()) {
                    Ok(up) => match conn.call(up, &reply_tx) {
                        Some(d) => d,
                        None => continue,
                    },
                    Err(e) => {
                        tracing::warn!("attach: a message that is not a call: {e}");
                        continue;
                    }
                },
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                Some(Ok(_)) => continue,
            },
            ev = events.recv() => {
                let mut batch = Vec::new();
                let mut lagged = false;
                match ev {
                    Ok(e) => batch.push(e),
                    Err(broadcast::error::RecvError::Lagged(_)) => lagged = true,
                    Err(broadcast::error::RecvError::Closed) => break,
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
                        ok &= send(&mut tx, &Down::Update(Box::new(update))).await.is_ok();
                    }
                    if !ok {
                        break;
                    }
                    continue;
                }
                Down::Update(Box::new(conn.update(batch)))
            },
            Some(d) = reply_rx.recv() => d,
            () = c.stop.cancelled() => {
                // Said, so that the console can tell a stopping host from a broken link.
                let bye = axum::extract::ws::CloseFrame {
                    code: axum::extract::ws::close_code::AWAY,
                    reason: STOPPING.into(),
                };
                let _ = tx.send(Message::Close(Some(bye))).await;
                break;
            },
            _ = secret_tick.tick() => {
                let now = conn.session.secret_now();
                if now == conn.secret {
                    continue;
                }
                conn.secret.clone_from(&now);
                Down::Update(Box::new(Update { secret: Some(now), ..Update::default() }))
            },
        };
        if send(&mut tx, &down).await.is_err() {
            break;
        }
    }
    tracing::info!("a console detached: {}", name.name);
}

async fn send(
    tx: &mut futures_util::stream::SplitSink<WebSocket, Message>,
    down: &Down,
) -> Result<(), ()> {
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

impl Conn {
    /// Everything, as the first updates: the snapshots, then each computer's output from
    /// where this console is (one update per computer, so that no message is huge).
    fn resync(&mut self) -> Vec<Update> {
        let s = &self.session;
        let now = Instant::now();
        self.secret = s.secret_now();
        let computers = s.computers();
        let mut first = Update {
            resync: true,
            pending: Some(
                s.pending()
                    .into_iter()
                    .map(|p| Timed::pending(p, now))
                    .collect(),
            ),
            tool_calls: Some(s.tool_calls()),
            approvals: Some(
                s.approvals()
                    .into_iter()
                    .map(|a| Timed::approval(a, now))
                    .collect(),
            ),
            policy: Some(self.policy()),
            secret: Some(self.secret.clone()),
            paused: Some(s.paused().is_some()),
            screens: self
                .screens
                .keys()
                .map(|(id, display)| ScreenSlice {
                    trapos_id: id.clone(),
                    display: display.clone(),
                    frame: s.screen(id, display),
                })
                .collect(),
            ..Update::default()
        };
        let ids: Vec<String> = computers.iter().map(|c| c.trapos_id.clone()).collect();
        first.computers = Some(computers);
        let mut all = vec![first];
        for id in ids {
            if let Some(slice) = self.output(&id) {
                all.push(Update {
                    output: vec![slice],
                    ..Update::default()
                });
            }
        }
        all
    }

    fn policy(&self) -> PolicyView {
        PolicyView {
            lines: self.session.policy_lines(),
            source: self.session.policy_source(),
        }
    }

    /// The computer's output the console does not have yet. The last line, while still open,
    /// is sent again when it grows (same `seq`: the console replaces it).
    fn output(&mut self, id: &str) -> Option<OutputSlice> {
        let after = self.sent.get(id).copied().unwrap_or(0);
        let items = self.session.output_since(id, after);
        let last = items.last()?;
        let open = matches!(
            last.entry,
            OutputEntry::Line {
                complete: false,
                ..
            }
        );
        self.sent
            .insert(id.to_owned(), if open { last.seq - 1 } else { last.seq });
        Some(OutputSlice::new(id, items))
    }

    /// One batch of events as an update: what they changed, then the events themselves (an
    /// output event once per computer, without its text: the slice has the text).
    fn update(&mut self, batch: Vec<Event>) -> Update {
        let mut u = Update::default();
        let (mut computers, mut pending, mut approvals, mut paused) = (false, false, false, false);
        // Computers whose entry changed; `computers` is set when the list's members did.
        let mut changed: Vec<String> = Vec::new();
        let mut output: Vec<String> = Vec::new();
        let mut screens: Vec<(String, Display)> = Vec::new();
        let mut said_output: HashSet<String> = HashSet::new();
        for ev in batch {
            match &ev {
                Event::Linked { .. } | Event::Unlinked { .. } => computers = true,
                Event::ComputerChanged { trapos_id } => changed.push(trapos_id.clone()),
                Event::RequestStarted { info } => {
                    pending = true;
                    changed.push(info.trapos_id.clone());
                    output.push(info.trapos_id.clone());
                }
                Event::RequestFinished { trapos_id, .. } => {
                    pending = true;
                    changed.push(trapos_id.clone());
                    output.push(trapos_id.clone());
                }
                Event::Output { trapos_id, .. } => {
                    output.push(trapos_id.clone());
                    if !said_output.insert(trapos_id.clone()) {
                        continue;
                    }
                    u.events.push(Event::Output {
                        trapos_id: trapos_id.clone(),
                        request_id: None,
                        stream: trapdesk_core::session::Stream::Out,
                        text: String::new(),
                    });
                    continue;
                }
                Event::ScreenChanged { trapos_id, display }
                    if self
                        .screens
                        .contains_key(&(trapos_id.clone(), display.clone())) =>
                {
                    screens.push((trapos_id.clone(), display.clone()));
                }
                Event::ApprovalAsked { .. }
                | Event::ApprovalAnswered { .. }
                | Event::PolicyChanged => (approvals, pending) = (true, true),
                Event::PauseChanged => paused = true,
                _ => {}
            }
            u.events.push(ev);
        }
        let s = self.session.clone();
        let now = Instant::now();
        changed.sort();
        changed.dedup();
        if !computers {
            for id in &changed {
                match s.computer(id) {
                    Some(c) => u.computers_changed.push(c),
                    // Gone from the list meanwhile: the whole list says so.
                    None => computers = true,
                }
            }
        }
        if computers {
            u.computers_changed.clear();
            u.computers = Some(s.computers());
        }
        if pending {
            u.pending = Some(
                s.pending()
                    .into_iter()
                    .map(|p| Timed::pending(p, now))
                    .collect(),
            );
        }
        if approvals {
            u.approvals = Some(
                s.approvals()
                    .into_iter()
                    .map(|a| Timed::approval(a, now))
                    .collect(),
            );
            u.policy = Some(self.policy());
        }
        if paused {
            u.paused = Some(s.paused().is_some());
        }
        output.sort();
        output.dedup();
        for id in output {
            if let Some(slice) = self.output(&id) {
                u.output.push(slice);
            }
        }
        screens.sort();
        screens.dedup();
        for (id, display) in screens {
            u.screens.push(ScreenSlice {
                frame: s.screen(&id, &display),
                trapos_id: id,
                display,
            });
        }
        u
    }

    /// Carries out one call. The answer is returned when it is known at once; a call that
    /// waits on a computer answers later through `later`.
    fn call(&mut self, up: Up, later: &mpsc::UnboundedSender<Down>) -> Option<Down> {
        use serde_json::Value;
        let id = up.id;
        let reply = |result: Result<Value, String>| Some(Down::Reply { id, result });
        let done = |r: Result<(), String>| reply(r.map(|()| Value::Null));
        let s = self.session.clone();
        match up.call {
            Call::Run {
                target,
                kind,
                payload,
                deadline_ms,
            } => done(s.person_run(
                &target,
                kind,
                payload,
                deadline_ms.map(Duration::from_millis),
            )),
            Call::ListFiles { target, dir } => {
                let later = later.clone();
                tokio::spawn(async move {
                    let result = s.person_list_files(&target, &dir).await;
                    let _ = later.send(Down::Reply { id, result });
                });
                None
            }
            Call::Input { target, steps } => match s.person_input(&target, steps) {
                Err(e) => reply(Err(e)),
                Ok(taken) => {
                    let later = later.clone();
                    tokio::spawn(async move {
                        let result = taken.await.map(|()| Value::Null);
                        let _ = later.send(Down::Reply { id, result });
                    });
                    None
                }
            },
            Call::Touch {
                target,
                monitor,
                x,
                y,
            } => {
                // As the host's own console touches (tui/hub.rs): the person's, not waiting on
                // the keyboard; the answer comes once the computer queued the event.
                let later = later.clone();
                tokio::spawn(async move {
                    let result = s
                        .send_touch(
                            &target,
                            &monitor,
                            x,
                            y,
                            trapdesk_core::session::Origin::Person,
                        )
                        .await
                        .map(|_| Value::Null)
                        .map_err(|e| e.to_string());
                    let _ = later.send(Down::Reply { id, result });
                });
                None
            }
            Call::Cancel { request_id } => done(s.person_cancel(&request_id)),
            Call::Answer { request_id, answer } => {
                done(s.answer_by(&request_id, answer, &self.name))
            }
            Call::ReloadPolicy => reply(s.reload_policy_words().map(Value::String)),
            Call::Pause => reply(Ok(Value::String(s.pause_words()))),
            Call::Resume => reply(Ok(Value::String(s.resume_words()))),
            Call::WatchScreen {
                trapos_id,
                display,
                on,
            } => {
                if !on {
                    self.screens.remove(&(trapos_id, display));
                    return reply(Ok(Value::Bool(false)));
                }
                match s.watch_screen(&trapos_id, display.clone()) {
                    Ok(w) => {
                        self.screens
                            .insert((trapos_id.clone(), display.clone()), Box::new(w));
                        // The frame the host has now, at once; later ones follow its events.
                        let _ = later.send(Down::Update(Box::new(Update {
                            screens: vec![ScreenSlice {
                                frame: s.screen(&trapos_id, &display),
                                trapos_id,
                                display,
                            }],
                            ..Update::default()
                        })));
                        reply(Ok(Value::Bool(true)))
                    }
                    Err(e) => reply(Err(e.to_string())),
                }
            }
            Call::RefreshStatus { trapos_id } => {
                s.refresh_status(&trapos_id);
                done(Ok(()))
            }
            Call::HoldKeyboard { trapos_id, on } => {
                let held = self.keyboards.entry(trapos_id.clone()).or_default();
                if on {
                    held.push(Box::new(s.hold_keyboard(&trapos_id)));
                } else {
                    held.pop();
                }
                done(Ok(()))
            }
        }
    }
}

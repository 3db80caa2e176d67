//! The legacy sessions' request streams, kept so that a call which ends while its client's
//! stream is down is delivered when the client resumes, and ended with their session.
//!
//! rmcp's [`LocalSessionManager`] caches each request stream's events for `Last-Event-ID`
//! resumes, but drops a stream's cache the moment its response is sent (3.11,
//! `session/local.rs`, `handle_server_message`): a response sent while the connection was down
//! is gone, and the resume gets an empty stream. So each request stream is pumped here instead:
//! its events are kept (the last [`KEPT`]) while the call runs, and after it ended for
//! [`RESUME_WINDOW`] unless the whole stream, response included, was handed to the connection.
//! A `GET` with `Last-Event-ID` replays what came after that event and follows the call live.
//!
//! `DELETE` of a session first cancels its calls still running (a `notifications/cancelled`
//! each, as if the client had sent it, so each request is cancelled on its computer and its row
//! ends cancelled), then closes it. Detached runs are no call of the session: they go on.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use futures_util::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use tokio::sync::mpsc;

use super::RESUME_WINDOW;

/// Events of one request stream kept for a resume: the priming event, progress, the result.
/// Older progress is dropped first; the result is always the last event.
const KEPT: usize = 64;

/// Why a session's running calls were cancelled, as the cancellation says.
pub const ENDED: &str = "the client ended its MCP session (HTTP DELETE)";

type Streams = Arc<Mutex<HashMap<(SessionId, u64), Kept>>>;

/// One request stream: its events so far and where they go live.
struct Kept {
    request: Option<RequestId>,
    events: VecDeque<ServerSseMessage>,
    live: Option<mpsc::Sender<ServerSseMessage>>,
    ended: Option<Instant>,
}

/// rmcp's local session manager with request streams that outlive their connection.
#[derive(Default)]
pub struct Sessions {
    inner: LocalSessionManager,
    streams: Streams,
}

impl Sessions {
    pub fn new(inner: LocalSessionManager) -> Self {
        Sessions {
            inner,
            streams: Streams::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(SessionId, u64), Kept>> {
        self.streams.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets ended streams past the window.
    fn evict(&self) {
        self.lock()
            .retain(|_, k| k.ended.is_none_or(|at| at.elapsed() < RESUME_WINDOW));
    }
}

/// `<index>/<http request>`: rmcp's event ids on request streams.
fn parse_event_id(id: &str) -> Option<(usize, u64)> {
    let (index, request) = id.split_once('/')?;
    Some((index.parse().ok()?, request.parse().ok()?))
}

fn index_of(event: &ServerSseMessage) -> Option<usize> {
    event
        .event_id
        .as_deref()
        .and_then(parse_event_id)
        .map(|(i, _)| i)
}

/// Moves events from rmcp's stream into the kept list and on to whoever follows it live.
async fn pump(
    streams: Streams,
    key: (SessionId, u64),
    mut from: impl Stream<Item = ServerSseMessage> + Unpin,
) {
    while let Some(event) = from.next().await {
        let live = {
            let mut map = streams.lock().unwrap_or_else(|p| p.into_inner());
            let Some(kept) = map.get_mut(&key) else {
                return;
            };
            if kept.events.len() >= KEPT {
                kept.events.pop_front();
            }
            kept.events.push_back(event.clone());
            kept.live.clone()
        };
        // A connection that went away: the event is kept for a resume.
        if let Some(tx) = live {
            let _ = tx.send(event).await;
        }
    }
    let mut map = streams.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(kept) = map.get_mut(&key) {
        kept.ended = Some(Instant::now());
        kept.live = None;
    }
}

/// What the HTTP response streams: a request stream's events, live. Drained to its end, it
/// frees the kept events (the connection took them all); dropped before, it leaves them for a
/// resume.
struct Follow {
    rx: mpsc::Receiver<ServerSseMessage>,
    streams: Streams,
    key: (SessionId, u64),
    done: bool,
}

impl Stream for Follow {
    type Item = ServerSseMessage;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.rx.poll_recv(cx);
        if let Poll::Ready(None) = next {
            self.done = true;
        }
        next
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        if self.done {
            let mut map = self.streams.lock().unwrap_or_else(|p| p.into_inner());
            if map.get(&self.key).is_some_and(|k| k.ended.is_some()) {
                map.remove(&self.key);
            }
        }
    }
}

type Events = Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync + 'static>>;

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let running: Vec<RequestId> = {
            let mut map = self.lock();
            let running = map
                .iter()
                .filter(|((s, _), k)| s == id && k.ended.is_none())
                .filter_map(|(_, k)| k.request.clone())
                .collect();
            map.retain(|(s, _), _| s != id);
            running
        };
        for request in running {
            let cancel = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": request, "reason": ENDED}});
            if let Ok(message) = serde_json::from_value::<ClientJsonRpcMessage>(cancel) {
                // A session already gone has nothing running to cancel.
                let _ = self.inner.accept_message(id, message).await;
            }
        }
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.evict();
        let request = match &message {
            ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
            _ => None,
        };
        let mut from = Box::pin(self.inner.create_stream(id, message).await?);
        // rmcp's first event is the priming one, whose id names the HTTP request.
        let first = from.next().await;
        let Some((_, http)) = first
            .as_ref()
            .and_then(|e| e.event_id.as_deref())
            .and_then(parse_event_id)
        else {
            // No priming event (rmcp configured without one): not resumable, served as is.
            let events: Events = Box::pin(futures_util::stream::iter(first).chain(from));
            return Ok(events);
        };
        let key = (id.clone(), http);
        let (tx, rx) = mpsc::channel(KEPT);
        self.lock().insert(
            key.clone(),
            Kept {
                request,
                events: VecDeque::new(),
                live: Some(tx),
                ended: None,
            },
        );
        let from = futures_util::stream::iter(first).chain(from);
        tokio::spawn(pump(self.streams.clone(), key.clone(), Box::pin(from)));
        let follow: Events = Box::pin(Follow {
            rx,
            streams: self.streams.clone(),
            key,
            done: false,
        });
        Ok(follow)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.evict();
        if let Some((after, http)) = parse_event_id(&last_event_id) {
            let key = (id.clone(), http);
            let mut map = self.lock();
            if let Some(kept) = map.get_mut(&key) {
                let missed: Vec<ServerSseMessage> = kept
                    .events
                    .iter()
                    .filter(|e| index_of(e).is_none_or(|i| i > after))
                    .cloned()
                    .collect();
                let (tx, rx) = mpsc::channel(missed.len() + KEPT);
                for event in missed {
                    // Room was made for each: this cannot fail.
                    let _ = tx.try_send(event);
                }
                // An ended call's stream ends after the replay; a running one follows it.
                if kept.ended.is_none() {
                    kept.live = Some(tx);
                }
                let follow: Events = Box::pin(Follow {
                    rx,
                    streams: self.streams.clone(),
                    key,
                    done: false,
                });
                return Ok(follow);
            }
        }
        let events: Events = Box::pin(self.inner.resume(id, last_event_id).await?);
        Ok(events)
    }
}

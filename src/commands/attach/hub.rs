//! [`RemoteHub`]: the console's [`Hub`] over the attach channel. Reads come from a mirror of
//! the host's session that the host keeps current (`control::attach::wire::Update`); calls go up
//! the socket and their answers come back as futures. The mirror is updated before the
//! events that changed it are passed on, so the console pulls what it was told of.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;

use crate::control::attach::wire::{Call, Hello, Up, Update};
use crate::tui::hub::{Hold, Hub};
use trapdesk_core::session::screen::{Display, ScreenFrame};
use trapdesk_core::session::{
    Answer, Approval, ComputerInfo, Event, OutputItem, PendingInfo, ToolCall,
};
use trapdesk_proto::protocol::RequestBody;

mod mirror;

use mirror::Mirror;

/// The console's side of one attach connection.
#[derive(Clone)]
pub struct RemoteHub {
    inner: Arc<Inner>,
}

struct Inner {
    mirror: Mutex<Mirror>,
    events: broadcast::Sender<Event>,
    up: mpsc::UnboundedSender<Up>,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>,
    next_id: AtomicU64,
    hello: Hello,
    /// How the host is named on screen: `trapdesk@mc at 127.0.0.1:7000`.
    label: String,
}

impl RemoteHub {
    pub(super) fn new(hello: Hello, label: String, up: mpsc::UnboundedSender<Up>) -> RemoteHub {
        let (events, _) = broadcast::channel(4096);
        RemoteHub {
            inner: Arc::new(Inner {
                mirror: Mutex::new(Mirror::new(hello.scrollback)),
                events,
                up,
                waiting: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                hello,
                label,
            }),
        }
    }

    pub(super) fn hello(&self) -> &Hello {
        &self.inner.hello
    }

    fn mirror(&self) -> MutexGuard<'_, Mirror> {
        self.inner.mirror.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes an update from the host and tells the console what changed.
    pub(super) fn take(&self, u: Update) {
        let events = self.mirror().apply(u, Instant::now());
        for e in events {
            let _ = self.inner.events.send(e);
        }
    }

    /// The answer to call `id` arrived.
    pub(super) fn reply(&self, id: u64, result: Result<Value, String>) {
        let waiter = self
            .inner
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(w) = waiter {
            let _ = w.send(result);
        }
    }

    /// The connection ended: every call still waiting fails.
    pub(super) fn closed(&self) {
        self.inner
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Sends a call; the future is its answer.
    fn call(&self, call: Call) -> impl Future<Output = Result<Value, String>> + Send + 'static {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.inner
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        let sent = self.inner.up.send(Up { id, call }).is_ok();
        async move {
            if !sent {
                return Err(GONE.to_owned());
            }
            rx.await.unwrap_or_else(|_| Err(GONE.to_owned()))
        }
    }

    /// A call whose answer nobody waits for (letting go of a screen or a keyboard).
    fn tell(&self, call: Call) {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let _ = self.inner.up.send(Up { id, call });
    }
}

const GONE: &str = "the connection to the host is gone";

/// Lets go of something held on the host (a screen, a keyboard) when dropped.
struct Release {
    hub: RemoteHub,
    call: Option<Call>,
}

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            self.hub.tell(call);
        }
    }
}

fn unit(r: Result<Value, String>) -> Result<(), String> {
    r.map(drop)
}

fn text(r: Result<Value, String>) -> String {
    match r {
        Ok(Value::String(s)) => s,
        Ok(v) => v.to_string(),
        Err(e) => e,
    }
}

impl Hub for RemoteHub {
    fn name(&self) -> String {
        self.inner.hello.name.clone()
    }

    fn attached_to(&self) -> Option<String> {
        Some(self.inner.label.clone())
    }

    /// The connection itself is the approver: the host holds it while the socket is open.
    fn attach_approver(&self) -> Hold {
        Box::new(())
    }

    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    fn computers(&self) -> Vec<ComputerInfo> {
        self.mirror().computers.clone()
    }

    fn pending(&self) -> Vec<PendingInfo> {
        self.mirror().pending.clone()
    }

    fn tool_calls(&self) -> Vec<ToolCall> {
        self.mirror().tool_calls.iter().cloned().collect()
    }

    fn approvals(&self) -> Vec<Approval> {
        self.mirror().approvals.clone()
    }

    fn policy_lines(&self) -> Vec<String> {
        self.mirror().policy_lines.clone()
    }

    fn policy_source(&self) -> String {
        self.mirror().policy_source.clone()
    }

    fn secret(&self) -> String {
        self.mirror().secret.clone()
    }

    fn output_since(&self, trapos_id: &str, after: u64) -> Vec<OutputItem> {
        let m = self.mirror();
        let Some(ring) = m.output.get(trapos_id) else {
            return Vec::new();
        };
        let start = ring.partition_point(|i| i.seq <= after);
        ring.range(start..).cloned().collect()
    }

    fn watch_screen(&self, trapos_id: &str, display: &Display) -> Option<Hold> {
        // The answer (and the first frame) come later; the view shows what it has meanwhile.
        drop(self.call(Call::WatchScreen {
            trapos_id: trapos_id.to_owned(),
            display: display.clone(),
            on: true,
        }));
        Some(Box::new(Release {
            hub: self.clone(),
            call: Some(Call::WatchScreen {
                trapos_id: trapos_id.to_owned(),
                display: display.clone(),
                on: false,
            }),
        }))
    }

    fn screen(&self, trapos_id: &str, display: &Display) -> Option<ScreenFrame> {
        self.mirror()
            .screens
            .get(&(trapos_id.to_owned(), display.clone()))
            .cloned()
    }

    fn refresh_status(&self, trapos_id: &str) {
        // The status comes back on the computer's entry, like any change of it.
        self.tell(Call::RefreshStatus {
            trapos_id: trapos_id.to_owned(),
        });
    }

    fn run(
        &self,
        target: &str,
        body: RequestBody,
        deadline: Option<Duration>,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        // The attach channel carries the body as its kind and its JSON, as the wire does.
        let answer = self.call(Call::Run {
            target: target.to_owned(),
            kind: body.kind(),
            payload: body.to_value(),
            deadline_ms: deadline.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        });
        async move { unit(answer.await) }
    }

    fn list_files(
        &self,
        target: &str,
        dir: &str,
    ) -> impl Future<Output = Result<Value, String>> + Send + 'static {
        self.call(Call::ListFiles {
            target: target.to_owned(),
            dir: dir.to_owned(),
        })
    }

    fn input(
        &self,
        target: &str,
        steps: Vec<Value>,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        let answer = self.call(Call::Input {
            target: target.to_owned(),
            steps,
        });
        async move { unit(answer.await) }
    }

    fn touch(
        &self,
        target: &str,
        monitor: &str,
        x: u32,
        y: u32,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        let answer = self.call(Call::Touch {
            target: target.to_owned(),
            monitor: monitor.to_owned(),
            x,
            y,
        });
        async move { unit(answer.await) }
    }

    fn cancel(
        &self,
        request_id: &str,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        let answer = self.call(Call::Cancel {
            request_id: request_id.to_owned(),
        });
        async move { unit(answer.await) }
    }

    fn answer(
        &self,
        request_id: &str,
        answer: Answer,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        let answered = self.call(Call::Answer {
            request_id: request_id.to_owned(),
            answer,
        });
        async move { unit(answered.await) }
    }

    fn reload_policy(&self) -> impl Future<Output = Result<String, String>> + Send + 'static {
        let answer = self.call(Call::ReloadPolicy);
        async move {
            answer.await.map(|v| match v {
                Value::String(s) => s,
                v => v.to_string(),
            })
        }
    }

    fn pause(&self) -> impl Future<Output = String> + Send + 'static {
        let answer = self.call(Call::Pause);
        async move { text(answer.await) }
    }

    fn resume(&self) -> impl Future<Output = String> + Send + 'static {
        let answer = self.call(Call::Resume);
        async move { text(answer.await) }
    }

    fn paused(&self) -> bool {
        self.mirror().paused
    }

    fn hold_keyboard(&self, trapos_id: &str) -> Hold {
        self.tell(Call::HoldKeyboard {
            trapos_id: trapos_id.to_owned(),
            on: true,
        });
        Box::new(Release {
            hub: self.clone(),
            call: Some(Call::HoldKeyboard {
                trapos_id: trapos_id.to_owned(),
                on: false,
            }),
        })
    }
}

#[cfg(test)]
mod tests;

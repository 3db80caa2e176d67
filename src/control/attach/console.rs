//! What one attached console has on the host ([`Conn`]): the output cursors, screens and
//! keyboards of its mirror, the updates that keep that mirror current, and the calls it makes.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::control::attach::wire::{
    Call, Down, OutputSlice, PolicyView, ScreenSlice, Timed, Up, Update,
};
use crate::tui::words;
use trapdesk_core::session::screen::Display;
use trapdesk_core::session::{Event, OutputEntry, Session};

/// What one attached console has on the host.
pub(super) struct Conn {
    pub(super) session: Session,
    pub(super) name: String,
    /// Per computer, the output cursor the console is current to.
    pub(super) sent: HashMap<String, u64>,
    /// Watched screens and held keyboards, let go when the connection ends.
    pub(super) screens: HashMap<(String, Display), Box<dyn Send>>,
    pub(super) keyboards: HashMap<String, Vec<Box<dyn Send>>>,
    pub(super) secret: String,
}

impl Conn {
    /// Everything, as the first updates: the snapshots, then each computer's output from
    /// where this console is (one update per computer, so that no message is huge).
    pub(super) fn resync(&mut self) -> Vec<Update> {
        let s = &self.session;
        let now = Instant::now();
        self.secret = words::secret_now(s);
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
            lines: words::policy_lines(&self.session),
            source: words::policy_source(&self.session),
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
    pub(super) fn update(&mut self, batch: Vec<Event>) -> Update {
        let mut u = Update::default();
        let mut t = self.touched(batch, &mut u.events);
        let s = self.session.clone();
        let now = Instant::now();
        t.changed.sort();
        t.changed.dedup();
        if !t.computers {
            for id in &t.changed {
                match s.computer(id) {
                    Some(c) => u.computers_changed.push(c),
                    // Gone from the list meanwhile: the whole list says so.
                    None => t.computers = true,
                }
            }
        }
        if t.computers {
            u.computers_changed.clear();
            u.computers = Some(s.computers());
        }
        if t.pending {
            u.pending = Some(
                s.pending()
                    .into_iter()
                    .map(|p| Timed::pending(p, now))
                    .collect(),
            );
        }
        if t.approvals {
            u.approvals = Some(
                s.approvals()
                    .into_iter()
                    .map(|a| Timed::approval(a, now))
                    .collect(),
            );
            u.policy = Some(self.policy());
        }
        if t.paused {
            u.paused = Some(s.paused().is_some());
        }
        self.slices(&mut u, t.output, t.screens);
        u
    }

    /// What a batch of events touched; the events to pass on go to `events`.
    fn touched(&self, batch: Vec<Event>, events: &mut Vec<Event>) -> Touched {
        let mut t = Touched::default();
        let mut said_output: HashSet<String> = HashSet::new();
        for ev in batch {
            match &ev {
                Event::Linked { .. } | Event::Unlinked { .. } => t.computers = true,
                Event::ComputerChanged { trapos_id } => t.changed.push(trapos_id.clone()),
                Event::RequestStarted { info } => {
                    t.pending = true;
                    t.changed.push(info.trapos_id.clone());
                    t.output.push(info.trapos_id.clone());
                }
                Event::RequestFinished { trapos_id, .. } => {
                    t.pending = true;
                    t.changed.push(trapos_id.clone());
                    t.output.push(trapos_id.clone());
                }
                Event::Output { trapos_id, .. } => {
                    t.output.push(trapos_id.clone());
                    if !said_output.insert(trapos_id.clone()) {
                        continue;
                    }
                    events.push(Event::Output {
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
                    t.screens.push((trapos_id.clone(), display.clone()));
                }
                Event::ApprovalAsked { .. }
                | Event::ApprovalAnswered { .. }
                | Event::PolicyChanged => (t.approvals, t.pending) = (true, true),
                Event::PauseChanged => t.paused = true,
                _ => {}
            }
            events.push(ev);
        }
        t
    }

    /// The new output of each computer in `output` and the frames of the watched `screens`.
    fn slices(
        &mut self,
        u: &mut Update,
        mut output: Vec<String>,
        mut screens: Vec<(String, Display)>,
    ) {
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
                frame: self.session.screen(&id, &display),
                trapos_id: id,
                display,
            });
        }
    }

    /// Carries out one call. The answer is returned when it is known at once; a call that
    /// waits on a computer answers later through `later`.
    pub(super) fn call(&mut self, up: Up, later: &mpsc::UnboundedSender<Down>) -> Option<Down> {
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
            } => done(
                // The payload comes as JSON over the channel: one not of its kind is refused
                // here, as the computer would refuse it.
                trapdesk_proto::protocol::RequestBody::from_value(kind, payload)
                    .map_err(|e| format!("{kind}: {e}"))
                    .and_then(|body| {
                        words::person_run(&s, &target, body, deadline_ms.map(Duration::from_millis))
                    }),
            ),
            Call::ListFiles { target, dir } => answer_later(later, id, async move {
                words::person_list_files(&s, &target, &dir).await
            }),
            Call::Input { target, steps } => match words::person_input(&s, &target, steps) {
                Err(e) => reply(Err(e)),
                Ok(taken) => {
                    answer_later(later, id, async move { taken.await.map(|()| Value::Null) })
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
                answer_later(later, id, async move {
                    s.send_touch(
                        &target,
                        &monitor,
                        x,
                        y,
                        trapdesk_core::session::Origin::Person,
                    )
                    .await
                    .map(|_| Value::Null)
                    .map_err(|e| e.to_string())
                })
            }
            Call::Cancel { request_id } => done(words::person_cancel(&s, &request_id)),
            Call::Answer { request_id, answer } => {
                done(words::answer_by(&s, &request_id, answer, &self.name))
            }
            Call::ReloadPolicy => reply(words::reload_policy_words(&s).map(Value::String)),
            Call::Pause => reply(Ok(Value::String(words::pause_words(&s)))),
            Call::Resume => reply(Ok(Value::String(words::resume_words(&s)))),
            Call::WatchScreen {
                trapos_id,
                display,
                on,
            } => reply(self.watch_screen(trapos_id, display, on, later)),
            Call::RefreshStatus { trapos_id } => {
                s.refresh_status(&trapos_id);
                done(Ok(()))
            }
            Call::HoldKeyboard { trapos_id, on } => {
                self.hold_keyboard(trapos_id, on);
                done(Ok(()))
            }
        }
    }

    /// Starts or stops watching a display; the frame the host has now goes out at once, later
    /// ones follow its events.
    fn watch_screen(
        &mut self,
        trapos_id: String,
        display: Display,
        on: bool,
        later: &mpsc::UnboundedSender<Down>,
    ) -> Result<serde_json::Value, String> {
        if !on {
            self.screens.remove(&(trapos_id, display));
            return Ok(serde_json::Value::Bool(false));
        }
        let s = &self.session;
        let w = s
            .watch_screen(&trapos_id, display.clone())
            .map_err(|e| e.to_string())?;
        self.screens
            .insert((trapos_id.clone(), display.clone()), Box::new(w));
        let _ = later.send(Down::Update(Box::new(Update {
            screens: vec![ScreenSlice {
                frame: self.session.screen(&trapos_id, &display),
                trapos_id,
                display,
            }],
            ..Update::default()
        })));
        Ok(serde_json::Value::Bool(true))
    }

    /// Holds the computer's keyboard once more, or lets go of one hold.
    fn hold_keyboard(&mut self, trapos_id: String, on: bool) {
        let s = self.session.clone();
        let held = self.keyboards.entry(trapos_id.clone()).or_default();
        if on {
            held.push(Box::new(s.hold_keyboard(&trapos_id)));
        } else {
            held.pop();
        }
    }
}

/// What a batch of events touched: which lists to send again, and whose entry, output and
/// screens.
#[derive(Default)]
struct Touched {
    computers: bool,
    pending: bool,
    approvals: bool,
    paused: bool,
    /// Computers whose entry changed; `computers` is set when the list's members did.
    changed: Vec<String>,
    output: Vec<String>,
    screens: Vec<(String, Display)>,
}

/// Answers `id` through `later` once `answer` is known.
fn answer_later(
    later: &mpsc::UnboundedSender<Down>,
    id: u64,
    answer: impl std::future::Future<Output = Result<serde_json::Value, String>> + Send + 'static,
) -> Option<Down> {
    let later = later.clone();
    tokio::spawn(async move {
        let result = answer.await;
        let _ = later.send(Down::Reply { id, result });
    });
    None
}

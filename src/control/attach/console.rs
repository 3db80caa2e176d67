//! What one attached console has on the host ([`Conn`]): the output cursors, screens and
//! keyboards of its mirror, the updates that keep that mirror current, and the calls it makes.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::control::attach::wire::{
    Call, Down, OutputSlice, PolicyView, ScreenSlice, Timed, Up, Update,
};
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
    pub(super) fn update(&mut self, batch: Vec<Event>) -> Update {
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

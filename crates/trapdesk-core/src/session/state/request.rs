//! A request's way through the state: where it goes, its start recorded, its deadline kept,
//! and its end, exactly once. Sending it (its computer's queue pumped) is `send.rs`.

use crate::session::LogEvent;
use crate::session::model::Deadline;
use std::time::{Duration, SystemTime};
use trapdesk_proto::protocol::ErrorCode;

use serde_json::Value;
use tokio::time::Instant;

use super::deadlines::Wake;
use super::{Admitted, EVENT_TEXT_MAX, Pending, State};
use crate::session::approval::{Approval, Gate};
use crate::session::model::{
    Ending, Event, Origin, OutputEntry, PendingInfo, RequestError, RequestSpec, StartEntry, Status,
    Stream,
};
use crate::session::summary;
use crate::session::transcript::Extra;
use trapdesk_proto::protocol::Kind;

impl State {
    /// Frees the slot a sent request held (or its place in the queue).
    fn release(&mut self, p: &Pending) {
        let Some(computer) = self.computers.get_mut(&p.info.trapos_id) else {
            return;
        };
        if let Some(conn) = computer.conn.as_mut()
            && conn.id == p.conn_id
        {
            match (p.info.sent, p.detached) {
                (true, true) => conn.detached = conn.detached.saturating_sub(1),
                (true, false) => conn.in_flight = conn.in_flight.saturating_sub(1),
                (false, true) => conn.detached_queue.retain(|q| q != &p.info.request_id),
                (false, false) => conn.queue.retain(|q| q != &p.info.request_id),
            }
        }
        computer.show_counts();
    }

    /// Where a new request goes, if it may start: the computer `target` means, what the policy
    /// says of it, and the connection that has room for it.
    pub(crate) fn admit(
        &mut self,
        target: &str,
        spec: &RequestSpec,
        origin: &Origin,
    ) -> Result<Admitted, RequestError> {
        if self.shutting_down {
            return Err(RequestError::ShuttingDown);
        }
        let trapos_id = self.resolve(target)?;
        let gate = self.gate(origin, &trapos_id, &spec.body)?;
        if spec.mode.never_asks() && matches!(gate, Gate::Ask(_)) {
            return Err(RequestError::Policy {
                code: ErrorCode::NeedsApproval,
                message: format!(
                    "{} on {trapos_id} needs a person's approval, and this is never asked for",
                    spec.kind()
                ),
            });
        }
        let conn_id = if spec.mode.is_detached() {
            self.room_for_detached(&trapos_id)?
        } else {
            self.room_on(&trapos_id)?
        };
        Ok(Admitted {
            trapos_id,
            conn_id,
            gate,
        })
    }

    /// The connection a new detached run on `trapos_id` goes to: detached runs have their own
    /// budget, apart from the in-flight limit and queue of ordinary requests.
    fn room_for_detached(&self, trapos_id: &str) -> Result<u64, RequestError> {
        let limit = self.settings.max_detached;
        let conn = self.room_on(trapos_id).or_else(|e| match e {
            RequestError::Busy { .. } => self
                .computers
                .get(trapos_id)
                .and_then(|c| c.conn.as_ref())
                .map(|c| c.id)
                .ok_or(RequestError::Disconnected),
            e => Err(e),
        })?;
        if self.detached_on(trapos_id) >= limit {
            return Err(RequestError::DetachedLimit {
                trapos_id: trapos_id.to_owned(),
                limit,
            });
        }
        Ok(conn)
    }

    /// A new request's id and what is shown of it, with its timeout.
    pub(crate) fn new_info(
        &mut self,
        trapos_id: &str,
        origin: Origin,
        spec: &RequestSpec,
        gate: &Gate,
    ) -> (PendingInfo, Duration) {
        let (no_deadline, timeout) = self.deadline_of(spec);
        // The start tag keeps ids unique across host restarts: a computer may still run a
        // detached run of an earlier host under its id.
        let id = format!("h-{}-{}", self.run_tag, self.next_request);
        self.next_request += 1;
        let now = Instant::now();
        let summary = summary::request(&spec.body);
        // Said where the person looks (Requests, the scrollback, the log): it outlives its caller.
        let summary = if spec.mode.is_detached() {
            format!("detached: {summary}")
        } else {
            summary
        };
        let info = PendingInfo {
            request_id: id,
            trapos_id: trapos_id.to_owned(),
            origin,
            kind: spec.kind(),
            summary,
            started_at: SystemTime::now(),
            started: now,
            deadline: now + timeout,
            timeout_ms: if no_deadline {
                0
            } else {
                timeout.as_millis() as u64
            },
            no_deadline,
            sent: false,
            cancel_requested: false,
            awaiting_approval: matches!(gate, Gate::Ask(_)),
        };
        (info, timeout)
    }

    /// The connection a new request on `trapos_id` goes to, if it has room for one more.
    pub(crate) fn room_on(&self, trapos_id: &str) -> Result<u64, RequestError> {
        let Some(conn) = self.computers.get(trapos_id).and_then(|c| c.conn.as_ref()) else {
            return Err(RequestError::Disconnected);
        };
        if conn.in_flight >= self.settings.max_in_flight
            && conn.queue.len() >= self.settings.max_queued
        {
            return Err(RequestError::Busy {
                trapos_id: trapos_id.to_owned(),
                limit: self.settings.max_queued,
            });
        }
        Ok(conn.id)
    }

    /// Whether a request runs without a deadline, and its timeout: the asked one, else the
    /// configured default, never over the maximum or under a millisecond.
    pub(crate) fn deadline_of(&self, spec: &RequestSpec) -> (bool, Duration) {
        let no_deadline = spec.deadline == Deadline::None;
        let timeout = if no_deadline {
            crate::session::NO_DEADLINE
        } else {
            spec.deadline
                .after()
                .unwrap_or(self.settings.request_timeout)
                .min(self.settings.max_request_timeout)
                .max(Duration::from_millis(1))
        };
        (no_deadline, timeout)
    }

    /// A new request where people look: its header in the computer's scrollback, its place in
    /// the computer's queue (unless it waits for approval or is local), and the log, which
    /// keeps only the one-line summary while the transcript keeps what ran in full.
    pub(crate) fn record_start(&mut self, info: &PendingInfo, spec: &RequestSpec, queue: bool) {
        if let Some(c) = self.computers.get_mut(&info.trapos_id) {
            if !spec.mode.is_quiet() {
                let mut changes = Vec::new();
                c.output.push_to(
                    OutputEntry::Start(Box::new(StartEntry {
                        request_id: info.request_id.clone(),
                        origin: info.origin.clone(),
                        kind: info.kind,
                        summary: info.summary.clone(),
                        at: SystemTime::now(),
                    })),
                    self.history.is_some().then_some(&mut changes),
                );
                if let Some(h) = &self.history {
                    h.output(&info.trapos_id, changes);
                }
            }
            if let Some(conn) = c.conn.as_mut()
                && queue
                && !spec.mode.is_local()
            {
                conn.enqueue(info.request_id.clone(), spec.mode.is_detached());
            }
        }
        if spec.mode.is_quiet() && info.kind == Kind::Ping {
            // A quiet ping is a look (probe-computers' pings, the console's status every few
            // seconds while its Screen view is open), not an act: logging each would bury the
            // log and history.db in thousands of lines an hour.
            return;
        }
        let mut entry = State::entry(LogEvent::Request, info.summary.clone());
        entry.who = Some(info.origin.name().to_owned());
        entry.trapos_id = Some(info.trapos_id.clone());
        entry.request_id = Some(info.request_id.clone());
        entry.what = Some(info.kind.to_string());
        entry.status = Some(Status::Running);
        let extra = Extra {
            origin: Some(info.origin.clone()),
            // The log keeps the payload as the JSON frame carries it.
            args: Some(spec.payload()),
            ..Default::default()
        };
        self.log_with(entry, extra);
    }

    /// Registers a request that waits for the person.
    pub(crate) fn ask(&mut self, approval: Approval) {
        let request_id = approval.request_id.clone();
        let mut entry = State::entry(
            LogEvent::ApprovalAsked,
            format!(
                "{} ({} bytes): {}",
                approval.kind, approval.size, approval.because
            ),
        );
        entry.who = Some(approval.origin.name().to_owned());
        entry.trapos_id = Some(approval.trapos_id.clone());
        entry.request_id = Some(request_id.clone());
        entry.what = Some(approval.kind.to_string());
        self.log(entry);
        self.gate.approvals_mut().insert(approval);
        self.emit(Event::ApprovalAsked { request_id });
    }

    /// Lets an approved request go to its computer's queue; the log says which console
    /// approved it (`by`), when one is named.
    pub(crate) fn release_approved(&mut self, id: &str, by: Option<&str>) {
        let Some(a) = self.gate.approvals_mut().take(id) else {
            return;
        };
        let local = self.pending.get(id).is_some_and(|p| p.local);
        let by = by.map(|b| format!(" by {b}")).unwrap_or_default();
        let mut entry = State::entry(
            LogEvent::Approved,
            format!("{} on {}{by}", a.kind, a.trapos_id),
        );
        entry.who = Some(a.origin.name().to_owned());
        entry.trapos_id = Some(a.trapos_id.clone());
        entry.request_id = Some(id.to_owned());
        entry.what = Some(a.kind.to_string());
        self.log(entry);
        if local {
            self.emit(Event::ApprovalAnswered {
                request_id: id.to_owned(),
            });
            self.finish(id, Ok(Value::Null));
            return;
        }
        if let Some(conn) = self
            .computers
            .get_mut(&a.trapos_id)
            .and_then(|c| c.conn.as_mut())
        {
            conn.enqueue(
                id.to_owned(),
                self.pending.get(id).is_some_and(|p| p.detached),
            );
        }
        if let Some(p) = self.pending.get_mut(id) {
            p.info.awaiting_approval = false;
        }
        self.emit(Event::ApprovalAnswered {
            request_id: id.to_owned(),
        });
        self.pump(&a.trapos_id);
    }

    /// Ends a pending request exactly once: removes it, frees its slot, records the outcome
    /// in the computer's output and the log, and hands the result to the waiter.
    pub fn finish(&mut self, id: &str, result: Result<Value, RequestError>) -> bool {
        let Some(mut p) = self.pending.remove(id) else {
            return false;
        };
        if let Some(key) = p.timer.take() {
            self.deadlines.remove(&key);
        }
        if self.gate.approvals_mut().take(id).is_some() {
            self.emit(Event::ApprovalAnswered {
                request_id: id.to_owned(),
            });
        }
        self.release(&p);
        let trapos_id = p.info.trapos_id.clone();
        if p.detached {
            let code = result.as_ref().map_or_else(RequestError::code, |_| "ok");
            let reason = result.as_ref().err().and_then(RequestError::lost_reason);
            self.store.runs_mut().ended(id, code, reason);
        }

        let output_len = self.show_unstreamed_output(&p, id, &result);

        let (status, mut summary) = summary::outcome(&result);
        let duration_ms = p.info.started.elapsed().as_millis() as u64;
        let ending = Ending {
            output: (result.is_err() && !p.live.is_empty()).then(|| p.live.text()),
            output_bytes: p.live.bytes(),
            output_lines: p.live.lines(),
            cancelled_by: p.cancel_by.clone(),
            elapsed_ms: duration_ms,
            stopped: p.stopped,
            result,
        };
        if status == Status::Cancelled {
            summary = ending.cancel_line();
        }
        if p.info.kind == Kind::Ping
            && status == Status::Ok
            && let (Some(sent), Some(c)) = (p.sent_at, self.computers.get_mut(&trapos_id))
        {
            c.info.last_rtt_ms = Some(sent.elapsed().as_millis() as u64);
        }
        self.record_end(&p, &ending, status, summary, output_len);
        if !p.local {
            self.store.keep(&p, &ending, status);
        }
        if let Some(w) = p.waiter.take() {
            // The waiter may have gone (an abandoned call); the outcome is logged regardless.
            let _ = w.send(ending);
        }
        self.pump(&trapos_id);
        true
    }

    /// Shows the output the answer carries beyond what streamed live (a computer that sends
    /// no live `output` still gets its output shown); returns the answer's output length.
    fn show_unstreamed_output(
        &mut self,
        p: &Pending,
        id: &str,
        result: &Result<Value, RequestError>,
    ) -> usize {
        let final_output = match result {
            Ok(v) => v.get("output").and_then(Value::as_str),
            Err(e) => e.output(),
        };
        let live_bytes = p.live.bytes() + p.dropped_unlinked as usize;
        let output_len = final_output.map_or(0, str::len);
        if let Some(out) = final_output
            && !p.quiet
            && out.len() > live_bytes
            && let Some(rest) = out.get(live_bytes..)
        {
            self.push_output(&p.info.trapos_id, Some(id), Stream::Out, rest);
        }
        output_len
    }

    /// A request's end where people look: its computer's scrollback, the log and transcript,
    /// and the events the console and agents' subscriptions follow.
    fn record_end(
        &mut self,
        p: &Pending,
        ending: &Ending,
        status: Status,
        summary: String,
        output_len: usize,
    ) {
        if let Some(c) = self.computers.get_mut(&p.info.trapos_id)
            && !p.quiet
        {
            let mut changes = Vec::new();
            c.output.push_to(
                OutputEntry::End {
                    request_id: p.info.request_id.clone(),
                    status,
                    summary: summary.clone(),
                    duration_ms: ending.elapsed_ms,
                },
                self.history.is_some().then_some(&mut changes),
            );
            if let Some(h) = &self.history {
                h.output(&p.info.trapos_id, changes);
            }
        }
        if !(p.quiet && p.info.kind == Kind::Ping) {
            self.log_finished(p, ending, status, &summary, output_len);
        }
        self.emit(Event::RequestFinished {
            request_id: p.info.request_id.clone(),
            trapos_id: p.info.trapos_id.clone(),
            origin: p.info.origin.clone(),
            status,
            summary,
            duration_ms: ending.elapsed_ms,
        });
        self.emit(Event::ComputerChanged {
            trapos_id: p.info.trapos_id.clone(),
        });
    }

    /// The log's `finished` line of a request (see [`State::record_end`]).
    fn log_finished(
        &mut self,
        p: &Pending,
        ending: &Ending,
        status: Status,
        summary: &str,
        output_len: usize,
    ) {
        let mut entry = State::entry(LogEvent::Finished, summary.to_owned());
        entry.who = Some(p.info.origin.name().to_owned());
        entry.trapos_id = Some(p.info.trapos_id.clone());
        entry.request_id = Some(p.info.request_id.clone());
        entry.what = Some(p.info.kind.to_string());
        entry.status = Some(status);
        entry.duration_ms = Some(ending.elapsed_ms);
        let extra = Extra {
            origin: Some(p.info.origin.clone()),
            output_bytes: Some(output_len.max(p.live.bytes()) as u64),
            error: ending.result.as_ref().err().map(ToString::to_string),
            ..Extra::default()
        };
        self.log_with(entry, extra);
    }

    pub fn push_output(
        &mut self,
        trapos_id: &str,
        request_id: Option<&str>,
        stream: Stream,
        text: &str,
    ) {
        if text.is_empty() {
            return;
        }
        if let Some(c) = self.computers.get_mut(trapos_id) {
            let mut changes = Vec::new();
            c.output.push_text_to(
                request_id,
                stream,
                text,
                self.history.is_some().then_some(&mut changes),
            );
            if let Some(h) = &self.history {
                h.output(trapos_id, changes);
            }
        }
        // The broadcast keeps its last 4 096 events whoever reads them: a whole 1 MiB message
        // in each would be 4 GiB. Live views read the scrollback; the event carries a head.
        let mut cut = text.len().min(EVENT_TEXT_MAX);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.emit(Event::Output {
            trapos_id: trapos_id.to_owned(),
            request_id: request_id.map(str::to_owned),
            stream,
            text: text[..cut].to_owned(),
        });
    }

    /// Gives pending request `id` a deadline at `at` (a free key: see `deadlines.rs`), and says
    /// what the session's deadline task must be told of it.
    pub(crate) fn set_deadline(&mut self, id: &str, at: Instant, timeout: Duration) -> Wake {
        let key = self.deadlines.free_key(at, self.next_request);
        let Some(p) = self.pending.get_mut(id) else {
            return Wake::Later;
        };
        p.timer = Some(key);
        self.deadlines.insert(key, id, timeout)
    }

    /// The earliest deadline if `now` has passed it, taken out with its request's timer (the
    /// request and its timeout); else when the earliest one is, if any.
    pub(crate) fn take_due(&mut self, now: Instant) -> Result<(String, Duration), Option<Instant>> {
        let (id, timeout) = self.deadlines.take_due(now)?;
        if let Some(p) = self.pending.get_mut(&id) {
            p.timer = None;
        }
        Ok((id, timeout))
    }

    /// How many deadlines are set.
    #[cfg(test)]
    pub(crate) fn deadlines_set(&self) -> usize {
        self.deadlines.len()
    }
}

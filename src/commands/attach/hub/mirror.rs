//! The mirror of the host's session that the console reads: each `Update` the host sends is
//! merged into it before its events are passed on.

use std::collections::{HashMap, VecDeque};

use tokio::time::Instant;

use crate::control::attach::wire::{OutputSlice, Update};
use trapdesk_core::session::computer_order;
use trapdesk_core::session::screen::{Display, ScreenFrame};
use trapdesk_core::session::{
    Approval, ComputerInfo, Event, OutputItem, PendingInfo, Stream, ToolCall,
};

/// Tool calls the mirror keeps, as the session does (`TOOL_CALLS_KEPT`).
const TOOL_CALLS_KEPT: usize = 500;

/// What the console reads, as the host last said it.
#[derive(Debug, Default)]
pub(super) struct Mirror {
    pub(super) computers: Vec<ComputerInfo>,
    pub(super) pending: Vec<PendingInfo>,
    pub(super) tool_calls: VecDeque<ToolCall>,
    pub(super) approvals: Vec<Approval>,
    pub(super) policy_lines: Vec<String>,
    pub(super) policy_source: String,
    pub(super) secret: String,
    pub(super) paused: bool,
    pub(super) output: HashMap<String, VecDeque<OutputItem>>,
    pub(super) screens: HashMap<(String, Display), ScreenFrame>,
    /// Output entries kept per computer: the host's scrollback.
    pub(super) scrollback: usize,
}

impl Mirror {
    pub(super) fn new(scrollback: usize) -> Mirror {
        Mirror {
            scrollback: scrollback.max(1),
            ..Mirror::default()
        }
    }

    /// Takes an update; returns the events to pass on to the console.
    pub(super) fn apply(&mut self, u: Update, now: Instant) -> Vec<Event> {
        let mut events = u.events;
        if let Some(c) = u.computers {
            self.computers = c;
        }
        self.merge_computers(u.computers_changed);
        if let Some(p) = u.pending {
            self.pending = p.into_iter().map(|t| t.into_pending(now)).collect();
        }
        if let Some(calls) = u.tool_calls {
            self.tool_calls = calls.into();
        }
        if let Some(a) = u.approvals {
            self.approvals = a.into_iter().map(|t| t.into_approval(now)).collect();
        }
        if let Some(p) = u.policy {
            self.policy_lines = p.lines;
            self.policy_source = p.source;
        }
        if let Some(s) = u.secret {
            self.secret = s;
        }
        if let Some(p) = u.paused {
            self.paused = p;
        }
        let grown = self.append_output(u.output);
        for s in u.screens {
            let key = (s.trapos_id, s.display);
            match s.frame {
                Some(f) => self.screens.insert(key, f),
                None => self.screens.remove(&key),
            };
        }
        self.note_calls(&events);
        if u.resync {
            self.resync_events(&mut events);
        }
        // Output that arrived without an event of its own (a resync) is told of too.
        for id in grown {
            let told = events.iter().any(|e| {
                matches!(e, Event::Output { trapos_id, .. } | Event::RequestFinished { trapos_id, .. } if *trapos_id == id)
            });
            if !told {
                events.push(Event::Output {
                    trapos_id: id,
                    request_id: None,
                    stream: Stream::Out,
                    text: String::new(),
                });
            }
        }
        events
    }

    /// Computers that changed replace their old selves, new ones join; the list stays sorted.
    fn merge_computers(&mut self, changed: Vec<ComputerInfo>) {
        if changed.is_empty() {
            return;
        }
        for c in changed {
            match self
                .computers
                .iter_mut()
                .find(|m| m.trapos_id == c.trapos_id)
            {
                Some(m) => *m = c,
                None => self.computers.push(c),
            }
        }
        self.computers.sort_by(computer_order);
    }

    /// Adds the output slices to each computer's scrollback; the computers that had some.
    fn append_output(&mut self, output: Vec<OutputSlice>) -> Vec<String> {
        let mut grown = Vec::new();
        for slice in output {
            grown.push(slice.trapos_id.clone());
            let ring = self.output.entry(slice.trapos_id.clone()).or_default();
            for item in slice.into_items() {
                match ring.back() {
                    // The open line grown: the same entry, longer.
                    Some(last) if last.seq == item.seq => {
                        if let Some(last) = ring.back_mut() {
                            *last = item;
                        }
                    }
                    Some(last) if last.seq > item.seq => {}
                    _ => ring.push_back(item),
                }
            }
            while ring.len() > self.scrollback {
                ring.pop_front();
            }
        }
        grown
    }

    /// Tool calls that started or finished, kept as the session keeps them.
    fn note_calls(&mut self, events: &[Event]) {
        for e in events {
            if let Event::ToolCallStarted { call } | Event::ToolCallFinished { call } = e {
                match self
                    .tool_calls
                    .iter_mut()
                    .rev()
                    .find(|c| c.call_id == call.call_id)
                {
                    Some(c) => *c = call.clone(),
                    None => self.tool_calls.push_back(call.clone()),
                }
                while self.tool_calls.len() > TOOL_CALLS_KEPT {
                    self.tool_calls.pop_front();
                }
            }
        }
    }

    /// Everything may have changed: events that make the console pull each part.
    fn resync_events(&self, events: &mut Vec<Event>) {
        events.extend([Event::PauseChanged, Event::PolicyChanged]);
        if let Some(c) = self.computers.first() {
            events.push(Event::ComputerChanged {
                trapos_id: c.trapos_id.clone(),
            });
        }
        if let Some(call) = self.tool_calls.back() {
            events.push(Event::ToolCallFinished { call: call.clone() });
        }
    }
}

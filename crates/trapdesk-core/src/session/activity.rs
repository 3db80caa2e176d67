//! Agents' tool calls as the console's activity pane and the log show them. The MCP endpoint
//! records each call's start and end here; the session only keeps and broadcasts them.

use std::time::SystemTime;

use serde_json::Value;

use super::Session;
use super::model::{Event, LogEvent, Status, ToolCall};
use super::state::State;
use super::summary;

impl Session {
    /// Records the start of an agent's tool call, for the activity pane and the log.
    pub fn tool_call_started(
        &self,
        client: &str,
        tool: &str,
        target: Option<&str>,
        args: Value,
    ) -> u64 {
        // Made before the lock: every other request and link waits while it is held.
        let detail = summary::one_line(&args.to_string(), 120);
        let mut st = self.lock();
        let call_id = st.calls.next_id();
        // The computer as the session knows it (`7:miner`), not as the caller typed it
        // (`MINER`, `7`): the log and its filters name each computer one way. A name that
        // finds none stays as typed, so the entry still says what was aimed at.
        let target = target.map(|t| {
            if st.computers.contains_key(t) {
                t.to_owned()
            } else {
                st.resolve(t).unwrap_or_else(|_| t.to_owned())
            }
        });
        let call = ToolCall {
            call_id,
            client: client.to_owned(),
            tool: tool.to_owned(),
            target: target.clone(),
            args: args.clone(),

            started_at: SystemTime::now(),
            status: Status::Running,
            summary: String::new(),
            result: None,
            duration_ms: None,
            request_id: None,
        };
        let event = st.watched().then(|| call.clone());
        st.calls.record(call);
        let mut entry = State::entry(LogEvent::ToolCall, detail);
        entry.who = Some(client.to_owned());
        entry.trapos_id = target;
        entry.what = Some(tool.to_owned());
        entry.status = Some(Status::Running);
        entry.call_id = Some(call_id);
        let extra = super::transcript::Extra {
            origin: Some(super::Origin::Agent(client.to_owned())),
            args: Some(args),
            ..Default::default()
        };
        st.log_with(entry, extra);
        if let Some(call) = event {
            st.emit(Event::ToolCallStarted { call });
        }
        call_id
    }

    /// Links a tool call to the gateway request it started, on the computer it resolved to.
    pub fn tool_call_request(&self, call_id: u64, request_id: &str, trapos_id: &str) {
        let mut st = self.lock();
        if let Some(c) = st.calls.find_mut(call_id) {
            c.request_id = Some(request_id.to_owned());
            c.target = Some(trapos_id.to_owned());
        }
    }

    /// Records the end of an agent's tool call.
    pub fn tool_call_finished(
        &self,
        call_id: u64,
        status: Status,
        summary: &str,
        result: Option<&Value>,
    ) {
        // Serialized before the lock: a probe page is 24 KiB of JSON, and every other request
        // and link waits while the lock is held.
        let result: std::sync::Arc<str> =
            result.map_or_else(|| "null".into(), |v| v.to_string().into());
        self.tool_call_finished_json(call_id, status, summary, result);
    }

    /// [`Session::tool_call_finished`] with the result's `structuredContent` already as JSON
    /// text, for a tool that serialized it anyway to measure it (a probe page: its 24 KiB
    /// were serialized once more here).
    pub fn tool_call_finished_json(
        &self,
        call_id: u64,
        status: Status,
        summary: &str,
        result: std::sync::Arc<str>,
    ) {
        let output_bytes = result.len() as u64;
        let mut st = self.lock();
        let watched = st.watched();
        // Ended where it is kept: a copy of the call (its arguments with it) only for a live
        // view that reads the event.
        let Some(call) = st.calls.find_mut(call_id) else {
            return;
        };
        let duration_ms = SystemTime::now()
            .duration_since(call.started_at)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        call.status = status;
        call.summary = summary.to_owned();
        call.result = Some(result);
        call.duration_ms = Some(duration_ms);
        let mut entry = State::entry(LogEvent::ToolResult, summary.to_owned());
        entry.who = Some(call.client.clone());
        entry.trapos_id = call.target.clone();
        entry.request_id = call.request_id.clone();
        entry.what = Some(call.tool.clone());
        entry.status = Some(status);
        entry.duration_ms = Some(duration_ms);
        entry.call_id = Some(call_id);
        let extra = super::transcript::Extra {
            origin: Some(super::Origin::Agent(call.client.clone())),
            output_bytes: Some(output_bytes),
            ..Default::default()
        };
        let event = watched.then(|| call.clone());
        st.log_with(entry, extra);
        if let Some(call) = event {
            st.emit(Event::ToolCallFinished { call });
        }
    }

    /// Whether `origin` may read `trapos_id` now without anyone being asked: the policy
    /// allows it outright and no stop of the person's holds. For what must never raise an
    /// approval (completions); nothing is logged, whatever the answer.
    pub fn reads_freely(&self, origin: &super::Origin, trapos_id: &str) -> bool {
        let st = self.lock();
        super::pause::paused_refusal(
            st.gate.paused(),
            origin,
            trapos_id,
            trapdesk_proto::protocol::Kind::ListFiles,
        )
        .is_none()
            && st
                .decide(origin, trapos_id, crate::policy::Action::Read)
                .decision
                == crate::policy::Decision::Allow
    }

    /// Agents' tool calls that have not ended yet.
    pub fn tool_calls_running(&self) -> usize {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.status == Status::Running)
            .count()
    }

    /// Agents' tool calls, oldest first.
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        self.lock().calls.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use serde_json::json;
    use tokio::sync::mpsc;

    use super::super::{Origin, RequestError, RequestSpec, Session};
    use crate::config::Settings;
    use crate::policy::Policy;
    use trapdesk_proto::protocol::{ErrorCode, Hello, Kind};

    fn linked(s: &Session) -> (super::super::Link, mpsc::Receiver<super::super::Outbound>) {
        let (tx, rx) = mpsc::channel(64);
        let hello = Hello {
            protocol: 1,
            computer_id: 7,
            label: Some("miner".into()),
            secret: String::new(),
            serves: vec!["list-files".into()],
            client: None,
            host: None,
            max_message: None,
        };
        (s.link(&hello, tx), rx)
    }

    #[tokio::test]
    async fn never_ask_is_refused_where_the_policy_asks_and_nobody_is_asked() {
        let s = Session::new(Settings::default(), false);
        let (_link, mut rx) = linked(&s);
        let _approver = s.attach_approver();
        s.set_policy(Policy::from_toml("[policy.default]\nagent = { read = \"ask\" }\n").unwrap());
        let agent = Origin::Agent("completer".into());
        assert!(!s.reads_freely(&agent, "7:miner"));
        let spec = RequestSpec::new(Kind::ListFiles, json!({"path": "/"})).never_ask();
        let refused = s.start("7:miner", spec, agent.clone());
        assert!(
            matches!(&refused, Err(RequestError::Policy { code, .. }) if *code == ErrorCode::NeedsApproval),
            "{:?}",
            refused.err()
        );
        assert!(s.approvals().is_empty() && s.pending().is_empty());
        assert!(rx.try_recv().is_err(), "nothing sent to the computer");
        // Allowed, it reads freely and runs.
        s.set_policy(Policy::default());
        assert!(s.reads_freely(&agent, "7:miner"));
        let spec = RequestSpec::new(Kind::ListFiles, json!({"path": "/"})).never_ask();
        assert!(s.start("7:miner", spec, agent).is_ok());
    }
}

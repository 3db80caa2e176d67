//! The person's stop for all agents, and who has a computer's keyboard.
//!
//! **Pause.** While paused, every new agent call that runs code, types or writes (the policy's
//! `exec` and `write` actions) is refused at the gate with code `paused`, whatever the policy
//! says; the agents' calls of those kinds already pending end at once (waiting on the host or
//! for approval: `paused`; running on a computer: cancelled, by `person (stop for all agents)`).
//! Reads and waits go on, and so does everything the person's own tools start (the console,
//! `trapdesk exec`/`run`/`sync`): only `Origin::Agent` is stopped. `cli` and `sync` are known by
//! the person token they present, never by a client's name (`crate::mcp::caller_origin`), so
//! a client calling itself `trapdesk-cli` with any other credential is an agent and stopped. An agent's detached runs are
//! pending requests too (docs/mcp.md, "Detached runs"), so they stop with the rest; one whose
//! computer is unlinked is stopped when it links again.
//!
//! **Keyboard.** While the person is attached (F8) to a computer, its keyboard is theirs: an
//! agent's `send-input` to it waits until they detach or is refused with `person_typing`, as
//! the policy's `person_typing` setting says (see [`crate::policy::PersonTyping`]).

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::Session;
use super::model::{Event, LogEvent, Origin, RequestError};
use super::state::State;
use crate::policy::{Action, PersonTyping};
use trapdesk_proto::protocol::{ErrorCode, Kind};

/// Who cancelled an agent's running call when the person stopped all agents.
const PAUSE_CANCELLER: &str = "person (stop for all agents)";

/// The stop for all agents, while it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paused {
    pub since: SystemTime,
    /// Where it was set: `console`, `cli` (`trapdesk pause`).
    pub by: String,
}

/// What [`Session::pause`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PauseReport {
    /// It was already paused (nothing changed but the count below, which is then 0).
    pub already: bool,
    /// Agent calls ended: refused while waiting, or asked to stop on their computer.
    pub stopped: usize,
}

fn stoppable(origin: &Origin, kind: Kind) -> bool {
    matches!(origin, Origin::Agent(_))
        && matches!(Action::of(kind), Some(Action::Exec | Action::Write))
}

fn paused_error(kind: Kind, trapos_id: &str) -> RequestError {
    RequestError::Policy {
        code: ErrorCode::Paused,
        message: format!(
            "the person stopped all agents at the console: {kind} on {trapos_id} is refused until they resume (reads still work; do not retry until then)"
        ),
    }
}

/// The refusal of a call while paused (`Gatekeeper::paused`), or `None` when it may go on.
pub(crate) fn paused_refusal(
    paused: Option<&Paused>,
    origin: &Origin,
    trapos_id: &str,
    kind: Kind,
) -> Option<RequestError> {
    (paused.is_some() && stoppable(origin, kind)).then(|| paused_error(kind, trapos_id))
}

impl Session {
    /// Stops all agents: refuses every new agent call that runs code, types or writes with
    /// `paused` until [`Session::resume`], and ends the agents' pending calls of those kinds
    /// (see the module's doc). `by` says where it was set (`console`, `cli`), for the log.
    /// Pausing again while paused changes nothing.
    pub fn pause(&self, by: &str) -> PauseReport {
        let running: Vec<String> = {
            let mut st = self.lock();
            let paused = Paused {
                since: SystemTime::now(),
                by: by.to_owned(),
            };
            if !st.gate.pause(paused) {
                return PauseReport {
                    already: true,
                    stopped: 0,
                };
            }
            let mut stop: Vec<(String, bool, Kind, String)> = st
                .pending
                .values()
                .filter(|p| stoppable(&p.info.origin, p.info.kind))
                .map(|p| {
                    (
                        p.info.request_id.clone(),
                        p.info.sent,
                        p.info.kind,
                        p.info.trapos_id.clone(),
                    )
                })
                .collect();
            stop.sort();
            let mut running = Vec::new();
            for (id, sent, kind, trapos_id) in stop {
                if sent {
                    running.push(id);
                } else {
                    // Queued on the host or waiting for approval: it never reached the computer.
                    st.finish(&id, Err(paused_error(kind, &trapos_id)));
                }
            }
            let total = running.len();
            let mut entry = State::entry(
                LogEvent::Paused,
                format!("all agents stopped (by {by}); {total} running call(s) asked to stop"),
            );
            entry.who = Some("person".to_owned());
            st.log(entry);
            st.emit(Event::PauseChanged);
            running
        };
        let mut stopped = 0;
        for id in &running {
            if self.cancel_as(id, Some(PAUSE_CANCELLER.to_owned())).is_ok() {
                stopped += 1;
            }
        }
        PauseReport {
            already: false,
            stopped,
        }
    }

    /// Lifts the stop for all agents. Returns whether it was paused.
    pub fn resume(&self, by: &str) -> bool {
        let mut st = self.lock();
        if !st.gate.resume() {
            return false;
        }
        let mut entry = State::entry(LogEvent::Resumed, format!("agents may run again (by {by})"));
        entry.who = Some("person".to_owned());
        st.log(entry);
        st.emit(Event::PauseChanged);
        true
    }

    /// The stop for all agents, while it holds.
    pub fn paused(&self) -> Option<Paused> {
        self.lock().gate.paused().cloned()
    }

    /// Says the person is at `trapos_id`'s keyboard (attached with F8) while the hold lives.
    pub fn hold_keyboard(&self, trapos_id: &str) -> KeyboardHold {
        let mut st = self.lock();
        st.gate.hold(trapos_id);
        st.emit(Event::KeyboardChanged {
            trapos_id: trapos_id.to_owned(),
        });
        KeyboardHold {
            session: self.clone(),
            trapos_id: trapos_id.to_owned(),
        }
    }

    /// Whether the person is attached to `trapos_id`.
    pub fn keyboard_held(&self, trapos_id: &str) -> bool {
        self.lock().gate.held(trapos_id)
    }

    /// Before an agent types into `trapos_id`: waits until the person lets go of its keyboard
    /// (at most `timeout`), or refuses at once, as the policy's `person_typing` says. The
    /// person's own tools never wait.
    ///
    /// # Errors
    /// `person_typing` when the person still has the keyboard.
    pub(crate) async fn wait_keyboard(
        &self,
        trapos_id: &str,
        origin: &Origin,
        timeout: Duration,
    ) -> Result<(), RequestError> {
        if !matches!(origin, Origin::Agent(_)) {
            return Ok(());
        }
        // Subscribed before the check, so a release between the two is not missed.
        let mut events = self.subscribe();
        let mode = {
            let st = self.lock();
            if !st.gate.held(trapos_id) {
                return Ok(());
            }
            st.settings.policy.person_typing
        };
        let refusal = |waited: bool| {
            let mut st = self.lock();
            let message = if waited {
                format!(
                    "the person is typing on {trapos_id} (attached at the console) and did not let go within {} ms; try again later",
                    timeout.as_millis()
                )
            } else {
                format!(
                    "the person is typing on {trapos_id} (attached at the console); input from agents is refused while they are (policy person_typing = \"refuse\"); try again later"
                )
            };
            let mut entry = State::entry(LogEvent::Refused, message.clone());
            entry.who = Some(origin.name().to_owned());
            entry.trapos_id = Some(trapos_id.to_owned());
            entry.what = Some(Kind::Input.to_string());
            st.log(entry);
            Err(RequestError::Policy {
                code: ErrorCode::PersonTyping,
                message,
            })
        };
        if mode == PersonTyping::Refuse {
            return refusal(false);
        }
        let deadline = Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_) => return refusal(true),
                // Any event, or a lag, is a reason to look again.
                Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => return refusal(true),
            }
            if !self.keyboard_held(trapos_id) {
                return Ok(());
            }
        }
    }
}

/// The person's hand on a computer's keyboard (see [`Session::hold_keyboard`]); dropping it
/// lets go.
pub struct KeyboardHold {
    session: Session,
    trapos_id: String,
}

impl Drop for KeyboardHold {
    fn drop(&mut self) {
        let mut st = self.session.lock();
        st.gate.let_go(&self.trapos_id);
        st.emit(Event::KeyboardChanged {
            trapos_id: self.trapos_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use std::time::Duration;

    use serde_json::json;
    use tokio::sync::mpsc;

    use super::super::*;
    use super::PauseReport;
    use crate::policy::{Decision, PersonTyping, Policy};
    use trapdesk_proto::protocol::{Hello, Kind};

    fn hello(id: u64) -> Hello {
        Hello {
            protocol: 1,
            computer_id: id,
            label: Some("miner".into()),
            secret: String::new(),
            serves: ["exec-lua", "read-file", "write-file", "screen", "input"]
                .map(String::from)
                .to_vec(),
            client: None,
            host: None,
            max_message: None,
        }
    }

    fn agent() -> Origin {
        Origin::Agent("claude".into())
    }

    fn spec(kind: Kind) -> RequestSpec {
        // One payload that reads as each kind these tests start (fields of others ignored).
        let payload = json!({"code": "x", "path": "/a", "content": "b", "encoding": "text",
            "steps": []});
        RequestSpec::new(kind, payload).timeout(Some(Duration::from_secs(60)))
    }

    async fn sent(rx: &mut mpsc::Receiver<Outbound>) -> String {
        match rx.recv().await {
            Some(Outbound::Request(r)) => r.id,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn pause_refuses_agents_exec_and_write_and_stops_their_running_calls() {
        let s = Session::new(Settings::default(), false);
        let (tx, mut rx) = mpsc::channel(64);
        let _link = s.link(&hello(7), tx);
        // An agent's run on the computer, and the person's own.
        let theirs = s.start("7", spec(Kind::ExecLua), agent()).unwrap();
        let theirs_id = sent(&mut rx).await;
        let mine = s.start("7", spec(Kind::ExecLua), Origin::Person).unwrap();
        let mine_id = sent(&mut rx).await;
        assert_eq!((theirs.id.clone(), mine.id.clone()), (theirs_id, mine_id));

        let report = s.pause("console");
        assert_eq!(
            report,
            PauseReport {
                already: false,
                stopped: 1
            }
        );
        assert!(s.paused().is_some());
        // The agent's running call is asked to stop; the person's is not.
        assert_eq!(
            rx.recv().await,
            Some(Outbound::Cancel {
                id: theirs.id.clone()
            })
        );
        assert!(rx.try_recv().is_err());
        let pending: Vec<_> = s.pending().into_iter().map(|p| p.request_id).collect();
        assert!(pending.contains(&mine.id));

        // New agent calls that run, type or write are refused at once with `paused`.
        for kind in [Kind::ExecLua, Kind::WriteFile, Kind::Input] {
            let e = s.start("7", spec(kind), agent()).err().unwrap();
            assert_eq!(e.code(), "paused", "{kind}");
            assert!(e.to_string().contains("until they resume"), "{e}");
        }
        // Reads go on, and the person's tools (console, cli, sync) are untouched.
        assert!(s.start("7", spec(Kind::ReadFile), agent()).is_ok());
        for who in [Origin::Person, Origin::Cli, Origin::Sync] {
            assert!(s.start("7", spec(Kind::ExecLua), who).is_ok());
        }
        // The refusal is in the log, under the agent's name.
        assert!(
            s.recent(50)
                .iter()
                .any(|e| e.event.as_str() == "refused" && e.who.as_deref() == Some("claude"))
        );
        assert!(s.pause("cli").already);

        assert!(s.resume("console"));
        assert!(!s.resume("console"));
        assert!(s.paused().is_none());
        assert!(s.start("7", spec(Kind::ExecLua), agent()).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn pause_ends_agent_calls_still_queued_or_waiting_for_approval() {
        let settings = Settings {
            max_in_flight: 1,
            ..Settings::default()
        };
        let s = Session::new(settings, false);
        let (tx, mut rx) = mpsc::channel(64);
        let _link = s.link(&hello(7), tx);
        let _first = s.start("7", spec(Kind::ExecLua), Origin::Person).unwrap();
        sent(&mut rx).await;
        // Queued behind the person's run: never sent.
        let queued = s.start("7", spec(Kind::WriteFile), agent()).unwrap();
        // Waiting for the person's approval.
        let mut p = Policy::default();
        p.agent[0] = Decision::Ask;
        s.set_policy(p);
        let _approver = s.attach_approver();
        let asked = s.start("7", spec(Kind::ExecLua), agent()).unwrap();
        assert_eq!(s.approvals().len(), 1);

        assert_eq!(s.pause("console").stopped, 0);
        assert_eq!(queued.wait().await.err().unwrap().code(), "paused");
        assert_eq!(asked.wait().await.err().unwrap().code(), "paused");
        assert!(s.approvals().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn agents_input_waits_while_the_person_is_attached() {
        let s = Session::new(Settings::default(), false);
        let (tx, mut rx) = mpsc::channel(64);
        let _link = s.link(&hello(7), tx);
        let hold = s.hold_keyboard("7:miner");
        assert!(s.keyboard_held("7:miner"));
        let agent_input = {
            let s = s.clone();
            tokio::spawn(async move {
                s.send_input("7", vec![json!({"text": "ls"})], agent())
                    .await
            })
        };
        tokio::time::sleep(Duration::from_secs(3)).await;
        // Nothing typed while the person holds the keyboard.
        assert!(rx.try_recv().is_err());
        // The person's own keys go at once.
        let _mine = s
            .start_input("7", vec![json!({"text": "x"})], Origin::Person)
            .unwrap();
        sent(&mut rx).await;
        drop(hold);
        // Detached: the agent's input goes now.
        sent(&mut rx).await;
        assert!(!agent_input.is_finished());
    }

    #[tokio::test(start_paused = true)]
    async fn agents_input_is_refused_while_attached_when_configured_or_after_the_wait() {
        let s = Session::new(Settings::default(), false);
        let (tx, mut rx) = mpsc::channel(64);
        let _link = s.link(&hello(7), tx);
        let _hold = s.hold_keyboard("7:miner");
        // Waiting: refused after the input's 10 s.
        let started = tokio::time::Instant::now();
        let e = s
            .send_input("7", vec![json!({"text": "ls"})], agent())
            .await
            .err()
            .unwrap();
        assert_eq!(e.code(), "person_typing");
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        // Refusing: at once.
        s.set_policy(Policy {
            person_typing: PersonTyping::Refuse,
            ..Policy::default()
        });
        let started = tokio::time::Instant::now();
        let e = s
            .send_input("7", vec![json!({"text": "ls"})], agent())
            .await
            .err()
            .unwrap();
        assert_eq!(e.code(), "person_typing");
        assert!(e.to_string().contains("attached at the console"), "{e}");
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert!(rx.try_recv().is_err());
    }
}

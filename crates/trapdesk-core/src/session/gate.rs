//! The policy's one door into the session: every request is checked here before it is queued
//! for a computer, and a request the policy says to `ask` about waits, pending with its
//! deadline running, until the person at the console answers (the waiting state itself is
//! [`super::approval::Approvals`]).
//!
//! A request waiting for approval is a pending request like any other (it shows in the
//! pending list, can be cancelled, and times out), except that it is not in its computer's
//! queue: answering yes puts it there.

use crate::session::LogEvent;
use std::time::Duration;
use trapdesk_proto::protocol::ErrorCode;

use serde_json::Value;

use super::Session;
use super::approval::{Answer, AnswerError, Approval, Gate};
use super::model::{Event, Origin, RequestError, epoch_ms};
use super::state::State;
use crate::policy::{Action, Decided, Decision, Party, Policy, Reach, Target};
use trapdesk_proto::protocol::{Kind, RequestBody};

impl State {
    /// The id and label a rule may name `trapos_id` by: the linked computer's, else (one only
    /// the history or the log knows) as the traposId spells them.
    fn target_of(&self, trapos_id: &str) -> (u64, Option<String>) {
        if let Some(c) = self.computers.get(trapos_id) {
            return (c.info.id, c.info.label.clone());
        }
        let (id, label) = trapos_id.split_once(':').unwrap_or((trapos_id, ""));
        let label = (!label.is_empty()).then(|| label.to_owned());
        (id.parse().unwrap_or(0), label)
    }

    /// The policy's decision for `origin` doing `kind` on `trapos_id`, with the person's
    /// session grants applied (they turn `ask` into `allow`, never `deny`).
    pub(crate) fn decide(&self, origin: &Origin, trapos_id: &str, action: Action) -> Decided {
        let (id, label) = self.target_of(trapos_id);
        let target = Target {
            trapos_id,
            id,
            label: label.as_deref(),
        };
        let mut d = self.settings.policy.decide(origin.party(), target, action);
        if d.decision == Decision::Ask && self.approvals.granted(origin, trapos_id, action) {
            d.decision = Decision::Allow;
            d.because = format!("{} (allowed for this session at the console)", d.because);
        }
        d
    }

    /// Checks a request before it starts: go, ask the person, or refuse. The action is what
    /// the request really reaches ([`Reach::of`]: an agent's write to a boot path is `exec`),
    /// decided here once for every front.
    pub(crate) fn gate(
        &mut self,
        origin: &Origin,
        trapos_id: &str,
        body: &RequestBody,
    ) -> Result<Gate, RequestError> {
        let kind = body.kind();
        // The person's own tools (the console, the CLI, sync) reach what the person may: only
        // an agent's request counts as what its paths reach. Which client is the person's CLI
        // is the MCP front's to know (it must come from a credential, not a name).
        let reacher = match origin {
            Origin::Agent(name) => Party::Agent(name),
            _ => Party::Person,
        };
        let Some(reach) = Reach::of(reacher, body) else {
            return Ok(Gate::Go);
        };
        // The person's stop for all agents comes before the policy: it holds whatever that says.
        let gate = match super::pause::paused_refusal(self.paused.as_ref(), origin, trapos_id, kind)
        {
            Some(e) => Err(e),
            None => self.decision_gate(origin, trapos_id, kind, reach),
        };
        let Err(refused) = gate else {
            return gate;
        };
        let mut entry = State::entry(LogEvent::Refused, refused.to_string());
        entry.who = Some(origin.name().to_owned());
        entry.trapos_id = Some(trapos_id.to_owned());
        entry.what = Some(kind.to_string());
        self.log(entry);
        Err(refused)
    }

    /// The policy's answer: go, ask, or the refusal (which [`State::gate`] logs).
    fn decision_gate(
        &self,
        origin: &Origin,
        trapos_id: &str,
        kind: Kind,
        reach: Reach,
    ) -> Result<Gate, RequestError> {
        let mut d = self.decide(origin, trapos_id, reach.action);
        if let Some(why) = reach.because {
            d.because = format!("{why}; {}", d.because);
        }
        let refused = match d.decision {
            Decision::Allow => return Ok(Gate::Go),
            Decision::Ask if self.approvals.answerable() => return Ok(Gate::Ask(d)),
            Decision::Ask => RequestError::Policy {
                code: ErrorCode::NoApprover,
                message: format!(
                    "{kind} on {trapos_id} needs a person's approval, but nobody can answer: trapdesk runs without its console (--mcp-only). Policy: {}. Run trapdesk with its console to approve calls, or change [policy] in config.toml",
                    d.because
                ),
            },
            Decision::Deny => RequestError::Policy {
                code: ErrorCode::Denied,
                message: format!(
                    "the policy denies {kind} on {trapos_id} to {}: {}. A person can change [policy] in config.toml",
                    origin.name(),
                    d.because
                ),
            },
        };
        Err(refused)
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
        self.approvals.insert(approval);
        self.emit(Event::ApprovalAsked { request_id });
    }

    /// Lets an approved request go to its computer's queue; the log says which console
    /// approved it (`by`), when one is named.
    pub(super) fn release_approved(&mut self, id: &str, by: Option<&str>) {
        let Some(a) = self.approvals.take(id) else {
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
}

impl Session {
    /// Requests waiting for the person's answer, oldest first.
    pub fn approvals(&self) -> Vec<Approval> {
        self.lock().approvals.waiting()
    }

    /// How many consoles can answer approvals now (the host's own, attached ones).
    pub fn approvers(&self) -> usize {
        self.lock().approvals.approvers()
    }

    /// Says that someone can answer approvals (the console, while it runs). Without one, `ask`
    /// refuses at once. Returns a guard; dropping it withdraws the approver.
    pub fn attach_approver(&self) -> ApproverGuard {
        self.lock().approvals.attach();
        ApproverGuard {
            session: self.clone(),
        }
    }

    /// Answers a waiting request.
    ///
    /// # Errors
    /// When `request_id` is not waiting for approval.
    pub fn answer(&self, request_id: &str, answer: Answer) -> Result<(), AnswerError> {
        self.answer_as(request_id, answer, None)
    }

    /// Answers a waiting approval as the console named `by` (the log's `approved` entry
    /// names it), and tells every console who answered ([`Event::AnsweredBy`]). The first
    /// answer wins: a later one finds nothing waiting and fails.
    ///
    /// # Errors
    /// When no approval of that request is waiting.
    pub fn answer_by(&self, request_id: &str, answer: Answer, by: &str) -> Result<(), AnswerError> {
        let what = self
            .approvals()
            .into_iter()
            .find(|a| a.request_id == request_id)
            .map(|a| format!("{} on {} for {}", a.kind, a.trapos_id, a.origin.name()));
        self.answer_as(request_id, answer, Some(by))?;
        let _ = self.shared.events.send(Event::AnsweredBy {
            request_id: request_id.to_owned(),
            by: by.to_owned(),
            answer,
            what: what.unwrap_or_default(),
            at_ms: epoch_ms(std::time::SystemTime::now()),
        });
        Ok(())
    }

    /// [`Session::answer`], with the answering console's name for the log.
    pub(super) fn answer_as(
        &self,
        request_id: &str,
        answer: Answer,
        by: Option<&str>,
    ) -> Result<(), AnswerError> {
        let mut st = self.lock();
        let Some(a) = st.approvals.get(request_id).cloned() else {
            return Err(AnswerError::NotWaiting(request_id.to_owned()));
        };
        match answer {
            Answer::Yes => st.release_approved(request_id, by),
            Answer::No => {
                st.approvals.take(request_id);
                st.emit(Event::ApprovalAnswered {
                    request_id: request_id.to_owned(),
                });
                let message = format!(
                    "a person at the console refused {} on {} for {}. Policy: {}",
                    a.kind,
                    a.trapos_id,
                    a.origin.name(),
                    a.because
                );
                st.finish(
                    request_id,
                    Err(RequestError::Policy {
                        code: ErrorCode::Refused,
                        message,
                    }),
                );
            }
            Answer::Always => {
                st.approvals.grant(&a);
                // Every other call of the same agent, kind and computer already waiting goes too.
                for id in st.approvals.like(&a) {
                    st.release_approved(&id, by);
                }
            }
        }
        Ok(())
    }

    /// Replaces the policy. Waiting approvals keep waiting whatever the new policy says
    /// (a reload never loosens them), unless it now denies them: those are refused.
    pub fn set_policy(&self, policy: Policy) {
        let mut st = self.lock();
        st.settings.policy = policy;
        for a in st.approvals.waiting() {
            let d = st.decide(&a.origin, &a.trapos_id, a.action);
            if d.decision == Decision::Deny {
                st.approvals.take(&a.request_id);
                let message = format!(
                    "the policy was reloaded and now denies {} on {} to {}: {}",
                    a.kind,
                    a.trapos_id,
                    a.origin.name(),
                    d.because
                );
                st.finish(
                    &a.request_id,
                    Err(RequestError::Policy {
                        code: ErrorCode::Denied,
                        message,
                    }),
                );
            }
        }
        let lines = st.settings.policy.describe().join("; ");
        st.log(State::entry(
            LogEvent::Policy,
            format!("policy loaded: {lines}"),
        ));
        st.emit(Event::PolicyChanged);
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.lock().settings.policy.clone()
    }

    /// Re-reads the policy from the config file the host started with.
    ///
    /// # Errors
    /// When the file is unreadable or invalid (the running policy stays).
    pub fn reload_policy(&self) -> Result<(), crate::config::ConfigError> {
        let settings = self.settings();
        match crate::config::reload_policy(&settings) {
            Ok(p) => {
                self.set_policy(p);
                Ok(())
            }
            Err(e) => {
                let mut st = self.lock();
                st.log(State::entry(
                    LogEvent::Policy,
                    format!("reload refused: {e}"),
                ));
                Err(e)
            }
        }
    }

    /// What `origin` may do on `trapos_id`: exec, write, read (session grants applied).
    pub fn effective_policy(&self, origin: &Origin, trapos_id: &str) -> [Decision; 3] {
        let st = self.lock();
        // The decisions alone (`Policy::decision`): the words `decide` makes for each are
        // three `format!`s per computer of a probe page, and nobody reads them here.
        let (id, label) = st.target_of(trapos_id);
        let target = Target {
            trapos_id,
            id,
            label: label.as_deref(),
        };
        Action::ALL.map(|a| {
            let d = st.settings.policy.decision(origin.party(), target, a);
            if d == Decision::Ask && st.approvals.granted(origin, trapos_id, a) {
                Decision::Allow
            } else {
                d
            }
        })
    }

    /// Checks an action that reads what the session already holds (computer-output): it runs
    /// no request, so `ask` waits for the person here.
    ///
    /// # Errors
    /// [`RequestError::Policy`] when denied, refused or not answered; resolution errors.
    pub async fn permit(
        &self,
        target: &str,
        body: impl Into<RequestBody>,
        origin: &Origin,
        timeout: Duration,
    ) -> Result<String, RequestError> {
        let body = body.into();
        // A computer only the history knows (from before a restart) is read as itself.
        let in_history = self
            .history()
            .is_some_and(|h| self.resolve(target).is_err() && h.knows_computer(target));
        let (trapos_id, gate) = {
            let mut st = self.lock();
            let trapos_id = match st.resolve(target) {
                Ok(t) => t,
                Err(_) if st.computers.contains_key(target) || in_history => target.to_owned(),
                Err(e) => return Err(e),
            };
            let gate = st.gate(origin, &trapos_id, &body)?;
            (trapos_id, gate)
        };
        match gate {
            Gate::Go => Ok(trapos_id),
            Gate::Ask(_) => {
                // An approval needs a request to hang on: a local one that the computer never
                // sees and that ends as soon as it is approved.
                let spec = super::RequestSpec::of(body).timeout(Some(timeout)).local();
                self.start(&trapos_id, spec, origin.clone())?.wait().await?;
                Ok(trapos_id)
            }
        }
    }
}

/// Keeps the session's approver count up while it lives (see [`Session::attach_approver`]).
pub struct ApproverGuard {
    session: Session,
}

impl Drop for ApproverGuard {
    fn drop(&mut self) {
        self.session.lock().approvals.detach();
    }
}

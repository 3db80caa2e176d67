//! The policy's one door into the session: every request is checked before it is queued for a
//! computer (by the state's gate, `state/gatekeeper.rs`), and a request the policy says to `ask`
//! about waits, pending with its deadline running, until the person at the console answers
//! here (the waiting state itself is [`super::approval::Approvals`]).
//!
//! A request waiting for approval is a pending request like any other (it shows in the
//! pending list, can be cancelled, and times out), except that it is not in its computer's
//! queue: answering yes puts it there.

use crate::session::LogEvent;
use std::time::Duration;
use trapdesk_proto::protocol::ErrorCode;

use super::Session;
use super::approval::{Answer, AnswerError, Approval, Gate};
use super::model::{Event, Origin, RequestError, epoch_ms};
use super::state::State;
use crate::policy::{Decision, Policy, Target};
use trapdesk_proto::protocol::RequestBody;

impl Session {
    /// Requests waiting for the person's answer, oldest first.
    pub fn approvals(&self) -> Vec<Approval> {
        self.lock().gate.approvals().waiting()
    }

    /// How many consoles can answer approvals now (the host's own, attached ones).
    pub fn approvers(&self) -> usize {
        self.lock().gate.approvals().approvers()
    }

    /// Says that someone can answer approvals (the console, while it runs). Without one, `ask`
    /// refuses at once. Returns a guard; dropping it withdraws the approver.
    pub fn attach_approver(&self) -> ApproverGuard {
        self.lock().gate.approvals_mut().attach();
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
        let Some(a) = st.gate.approvals().get(request_id).cloned() else {
            return Err(AnswerError::NotWaiting(request_id.to_owned()));
        };
        match answer {
            Answer::Yes => st.release_approved(request_id, by),
            Answer::No => {
                st.gate.approvals_mut().take(request_id);
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
                st.gate.approvals_mut().grant(&a);
                // Every other call of the same agent, kind and computer already waiting goes too.
                for id in st.gate.approvals().like(&a) {
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
        for a in st.gate.approvals().waiting() {
            let d = st.decide(&a.origin, &a.trapos_id, a.action);
            if d.decision == Decision::Deny {
                st.gate.approvals_mut().take(&a.request_id);
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
        let (id, label) = st.target_of(trapos_id);
        let target = Target {
            trapos_id,
            id,
            label: label.as_deref(),
        };
        st.gate.effective(&st.settings.policy, target, origin)
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
        self.session.lock().gate.approvals_mut().detach();
    }
}

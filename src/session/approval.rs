//! The policy's one door into the session: every request is checked here before it is queued
//! for a computer, and a request the policy says to `ask` about waits here, pending with its
//! deadline running, until the person at the console answers.
//!
//! A request waiting for approval is a pending request like any other (it shows in the
//! pending list, can be cancelled, and times out), except that it is not in its computer's
//! queue: answering yes puts it there.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::Session;
use super::model::{Event, Origin, RequestError};
use super::state::State;
use crate::policy::{Action, Decided, Decision, Party, Policy, Target};

/// A request waiting for the person's answer, as the console shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    pub request_id: String,
    pub trapos_id: String,
    pub origin: Origin,
    /// Request type (`exec-lua`, `write-file`, ...).
    pub kind: String,
    pub action: Action,
    /// What would run or be touched, in full: the code, the path and arguments, the content.
    pub detail: String,
    /// Bytes of code or content.
    pub size: usize,
    /// How the policy is set for this call.
    pub because: String,
    pub deadline: Instant,
}

/// The person's answer to an [`Approval`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Run this one.
    Yes,
    /// Refuse this one.
    No,
    /// Run it, and allow this agent this kind of action on this computer for the session.
    Always,
}

/// Why an answer did nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("no request {0:?} is waiting for approval (it may have timed out or been cancelled)")]
    NotWaiting(String),
}

/// What the policy lets a request do.
pub(crate) enum Gate {
    Go,
    Ask(Decided),
}

/// Approvals the person gave with `a`, per agent name, computer and action.
pub(crate) type Grants = HashSet<(String, String, Action)>;

impl Origin {
    /// The policy's view of who acts.
    pub fn party(&self) -> Party<'_> {
        match self {
            Origin::Person => Party::Person,
            Origin::Agent(name) => Party::Agent(name),
        }
    }
}

impl State {
    fn target_of(&self, trapos_id: &str) -> (u64, Option<String>) {
        self.computers
            .get(trapos_id)
            .map(|c| (c.info.id, c.info.label.clone()))
            .unwrap_or((0, None))
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
        if d.decision == Decision::Ask
            && self
                .grants
                .contains(&(origin.name().to_owned(), trapos_id.to_owned(), action))
        {
            d.decision = Decision::Allow;
            d.because = format!("{} (allowed for this session at the console)", d.because);
        }
        d
    }

    /// Checks a request before it starts: go, ask the person, or refuse.
    pub(crate) fn gate(
        &mut self,
        origin: &Origin,
        trapos_id: &str,
        kind: &str,
    ) -> Result<Gate, RequestError> {
        let Some(action) = Action::of(kind) else {
            return Ok(Gate::Go);
        };
        let d = self.decide(origin, trapos_id, action);
        let refused = match d.decision {
            Decision::Allow => return Ok(Gate::Go),
            Decision::Ask if self.approvers > 0 => return Ok(Gate::Ask(d)),
            Decision::Ask => RequestError::Policy {
                code: "no_approver",
                message: format!(
                    "{kind} on {trapos_id} needs a person's approval, but nobody can answer: trapdesk runs without its console (--mcp-only). Policy: {}. Run trapdesk with its console to approve calls, or change [policy] in config.toml",
                    d.because
                ),
            },
            Decision::Deny => RequestError::Policy {
                code: "denied",
                message: format!(
                    "the policy denies {kind} on {trapos_id} to {}: {}. A person can change [policy] in config.toml",
                    origin.name(),
                    d.because
                ),
            },
        };
        let mut entry = State::entry("refused", refused.to_string());
        entry.who = Some(origin.name().to_owned());
        entry.trapos_id = Some(trapos_id.to_owned());
        entry.what = Some(kind.to_owned());
        self.log(entry);
        Err(refused)
    }

    /// Registers a request that waits for the person.
    pub(crate) fn ask(&mut self, approval: Approval) {
        let request_id = approval.request_id.clone();
        let mut entry = State::entry(
            "approval_asked",
            format!(
                "{} ({} bytes): {}",
                approval.kind, approval.size, approval.because
            ),
        );
        entry.who = Some(approval.origin.name().to_owned());
        entry.trapos_id = Some(approval.trapos_id.clone());
        entry.request_id = Some(request_id.clone());
        entry.what = Some(approval.kind.clone());
        self.log(entry);
        self.approvals.insert(request_id.clone(), approval);
        self.emit(Event::ApprovalAsked { request_id });
    }

    /// The error a request gets when its approval times out.
    pub(crate) fn not_answered(&self, id: &str, timeout: Duration) -> Option<RequestError> {
        let a = self.approvals.get(id)?;
        Some(RequestError::Policy {
            code: "not_answered",
            message: format!(
                "nobody at the console answered within {} ms, so {} on {} did not run. Policy: {}",
                timeout.as_millis(),
                a.kind,
                a.trapos_id,
                a.because
            ),
        })
    }

    /// Lets an approved request go to its computer's queue.
    fn release_approved(&mut self, id: &str) {
        let Some(a) = self.approvals.remove(id) else {
            return;
        };
        let local = self.pending.get(id).is_some_and(|p| p.local);
        let mut entry = State::entry("approved", format!("{} on {}", a.kind, a.trapos_id));
        entry.who = Some(a.origin.name().to_owned());
        entry.trapos_id = Some(a.trapos_id.clone());
        entry.request_id = Some(id.to_owned());
        entry.what = Some(a.kind.clone());
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
            conn.queue.push_back(id.to_owned());
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

/// The code, path or content a request would use, in full, and its size in bytes.
pub(crate) fn detail(kind: &str, payload: &Value) -> (String, usize) {
    let s = |k: &str| payload.get(k).and_then(Value::as_str).unwrap_or("");
    match kind {
        "exec-lua" => (s("code").to_owned(), s("code").len()),
        "write-file" => {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s("content"))
                .unwrap_or_else(|_| s("content").as_bytes().to_vec());
            let text = String::from_utf8_lossy(&bytes);
            let append = if payload.get("append").and_then(Value::as_bool) == Some(true) {
                " (append)"
            } else {
                ""
            };
            (format!("{}{append}\n{text}", s("path")), bytes.len())
        }
        "run-file" => {
            let args: Vec<String> = payload
                .get("args")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let line = if args.is_empty() {
                s("path").to_owned()
            } else {
                format!("{} {}", s("path"), args.join(" "))
            };
            let n = line.len();
            (line, n)
        }
        _ if payload.get("path").is_some() => (s("path").to_owned(), s("path").len()),
        _ => {
            let text = payload.to_string();
            let n = text.len();
            (text, n)
        }
    }
}

impl Session {
    /// Requests waiting for the person's answer, oldest first.
    pub fn approvals(&self) -> Vec<Approval> {
        let st = self.lock();
        let mut list: Vec<Approval> = st.approvals.values().cloned().collect();
        list.sort_by_key(|a| a.deadline);
        list
    }

    /// Says that someone can answer approvals (the console, while it runs). Without one, `ask`
    /// refuses at once. Returns a guard; dropping it withdraws the approver.
    pub fn attach_approver(&self) -> ApproverGuard {
        self.lock().approvers += 1;
        ApproverGuard {
            session: self.clone(),
        }
    }

    /// Answers a waiting request.
    ///
    /// # Errors
    /// When `request_id` is not waiting for approval.
    pub fn answer(&self, request_id: &str, answer: Answer) -> Result<(), AnswerError> {
        let mut st = self.lock();
        let Some(a) = st.approvals.get(request_id).cloned() else {
            return Err(AnswerError::NotWaiting(request_id.to_owned()));
        };
        match answer {
            Answer::Yes => st.release_approved(request_id),
            Answer::No => {
                st.approvals.remove(request_id);
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
                        code: "refused",
                        message,
                    }),
                );
            }
            Answer::Always => {
                st.grants
                    .insert((a.origin.name().to_owned(), a.trapos_id.clone(), a.action));
                // Every other call of the same agent, kind and computer already waiting goes too.
                let same: Vec<String> = st
                    .approvals
                    .values()
                    .filter(|o| {
                        o.origin == a.origin && o.trapos_id == a.trapos_id && o.action == a.action
                    })
                    .map(|o| o.request_id.clone())
                    .collect();
                for id in same {
                    st.release_approved(&id);
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
        let waiting: Vec<Approval> = st.approvals.values().cloned().collect();
        for a in waiting {
            let d = st.decide(&a.origin, &a.trapos_id, a.action);
            if d.decision == Decision::Deny {
                st.approvals.remove(&a.request_id);
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
                        code: "denied",
                        message,
                    }),
                );
            }
        }
        let lines = st.settings.policy.describe().join("; ");
        st.log(State::entry("policy", format!("policy loaded: {lines}")));
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
                st.log(State::entry("policy", format!("reload refused: {e}")));
                Err(e)
            }
        }
    }

    /// What `origin` may do on `trapos_id`: exec, write, read (session grants applied).
    pub fn effective_policy(&self, origin: &Origin, trapos_id: &str) -> [Decision; 3] {
        let st = self.lock();
        Action::ALL.map(|a| st.decide(origin, trapos_id, a).decision)
    }

    /// Checks an action that reads what the session already holds (computer-output): it runs
    /// no request, so `ask` waits for the person here.
    ///
    /// # Errors
    /// [`RequestError::Policy`] when denied, refused or not answered; resolution errors.
    pub async fn permit(
        &self,
        target: &str,
        kind: &str,
        origin: &Origin,
        timeout: Duration,
    ) -> Result<String, RequestError> {
        let (trapos_id, gate) = {
            let mut st = self.lock();
            let trapos_id = match st.resolve(target) {
                Ok(t) => t,
                Err(_) if st.computers.contains_key(target) => target.to_owned(),
                Err(e) => return Err(e),
            };
            let gate = st.gate(origin, &trapos_id, kind)?;
            (trapos_id, gate)
        };
        match gate {
            Gate::Go => Ok(trapos_id),
            Gate::Ask(_) => {
                // An approval needs a request to hang on: a local one that the computer never
                // sees and that ends as soon as it is approved.
                let spec = super::RequestSpec::new(kind, serde_json::json!({}))
                    .timeout(Some(timeout))
                    .local();
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
        let mut st = self.session.lock();
        st.approvers = st.approvers.saturating_sub(1);
    }
}

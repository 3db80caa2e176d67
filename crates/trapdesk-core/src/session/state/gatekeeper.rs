//! The gate a request passes before it starts ([`Gatekeeper`]): the policy's decision with
//! the person's session grants applied, the approvals waiting for the person, the person's
//! stop for all agents, and the computers whose keyboard the person holds. It decides and
//! holds; the state logs what it refuses and moves requests on (`session/gate.rs`).

use std::collections::HashMap;

use crate::policy::{Action, Decided, Decision, Party, Policy, Reach, Target};
use crate::session::approval::{Approvals, Gate};
use crate::session::model::{Origin, RequestError};
use crate::session::pause::{Paused, paused_refusal};
use trapdesk_proto::protocol::{ErrorCode, Kind, RequestBody};

#[derive(Default)]
pub(crate) struct Gatekeeper {
    /// Requests waiting for the person, the session's grants, who can answer.
    approvals: Approvals,
    /// The person's stop for all agents, while it holds (see `session/pause.rs`).
    paused: Option<Paused>,
    /// Computers the person is attached to (F8): their keyboard is the person's.
    keyboard: HashMap<String, usize>,
}

impl Gatekeeper {
    pub(crate) fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    pub(crate) fn approvals_mut(&mut self) -> &mut Approvals {
        &mut self.approvals
    }

    /// The policy's decision for `origin` doing `action` on `target`, with the person's
    /// session grants applied (they turn `ask` into `allow`, never `deny`).
    pub(crate) fn decide(
        &self,
        policy: &Policy,
        target: Target,
        origin: &Origin,
        action: Action,
    ) -> Decided {
        let mut d = policy.decide(origin.party(), target, action);
        if d.decision == Decision::Ask && self.approvals.granted(origin, target.trapos_id, action) {
            d.decision = Decision::Allow;
            d.because = format!("{} (allowed for this session at the console)", d.because);
        }
        d
    }

    /// What `origin` may do on `target`: exec, write, read (session grants applied). The
    /// decisions alone (`Policy::decision`): the words `decide` makes for each are three
    /// `format!`s per computer of a probe page, and nobody reads them here.
    pub(crate) fn effective(
        &self,
        policy: &Policy,
        target: Target,
        origin: &Origin,
    ) -> [Decision; 3] {
        Action::ALL.map(|a| {
            let d = policy.decision(origin.party(), target, a);
            if d == Decision::Ask && self.approvals.granted(origin, target.trapos_id, a) {
                Decision::Allow
            } else {
                d
            }
        })
    }

    /// Checks a request before it starts: go, ask the person, or refuse (which the state
    /// logs). The action is what the request really reaches ([`Reach::of`]: an agent's write
    /// to a boot path is `exec`), decided here once for every front.
    pub(crate) fn check(
        &self,
        policy: &Policy,
        target: Target,
        origin: &Origin,
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
        match paused_refusal(self.paused.as_ref(), origin, target.trapos_id, kind) {
            Some(e) => Err(e),
            None => self.decision_gate(policy, target, origin, kind, reach),
        }
    }

    /// The policy's answer: go, ask, or the refusal.
    fn decision_gate(
        &self,
        policy: &Policy,
        target: Target,
        origin: &Origin,
        kind: Kind,
        reach: Reach,
    ) -> Result<Gate, RequestError> {
        let trapos_id = target.trapos_id;
        let mut d = self.decide(policy, target, origin, reach.action);
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

    /// The stop for all agents, while it holds.
    pub(crate) fn paused(&self) -> Option<&Paused> {
        self.paused.as_ref()
    }

    /// Sets the stop for all agents; false when it already held (it is left as it was).
    pub(crate) fn pause(&mut self, paused: Paused) -> bool {
        if self.paused.is_some() {
            return false;
        }
        self.paused = Some(paused);
        true
    }

    /// Lifts the stop for all agents; false when it did not hold.
    pub(crate) fn resume(&mut self) -> bool {
        self.paused.take().is_some()
    }

    /// The person takes `trapos_id`'s keyboard (once more).
    pub(crate) fn hold(&mut self, trapos_id: &str) {
        *self.keyboard.entry(trapos_id.to_owned()).or_default() += 1;
    }

    /// The person lets go of `trapos_id`'s keyboard (once).
    pub(crate) fn let_go(&mut self, trapos_id: &str) {
        if let Some(n) = self.keyboard.get_mut(trapos_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.keyboard.remove(trapos_id);
            }
        }
    }

    /// Whether the person holds the computer's keyboard.
    pub(crate) fn held(&self, trapos_id: &str) -> bool {
        self.keyboard.get(trapos_id).is_some_and(|n| *n > 0)
    }
}

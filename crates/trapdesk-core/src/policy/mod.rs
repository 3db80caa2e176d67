//! Who may do what on which computer: the `[policy]` of `config.toml` (docs/security.md).
//!
//! A policy is a default plus rules, each saying `allow`, `ask` or `deny` for the three kinds
//! of action (`exec`, `write`, `read`), separately for agents and for the person. Later rules
//! win, key by key: a rule that only says `exec = "ask"` leaves `write` and `read` as the
//! rules before it (or the default) set them.
//!
//! This module only decides; of requests it knows only their [`Kind`], of sessions nothing. The session is its one
//! door: it asks [`Policy::decide`] before a request starts, and keeps the person's answers.
//!
//! - `config`: the TOML form and its checks (unknown keys and values are refused).
//! - `computer` patterns are [`trapdesk_proto::glob::Glob`]s, the same glob as the console's filter.

mod config;
pub mod reach;

use std::fmt;

use trapdesk_proto::glob::Glob;
use trapdesk_proto::protocol::Kind;

pub use config::PolicyConfig;
pub use reach::Reach;

/// What the policy says about one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Allow,
    Ask,
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// The kinds of action a policy governs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Runs code or sends input: exec-lua, run-file, input (send-input).
    Exec,
    /// Changes files: write-file, move-file, delete-file, make-dir.
    Write,
    /// read-file, list-files, file-info, screen (read-screen), computer-output.
    Read,
}

impl Action {
    pub const ALL: [Action; 3] = [Action::Exec, Action::Write, Action::Read];

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Exec => "exec",
            Action::Write => "write",
            Action::Read => "read",
        }
    }

    /// The action a request type performs; `None` for housekeeping that acts on nothing
    /// (`ping`). What a particular request counts as, its paths considered, is
    /// [`Reach::of`]: an agent's write to a boot path is `exec`.
    pub fn of(kind: Kind) -> Option<Action> {
        match kind {
            Kind::Ping => None,
            // Typing can run anything, so input is exec.
            Kind::ExecLua | Kind::RunFile | Kind::Input => Some(Action::Exec),
            Kind::WriteFile | Kind::MoveFile | Kind::DeleteFile | Kind::MakeDir => {
                Some(Action::Write)
            }
            Kind::ReadFile
            | Kind::ListFiles
            | Kind::FileInfo
            | Kind::Screen
            | Kind::Peripherals
            | Kind::Turtle
            | Kind::ComputerOutput => Some(Action::Read),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who acts: the person at the console, or an agent by its name (a named agent's token name,
/// else its self-declared client name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Party<'a> {
    Person,
    Agent(&'a str),
}

/// The computer an action targets, by every name a rule may use.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub trapos_id: &'a str,
    pub id: u64,
    pub label: Option<&'a str>,
}

/// Decisions for the three actions; `None` leaves the earlier setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Triple {
    pub exec: Option<Decision>,
    pub write: Option<Decision>,
    pub read: Option<Decision>,
}

impl Triple {
    fn get(&self, action: Action) -> Option<Decision> {
        match action {
            Action::Exec => self.exec,
            Action::Write => self.write,
            Action::Read => self.read,
        }
    }

    fn describe(&self) -> String {
        let parts: Vec<String> = Action::ALL
            .iter()
            .filter_map(|a| self.get(*a).map(|d| format!("{a} = {}", d.as_str())))
            .collect();
        format!("{{ {} }}", parts.join(", "))
    }
}

/// One `[[policy.rule]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Glob over traposId, id and label; `*` when the rule names no computer.
    pub computer: String,
    /// `computer`, compiled once: a probe page asks the policy once per computer.
    pub glob: Glob,
    /// Narrows the rule to one agent.
    pub agent_name: Option<String>,
    pub agent: Triple,
    pub person: Triple,
}

impl Rule {
    fn matches(&self, party: Party<'_>, target: Target<'_>) -> bool {
        if let Some(name) = &self.agent_name {
            match party {
                Party::Agent(n) if n == name => {}
                _ => return false,
            }
        }
        self.glob
            .matches_computer(target.trapos_id, target.id, target.label)
    }

    fn triple(&self, party: Party<'_>) -> &Triple {
        match party {
            Party::Person => &self.person,
            Party::Agent(_) => &self.agent,
        }
    }

    /// The rule as the config file spells it, on one line.
    pub fn describe(&self) -> String {
        let mut s = format!("computer = {:?}", self.computer);
        if let Some(n) = &self.agent_name {
            s.push_str(&format!(", agent_name = {n:?}"));
        }
        if self.agent != Triple::default() {
            s.push_str(&format!(", agent = {}", self.agent.describe()));
        }
        if self.person != Triple::default() {
            s.push_str(&format!(", person = {}", self.person.describe()));
        }
        s
    }
}

/// The whole policy: a full default for each party, then the rules in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub agent: [Decision; 3],
    pub person: [Decision; 3],
    pub rules: Vec<Rule>,
    /// What an agent's `send-input` does while the person is attached to that computer.
    pub person_typing: PersonTyping,
}

/// `[policy] person_typing`: while the person is attached (F8) to a computer, an agent's
/// `send-input` to it waits for them to detach (up to the input's 10 s timeout, then
/// `person_typing`), or is refused at once with `person_typing`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PersonTyping {
    #[default]
    Wait,
    Refuse,
}

impl PersonTyping {
    pub fn as_str(self) -> &'static str {
        match self {
            PersonTyping::Wait => "wait",
            PersonTyping::Refuse => "refuse",
        }
    }
}

impl Default for Policy {
    /// Everything allowed, for everyone: what trapdesk did before it had a policy.
    fn default() -> Self {
        Policy {
            agent: [Decision::Allow; 3],
            person: [Decision::Allow; 3],
            rules: Vec::new(),
            person_typing: PersonTyping::Wait,
        }
    }
}

/// A decision and where it came from, so a refusal can say how the policy is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub decision: Decision,
    /// The action decided on (what an approval granted with `a` allows from then on).
    pub action: Action,
    /// 1-based index of the deciding rule; `None` for the default.
    pub rule: Option<usize>,
    /// `agent exec = "ask" (rule 2: computer = "test-*", agent_name = "claude-code")`.
    pub because: String,
}

fn index(action: Action) -> usize {
    match action {
        Action::Exec => 0,
        Action::Write => 1,
        Action::Read => 2,
    }
}

impl Policy {
    /// A policy from the `[policy]` part of a `config.toml` text (tests, tools); the host reads
    /// it with the rest of the file in `config`.
    ///
    /// # Errors
    /// The TOML error, unknown keys and values included.
    pub fn from_toml(text: &str) -> Result<Policy, String> {
        #[derive(serde::Deserialize)]
        struct File {
            #[serde(default)]
            policy: PolicyConfig,
        }
        toml::from_str::<File>(text)
            .map(|f| f.policy.build())
            .map_err(|e| e.to_string())
    }

    /// What `party` may do of `action` on `target`: the last matching rule that sets this
    /// action wins, else the default.
    pub fn decide(&self, party: Party<'_>, target: Target<'_>, action: Action) -> Decided {
        let who = match party {
            Party::Person => "person",
            Party::Agent(_) => "agent",
        };
        for (i, rule) in self.rules.iter().enumerate().rev() {
            if !rule.matches(party, target) {
                continue;
            }
            if let Some(d) = rule.triple(party).get(action) {
                return Decided {
                    decision: d,
                    action,
                    rule: Some(i + 1),
                    because: format!(
                        "{who} {action} = \"{}\" (rule {}: {})",
                        d.as_str(),
                        i + 1,
                        rule.describe()
                    ),
                };
            }
        }
        let d = match party {
            Party::Person => self.person[index(action)],
            Party::Agent(_) => self.agent[index(action)],
        };
        Decided {
            decision: d,
            action,
            rule: None,
            because: format!("{who} {action} = \"{}\" (policy.default)", d.as_str()),
        }
    }

    /// [`Policy::decide`]'s decision alone, without the words that explain it: a probe page
    /// asks it three times for each of its computers and shows none of the words.
    pub fn decision(&self, party: Party<'_>, target: Target<'_>, action: Action) -> Decision {
        for rule in self.rules.iter().rev() {
            if !rule.matches(party, target) {
                continue;
            }
            if let Some(d) = rule.triple(party).get(action) {
                return d;
            }
        }
        match party {
            Party::Person => self.person[index(action)],
            Party::Agent(_) => self.agent[index(action)],
        }
    }

    /// The three decisions for `party` on `target`, in [`Action::ALL`] order.
    pub fn effective(&self, party: Party<'_>, target: Target<'_>) -> [Decision; 3] {
        Action::ALL.map(|a| self.decision(party, target, a))
    }

    /// True when nothing is ever asked or denied (the default policy, or rules that only allow).
    pub fn allows_everything(&self) -> bool {
        let all = |t: &Triple| {
            Action::ALL
                .iter()
                .all(|a| t.get(*a) != Some(Decision::Deny) && t.get(*a) != Some(Decision::Ask))
        };
        self.agent.iter().all(|d| *d == Decision::Allow)
            && self.person.iter().all(|d| *d == Decision::Allow)
            && self.rules.iter().all(|r| all(&r.agent) && all(&r.person))
    }

    /// The policy as lines for the console: the defaults, then each rule.
    pub fn describe(&self) -> Vec<String> {
        let fmt = |d: &[Decision; 3]| {
            format!(
                "exec = {}, write = {}, read = {}",
                d[0].as_str(),
                d[1].as_str(),
                d[2].as_str()
            )
        };
        let mut lines = vec![
            format!("default agent:  {}", fmt(&self.agent)),
            format!("default person: {}", fmt(&self.person)),
        ];
        if self.rules.is_empty() {
            lines.push("no rules".to_owned());
        }
        for (i, r) in self.rules.iter().enumerate() {
            lines.push(format!("rule {}: {}", i + 1, r.describe()));
        }
        lines.push(format!(
            "person_typing = {:?} (agents' input while you are attached)",
            self.person_typing.as_str()
        ));
        lines
    }
}

#[cfg(test)]
mod tests;

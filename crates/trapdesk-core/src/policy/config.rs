//! The `[policy]` table of `config.toml`. Unknown keys and values are refused by serde (with
//! the line, by the config loader); checks that serde cannot express run in `try_from`, so
//! their errors carry the line of the offending rule too.

use serde::Deserialize;

use super::{Decision, Policy, Rule, Triple};

/// `[policy]`: a default and rules, in file order.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    #[serde(default)]
    pub default: DefaultConfig,
    #[serde(default)]
    pub rule: Vec<RuleConfig>,
    /// `person_typing = "wait"` (the default) or `"refuse"`.
    #[serde(default)]
    pub person_typing: super::PersonTyping,
}

/// `[policy.default]`; what it leaves out is `allow`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DefaultConfig {
    #[serde(default)]
    pub agent: TripleConfig,
    #[serde(default)]
    pub person: TripleConfig,
}

/// `{ exec = "…", write = "…", read = "…" }`, each optional.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TripleConfig {
    pub exec: Option<Decision>,
    pub write: Option<Decision>,
    pub read: Option<Decision>,
}

impl From<TripleConfig> for Triple {
    fn from(t: TripleConfig) -> Self {
        Triple {
            exec: t.exec,
            write: t.write,
            read: t.read,
        }
    }
}

/// One `[[policy.rule]]`, checked.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(try_from = "RawRule")]
pub struct RuleConfig(Rule);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    computer: Option<String>,
    agent_name: Option<String>,
    agent: Option<TripleConfig>,
    person: Option<TripleConfig>,
}

impl TryFrom<RawRule> for RuleConfig {
    type Error = String;

    fn try_from(r: RawRule) -> Result<Self, Self::Error> {
        let computer = r.computer.unwrap_or_else(|| "*".to_owned());
        if computer.trim().is_empty() {
            return Err("`computer` is empty; use \"*\" for every computer, or a traposId, id or label (with * and ? globs)".to_owned());
        }
        if r.agent_name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err(
                "`agent_name` is empty; name one agent, or leave the key out for every agent"
                    .to_owned(),
            );
        }
        if r.agent_name.is_some() && r.person.is_some() {
            return Err("a rule with `agent_name` applies to that agent only, so its `person` table would never apply; put it in a rule of its own".to_owned());
        }
        if r.agent.is_none() && r.person.is_none() {
            return Err("the rule sets nothing: give it `agent = { exec = …, write = …, read = … }` and/or `person = { … }` (each allow, ask or deny)".to_owned());
        }
        Ok(RuleConfig(Rule {
            glob: trapdesk_proto::glob::Glob::new(&computer),
            computer,
            agent_name: r.agent_name,
            agent: r.agent.unwrap_or_default().into(),
            person: r.person.unwrap_or_default().into(),
        }))
    }
}

impl PolicyConfig {
    /// The policy this table describes.
    pub fn build(&self) -> Policy {
        let full = |t: &TripleConfig| {
            [
                t.exec.unwrap_or(Decision::Allow),
                t.write.unwrap_or(Decision::Allow),
                t.read.unwrap_or(Decision::Allow),
            ]
        };
        Policy {
            agent: full(&self.default.agent),
            person: full(&self.default.person),
            rules: self.rule.iter().map(|r| r.0.clone()).collect(),
            person_typing: self.person_typing,
        }
    }
}

//! Who started a request: [`Origin`].

use serde::{Deserialize, Serialize};

/// Who started a request: the person at the console, an agent by its MCP client name, or the
/// person's own shell through `trapdesk`'s one-shot commands (`cli`) or `trapdesk sync`
/// (`sync`). The host knows the last two by the credential they present (the person token,
/// `crate::mcp::caller_origin`), never by the name a client gives itself: the clientInfo
/// names below only pick between `cli` and `sync` for a request that carried that token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Origin {
    Person,
    Agent(String),
    Cli,
    Sync,
    /// The host itself, on the person's behalf: upgrading a client too old to upgrade itself
    /// (`gateway/upgrade.rs`).
    Host,
}

impl Origin {
    /// clientInfo name of `trapdesk exec/run/computers/ls/get/put`.
    pub const CLI_CLIENT: &str = "trapdesk-cli";
    /// clientInfo name of `trapdesk sync`.
    pub const SYNC_CLIENT: &str = "trapdesk-sync";

    /// The origin a name the host itself recorded stands for ([`Origin::name`] read back):
    /// `person`, `cli`, `sync` and `host` are the person's, every other name an agent's. Only
    /// for names the host wrote; a name a client or computer sends is an agent's
    /// (`crate::mcp::caller_origin`).
    pub fn from_recorded(name: &str) -> Origin {
        match name {
            "person" => Origin::Person,
            "cli" => Origin::Cli,
            "sync" => Origin::Sync,
            "host" => Origin::Host,
            other => Origin::Agent(other.to_owned()),
        }
    }

    /// Short display form for the person at the console: `you`, the agent's client name,
    /// `cli` or `sync`.
    pub fn label(&self) -> &str {
        match self {
            Origin::Person => "you",
            Origin::Agent(name) => name,
            Origin::Cli => "cli",
            Origin::Sync => "sync",
            Origin::Host => "host",
        }
    }

    /// The name in the log and in what agents read: `person`, or the agent's client name.
    /// ("you" would tell an agent reading `session-log` that it did what the person did.)
    pub fn name(&self) -> &str {
        match self {
            Origin::Person => "person",
            Origin::Agent(name) => name,
            Origin::Cli => "cli",
            Origin::Sync => "sync",
            Origin::Host => "host",
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

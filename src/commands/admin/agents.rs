//! `trapdesk agent …`: the named agents of the MCP endpoint, in the agents file of the data
//! directory.

use std::io::Write;
use std::path::Path;

use clap::Subcommand;

/// `trapdesk agent …`
#[derive(Debug, Subcommand)]
pub enum AgentCmd {
    /// Create a named agent and print its bearer token (once; only its hash is kept).
    #[command(
        after_help = "Example: trapdesk agent add claude   (then give that client the printed token)\nIn one command: claude mcp add --transport http trapdesk http://127.0.0.1:4445/mcp --header \"Authorization: Bearer $(trapdesk agent add claude-code --token-only)\""
    )]
    Add {
        name: String,
        /// Print the token alone, for `$(trapdesk agent add NAME --token-only)` in a client's
        /// configuration command.
        #[arg(long)]
        token_only: bool,
    },
    /// List the named agents.
    #[command(after_help = "Example: trapdesk agent list")]
    List,
    /// Remove a named agent; its token stops working at its next request.
    #[command(after_help = "Example: trapdesk agent remove claude")]
    Remove { name: String },
}

/// `trapdesk agent …`.
///
/// # Errors
/// As the agents file operations.
pub fn agent(dir: &Path, cmd: AgentCmd, out: &mut dyn Write) -> anyhow::Result<()> {
    match cmd {
        AgentCmd::Add { name, token_only } => {
            let token = trapdesk_core::trust::agents::add(dir, &name)?;
            if token_only {
                writeln!(out, "{token}")?;
                return Ok(());
            }
            writeln!(
                out,
                "agent {name} added. Its token (shown this once; only a hash is kept):"
            )?;
            writeln!(out)?;
            writeln!(out, "    {token}")?;
            writeln!(out)?;
            writeln!(out, "Give it to the agent's MCP client as the header")?;
            writeln!(out, "    Authorization: Bearer {token}")?;
            writeln!(
                out,
                "or, for `trapdesk mcp-stdio`, as env TRAPDESK_AGENT_TOKEN."
            )?;
            writeln!(
                out,
                "Its calls show as {name} in the console, the log, the transcript and the policy. README.md shows each client's config."
            )?;
        }
        AgentCmd::List => {
            let list = trapdesk_core::trust::agents::list(dir)?;
            if list.is_empty() {
                writeln!(
                    out,
                    "no named agents: only this install's own tools (the local token) and --mcp-token can use the MCP endpoint"
                )?;
            }
            for a in list {
                let when = chrono::DateTime::from_timestamp_millis(a.created_ms as i64)
                    .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                    .unwrap_or_default();
                writeln!(out, "{}  (added {when})", a.name)?;
            }
        }
        AgentCmd::Remove { name } => {
            trapdesk_core::trust::agents::remove(dir, &name)?;
            writeln!(
                out,
                "agent {name} removed; its token is refused from its next request on"
            )?;
        }
    }
    Ok(())
}

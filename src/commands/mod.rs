//! Every subcommand under one roof: the command line's flags and subcommands ([`Cli`]), and
//! what each runs ([`run`]): the host itself ([`crate::host::run`]), the other run modes
//! ([`modes`]), the data dir's stores ([`admin`]), `doctor`, the one-shot commands that are
//! MCP clients of the running host ([`remote`]) and [`sync`]. Nothing below imports from here.
//!
//! A new subcommand: a variant of [`Command`] with an `Example:` line in its help (a test
//! checks every one), its arguments and code in a module here, one arm in [`run`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The host's flags live in `config` (beneath the hub), so that settings do not depend on the
/// command line.
use trapdesk_core::config::HostArgs;

pub mod admin;
pub mod attach;
pub mod control_client;
pub mod doctor;
pub mod modes;
pub mod pause;
pub mod remote;
pub mod sync;

pub use modes::{emulate, mcp_stdio};

/// Command line of the `trapdesk` binary.
#[derive(Debug, Parser)]
#[command(
    name = "trapdesk",
    version,
    about = "Operate ComputerCraft computers from a terminal and from AI agents",
    after_help = "Example: trapdesk --demo 3   (console with three emulated computers)\nA computer will not link? Run `trapdesk doctor`."
)]
pub struct Cli {
    #[command(flatten)]
    pub host: HostArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Modes other than the host.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The console of a running host (a headless `--mcp-only` one, or across an SSH tunnel); quitting detaches and leaves the host running.
    #[command(
        after_help = "Example: trapdesk attach   (the host running here)\nExample: trapdesk attach http://127.0.0.1:7000 --token-file ~/trapdesk-token   (through `ssh -L 7000:127.0.0.1:4445 server`)\nExit codes: 0 detached, 1 the terminal failed, 2 usage, 3 unreachable/refused/lost the host."
    )]
    Attach(attach::AttachArgs),
    /// Run Lua on a linked computer: output streams as it comes, returned values follow.
    #[command(
        after_help = "Example: trapdesk exec miner 'print(turtle.getFuelLevel()) return os.time()'\nExit codes: 0 ok, 1 Lua error, 2 usage, 3 unreachable/not linked/timed out/refused; cancelled on the computer: 130 Ctrl-C, 141 stdout's reader gone (| head), 143 SIGTERM."
    )]
    Exec(remote::ExecArgs),
    /// Run a program on a linked computer with arguments.
    #[command(
        after_help = "Example: trapdesk run miner programs/dig.lua 3 north\nExit codes: 0 ok, 1 the program failed, 2 usage, 3 unreachable/not linked/timed out/refused; cancelled on the computer: 130 Ctrl-C, 141 stdout's reader gone (| head), 143 SIGTERM."
    )]
    Run(remote::RunArgs),
    /// List the linked computers.
    #[command(after_help = "Example: trapdesk computers --match 'miner*'")]
    Computers(remote::ComputersArgs),
    /// List a directory on a computer.
    #[command(after_help = "Example: trapdesk ls miner:/programs")]
    Ls(remote::LsArgs),
    /// Copy a file from a computer (byte-exact).
    #[command(
        after_help = "Example: trapdesk get miner:/startup.lua ./startup.lua   (-f to overwrite a local file that exists)"
    )]
    Get(remote::GetArgs),
    /// Copy a file to a computer (byte-exact, any size the host supports).
    #[command(
        after_help = "Example: trapdesk put ./dig.lua miner:/programs/   (a PATH ending in / is a folder, made when missing)"
    )]
    Put(remote::PutArgs),
    /// Mirror a local folder onto a computer: push what differs, then each save (run-on-save).
    #[command(
        after_help = "Example: trapdesk sync ./src miner:/prog --run \"prog/main.lua --verbose\" --ignore '*.md'"
    )]
    Sync(sync::SyncArgs),
    /// Check why a computer will not link: addresses, port, the server's http rules, secret, refusals.
    #[command(
        after_help = "Example: trapdesk doctor --minecraft ~/mc-server --gateway-bind 0.0.0.0:4444"
    )]
    Doctor(doctor::DoctorArgs),
    /// Print shell completions (from these definitions) for bash, zsh or fish.
    #[command(
        after_help = "Example: trapdesk completions bash > ~/.local/share/bash-completion/completions/trapdesk"
    )]
    Completions {
        /// bash, zsh, fish (also elvish, powershell).
        shell: clap_complete::Shell,
    },
    /// Serve MCP on stdio, forwarding to a running trapdesk so the agent joins its session.
    #[command(after_help = "Example: claude mcp add trapdesk -- trapdesk mcp-stdio")]
    McpStdio {
        /// MCP endpoint of the running trapdesk [default: the live host in the data dir's
        /// host.json; with none, nothing is dialled] (agent token: env TRAPDESK_AGENT_TOKEN,
        /// else the data dir's local token).
        // The CLI's variable too: one export points every front at a host on other ports.
        #[arg(long, value_name = "URL", env = "TRAPDESK_CONNECT")]
        connect: Option<String>,
        /// With no trapdesk running, run a headless gateway of our own instead of failing
        /// (the host flags below then apply to it).
        #[arg(long)]
        standalone: bool,
        #[command(flatten)]
        host: HostArgs,
    },
    /// Named agents: bearer tokens that name MCP clients (docs/security.md).
    #[command(after_help = "Example: trapdesk agent add claude")]
    Agent {
        #[command(subcommand)]
        action: admin::AgentCmd,
        /// Data directory [default: env TRAPDESK_DATA_DIR, else the platform's].
        #[arg(long, value_name = "DIR", global = true, env = "TRAPDESK_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The computers' secrets: show or rotate the shared one, list, add or forget computers' own, open or close enrolment.
    #[command(after_help = "Example: trapdesk secret show")]
    Secret {
        #[command(subcommand)]
        action: admin::SecretCmd,
        /// Data directory [default: env TRAPDESK_DATA_DIR, else the platform's].
        #[arg(long, value_name = "DIR", global = true, env = "TRAPDESK_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Stop all agents: refuse their new calls that run code, type or write, and cancel their running ones (reads go on; your own tools are not touched).
    #[command(
        after_help = "Example: trapdesk pause   (then `trapdesk resume` lets them run again)"
    )]
    Pause(remote::ClientArgs),
    /// Let agents run code, type and write again after `trapdesk pause` (or the console's stop).
    #[command(after_help = "Example: trapdesk resume")]
    Resume(remote::ClientArgs),
    /// Print (or follow) the audit trail: every request, who made it, how it ended.
    #[command(after_help = "Example: trapdesk transcript --origin cli --outcome error --follow")]
    Transcript {
        #[command(flatten)]
        filter: admin::TranscriptArgs,
        /// Data directory [default: env TRAPDESK_DATA_DIR, else the platform's].
        #[arg(long, value_name = "DIR", env = "TRAPDESK_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Run one emulated computer (or turtle, or pocket computer) against any gateway.
    #[command(
        after_help = "Example: trapdesk emulate --url ws://127.0.0.1:4444/gateway --id 7 --label miner --secret-file ~/.trapdesk-secret\nExample: SANDBOX_PASSWORD=S trapdesk emulate --url ws://127.0.0.1:4444/gateway --id 8 --kind turtle --fuel 500"
    )]
    Emulate {
        /// Gateway WebSocket URL, for example ws://127.0.0.1:4444/gateway.
        #[arg(long)]
        url: String,
        /// Computer id.
        #[arg(long, default_value_t = 0)]
        id: u64,
        /// Computer label.
        #[arg(long)]
        label: Option<String>,
        /// Secret [default: env SANDBOX_PASSWORD]. Shows in `ps`: prefer --secret-file or the
        /// environment.
        #[arg(long, value_name = "S")]
        secret: Option<String>,
        /// A file holding the secret (one trailing newline ignored; 0600, yours).
        #[arg(long, value_name = "FILE", conflicts_with = "secret")]
        secret_file: Option<PathBuf>,
        /// Directory for the log, and for the disk unless --disk is given.
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Directory that is the computer's disk [default: computers/<id> in the data dir].
        #[arg(long, value_name = "DIR")]
        disk: Option<PathBuf>,
        /// The server's max_websocket_message for the gateway's host, in bytes (0: no limit).
        #[arg(long, value_name = "N", default_value_t = trapdesk_emu::DEFAULT_WEBSOCKET_MESSAGE)]
        max_websocket_message: usize,
        /// The server's computer_space_limit: the disk's capacity in bytes.
        #[arg(long, value_name = "N", default_value_t = trapdesk_emu::COMPUTER_SPACE_LIMIT)]
        disk_space: u64,
        /// What it is: a computer (51x19), a turtle (39x13, the turtle API with fuel and 16
        /// slots, in an empty world) or a pocket computer (26x20, the pocket API).
        #[arg(long, value_enum, default_value_t = modes::EmulateKind::Computer)]
        kind: modes::EmulateKind,
        /// A turtle's fuel at its first boot (capped at its limit: 100000, 20000 with --normal).
        #[arg(long, value_name = "N")]
        fuel: Option<u32>,
        /// A normal, not advanced, one: a greyscale terminal and a turtle's lower fuel limit.
        #[arg(long)]
        normal: bool,
    },
}

/// `trapdesk completions SHELL`: the completion script, generated from the clap definitions.
pub fn completions(shell: clap_complete::Shell) {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "trapdesk", &mut script);
    // A closed pipe (`| head`) is the reader's choice, not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
}

/// The one line `main` prints for an error: the error and each cause that adds something.
/// (`{:#}` would repeat an OS error whose text the outer message already quotes.)
pub fn report(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        let core = c.find(" (os error").map_or(c.as_str(), |i| &c[..i]);
        if !text.contains(core) {
            text.push_str(": ");
            text.push_str(&c);
        }
    }
    text
}

/// An error already explained on stderr; `main` only sets the exit code.
#[derive(Debug, thiserror::Error)]
#[error("already reported")]
pub struct AlreadyReported;

/// Runs the parsed command line to its end.
///
/// # Errors
/// The command's own error; a [`remote::Failure`] carries its exit code, an
/// [`AlreadyReported`] was explained on stderr already.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let client = |r: Result<(), remote::Failure>| r.map_err(anyhow::Error::new);
    if only_prints(cli.command.as_ref()) {
        end_quietly_on_a_closed_pipe();
    }
    match cli.command {
        None => crate::host::run(cli.host).await,
        Some(Command::McpStdio {
            connect,
            standalone,
            host,
        }) => mcp_stdio(host, connect, standalone).await,
        Some(Command::Emulate {
            url,
            id,
            label,
            secret,
            secret_file,
            data_dir,
            disk,
            max_websocket_message,
            disk_space,
            kind,
            fuel,
            normal,
        }) => {
            let mut limits = trapdesk_emu::Limits::default();
            limits.max_websocket_message = max_websocket_message;
            limits.disk_space = disk_space;
            let device = modes::EmulateDevice { kind, fuel, normal };
            let secret = match secret_file {
                Some(f) => Some(
                    trapdesk_core::config::private::read_credential("--secret-file", &f)
                        .map_err(anyhow::Error::msg)?,
                ),
                None => secret,
            };
            emulate(url, id, label, secret, data_dir, disk, limits, device).await
        }
        Some(Command::Attach(a)) => client(attach::attach(a).await),
        Some(Command::Exec(a)) => client(remote::exec(a).await),
        Some(Command::Run(a)) => client(remote::run(a).await),
        Some(Command::Computers(a)) => client(remote::computers(a).await),
        Some(Command::Ls(a)) => client(remote::ls(a).await),
        Some(Command::Get(a)) => client(remote::get(a).await),
        Some(Command::Put(a)) => client(remote::put(a).await),
        Some(Command::Sync(a)) => client(sync::sync(a).await),
        Some(Command::Doctor(a)) => client(doctor::doctor(a).await),
        Some(Command::Pause(a)) => client(pause::pause(&a, true).await),
        Some(Command::Resume(a)) => client(pause::pause(&a, false).await),
        Some(Command::Completions { shell }) => {
            completions(shell);
            Ok(())
        }
        Some(Command::Agent { action, data_dir }) => {
            let dir = admin::data_dir(data_dir)?;
            admin::agent(&dir, action, &mut std::io::stdout())
        }
        Some(Command::Secret { action, data_dir }) => {
            let dir = admin::data_dir(data_dir)?;
            if let admin::SecretCmd::Show { .. } = action
                && admin::show_running(&dir, &mut std::io::stdout()).await?
            {
                return Ok(());
            }
            admin::secret(&dir, action, &mut std::io::stdout())
        }
        Some(Command::Transcript { filter, data_dir }) => {
            let dir = admin::data_dir(data_dir)?;
            admin::transcript(&dir, filter, &mut std::io::stdout()).await
        }
    }
}

/// The process's exit code for [`run`]'s outcome, with the one line it prints for an error.
/// The commands whose output a closed pipe may cut short with nothing else to undo. Not
/// `transcript`, which sees the closed pipe itself and exits 0, as `--follow` into `head`
/// wants.
fn only_prints(c: Option<&Command>) -> bool {
    matches!(
        c,
        Some(
            Command::Computers(_)
                | Command::Ls(_)
                | Command::Get(_)
                | Command::Put(_)
                | Command::Doctor(_)
                | Command::Completions { .. }
                | Command::Agent { .. }
                | Command::Secret { .. }
        )
    )
}

/// A command that only prints ends as `cat` does when its reader goes away (`trapdesk doctor |
/// head -3`): SIGPIPE's default action, exit status 141 and nothing said, where Rust's runtime
/// ignores the signal and the next `println!` panics with a backtrace. Not for `exec`, `run`
/// and `sync`, which see the closed pipe themselves to cancel their run on the computer first,
/// nor for the host. Sockets are unaffected: the standard library sends with MSG_NOSIGNAL (or
/// SO_NOSIGPIPE), so only stdout and stderr can raise it.
fn end_quietly_on_a_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: sets one signal's disposition to its default; no handler runs our code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

pub fn exit_code(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<remote::Failure>() => match e.downcast::<remote::Failure>() {
            Ok(f) => {
                // It may quote a computer's error, a label or a file name: no control character
                // reaches the terminal raw.
                if !f.message.is_empty() {
                    eprintln!(
                        "trapdesk: {}",
                        trapdesk_proto::text::printable_lines(&f.message)
                    );
                }
                ExitCode::from(f.code)
            }
            Err(_) => ExitCode::FAILURE,
        },
        Err(e) if e.is::<AlreadyReported>() => ExitCode::FAILURE,
        Err(e) => {
            eprintln!(
                "trapdesk: {}",
                trapdesk_proto::text::printable_lines(&report(&e))
            );
            ExitCode::FAILURE
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every command, parents and leaves, as `trapdesk a b` with its definition.
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        out.push((path.to_owned(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_command_help_shows_an_example() {
        let mut root = Cli::command();
        root.build();
        let mut all = Vec::new();
        walk(&root, "trapdesk", &mut all);
        // clap's generated `help` subcommands are not ours to document.
        all.retain(|(path, _)| !path.split(' ').any(|w| w == "help"));
        assert!(
            all.len() > 15,
            "the tree walk found too little: {}",
            all.len()
        );
        let mut missing = Vec::new();
        for (path, mut cmd) in all {
            let help = cmd.render_long_help().to_string();
            // The example must run this very command, not some other one.
            let ok = help.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with("Example:") && l.contains(path.as_str())
            });
            if !ok {
                missing.push(path);
            }
        }
        assert!(
            missing.is_empty(),
            "no example line in --help of: {missing:?}"
        );
    }
}

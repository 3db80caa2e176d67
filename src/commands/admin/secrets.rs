//! `trapdesk secret …`: the computers' secrets (the shared one, each computer's own, and
//! whether enrolment is open), in the secrets files of the data directory.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Subcommand;

/// `trapdesk secret …`
#[derive(Debug, Subcommand)]
pub enum SecretCmd {
    /// Print the shared secret and the line that installs the client on a computer.
    #[command(
        after_help = "Example: trapdesk secret show   (then type the printed line on a computer)"
    )]
    Show {
        /// The gateway's address, for the install line [default: as the host resolves it].
        #[arg(long, env = "TRAPDESK_GATEWAY_BIND", value_name = "ADDR", value_parser = trapdesk_core::config::parse_bind)]
        gateway_bind: Option<std::net::SocketAddr>,
        /// Configuration file [default: config.toml in the data dir, else the platform config dir].
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Write a new shared secret; computers not enrolled must re-enter it to link again.
    #[command(after_help = "Example: trapdesk secret rotate")]
    Rotate,
    /// Give one computer (id or label) a secret of its own; the shared one stops linking it.
    #[command(
        after_help = "Example: trapdesk secret add miner   (then type the printed line on it)"
    )]
    Add { computer: String },
    /// List the computers that have a secret of their own (never the secrets).
    #[command(after_help = "Example: trapdesk secret list")]
    List,
    /// Remove a computer's own secret, so that it can enrol again (a reinstalled computer).
    #[command(after_help = "Example: trapdesk secret forget 7")]
    Forget {
        /// Its id, the name it was added under, or the label it enrolled with.
        computer: String,
    },
    /// Open or close enrolment: closed, the shared secret links no computer without its own.
    #[command(after_help = "Example: trapdesk secret enrol off   (once every computer is set up)")]
    Enrol {
        #[arg(value_enum)]
        state: Switch,
    },
}

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    On,
    Off,
}

/// `trapdesk secret …`.
///
/// # Errors
/// As the secrets file operations; `show` as the host's settings.
pub fn secret(dir: &Path, cmd: SecretCmd, out: &mut dyn Write) -> anyhow::Result<()> {
    match cmd {
        SecretCmd::Show {
            gateway_bind,
            config,
        } => show(dir, gateway_bind, config, out)?,
        SecretCmd::Rotate => rotate(dir, out)?,
        SecretCmd::Add { computer } => add(dir, &computer, out)?,
        SecretCmd::List => list(dir, out)?,
        SecretCmd::Forget { computer } => forget(dir, &computer, out)?,
        SecretCmd::Enrol { state } => enrol(dir, state, out)?,
    }
    Ok(())
}

/// `secret rotate`: a new shared secret, and what each kind of computer must do about it.
fn rotate(dir: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    let s = trapdesk_core::trust::secrets::rotate(dir)?;
    writeln!(
        out,
        "new shared secret written to {} (mode 0600):",
        dir.join("secret").display()
    )?;
    writeln!(out)?;
    writeln!(out, "    {s}")?;
    writeln!(out)?;
    writeln!(
        out,
        "The old one no longer links or enrols a computer (a running trapdesk reads the file at each link; computers linked now stay linked until they reconnect)."
    )?;
    writeln!(
        out,
        "Enrolled computers keep linking with their own secrets. On each computer that still uses the shared secret (a client from before enrolment), its player runs:"
    )?;
    writeln!(out, "    set sandbox.password {s}")?;
    writeln!(
        out,
        "then reboots it (or re-runs the installer with the new secret)."
    )?;
    writeln!(
        out,
        "A secret given by --secret, SANDBOX_PASSWORD or config.toml overrides this file: change it there instead."
    )?;
    Ok(())
}

/// `secret add`: a secret of the computer's own, and the line its player types.
fn add(dir: &Path, computer: &str, out: &mut dyn Write) -> anyhow::Result<()> {
    let s = trapdesk_core::trust::secrets::add(dir, computer)?;
    writeln!(
        out,
        "computer {computer} now has a secret of its own (only a hash is kept):"
    )?;
    writeln!(out)?;
    writeln!(out, "    {s}")?;
    writeln!(out)?;
    writeln!(
        out,
        "The shared secret no longer links it. Its player runs:"
    )?;
    writeln!(out, "    set trapdesk.secret {s}")?;
    writeln!(
        out,
        "(a client from before enrolment: set sandbox.password {s}) then reboots it. Running this again replaces the secret."
    )?;
    Ok(())
}

/// `secret list`: whether enrolment is open, and each computer with a secret of its own.
fn list(dir: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    let list = trapdesk_core::trust::secrets::list(dir)?;
    let open = trapdesk_core::trust::secrets::enrolment_open(dir)?;
    writeln!(
        out,
        "enrolment is {}",
        if open {
            "open: the shared secret enrols a computer that has no secret of its own (trapdesk secret enrol off closes it)"
        } else {
            "closed: the shared secret links no computer without its own secret (trapdesk secret enrol on opens it)"
        }
    )?;
    if list.is_empty() {
        writeln!(out, "no computer has a secret of its own yet")?;
    }
    for c in list {
        let when = chrono::DateTime::from_timestamp_millis(c.since_ms as i64)
            .filter(|_| c.since_ms > 0)
            .map(|t| format!(" since {}", t.format("%Y-%m-%d %H:%M UTC")))
            .unwrap_or_default();
        let state = if c.pending {
            "pending (it has not said it stored its secret)"
        } else {
            "firm"
        };
        let how = c.how.as_deref().unwrap_or("added");
        let label = c
            .label
            .as_deref()
            .map(|l| format!(" (enrolled as {})", trapdesk_proto::text::printable(l)))
            .unwrap_or_default();
        let computer = trapdesk_proto::text::printable(&c.computer);
        writeln!(out, "{computer}  {state}, {how}{when}{label}")?;
    }
    Ok(())
}

/// `secret forget`: the computer enrols again with the shared secret.
fn forget(dir: &Path, computer: &str, out: &mut dyn Write) -> anyhow::Result<()> {
    let gone = trapdesk_core::trust::secrets::forget(dir, computer)?;
    for c in gone {
        writeln!(
            out,
            "computer {} no longer has a secret of its own; it links again by enrolling with the shared secret (its client does so at its next link while enrolment is open)",
            trapdesk_proto::text::printable(&c.computer)
        )?;
    }
    Ok(())
}

/// `secret enrol on|off`: opens or closes enrolment.
fn enrol(dir: &Path, state: Switch, out: &mut dyn Write) -> anyhow::Result<()> {
    let open = state == Switch::On;
    let changed = trapdesk_core::trust::secrets::set_enrolment(dir, open)?;
    let now = if open {
        "open: a computer without a secret of its own that presents the shared secret gets one"
    } else {
        "closed: the shared secret links no computer without its own secret; enrolled computers link as before"
    };
    let was = if changed { "" } else { " (it was already)" };
    writeln!(
        out,
        "enrolment is {now}{was}. A running trapdesk applies it at the next link."
    )?;
    Ok(())
}

/// `trapdesk secret show` while a host runs on `dir`: the secret that host checks now and its
/// install line, asked over the control channel (a host started with `--secret` or bound
/// elsewhere is then right without repeating its flags). `false` when no host runs there.
///
/// # Errors
/// When a host runs there but does not answer (its error says what to do), or `out` fails.
pub async fn show_running(dir: &Path, out: &mut dyn Write) -> anyhow::Result<bool> {
    let Ok(url) = crate::commands::control_client::target(None, dir) else {
        return Ok(false);
    };
    let base = crate::commands::control_client::base_of(&url).unwrap_or(url);
    let s: crate::control::SecretInfo =
        crate::commands::control_client::ask(&base, dir, "secret").await?;
    writeln!(out, "the shared secret ({}; the running host's):", s.source)?;
    writeln!(out)?;
    writeln!(out, "    {}", s.secret)?;
    writeln!(out)?;
    writeln!(
        out,
        "On a computer, this installs the client and links it (it enrols: the computer gets a secret of its own):"
    )?;
    writeln!(out)?;
    writeln!(out, "    {}", s.installer)?;
    writeln!(out)?;
    if !trapdesk_core::trust::secrets::enrolment_open(dir)? {
        writeln!(
            out,
            "Enrolment is closed: the shared secret links no new computer until `trapdesk secret enrol on`."
        )?;
    }
    Ok(true)
}

/// `trapdesk secret show`: the shared secret as the host resolves it (flags aside), and the
/// install line. It is what `--mcp-only` points at instead of printing the secret into a log.
fn show(
    dir: &Path,
    gateway_bind: Option<std::net::SocketAddr>,
    config: Option<PathBuf>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let args = trapdesk_core::config::HostArgs {
        data_dir: Some(dir.to_owned()),
        gateway_bind,
        config,
        ..trapdesk_core::config::HostArgs::default()
    };
    let settings = trapdesk_core::config::resolve(&args)?;
    let from = match &settings.secret_source {
        trapdesk_core::config::SecretSource::Generated(p)
        | trapdesk_core::config::SecretSource::Stored(p) => {
            format!("stored in {}", p.display())
        }
        trapdesk_core::config::SecretSource::Env => {
            "from the environment variable SANDBOX_PASSWORD".into()
        }
        trapdesk_core::config::SecretSource::ConfigFile => match &settings.config_file {
            Some(p) => format!("from {}", p.display()),
            None => "from the config file".into(),
        },
        trapdesk_core::config::SecretSource::Flag => "from --secret".into(),
        trapdesk_core::config::SecretSource::File(p) => {
            format!("from --secret-file {}", p.display())
        }
    };
    writeln!(out, "the shared secret ({from}):")?;
    writeln!(out)?;
    writeln!(out, "    {}", settings.secret)?;
    writeln!(out)?;
    writeln!(
        out,
        "On a computer, this installs the client and links it (it enrols: the computer gets a secret of its own):"
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "    {}",
        trapdesk_core::config::install_line(settings.gateway_bind, &settings.secret)
    )?;
    writeln!(out)?;
    if !trapdesk_core::trust::secrets::enrolment_open(dir)? {
        writeln!(
            out,
            "Enrolment is closed: the shared secret links no new computer until `trapdesk secret enrol on`."
        )?;
    }
    writeln!(
        out,
        "A host started with --secret S uses S instead; one bound elsewhere (--gateway-bind) needs that address here too."
    )?;
    Ok(())
}

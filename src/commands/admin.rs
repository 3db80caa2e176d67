//! The trust subcommands: `trapdesk agent …`, `trapdesk secret …` and `trapdesk transcript`.
//! They work on the data directory only (no running host needed); a running host notices
//! their changes at its next request or link, since it reads those files each time.

use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::Value;

use trapdesk_core::session::transcript;
use trapdesk_proto::protocol::Kind;

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

/// `trapdesk transcript` filters.
#[derive(Debug, Args, Default, Clone)]
pub struct TranscriptArgs {
    /// Only this computer (traposId, id or label; `*` globs).
    #[arg(long)]
    pub computer: Option<String>,
    /// Only this origin: `person`, `agent`, or an agent's name.
    #[arg(long)]
    pub origin: Option<String>,
    /// Only this tool or request type (exec-lua, write-file, …).
    #[arg(long)]
    pub tool: Option<String>,
    /// Only this outcome: ok, error, timeout, cancelled, disconnected, failed, refused, running.
    #[arg(long)]
    pub outcome: Option<String>,
    /// Keep printing new lines as they are written.
    #[arg(long, short)]
    pub follow: bool,
    /// The raw JSON lines, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// The data directory a subcommand uses.
///
/// # Errors
/// When there is no home and no `--data-dir`.
pub fn data_dir(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    given
        .or_else(trapdesk_core::config::default_data_dir)
        .ok_or_else(|| anyhow::anyhow!("no home directory to keep data in; pass --data-dir"))
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
        SecretCmd::Rotate => {
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
        }
        SecretCmd::Add { computer } => {
            let s = trapdesk_core::trust::secrets::add(dir, &computer)?;
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
        }
        SecretCmd::List => {
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
        }
        SecretCmd::Forget { computer } => {
            let gone = trapdesk_core::trust::secrets::forget(dir, &computer)?;
            for c in gone {
                writeln!(
                    out,
                    "computer {} no longer has a secret of its own; it links again by enrolling with the shared secret (its client does so at its next link while enrolment is open)",
                    trapdesk_proto::text::printable(&c.computer)
                )?;
            }
        }
        SecretCmd::Enrol { state } => {
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
        }
    }
    Ok(())
}

/// `trapdesk secret show` while a host runs on `dir`: the secret that host checks now and its
/// install line, asked over the control channel (a host started with `--secret` or bound
/// elsewhere is then right without repeating its flags). `false` when no host runs there.
///
/// # Errors
/// When a host runs there but does not answer (its error says what to do), or `out` fails.
pub async fn show_running(dir: &Path, out: &mut dyn Write) -> anyhow::Result<bool> {
    let Some(url) = crate::commands::control_client::running_url(dir) else {
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

/// Whether a transcript line passes the filters.
pub fn keep(line: &Value, f: &TranscriptArgs) -> bool {
    let s = |k: &str| line.get(k).and_then(Value::as_str);
    if let Some(c) = &f.computer {
        let Some(t) = s("traposId") else {
            return false;
        };
        let (id, label) = t.split_once(':').unwrap_or((t, ""));
        let g = trapdesk_proto::glob::Glob::new(c);
        if !(g.matches(t) || g.matches(id) || (!label.is_empty() && g.matches(label))) {
            return false;
        }
    }
    if let Some(o) = &f.origin {
        let kind = line
            .get("origin")
            .and_then(|v| v.get("kind"))
            .and_then(Value::as_str);
        if s("who") != Some(o.as_str()) && kind != Some(o.as_str()) {
            return false;
        }
    }
    if let Some(t) = &f.tool
        && s("what") != Some(t.as_str())
    {
        return false;
    }
    if let Some(o) = &f.outcome {
        let status = if s("event") == Some("refused") {
            Some("refused")
        } else {
            s("status")
        };
        let refused = matches!(
            line.get("error").and_then(Value::as_str),
            Some(e) if e.contains("refused") || e.contains("denies") || e.contains("nobody")
        );
        if status != Some(o.as_str()) && !(o == "refused" && refused) {
            return false;
        }
    }
    true
}

/// One line, readably: time, who, event, what, where, how it ended, and the code in full.
pub fn readable(line: &Value) -> String {
    let s = |k: &str| line.get(k).and_then(Value::as_str).unwrap_or("");
    let time = line
        .get("timeMs")
        .and_then(Value::as_i64)
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
        .unwrap_or_default();
    let mut head = format!("{time}  {:<12} {:<14}", s("who"), s("event"));
    for k in ["what", "traposId", "requestId", "status"] {
        if !s(k).is_empty() {
            head.push(' ');
            head.push_str(s(k));
        }
    }
    if let Some(ms) = line.get("durationMs").and_then(Value::as_u64) {
        head.push_str(&format!(" {ms} ms"));
    }
    if let Some(n) = line.get("outputBytes").and_then(Value::as_u64) {
        head.push_str(&format!(" output {n} B"));
    }
    let mut out = head;
    let detail = s("detail");
    // A request's detail is a summary of its arguments (the code's first line, the path):
    // when the body below shows them whole, the summary would print the code twice.
    let has_body = s("event") == "request" && line.get("args").is_some();
    if !detail.is_empty() && !has_body {
        out.push_str(&format!("\n    {detail}"));
    }
    if let Some(e) = line.get("error").and_then(Value::as_str) {
        out.push_str(&format!("\n    error: {e}"));
    }
    if s("event") == "request"
        && let Some(args) = line.get("args")
    {
        // A log may come from another version of trapdesk: a type this one does not know
        // shows its arguments as JSON, like every type without a body of its own.
        let body = match s("what").parse::<Kind>() {
            Ok(Kind::ExecLua) => args.get("code").and_then(Value::as_str).map(str::to_owned),
            Ok(Kind::WriteFile) => args.get("content").and_then(Value::as_str).map(|c| {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(c)
                    .unwrap_or_default();
                format!(
                    "{} ({} bytes)\n{}",
                    args.get("path").and_then(Value::as_str).unwrap_or(""),
                    bytes.len(),
                    String::from_utf8_lossy(&bytes)
                )
            }),
            Ok(
                Kind::Ping
                | Kind::RunFile
                | Kind::ReadFile
                | Kind::ListFiles
                | Kind::MoveFile
                | Kind::DeleteFile
                | Kind::FileInfo
                | Kind::MakeDir
                | Kind::Screen
                | Kind::Input
                | Kind::Peripherals
                | Kind::Turtle
                | Kind::ComputerOutput,
            )
            | Err(_) => Some(args.to_string()),
        };
        if let Some(body) = body {
            for l in body.lines() {
                out.push_str(&format!("\n    │ {l}"));
            }
        }
    }
    out
}

fn print_line(text: &str, f: &TranscriptArgs, out: &mut dyn Write) -> std::io::Result<()> {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Ok(());
    };
    if !keep(&v, f) {
        return Ok(());
    }
    // Labels, code and output in it are others': no control character or bidi override
    // reaches the terminal (JSON keeps its meaning with every non-ASCII char `\u`-escaped).
    if f.json {
        writeln!(
            out,
            "{}",
            trapdesk_proto::protocol::wire::escape_non_ascii(text.trim_end())
        )
    } else {
        writeln!(
            out,
            "{}",
            trapdesk_proto::text::printable_lines(&readable(&v))
        )
    }
}

/// `trapdesk transcript`: prints the transcript (rotated files first), then follows it.
///
/// # Errors
/// When a file cannot be read or stdout is closed.
pub async fn transcript(dir: &Path, f: TranscriptArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    match print_transcript(dir, f, out).await {
        // The reader went away (`trapdesk transcript | head`): that is the end it asked for,
        // not an error to print.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        r => r,
    }
}

async fn print_transcript(
    dir: &Path,
    f: TranscriptArgs,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if let Some(last) = print_stored(dir, &f, out)? {
        out.flush()?;
        if !f.follow {
            return Ok(());
        }
        return follow_stored(dir, &f, out, last).await;
    }
    let files = transcript::files(dir);
    if files.is_empty() && !f.follow {
        anyhow::bail!(
            "no transcript in {} yet (trapdesk writes {} there as requests run)",
            dir.display(),
            transcript::FILE
        );
    }
    for p in &files {
        let file = std::fs::File::open(p)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?;
        for line in BufReader::new(file).lines() {
            print_line(&line?, &f, out)?;
        }
    }
    out.flush()?;
    if !f.follow {
        return Ok(());
    }
    follow(dir, &f, out).await
}

/// Lines read from `history.db` at a time.
const STORED_PAGE: usize = 1000;

/// Prints the transcript `history.db` keeps, then the lines of `transcript.jsonl` past its
/// newest (written, not committed yet), each once by its `seq`. Returns the newest `seq`
/// printed, or `None` when there is no database (then the files are the transcript).
fn print_stored(
    dir: &Path,
    f: &TranscriptArgs,
    out: &mut dyn Write,
) -> anyhow::Result<Option<u64>> {
    let mut last = 0;
    loop {
        let page = match trapdesk_core::session::history::transcript_after(dir, last, STORED_PAGE) {
            Ok(Some(page)) => page,
            Ok(None) => return Ok(None),
            Err(e) => anyhow::bail!("cannot read the transcript: {e}"),
        };
        let Some(&(newest, _)) = page.last() else {
            break;
        };
        for (_, line) in &page {
            print_line(line, f, out)?;
        }
        last = newest;
    }
    if let Ok(text) = std::fs::read_to_string(dir.join(transcript::FILE)) {
        for line in text.lines() {
            let seq = serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|v| v.get("seq").and_then(Value::as_u64));
            if let Some(seq) = seq.filter(|s| *s > last) {
                print_line(line, f, out)?;
                last = seq;
            }
        }
    }
    Ok(Some(last))
}

/// Follows the transcript in `history.db` past `last`.
async fn follow_stored(
    dir: &Path,
    f: &TranscriptArgs,
    out: &mut dyn Write,
    mut last: u64,
) -> anyhow::Result<()> {
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let page = trapdesk_core::session::history::transcript_after(dir, last, STORED_PAGE)
            .map_err(|e| anyhow::anyhow!("cannot read the transcript: {e}"))?
            .unwrap_or_default();
        for (seq, line) in &page {
            print_line(line, f, out)?;
            last = *seq;
        }
        out.flush()?;
    }
}

/// Follows `transcript.jsonl` from its end, across rotations.
async fn follow(dir: &Path, f: &TranscriptArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let path = dir.join(transcript::FILE);
    let mut pos = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut partial = String::new();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.len() < pos {
            // Rotated: the new file starts from the beginning.
            pos = 0;
        }
        if meta.len() == pos {
            continue;
        }
        let mut file = std::fs::File::open(&path)?;
        file.seek(SeekFrom::Start(pos))?;
        let mut reader = BufReader::new(file);
        loop {
            let mut buf = String::new();
            let n = reader.read_line(&mut buf)?;
            if n == 0 {
                break;
            }
            pos += n as u64;
            partial.push_str(&buf);
            if partial.ends_with('\n') {
                print_line(&partial, f, out)?;
                partial.clear();
            }
        }
        out.flush()?;
    }
}

#[cfg(test)]
mod tests;

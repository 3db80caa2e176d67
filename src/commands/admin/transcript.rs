//! `trapdesk transcript`: the transcript of requests and their outcomes, read from `history.db`
//! and `transcript.jsonl`, filtered, printed readably, and followed.

use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Duration;

use clap::Args;
use serde_json::Value;

use trapdesk_core::session::transcript;
use trapdesk_proto::protocol::Kind;

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

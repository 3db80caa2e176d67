//! `exec`, `run`, `computers`, `ls`, `get`, `put`: arguments, the tool each calls, and how the
//! answer prints. stdout carries the work's output and results; stderr one line per error.

use std::io::{Read, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};

use super::{ClientArgs, Conn, Failure, Reply, exit, split_target, transfer};
use trapdesk_core::session::Origin;
use trapdesk_core::session::summary::descriptor;

/// `trapdesk exec`.
#[derive(Debug, Args, Clone)]
pub struct ExecArgs {
    /// Computer: traposId ("7:miner"), id ("7") or unique label ("miner").
    pub computer: String,
    /// Lua source to run as one chunk, or `-` to read it from stdin.
    pub code: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `trapdesk run`.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Computer: traposId ("7:miner"), id ("7") or unique label ("miner").
    pub computer: String,
    /// Program on the computer.
    pub path: String,
    /// Arguments for the program (everything after PATH, flags included: put trapdesk's own
    /// flags before COMPUTER).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `trapdesk computers`.
#[derive(Debug, Args, Clone)]
pub struct ComputersArgs {
    /// Only computers whose traposId, id or label matches this glob (for example 'miner*').
    #[arg(long = "match", value_name = "GLOB")]
    pub pattern: Option<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `trapdesk ls`.
#[derive(Debug, Args, Clone)]
pub struct LsArgs {
    /// COMPUTER or COMPUTER:PATH (a full traposId needs the path: 7:miner:/).
    pub target: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `trapdesk get`.
#[derive(Debug, Args, Clone)]
pub struct GetArgs {
    /// COMPUTER:PATH of the file to copy.
    pub source: String,
    /// Where to write it [default: its name in the current directory; `-` for stdout].
    pub local: Option<PathBuf>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `trapdesk put`.
#[derive(Debug, Args, Clone)]
pub struct PutArgs {
    /// Local file to copy (`-` for stdin).
    pub local: PathBuf,
    /// COMPUTER:PATH to write (a PATH ending in / keeps the local name).
    pub dest: String,
    /// When the old file and the new one cannot both fit on the computer's disk, write over
    /// the old one instead of refusing. Not atomic: an interrupted put leaves the file holding
    /// only what was written so far.
    #[arg(long)]
    pub in_place: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Live output straight to stdout, flushed so a pipe sees it as it comes.
fn live(json: bool) -> impl FnMut(&str) {
    move |text: &str| {
        if !json {
            let mut out = std::io::stdout().lock();
            // The program's own output: lines and tabs as they are, no other control character.
            let _ = out.write_all(trapdesk_proto::text::printable_lines(text).as_bytes());
            let _ = out.flush();
        }
    }
}

/// JSON with every non-ASCII char `\u`-escaped (serde_json escapes C0 only): a C1 control or
/// a bidi override in a label or output never reaches the terminal raw.
fn print_json(reply: &Reply) {
    println!(
        "{}",
        trapdesk_proto::protocol::wire::escape_non_ascii(&reply.data.to_string())
    );
}

/// The end of a run: returned values on a line of their own (as the console shows them), or
/// the failure, named after the computer the host reached (`what` is given its traposId, else
/// the typed name).
fn finish_run(
    reply: Reply,
    json: bool,
    what: &dyn Fn(&str) -> String,
    query: &str,
    printed_newline: bool,
) -> Result<(), Failure> {
    if json {
        print_json(&reply);
    }
    if reply.is_error {
        return Err(reply.failure(&what(reply.reached(query))));
    }
    if !json
        && let Some(returns) = reply.data.get("returns").and_then(Value::as_array)
        && !returns.is_empty()
    {
        let parts: Vec<String> = returns.iter().map(descriptor).collect();
        if !printed_newline {
            println!();
        }
        println!(
            "{}",
            trapdesk_proto::text::printable_lines(&parts.join(", "))
        );
    }
    Ok(())
}

async fn open(client: &ClientArgs) -> Result<Conn, Failure> {
    client.open(Origin::CLI_CLIENT).await
}

/// Runs a streaming tool and prints as [`finish_run`] does.
async fn run_tool(
    client: &ClientArgs,
    tool: &str,
    args: Value,
    what: &dyn Fn(&str) -> String,
    query: &str,
) -> Result<(), Failure> {
    let conn = open(client).await?;
    let mut out = live(client.json);
    let mut ends_in_newline = true;
    let result = conn
        .call_streaming(tool, args, client.deadline(), |t| {
            if let Some(c) = t.chars().last() {
                ends_in_newline = c == '\n';
            }
            out(t);
        })
        .await;
    conn.close().await;
    finish_run(result?, client.json, what, query, ends_in_newline)
}

/// `trapdesk exec COMPUTER CODE`.
///
/// # Errors
/// A [`Failure`] with the exit code (module docs).
pub async fn exec(a: ExecArgs) -> Result<(), Failure> {
    let code = if a.code == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| {
            Failure::new(
                exit::USAGE,
                format!("cannot read the chunk from stdin: {e}"),
            )
        })?;
        s
    } else {
        a.code
    };
    let mut args = json!({"traposId": a.computer, "code": code});
    if let (Some(ms), Some(o)) = (a.client.timeout_ms(), args.as_object_mut()) {
        o.insert("timeoutMs".into(), json!(ms));
    }
    let what = |c: &str| format!("on {c}");
    run_tool(&a.client, "exec-lua", args, &what, &a.computer).await
}

/// `trapdesk run COMPUTER PATH [ARGS…]`.
///
/// # Errors
/// A [`Failure`] with the exit code (module docs).
pub async fn run(a: RunArgs) -> Result<(), Failure> {
    let mut args = json!({"traposId": a.computer, "path": a.path, "args": a.args});
    if let (Some(ms), Some(o)) = (a.client.timeout_ms(), args.as_object_mut()) {
        o.insert("timeoutMs".into(), json!(ms));
    }
    let what = |c: &str| format!("{} on {c}", a.path);
    run_tool(&a.client, "run-file", args, &what, &a.computer).await
}

/// `trapdesk computers [--match GLOB]`.
///
/// # Errors
/// A [`Failure`] with the exit code (module docs).
pub async fn computers(a: ComputersArgs) -> Result<(), Failure> {
    let conn = open(&a.client).await?;
    let reply = all_pages(&conn, &a).await;
    conn.close().await;
    let reply = reply?;
    if a.client.json {
        print_json(&reply);
        return Ok(());
    }
    let list = reply
        .data
        .get("computers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if list.is_empty() {
        eprintln!(
            "no computers linked{}; `trapdesk doctor` says why one would not link",
            if a.pattern.is_some() { " match" } else { "" }
        );
    }
    for c in list {
        let id = c.get("traposId").and_then(Value::as_str).unwrap_or("?");
        let rtt = c
            .get("lastRttMs")
            .and_then(Value::as_u64)
            .map_or("-".to_owned(), |ms| format!("{ms} ms"));
        let pending = c.get("pending").and_then(Value::as_u64).unwrap_or(0);
        let ping_ok = c
            .get("ping")
            .and_then(|p| p.get("ok"))
            .and_then(Value::as_bool);
        let state = match ping_ok {
            Some(false) => "not answering",
            _ => "online",
        };
        let id = trapdesk_proto::text::printable(id);
        println!("{id}\t{state}\trtt {rtt}\tpending {pending}");
    }
    Ok(())
}

/// Every page of `probe-computers`, joined into one reply: a page holds what fits an agent's
/// result budget (about 90 idle computers), and a script asking for the computers wants all of
/// them. The glob is the host's (`match`), the same one the console's filter uses.
async fn all_pages(conn: &Conn, a: &ComputersArgs) -> Result<Reply, Failure> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"ping": true, "limit": 500});
        if let Some(o) = args.as_object_mut() {
            if let Some(p) = &a.pattern {
                o.insert("match".into(), json!(p));
            }
            if let Some(c) = &cursor {
                o.insert("cursor".into(), json!(c));
            }
        }
        let mut reply = conn
            .call_streaming("probe-computers", args, a.client.deadline(), |_| {})
            .await?;
        if reply.is_error {
            return Err(reply.failure("cannot list the computers"));
        }
        if let Some(Value::Array(page)) = reply.data.get_mut("computers").map(Value::take) {
            all.extend(page);
        }
        let next = reply
            .data
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        // A cursor that does not move would loop for ever; the host never sends one, but an
        // older host without paging ignores `cursor` and answers the same page again.
        if next.is_none() || next == cursor {
            if let Some(o) = reply.data.as_object_mut() {
                o.insert("computers".into(), Value::Array(all));
                o.insert("nextCursor".into(), Value::Null);
            }
            return Ok(reply);
        }
        cursor = next;
    }
}

/// `trapdesk ls COMPUTER[:PATH]`.
///
/// # Errors
/// A [`Failure`] with the exit code (module docs).
pub async fn ls(a: LsArgs) -> Result<(), Failure> {
    let (computer, path) = split_target(&a.target);
    let path = path.filter(|p| !p.is_empty()).unwrap_or("/");
    let conn = open(&a.client).await?;
    let listed = transfer::list(&conn, computer, path, a.client.timeout).await;
    conn.close().await;
    let (reply, mut entries) = listed?;
    if a.client.json {
        print_json(&reply);
        return Ok(());
    }
    entries.sort_by(|x, y| y.dir.cmp(&x.dir).then_with(|| x.name.cmp(&y.name)));
    for e in entries {
        if e.dir {
            println!("{:>9}  {}/", "-", trapdesk_proto::text::printable(&e.name));
        } else {
            println!(
                "{:>9}  {}",
                e.size,
                trapdesk_proto::text::printable(&e.name)
            );
        }
    }
    Ok(())
}

fn need_path<'a>(target: &'a str, arg: &str) -> Result<(&'a str, &'a str), Failure> {
    match split_target(target) {
        (c, Some(p)) if !c.is_empty() && !p.is_empty() => Ok((c, p)),
        _ => Err(Failure::new(
            exit::USAGE,
            format!("{arg} must be COMPUTER:PATH, for example miner:/startup.lua (got {target:?})"),
        )),
    }
}

/// `trapdesk get COMPUTER:PATH [LOCAL]`.
///
/// # Errors
/// A [`Failure`] with the exit code (module docs).
pub async fn get(a: GetArgs) -> Result<(), Failure> {
    let (computer, path) = need_path(&a.source, "the source")?;
    let conn = open(&a.client).await?;
    let got = transfer::get_from(&conn, computer, path, a.client.timeout).await;
    conn.close().await;
    let (bytes, reached) = got?;
    let local = a.local.unwrap_or_else(|| {
        PathBuf::from(path.rsplit('/').find(|s| !s.is_empty()).unwrap_or("file"))
    });
    if local.as_os_str() == "-" {
        use std::io::IsTerminal as _;
        let mut out = std::io::stdout().lock();
        // Byte-exact into a pipe or a file; a terminal gets no control character raw.
        let shown;
        let bytes: &[u8] = if out.is_terminal() {
            shown = trapdesk_proto::text::printable_lines(&String::from_utf8_lossy(&bytes));
            shown.as_bytes()
        } else {
            &bytes
        };
        out.write_all(bytes)
            .and_then(|()| out.flush())
            .map_err(|e| Failure::new(exit::FAILED, format!("cannot write to stdout: {e}")))?;
        return Ok(());
    }
    let local = if local.is_dir() {
        local.join(path.rsplit('/').find(|s| !s.is_empty()).unwrap_or("file"))
    } else {
        local
    };
    write_atomically(&local, &bytes).map_err(|e| {
        Failure::new(
            exit::FAILED,
            format!(
                "cannot write {}: {e}; pick another LOCAL path",
                local.display()
            ),
        )
    })?;
    if a.client.json {
        println!(
            "{}",
            trapdesk_proto::protocol::wire::escape_non_ascii(&json!({"ok": true, "traposId": reached, "path": path, "local": local.display().to_string(), "bytes": bytes.len()}).to_string())
        );
    } else {
        let from = trapdesk_proto::text::printable(&format!("{reached}:{path}"));
        let local = trapdesk_proto::text::printable(&local.display().to_string());
        println!("{} bytes from {from} → {local}", bytes.len());
    }
    Ok(())
}

/// Writes beside the target, then renames, so a failed copy never leaves half a file.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.trapdesk-part"));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// `trapdesk put LOCAL COMPUTER:PATH`.
///
/// # Errors
/// A [`Failure`] with the exit code (module docs).
pub async fn put(a: PutArgs) -> Result<(), Failure> {
    let (computer, path) = need_path(&a.dest, "the destination")?;
    let bytes = if a.local.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| Failure::new(exit::USAGE, format!("cannot read stdin: {e}")))?;
        b
    } else {
        std::fs::read(&a.local).map_err(|e| {
            Failure::new(
                exit::USAGE,
                format!(
                    "cannot read {}: {e}; check the LOCAL path",
                    a.local.display()
                ),
            )
        })?
    };
    let name = a
        .local
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n != "-");
    let conn = open(&a.client).await?;
    // Like `cp`: into a folder, under the local file's name, whether the PATH says it is one
    // (a trailing `/`) or the computer does (`miner:/programs`).
    let into = path.ends_with('/')
        || (name.is_some() && transfer::is_dir(&conn, computer, path, a.client.timeout).await?);
    let path = if into {
        let Some(name) = name else {
            conn.close().await;
            return Err(Failure::new(
                exit::USAGE,
                "stdin has no name: give the PATH a file name",
            ));
        };
        format!("{}/{name}", path.trim_end_matches('/'))
    } else {
        path.to_owned()
    };
    let done = transfer::put(&conn, computer, &path, &bytes, a.client.timeout, a.in_place).await;
    conn.close().await;
    let reply = done?;
    // Printed below: borrowed from `reply`, which the JSON branch takes.
    let reached = reply.reached(computer).to_owned();
    if a.client.json {
        let mut data = reply.data;
        if let Some(o) = data.as_object_mut() {
            o.insert("bytes".into(), json!(bytes.len()));
            o.insert("path".into(), json!(path));
        }
        println!(
            "{}",
            trapdesk_proto::protocol::wire::escape_non_ascii(&data.to_string())
        );
    } else {
        // The computer the host reached, which the typed name may not spell (`miner` for 7:miner).
        let target = trapdesk_proto::text::printable(&format!("{reached}:{path}"));
        println!("{} bytes → {target}", bytes.len());
    }
    Ok(())
}

//! `exec`, `run`, `computers`: arguments, the tool each calls, and how the answer prints
//! (`ls`, `get`, `put` are in `files.rs`). stdout carries the work's output and results; stderr one line per error.

use std::io::{Read, Write};

use clap::Args;
use serde_json::{Value, json};

use super::conn::{Interrupt, signal, stdout_closed};
use super::{ClientArgs, Conn, Failure, Reply, exit};
use tokio_util::sync::CancellationToken;
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

/// Live output straight to stdout, flushed so a pipe sees it as it comes; a write that fails
/// because the pipe's reader is gone cancels `closed`.
fn live(json: bool, closed: CancellationToken) -> impl FnMut(&str) {
    move |text: &str| {
        if !json && !closed.is_cancelled() {
            let mut out = std::io::stdout().lock();
            // The program's own output: lines and tabs as they are, no other control character.
            let wrote = out
                .write_all(trapdesk_proto::text::printable_lines(text).as_bytes())
                .and_then(|()| out.flush());
            if wrote.is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
                closed.cancel();
            }
        }
    }
}

/// JSON with every non-ASCII char `\u`-escaped (serde_json escapes C0 only): a C1 control or
/// a bidi override in a label or output never reaches the terminal raw.
pub(super) fn print_json(reply: &Reply) {
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
    let mut text = String::new();
    if json {
        text = trapdesk_proto::protocol::wire::escape_non_ascii(&reply.data.to_string());
        text.push('\n');
    } else if !reply.is_error
        && let Some(returns) = reply.data.get("returns").and_then(Value::as_array)
        && !returns.is_empty()
    {
        let parts: Vec<String> = returns.iter().map(descriptor).collect();
        if !printed_newline {
            text.push('\n');
        }
        text.push_str(&trapdesk_proto::text::printable_lines(&parts.join(", ")));
        text.push('\n');
    }
    // The reader may be gone by now (`| head -1` took its line as the run ended): that is the
    // closed pipe's exit, not println!'s panic.
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        return Err(if e.kind() == std::io::ErrorKind::BrokenPipe {
            Interrupt::PipeClosed.failure("")
        } else {
            Failure::new(exit::FAILED, format!("cannot write to stdout: {e}"))
        });
    }
    if reply.is_error {
        return Err(reply.failure(&what(reply.reached(query))));
    }
    Ok(())
}

pub(super) async fn open(client: &ClientArgs) -> Result<Conn, Failure> {
    client.open(Origin::CLI_CLIENT).await
}

/// Runs a streaming tool and prints as [`finish_run`] does. Ctrl-C, SIGTERM, or stdout's
/// reader going away (`| head -1`) cancels the run on the computer; `label` names it then.
async fn run_tool(
    client: &ClientArgs,
    tool: &str,
    args: Value,
    what: &dyn Fn(&str) -> String,
    (query, label): (&str, &str),
) -> Result<(), Failure> {
    let conn = open(client).await?;
    let closed = stdout_closed();
    let mut out = live(client.json, closed.clone());
    let mut ends_in_newline = true;
    let what_ran = format!("{label} on {query}");
    let stop = async move {
        tokio::select! {
            i = signal() => i.failure(&what_ran),
            () = closed.cancelled() => Interrupt::PipeClosed.failure(&what_ran),
        }
    };
    let result = conn
        .call_until(
            tool,
            args,
            client.deadline(),
            &mut |t| {
                if let Some(c) = t.chars().last() {
                    ends_in_newline = c == '\n';
                }
                out(t);
            },
            stop,
        )
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
    let names = (a.computer.as_str(), "the chunk");
    run_tool(&a.client, "exec-lua", args, &what, names).await
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
    let names = (a.computer.as_str(), a.path.as_str());
    run_tool(&a.client, "run-file", args, &what, names).await
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

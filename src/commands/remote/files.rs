//! `ls`, `get` and `put`: files between this machine and a computer, as `ls` and `cp` behave.
//! `get` never overwrites a local file unless told to (`-f`); `put` copies into a folder when
//! the PATH ends in `/` or names one, else to that file.

use std::io::{Read, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::commands::{open, print_json};
use super::{ClientArgs, Conn, Failure, exit, split_target, transfer};

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
    /// Write over a local file that already exists (without it, `get` refuses and changes
    /// nothing).
    #[arg(short, long)]
    pub force: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `trapdesk put`.
#[derive(Debug, Args, Clone)]
pub struct PutArgs {
    /// Local file to copy (`-` for stdin).
    pub local: PathBuf,
    /// COMPUTER:PATH to write. A PATH ending in / is a folder (made when missing) that gets
    /// the local name; so is an existing folder; otherwise PATH is the file, as with `cp`.
    pub dest: String,
    /// When the old file and the new one cannot both fit on the computer's disk, write over
    /// the old one instead of refusing. Not atomic: an interrupted put leaves the file holding
    /// only what was written so far.
    #[arg(long)]
    pub in_place: bool,
    #[command(flatten)]
    pub client: ClientArgs,
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
/// A [`Failure`] with the exit code (module docs); 1 when LOCAL exists and `--force` was not
/// given, before anything is fetched.
pub async fn get(a: GetArgs) -> Result<(), Failure> {
    let (computer, path) = need_path(&a.source, "the source")?;
    let name = path.rsplit('/').find(|s| !s.is_empty()).unwrap_or("file");
    let local = a.local.clone().unwrap_or_else(|| PathBuf::from(name));
    let to_stdout = local.as_os_str() == "-";
    let local = if !to_stdout && local.is_dir() {
        local.join(name)
    } else {
        local
    };
    // A local file may hold edits nobody saved elsewhere: overwriting it is asked for, never
    // assumed. `symlink_metadata`: a link, even a dangling one, is something there too.
    if !to_stdout && !a.force && local.symlink_metadata().is_ok() {
        return Err(Failure::new(
            exit::FAILED,
            format!(
                "{} already exists; nothing was fetched and it is unchanged. Give another LOCAL path, or overwrite it with: {}",
                local.display(),
                again_with_force()
            ),
        ));
    }
    let conn = open(&a.client).await?;
    let got = transfer::get_from(&conn, computer, path, a.client.timeout).await;
    conn.close().await;
    let (bytes, reached) = got?;
    if to_stdout {
        return to_stdout_exact(&bytes);
    }
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

/// This very command line with `-f` after `get`, quoted for a POSIX shell: the hint a person
/// can paste as it is.
fn again_with_force() -> String {
    let mut words: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(i) = words.iter().skip(1).position(|w| w == "get") {
        words.insert(i + 2, "-f".into());
    }
    let line = shell_words::join(&words);
    trapdesk_proto::text::printable(&line)
}

/// The file's bytes on stdout: byte-exact into a pipe or a file; a terminal gets no control
/// character raw.
fn to_stdout_exact(bytes: &[u8]) -> Result<(), Failure> {
    use std::io::IsTerminal as _;
    let mut out = std::io::stdout().lock();
    let shown;
    let bytes: &[u8] = if out.is_terminal() {
        shown = trapdesk_proto::text::printable_lines(&String::from_utf8_lossy(bytes));
        shown.as_bytes()
    } else {
        bytes
    };
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| Failure::new(exit::FAILED, format!("cannot write to stdout: {e}")))
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
    let path = match destination(&conn, computer, path, name.as_deref(), &a.client).await {
        Ok(p) => p,
        Err(f) => {
            conn.close().await;
            return Err(f);
        }
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

/// Like `cp`: into a folder, under the local file's name, when PATH says it is one (a trailing
/// `/`, the folder made when missing) or the computer has a folder there (`miner:/programs`);
/// otherwise PATH is the file.
async fn destination(
    conn: &Conn,
    computer: &str,
    path: &str,
    name: Option<&str>,
    client: &ClientArgs,
) -> Result<String, Failure> {
    let into = path.ends_with('/')
        || (name.is_some() && transfer::is_dir(conn, computer, path, client.timeout).await?);
    if !into {
        return Ok(path.to_owned());
    }
    let Some(name) = name else {
        return Err(Failure::new(
            exit::USAGE,
            "stdin has no name: give the PATH a file name",
        ));
    };
    Ok(format!("{}/{name}", path.trim_end_matches('/')))
}

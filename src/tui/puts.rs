//! One `put` is one entry. The CLI's `put` (and `sync`) writes a file of more than one piece as
//! many requests: `write-file` pieces to a hidden part file (`.NAME.XXXXXXXX.trapdesk-part`,
//! `commands/remote/transfer.rs`), then `file-info` and `move-file` over the target, or, with
//! `--in-place`, a first `write-file` and `write-file (append)` pieces straight to the file.
//! Shown one by one, a 4 MB file is some seventy entries that say nothing the person asked;
//! so the Output and Activity panes fold them into one: the file, its size, and how it ended.

use std::collections::HashMap;

use serde_json::Value;
use trapdesk_core::session::{Status, ToolCall};

/// How the part files' names end.
const PART_SUFFIX: &str = ".trapdesk-part";

/// The file a part file stands for (`dir/.big.bin.0a1b2c3d.trapdesk-part` → `dir/big.bin`).
pub fn part_target(path: &str) -> Option<String> {
    let (dir, name) = match path.rsplit_once('/') {
        Some((d, n)) => (format!("{d}/"), n),
        None => (String::new(), path),
    };
    let inner = name.strip_prefix('.')?.strip_suffix(PART_SUFFIX)?;
    let (file, tag) = inner.rsplit_once('.')?;
    let hex = tag.len() == 8 && tag.bytes().all(|b| b.is_ascii_hexdigit());
    (hex && !file.is_empty()).then(|| format!("{dir}{file}"))
}

/// One request as a piece of a put.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// What joins the pieces of one put: the part file, or the file written in place.
    pub key: String,
    /// The file the put writes.
    pub target: String,
    /// A `write-file` (its bytes count toward the size).
    pub write: bool,
    /// The request that ends the put when it goes well (`move-file`), or that follows a
    /// failure (`delete-file` of the part).
    pub last: bool,
    /// Part of a put by its part file, whose name is unique to the put; else a piece in place,
    /// which joins only the put right before it on the computer.
    pub by_part: bool,
    /// The first piece of a put in place (a `write-file` without `append`): a put only if an
    /// appended piece follows.
    pub may_start: bool,
}

/// What a request is as a piece of a put, from its type and the words the session keeps of
/// it (`path`, `path (append)`, `from -> to`); `None` when it is no piece of a put.
pub fn piece(kind: &str, summary: &str) -> Option<Piece> {
    let by_part = |path: &str, write, last| {
        part_target(path).map(|target| Piece {
            key: path.to_owned(),
            target,
            write,
            last,
            by_part: true,
            may_start: false,
        })
    };
    match kind {
        "write-file" => {
            let (path, append) = match summary.strip_suffix(" (append)") {
                Some(p) => (p, true),
                None => (summary, false),
            };
            by_part(path, true, false).or_else(|| {
                Some(Piece {
                    key: path.to_owned(),
                    target: path.to_owned(),
                    write: true,
                    last: false,
                    by_part: false,
                    may_start: !append,
                })
            })
        }
        "file-info" => by_part(summary, false, false),
        "delete-file" => by_part(summary, false, true),
        "move-file" => {
            let (from, _) = summary.split_once(" -> ")?;
            by_part(from, false, true)
        }
        _ => None,
    }
}

/// A tool call as a piece of a put, from its arguments as the session recorded them.
fn call_piece(c: &ToolCall) -> Option<Piece> {
    let s = |k: &str| c.args.get(k).and_then(Value::as_str).unwrap_or_default();
    let append = c.args.get("append").and_then(Value::as_bool) == Some(true);
    let words = match c.tool.as_str() {
        "write-file" if append => format!("{} (append)", s("path")),
        "move-file" => format!("{} -> {}", s("from"), s("to")),
        _ => s("path").to_owned(),
    };
    piece(&c.tool, &words)
}

/// The bytes a `write-file` call carries (its `content`, base64 when it says so).
fn call_bytes(c: &ToolCall) -> u64 {
    let content = c
        .args
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if c.args.get("encoding").and_then(Value::as_str) == Some("base64") {
        let pad = content.bytes().rev().take_while(|b| *b == b'=').count();
        ((content.len() / 4 * 3).saturating_sub(pad)) as u64
    } else {
        content.len() as u64
    }
}

/// The Activity pane's calls with each put's calls folded into one, `put` with the file and
/// its size, where its first call was.
pub fn fold_calls(calls: Vec<ToolCall>) -> Vec<ToolCall> {
    // Each entry: the calls it holds and, for a put, its key and progress.
    let mut out: Vec<(Vec<ToolCall>, Option<Put>)> = Vec::new();
    let mut open: HashMap<(String, Option<String>, String), usize> = HashMap::new();
    let mut latest: HashMap<(String, Option<String>), String> = HashMap::new();
    // Per caller and computer, where its latest call went when that was a `file-info`.
    let mut looked: HashMap<(String, Option<String>), usize> = HashMap::new();
    for c in calls {
        let who = (c.client.clone(), c.target.clone());
        let look = looked.remove(&who);
        let Some(p) = call_piece(&c) else {
            latest.remove(&who);
            // Only the person's commands (`put`, `sync`) look before they write.
            if c.tool == "file-info" && matches!(c.client.as_str(), "cli" | "sync") {
                looked.insert(who, out.len());
            }
            out.push((vec![c], None));
            continue;
        };
        let key = (who.0.clone(), who.1.clone(), p.key.clone());
        let before = latest.insert(who, p.key.clone());
        let joins = open.get(&key).copied().filter(|i| {
            !p.may_start
                && (p.by_part || before.as_deref() == Some(p.key.as_str()))
                && out[*i]
                    .1
                    .as_ref()
                    .is_some_and(|put| !(put.over && put.failed.is_some()))
        });
        let i = match joins {
            Some(i) => i,
            None if p.by_part || p.may_start => {
                open.insert(key, out.len());
                // The put's look at its target right before it is part of it.
                let looked_at = |i: &usize| {
                    out[*i].0.first().is_some_and(|l| {
                        l.args.get("path").and_then(Value::as_str) == Some(p.target.as_str())
                    })
                };
                let first = look
                    .filter(looked_at)
                    .map(|i| std::mem::take(&mut out[i].0))
                    .unwrap_or_default();
                out.push((first, Some(Put::new(&p))));
                out.len() - 1
            }
            None => {
                out.push((vec![c], None));
                continue;
            }
        };
        let (members, put) = &mut out[i];
        if let Some(put) = put {
            put.over = false;
            if c.status != Status::Running {
                let words = if p.write {
                    format!("{} bytes", call_bytes(&c))
                } else {
                    c.summary.clone()
                };
                put.ended(&p, c.status, &words, c.duration_ms.unwrap_or(0));
            }
        }
        members.push(c);
    }
    out.into_iter()
        .filter(|(m, put)| !m.is_empty() || put.is_some())
        .filter_map(|(m, put)| merged(m, put))
        .collect()
}

/// One entry of [`fold_calls`]: a lone call as it is, a put as one `put` call.
fn merged(mut members: Vec<ToolCall>, put: Option<Put>) -> Option<ToolCall> {
    let writes = members.iter().filter(|c| c.tool == "write-file").count();
    let put = match put {
        Some(p) if p.by_part || writes > 1 => p,
        // A write in place with nothing appended is just a write (its look folded away).
        _ => return members.pop(),
    };
    let running = members.iter().any(|c| c.status == Status::Running);
    let last = members.last()?.clone();
    let first = members.first()?.clone();
    let (status, summary) = match put.ending() {
        Some((s, words)) if !running || put.failed.is_some() => (s, words),
        _ => (Status::Running, String::new()),
    };
    Some(ToolCall {
        tool: "put".to_owned(),
        args: serde_json::json!({"path": put.target, "bytes": put.bytes, "pieces": put.pieces}),
        status,
        summary: if summary.is_empty() {
            put.words()
        } else {
            format!("{}: {summary}", put.words())
        },
        duration_ms: (status != Status::Running).then_some(put.duration_ms),
        result: last.result,
        request_id: last.request_id,
        ..first
    })
}

/// How far a put has come.
#[derive(Debug, Clone, PartialEq)]
pub struct Put {
    pub target: String,
    pub pieces: u32,
    pub bytes: u64,
    /// How the first piece that did not go well ended, and its words.
    pub failed: Option<(Status, String)>,
    /// Ended: its `move-file` answered, or a piece failed; a put in place is never known to
    /// be over, so each piece's end is its end so far.
    pub over: bool,
    pub by_part: bool,
    /// Milliseconds the pieces took on the computer, together.
    pub duration_ms: u64,
}

impl Put {
    pub fn new(p: &Piece) -> Put {
        Put {
            target: p.target.clone(),
            pieces: 0,
            bytes: 0,
            failed: None,
            over: false,
            by_part: p.by_part,
            duration_ms: 0,
        }
    }

    /// A piece ended with `status` and the session's words (`65536 bytes` for a write).
    pub fn ended(&mut self, p: &Piece, status: Status, summary: &str, duration_ms: u64) {
        self.duration_ms += duration_ms;
        if self.over && self.failed.is_some() {
            // The clean-up after a failure: the failure is what the put did.
            return;
        }
        if p.write {
            self.pieces += 1;
            if status == Status::Ok {
                self.bytes += summary
                    .strip_suffix(" bytes")
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        if status != Status::Ok {
            self.failed = Some((status, summary.to_owned()));
            self.over = true;
        } else if p.last || !self.by_part {
            self.over = true;
        }
    }

    /// The words the entry's header shows: `big.bin (4194304 bytes in 64 pieces)`.
    pub fn words(&self) -> String {
        let pieces = if self.pieces == 1 { "piece" } else { "pieces" };
        format!(
            "{} ({} bytes in {} {pieces})",
            self.target, self.bytes, self.pieces
        )
    }

    /// How it ended, once it has: ok, or the failure.
    pub fn ending(&self) -> Option<(Status, String)> {
        if !self.over {
            return None;
        }
        Some(
            self.failed
                .clone()
                .unwrap_or_else(|| (Status::Ok, String::new())),
        )
    }
}

/// The puts under way, by computer and key, and which request belongs to which.
#[derive(Debug, Default)]
pub struct Puts {
    /// (computer, key) → the put and the request that opened its entry.
    pub open: HashMap<(String, String), (String, Put)>,
    /// A request joined to a put → (computer, key) and what piece it is.
    pub member: HashMap<String, ((String, String), Piece)>,
    /// Per computer, the key of the put its latest request belonged to.
    pub latest: HashMap<String, Option<String>>,
    /// Per computer, its latest request when that was a `file-info`: its id, path and who
    /// asked (a put looks at its target first, to put into a folder).
    pub looked: HashMap<String, (String, String, trapdesk_core::session::Origin)>,
    /// Requests whose entry a put took in (its look at its target).
    pub gone: std::collections::HashSet<String>,
}

impl Puts {
    /// Forgets puts long over, so that the maps stay small.
    pub fn trim(&mut self, cap: usize) {
        if self.member.len() + self.gone.len() > cap {
            self.member.clear();
            self.gone.clear();
            self.open.retain(|_, (_, p)| !p.over);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_files_name_their_target() {
        assert_eq!(
            part_target("d/.big.bin.0a1b2c3d.trapdesk-part").as_deref(),
            Some("d/big.bin")
        );
        assert_eq!(
            part_target(".a.ffffffff.trapdesk-part").as_deref(),
            Some("a")
        );
        assert_eq!(part_target(".a.trapdesk-part"), None);
        assert_eq!(part_target("a.0a1b2c3d.trapdesk-part"), None);
    }

    #[test]
    fn a_put_by_part_is_over_when_moved() {
        let w = piece("write-file", ".a.0a1b2c3d.trapdesk-part").expect("a piece");
        let w2 = piece("write-file", ".a.0a1b2c3d.trapdesk-part (append)").expect("a piece");
        let mv = piece("move-file", ".a.0a1b2c3d.trapdesk-part -> a").expect("a piece");
        assert_eq!(w.key, w2.key);
        assert_eq!(w.key, mv.key);
        let mut p = Put::new(&w);
        p.ended(&w, Status::Ok, "65536 bytes", 5);
        p.ended(&w2, Status::Ok, "10 bytes", 5);
        assert_eq!(p.ending(), None);
        p.ended(&mv, Status::Ok, "", 1);
        assert_eq!(p.ending(), Some((Status::Ok, String::new())));
        assert_eq!(p.words(), "a (65546 bytes in 2 pieces)");
    }
}

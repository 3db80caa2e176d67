//! The log as `session-log` shows it: one entry per call instead of the four lines a call
//! leaves in the log (`tool_call`, `request`, `finished`, `tool_result`), with filters.
//!
//! The log itself (the console's log pane, `transcript.jsonl`) keeps every line: the
//! transcript is an audit trail and a call's start and end are both facts worth their time.
//! The compact form is folded from it when read, so the two can never disagree.

use std::collections::HashMap;

use trapdesk_core::policy::{Action, Decision};
use trapdesk_core::session::{LogEntry, LogEvent, Origin, Session, Status, ToolCall};
use trapdesk_proto::glob::Glob;

/// Where a `session-log` read starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Since {
    /// Entries that began or changed after this log cursor (a `latest` of an earlier answer).
    Cursor(u64),
    /// Entries that began or changed at or after this time, in ms since the Unix epoch.
    TimeMs(u64),
}

/// What a `session-log` read selects.
#[derive(Debug, Clone, Default)]
pub struct LogQuery {
    /// Most entries, the newest ones of the selection.
    pub limit: usize,
    /// Only entries that began before this cursor (an earlier answer's `before`).
    pub before: Option<u64>,
    pub since: Option<Since>,
    /// A traposId, id, label or glob, matched against the entry's (resolved) traposId.
    pub computer: Option<String>,
    /// A name or glob: `person`, an agent's client name, `cli`, …
    pub who: Option<String>,
    /// A name or glob, matched against the tool or request type (`exec-lua`) and the event
    /// (`linked`, `refused`, `call`).
    pub kind: Option<String>,
    /// Who reads: a call or request on a computer where the policy does not allow them `read`
    /// keeps its fact (who, what, when, its status) but not its summary, which holds returned
    /// values, output, code and file contents. `None`: the person's own view, whole.
    pub reader: Option<Origin>,
}

/// The summary a reader not allowed `read` on the entry's computer gets instead of its own.
fn withheld(e: &LogEntry, trapos_id: &str) -> String {
    let what = e.what.as_deref().unwrap_or(e.event.as_str());
    let status = e
        .status
        .map(|s| format!(" ({})", s.as_str()))
        .unwrap_or_default();
    format!("{what}{status}: details withheld, the policy does not allow you read on {trapos_id}")
}

/// Whether `reader` may read what an entry about `target` holds: `read` allowed, not asked
/// (the log is no way around an approval).
fn may_read(session: &Session, reader: &Origin, target: &str) -> bool {
    let trapos_id = session
        .known_computer(target)
        .unwrap_or_else(|| target.to_owned());
    let read = Action::ALL.iter().position(|a| *a == Action::Read);
    let decisions = session.effective_policy(reader, &trapos_id);
    read.is_some_and(|i| decisions[i] == Decision::Allow)
}

/// One compact entry while it is folded: the entry and when it last changed.
struct Folded {
    entry: LogEntry,
    last_seq: u64,
    last_ms: u64,
}

impl Folded {
    fn new(entry: LogEntry) -> Self {
        let (last_seq, last_ms) = (entry.seq, entry.time_ms);
        Folded {
            entry,
            last_seq,
            last_ms,
        }
    }

    fn touch(&mut self, by: &LogEntry) {
        self.last_seq = by.seq;
        self.last_ms = by.time_ms;
    }

    /// The end of the call or request: its status, summary and duration.
    fn end(&mut self, by: &LogEntry) {
        self.entry.status = by.status;
        self.entry.detail = by.detail.clone();
        self.entry.duration_ms = by.duration_ms;
        if by.request_id.is_some() {
            self.entry.request_id = by.request_id.clone();
        }
        if by.trapos_id.is_some() {
            self.entry.trapos_id = by.trapos_id.clone();
        }
        self.touch(by);
    }
}

/// Folds the log into one entry per call (`event: "call"`) and one per request not made by a
/// call (`event: "request"`: the person's, the CLI's, each computer's of `exec-lua-many`);
/// other events stay as they are. An entry sits at its start's `seq`.
fn fold<'a>(log: impl Iterator<Item = &'a LogEntry> + Clone, calls: &[ToolCall]) -> Vec<Folded> {
    // Which call made which request: the running calls know it, an ended call's end says it.
    let mut call_of: HashMap<String, u64> = calls
        .iter()
        .filter_map(|c| Some((c.request_id.clone()?, c.call_id)))
        .collect();
    for e in log.clone() {
        if let (LogEvent::ToolResult, Some(r), Some(c)) = (e.event, &e.request_id, e.call_id) {
            call_of.insert(r.clone(), c);
        }
    }
    let mut out: Vec<Folded> = Vec::new();
    let mut by_call: HashMap<u64, usize> = HashMap::new();
    let mut by_request: HashMap<String, usize> = HashMap::new();
    for e in log {
        match e.event {
            LogEvent::ToolCall => {
                let mut entry = e.clone();
                entry.event = LogEvent::Call;
                if let Some(c) = e.call_id {
                    by_call.insert(c, out.len());
                }
                out.push(Folded::new(entry));
            }
            LogEvent::ToolResult => match e.call_id.and_then(|c| by_call.get(&c)) {
                Some(&i) => out[i].end(e),
                // Its start is older than what the log keeps: the end stands for the call.
                None => {
                    let mut entry = e.clone();
                    entry.event = LogEvent::Call;
                    out.push(Folded::new(entry));
                }
            },
            LogEvent::Request | LogEvent::Finished => {
                let Some(rid) = e.request_id.as_deref() else {
                    out.push(Folded::new(e.clone()));
                    continue;
                };
                if let Some(call) = call_of.get(rid) {
                    // The call's own entry says it all; the request adds where it ran.
                    if let Some(&i) = by_call.get(call) {
                        if e.trapos_id.is_some() {
                            out[i].entry.trapos_id = e.trapos_id.clone();
                        }
                        out[i].entry.request_id = Some(rid.to_owned());
                        if out[i].entry.status == Some(Status::Running) {
                            out[i].touch(e);
                        }
                    }
                    continue;
                }
                match (e.event, by_request.get(rid)) {
                    (LogEvent::Finished, Some(&i)) => out[i].end(e),
                    _ => {
                        let mut entry = e.clone();
                        entry.event = LogEvent::Request;
                        by_request.insert(rid.to_owned(), out.len());
                        out.push(Folded::new(entry));
                    }
                }
            }
            _ => out.push(Folded::new(e.clone())),
        }
    }
    out
}

/// A name filter: a glob (a plain name is a glob that matches itself, case ignored).
fn named(pattern: &Option<String>) -> Option<Glob> {
    pattern.as_deref().map(Glob::new)
}

/// A page of the compact log (see the module docs): the newest `limit` entries that
/// `q` selects, oldest first, the cursor for the selected entries before them (`None`
/// when none is kept), and the log's newest cursor (for `since` next time).
pub fn log_compact(session: &Session, q: &LogQuery) -> (Vec<LogEntry>, Option<u64>, u64) {
    let (recent, calls) = session.log_and_calls();
    let folded = fold(recent.iter(), &calls);
    let latest = recent.last().map_or(0, |e| e.seq);
    // A computer given by name means the computer it names now; else it is a glob.
    let computer = q.computer.as_deref().map(|c| {
        let c = c.trim();
        let named = session.known_computer(c);
        named.map_or_else(|| Glob::new(c), |id| Glob::new(&id))
    });
    let (who, kind) = (named(&q.who), named(&q.kind));
    let selected: Vec<LogEntry> = folded
        .into_iter()
        .filter(|f| match &q.since {
            None => true,
            Some(Since::Cursor(c)) => f.last_seq > *c,
            Some(Since::TimeMs(t)) => f.last_ms >= *t,
        })
        .filter(|f| q.before.is_none_or(|b| f.entry.seq < b))
        .map(|f| f.entry)
        .filter(|e| {
            computer.as_ref().is_none_or(|g| {
                e.trapos_id.as_deref().is_some_and(|t| {
                    // By traposId, bare id or label, as a glob selects computers elsewhere.
                    let (id, label) = t.split_once(':').unwrap_or((t, ""));
                    g.matches(t) || g.matches(id) || (!label.is_empty() && g.matches(label))
                })
            })
        })
        .filter(|e| {
            who.as_ref()
                .is_none_or(|g| e.who.as_deref().is_some_and(|w| g.matches(w)))
        })
        .filter(|e| {
            kind.as_ref().is_none_or(|g| {
                g.matches(e.event.as_str()) || e.what.as_deref().is_some_and(|w| g.matches(w))
            })
        })
        .collect();
    let start = selected.len().saturating_sub(q.limit.max(1));
    let before = (start > 0).then(|| selected[start].seq);
    let mut page = selected[start..].to_vec();
    if let Some(reader) = &q.reader {
        for e in &mut page {
            // Links, unlinks and refusals say what happened to a computer, not what is on
            // it; a call's or request's summary is what came back.
            if !matches!(
                e.event,
                LogEvent::Call | LogEvent::Request | LogEvent::Dropped
            ) {
                continue;
            }
            let Some(t) = e.trapos_id.clone() else {
                continue;
            };
            if !may_read(session, reader, &t) {
                e.detail = withheld(e, &t);
            }
        }
    }
    (page, before, latest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log entry with the common fields empty.
    fn entry(event: &'static str, detail: impl Into<String>) -> LogEntry {
        LogEntry {
            seq: 0,
            time_ms: 0,
            event: LogEvent::parse(event).unwrap_or(LogEvent::Other),
            who: None,
            trapos_id: None,
            request_id: None,
            what: None,
            status: None,
            detail: detail.into(),
            duration_ms: None,
            call_id: None,
        }
    }

    fn at(seq: u64, mut e: LogEntry) -> LogEntry {
        e.seq = seq;
        e.time_ms = 1000 + seq;
        e
    }

    fn call_start(seq: u64, call: u64, target: &str) -> LogEntry {
        let mut e = entry("tool_call", "{}");
        e.who = Some("agent".into());
        e.what = Some("exec-lua".into());
        e.trapos_id = Some(target.into());
        e.status = Some(Status::Running);
        e.call_id = Some(call);
        at(seq, e)
    }

    fn request(seq: u64, event: &'static str, rid: &str, status: Status) -> LogEntry {
        let mut e = entry(event, format!("{event} {rid}"));
        e.who = Some("agent".into());
        e.what = Some("exec-lua".into());
        e.trapos_id = Some("7:miner".into());
        e.request_id = Some(rid.into());
        e.status = Some(status);
        at(seq, e)
    }

    fn call_end(seq: u64, call: u64, rid: &str) -> LogEntry {
        let mut e = entry("tool_result", "returned 3");
        e.who = Some("agent".into());
        e.what = Some("exec-lua".into());
        e.trapos_id = Some("7:miner".into());
        e.request_id = Some(rid.into());
        e.status = Some(Status::Ok);
        e.duration_ms = Some(5);
        e.call_id = Some(call);
        at(seq, e)
    }

    #[test]
    fn a_call_and_its_request_are_one_entry_at_the_calls_start() {
        let log = [
            at(1, entry("linked", "7:miner linked")),
            call_start(2, 1, "MINER"),
            request(3, "request", "h-1", Status::Running),
            request(4, "finished", "h-1", Status::Ok),
            call_end(5, 1, "h-1"),
            request(6, "request", "h-2", Status::Running),
            request(7, "finished", "h-2", Status::Failed),
        ];
        let f = fold(log.iter(), &[]);
        let events: Vec<&str> = f.iter().map(|f| f.entry.event.as_str()).collect();
        assert_eq!(events, ["linked", "call", "request"]);
        let call = &f[1];
        assert_eq!(call.entry.seq, 2);
        assert_eq!(call.entry.trapos_id.as_deref(), Some("7:miner"));
        assert_eq!(call.entry.request_id.as_deref(), Some("h-1"));
        assert_eq!(call.entry.status, Some(Status::Ok));
        assert_eq!(call.entry.detail, "returned 3");
        assert_eq!(call.last_seq, 5);
        let req = &f[2];
        assert_eq!((req.entry.seq, req.last_seq), (6, 7));
        assert_eq!(req.entry.status, Some(Status::Failed));
    }

    #[test]
    fn a_running_call_is_known_by_its_request_before_it_ends() {
        let log = [
            call_start(2, 1, "7"),
            request(3, "request", "h-1", Status::Running),
        ];
        let calls = [ToolCall {
            call_id: 1,
            client: "agent".into(),
            tool: "exec-lua".into(),
            target: Some("7:miner".into()),
            args: serde_json::Value::Null,
            started_at: std::time::SystemTime::now(),
            status: Status::Running,
            summary: String::new(),
            result: None,
            duration_ms: None,
            request_id: Some("h-1".into()),
        }];
        let f = fold(log.iter(), &calls);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].entry.status, Some(Status::Running));
        assert_eq!(f[0].entry.trapos_id.as_deref(), Some("7:miner"));
    }

    #[test]
    fn an_end_whose_start_is_gone_still_stands_for_its_call() {
        let log = [
            request(4, "finished", "h-1", Status::Ok),
            call_end(5, 1, "h-1"),
        ];
        let f = fold(log.iter(), &[]);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].entry.event.as_str(), f[0].entry.seq), ("call", 5));
    }
}

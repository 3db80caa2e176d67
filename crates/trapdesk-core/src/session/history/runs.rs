//! The host's own record of the detached runs it started (`detached-runs.json` in the data
//! dir): for each, its id, computer, kind, who started it, when, and its timeout; kept while
//! it runs and, once it ended, among the last [`ENDED_KEPT`] ended ones with how it ended.
//!
//! It is the one source of who started a detached run. A computer's `hello` names the runs it
//! kept through a dropped link (`detached`), but whatever it says about them (`by`) is a claim:
//! a host that restarted takes a run back on behalf of whoever this record says started it,
//! else on the computer's own behalf (see `Session::adopt`). It is also how a result can say a
//! run was *lost*: a run recorded as started here whose computer came back without it, or
//! whose host died, is in the record and nowhere else ([`Runs::lookup`]).
//!
//! A small file rather than `history.db`: the history can be off (`history = false`), its
//! writer drops records when the disk falls behind, and it is pruned by size and age, while
//! this record must be there whenever the run is. It is rewritten whole (beside, then renamed
//! over, readable by its owner only) when a detached run starts or ends, which is rare: at most
//! [`LIVE_KEPT`] + [`ENDED_KEPT`] records of ~200 bytes, well under a megabyte. A session that
//! does not persist (`Session::new(_, false)`) keeps it in memory only.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::session::model::Origin;
use trapdesk_proto::protocol::Kind;

/// The record's file name in the data dir.
pub const FILE: &str = "detached-runs.json";
/// Most runs recorded as running: past it, the oldest is forgotten (then taken back, if ever,
/// on its computer's behalf). Each is a pending detached run: at most `max_detached` per
/// linked computer, and the host keeps at most `detached::ORPHANS_KEPT` whose link is down.
pub const LIVE_KEPT: usize = 4096;
/// Ended runs kept with how they ended, newest last.
pub const ENDED_KEPT: usize = 256;
/// A record file larger than this is not read (it cannot be one this host wrote).
const FILE_MAX: u64 = 4 << 20;

/// One detached run as the host that started it recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Its request id (`h-<start tag>-<n>`).
    pub id: String,
    pub trapos_id: String,
    pub kind: Kind,
    /// Who started it: the person, an agent (by name), the CLI, sync; or, for a run a computer
    /// named that no record had, the computer itself (see `Session::adopt`).
    pub origin: Origin,
    /// When it started, in ms since the Unix epoch.
    pub started_ms: u64,
    /// Its timeout in ms; 0 when it has no deadline.
    pub timeout_ms: u64,
    /// Its computer lived in the host's process (`--demo`): it ends with the host.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_process: bool,
    /// How it ended, once it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<RunEnd>,
}

/// How a recorded run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEnd {
    /// `ok`, or the error's code (`lost`, `timeout`, `cancelled`, `error`, …).
    pub code: String,
    /// When, in ms since the Unix epoch.
    pub at_ms: u64,
    /// Why it was `lost` (`RequestError::lost_reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Default, Serialize, Deserialize)]
struct OnDisk {
    #[serde(default)]
    live: Vec<RunRecord>,
    #[serde(default)]
    ended: Vec<RunRecord>,
    /// The start tags of this data dir's hosts (`h-<tag>-<n>`), newest last: an id whose tag
    /// is here was issued by this host, one whose tag is not never was.
    #[serde(default)]
    tags: Vec<String>,
}

/// Host starts whose tags are kept: one a day for over two years.
pub const TAGS_KEPT: usize = 1024;

/// The record: in memory, and in [`FILE`] when the session persists.
#[derive(Debug, Default)]
pub struct Runs {
    path: Option<PathBuf>,
    live: HashMap<String, RunRecord>,
    ended: VecDeque<RunRecord>,
    tags: VecDeque<String>,
    /// A write failed (said once in the tracing log); later writes are still tried.
    warned: bool,
}

impl Runs {
    /// The record kept in `dir` (read from it when there), or in memory only without one.
    pub fn open(dir: Option<&Path>) -> Runs {
        let mut runs = Runs {
            path: dir.map(|d| d.join(FILE)),
            ..Runs::default()
        };
        if let Some(path) = &runs.path {
            match read(path) {
                Ok(Some(disk)) => {
                    for r in disk.live {
                        runs.live.insert(r.id.clone(), r);
                    }
                    runs.ended = disk.ended.into();
                    runs.tags = disk.tags.into();
                    runs.bound();
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    "{}: not read ({e}); detached runs that computers name are taken back on \
                     their computers' behalf",
                    path.display()
                ),
            }
        }
        runs
    }

    /// This host start's tag (`run_tag`), recorded; and the runs of an earlier start whose
    /// computers lived in its process, which ended with it: they are returned, ended `lost`.
    pub fn began(&mut self, tag: &str) -> Vec<RunRecord> {
        self.tags.push_back(tag.to_owned());
        while self.tags.len() > TAGS_KEPT {
            self.tags.pop_front();
        }
        let gone: Vec<String> = self
            .live
            .values()
            .filter(|r| r.in_process && !r.id.starts_with(&format!("h-{tag}-")))
            .map(|r| r.id.clone())
            .collect();
        for id in &gone {
            self.end(id, "lost", Some("host_restarted"));
        }
        self.save();
        gone.iter().filter_map(|id| self.lookup(id)).collect()
    }

    /// Whether a start of this host gave out ids with `tag`.
    pub fn issued(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    /// A detached run started here.
    pub fn started(&mut self, record: RunRecord) {
        self.live.insert(record.id.clone(), record);
        self.bound();
        self.save();
    }

    /// Runs taken back from a computer's hello that no record had (recorded so that a later
    /// restart knows them); written once for all of them.
    pub fn adopted(&mut self, records: Vec<RunRecord>) {
        if records.is_empty() {
            return;
        }
        for r in records {
            self.live.insert(r.id.clone(), r);
        }
        self.bound();
        self.save();
    }

    /// Run `id` ended with `code` (`ok` or an error code) and, when lost, its `reason`;
    /// nothing when it is not recorded.
    pub fn ended(&mut self, id: &str, code: &str, reason: Option<&str>) {
        if self.end(id, code, reason) {
            self.save();
        }
    }

    /// Runs `ids` ended with `code`, written once.
    pub fn ended_all<'a>(
        &mut self,
        ids: impl IntoIterator<Item = &'a str>,
        code: &str,
        reason: Option<&str>,
    ) {
        let mut any = false;
        for id in ids {
            any |= self.end(id, code, reason);
        }
        if any {
            self.save();
        }
    }

    fn end(&mut self, id: &str, code: &str, reason: Option<&str>) -> bool {
        let Some(mut r) = self.live.remove(id) else {
            return false;
        };
        r.ended = Some(RunEnd {
            code: code.to_owned(),
            at_ms: super::super::model::epoch_ms(std::time::SystemTime::now()),
            reason: reason.map(str::to_owned),
        });
        self.ended.push_back(r);
        self.bound();
        true
    }

    /// What the record says of run `id`: running (`ended` is `None`) or how it ended; `None`
    /// when this host never recorded it (or it is older than what is kept).
    pub fn lookup(&self, id: &str) -> Option<RunRecord> {
        self.live
            .get(id)
            .or_else(|| self.ended.iter().rev().find(|r| r.id == id))
            .cloned()
    }

    /// Run `id` if it is recorded as running.
    pub fn running(&self, id: &str) -> Option<&RunRecord> {
        self.live.get(id)
    }

    /// The ids of the runs recorded as running on `trapos_id`.
    pub fn running_on(&self, trapos_id: &str) -> Vec<String> {
        self.live
            .values()
            .filter(|r| r.trapos_id == trapos_id)
            .map(|r| r.id.clone())
            .collect()
    }

    /// How many runs are recorded running, and ended.
    pub fn counts(&self) -> (usize, usize) {
        (self.live.len(), self.ended.len())
    }

    fn bound(&mut self) {
        while self.ended.len() > ENDED_KEPT {
            self.ended.pop_front();
        }
        while self.live.len() > LIVE_KEPT {
            let oldest = self
                .live
                .values()
                .min_by_key(|r| r.started_ms)
                .map(|r| r.id.clone());
            match oldest {
                Some(id) => self.live.remove(&id),
                None => break,
            };
        }
    }

    fn save(&mut self) {
        let Some(path) = &self.path else {
            return;
        };
        let mut live: Vec<&RunRecord> = self.live.values().collect();
        live.sort_by(|a, b| (a.started_ms, &a.id).cmp(&(b.started_ms, &b.id)));
        let disk = serde_json::json!({ "live": live, "ended": self.ended, "tags": self.tags });
        let text = disk.to_string();
        let tmp = path.with_extension("json.tmp");
        let result = crate::config::write_private(&tmp, text.as_bytes())
            .and_then(|()| std::fs::rename(&tmp, path));
        match result {
            Ok(()) => self.warned = false,
            Err(e) if !self.warned => {
                self.warned = true;
                tracing::warn!(
                    "{}: not written ({e}); who started a detached run is known until this \
                     host stops",
                    path.display()
                );
            }
            Err(_) => {}
        }
    }
}

fn read(path: &Path) -> Result<Option<OnDisk>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if meta.len() > FILE_MAX {
        return Err(format!("{} bytes, more than {FILE_MAX}", meta.len()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn record(id: &str, started_ms: u64) -> RunRecord {
        RunRecord {
            id: id.into(),
            trapos_id: "7:miner".into(),
            kind: Kind::ExecLua,
            origin: Origin::Agent("bot".into()),
            started_ms,
            timeout_ms: 0,
            in_process: false,
            ended: None,
        }
    }

    #[test]
    fn a_record_outlives_the_host_and_says_how_a_run_ended() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = Runs::open(Some(dir.path()));
        runs.started(record("h-aaaaaa-1", 1));
        runs.started(record("h-aaaaaa-2", 2));
        runs.ended("h-aaaaaa-2", "lost", Some("computer_restarted"));
        let again = Runs::open(Some(dir.path()));
        assert_eq!(
            again.running("h-aaaaaa-1").unwrap().origin,
            Origin::Agent("bot".into())
        );
        let lost = again.lookup("h-aaaaaa-2").unwrap();
        assert_eq!(lost.ended.unwrap().code, "lost");
        assert!(again.lookup("h-aaaaaa-3").is_none());
        assert_eq!(
            again
                .lookup("h-aaaaaa-2")
                .unwrap()
                .ended
                .unwrap()
                .reason
                .as_deref(),
            Some("computer_restarted")
        );
        assert_eq!(again.running_on("7:miner"), vec!["h-aaaaaa-1".to_owned()]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "private: {mode:o}");
        }
    }

    #[test]
    fn a_run_on_an_in_process_computer_ends_with_its_host() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = Runs::open(Some(dir.path()));
        assert!(runs.began("aaaaaa").is_empty());
        let mut demo = record("h-aaaaaa-1", 1);
        demo.in_process = true;
        runs.started(demo);
        runs.started(record("h-aaaaaa-2", 2));
        let mut again = Runs::open(Some(dir.path()));
        let gone = again.began("bbbbbb");
        assert_eq!(gone.len(), 1);
        let end = again.lookup("h-aaaaaa-1").unwrap().ended.unwrap();
        assert_eq!(
            (end.code.as_str(), end.reason.as_deref()),
            ("lost", Some("host_restarted"))
        );
        assert!(
            again.running("h-aaaaaa-2").is_some(),
            "a real computer's goes on"
        );
        assert!(again.issued("aaaaaa") && again.issued("bbbbbb") && !again.issued("cccccc"));
    }

    #[test]
    fn the_record_keeps_its_bounds() {
        let mut runs = Runs::open(None);
        for i in 0..(LIVE_KEPT + 10) {
            runs.started(record(&format!("h-aaaaaa-{i}"), i as u64));
        }
        assert_eq!(runs.counts().0, LIVE_KEPT);
        assert!(
            runs.running("h-aaaaaa-0").is_none(),
            "the oldest went first"
        );
        let ids: Vec<String> = (10..(ENDED_KEPT + 30))
            .map(|i| format!("h-aaaaaa-{i}"))
            .collect();
        runs.ended_all(ids.iter().map(String::as_str), "ok", None);
        assert_eq!(runs.counts().1, ENDED_KEPT);
    }
}

//! The computers' secrets: the shared one (rotated with `trapdesk secret rotate`) and each
//! computer's own (made by enrolment, or by `trapdesk secret add COMPUTER`), so that nobody who
//! holds the shared secret, or another computer's secret, can link under a computer's id.
//!
//! **Enrolment** (docs/protocol.md, "Enrolment"): the shared secret only enrols. A client that
//! can store a secret says `"enrol": true` in its `hello`; the first such hello of an id that is
//! not bound, with the shared secret, gets a fresh secret of its own in `welcome`. The host keeps
//! its SHA-256 as a *pending* binding, and makes it *firm* when the computer says `enrolled`
//! (it stored the secret) or first links with it. From then on that id links only with its own
//! secret. While pending, the shared secret still links (and enrols again with a new secret),
//! so a lost `welcome` or `enrolled` never locks a computer out.
//!
//! **Label bindings** (`secret add miner`) bind whoever is called `miner`, and, from the first
//! link with their secret, that computer's id too (`ids`): the id is bound from then on, so
//! the shared secret cannot enrol it under another label and lock the real computer out, and
//! the label binding outranks an automatic enrolment of the same id. A relabel while linked is
//! judged as a hello with the new label would be ([`Secrets::relabel`]).
//!
//! **Bounds**: at most [`MAX_ENROLLED`] enrolled bindings, at most [`ENROL_PER_MINUTE`]
//! enrolments a minute (each rewrites the file), at most [`MAX_IDS`] ids per label binding.
//! Past them a computer links with the shared secret, unbound, as a client that cannot enrol
//! does, and enrols at a later link.
//!
//! Everything lives in `<data dir>/computer-secrets.json` (0600): the bindings (hashes only, by
//! id, or by id or label for `secret add`), and whether enrolment is closed. Each change reads
//! the file afresh under a lock file and replaces it by a rename, so the host and the
//! `trapdesk secret` commands never lose each other's changes and a reader never sees half a
//! file. The gateway keeps the file parsed ([`Secrets`]) and looks at it with one `stat` per
//! `hello`, reading it again only when it changed, so a change by `trapdesk secret …` applies
//! to the next link with no restart, and 10,000 computers linking at once do not read it
//! 10,000 times. Hellos that change nothing never write it.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

mod file;
mod view;

use file::{change, load, path};
pub use view::{Secrets, accepts, shared_now};

use crate::config::{generate_secret, write_private};

/// The per-computer file in the data directory.
pub const FILE: &str = "computer-secrets.json";

/// The most enrolled bindings (pending or firm) the file keeps: a flood of hellos with new ids
/// and the shared secret grows it to about 1 MiB (some 260 bytes each) and no further.
pub const MAX_ENROLLED: usize = 4096;

/// The most enrolments the gateway makes a minute: each rewrites the file, so a flood of hellos
/// asking to enrol (new ids, or one pending id again and again) rewrites it at most this often.
pub const ENROL_PER_MINUTE: u32 = 60;

/// The most ids a label binding records as having linked with its secret (the oldest goes).
pub const MAX_IDS: usize = 16;

/// Ids logged one by one as running a client that cannot enrol; past this, one more line says
/// the rest are not (a load test links 10,000 scripted computers).
const CANNOT_ENROL_LOGGED: usize = 256;

/// One computer's own secret, as stored: never the secret, only its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputerSecret {
    /// A computer id (`"7"`), or for `secret add` also a label (`"miner"`).
    pub computer: String,
    pub secret_sha256: String,
    /// Enrolled, but the computer has not yet said it stored the secret.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
    /// How it was made: `"enrolled"`, or `"added"` by `trapdesk secret add`. Files written
    /// before enrolment existed have none (they were all added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how: Option<String>,
    /// The label the computer had when it enrolled, for `secret list` and `secret forget
    /// LABEL` only: labels change, the binding is by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// When it was made, or made firm, in epoch milliseconds (0 in older files).
    #[serde(default)]
    pub since_ms: u64,
    /// For a label binding: the ids of the computers that linked with its secret, which it
    /// binds from then on (at most [`MAX_IDS`], the newest kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<u64>,
}

impl ComputerSecret {
    /// Whether it binds a label (`secret add miner`) rather than an id.
    fn by_label(&self) -> bool {
        !self.computer.bytes().all(|b| b.is_ascii_digit())
    }

    /// Whether it applies to computer `id` called `label`: by its id, by its label, or by an id
    /// that linked with its secret.
    fn applies(&self, id: u64, key: &str, label: Option<&str>) -> bool {
        if self.by_label() {
            label == Some(self.computer.as_str()) || self.ids.contains(&id)
        } else {
            self.computer == key
        }
    }

    fn enrolled(&self) -> bool {
        self.how.as_deref() == Some("enrolled")
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Store {
    /// Set by `trapdesk secret enrol off`: the shared secret links no unbound computer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    enrolment_closed: bool,
    #[serde(default)]
    computers: Vec<ComputerSecret>,
}

impl Store {
    /// The binding that applies to a computer: by id, or by label (`secret add miner`, which
    /// also binds the ids that linked with it). One the person added outranks an enrolment
    /// (anyone with the shared secret can enrol an id, only the person adds); among equals the
    /// newest wins, as `add` replaces.
    fn binding(&self, id: u64, label: Option<&str>) -> Option<&ComputerSecret> {
        let key = id.to_string();
        let mut applying = self
            .computers
            .iter()
            .rev()
            .filter(|c| c.applies(id, &key, label));
        let first = applying.clone().next();
        applying.find(|c| !c.enrolled()).or(first)
    }
}

/// Why a secret could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("cannot use {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid secrets file: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("computer {0:?} is not an id or label (use the id, like 7, or the label, like miner)")]
    BadComputer(String),
    #[error("no computer {computer:?} has a secret of its own; bound: {}", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    Unknown {
        computer: String,
        known: Vec<String>,
    },
    #[error(
        "{count} computers are enrolled, the most this host keeps ({MAX_ENROLLED}): this one links unbound; forget unused ones (trapdesk secret list, trapdesk secret forget ID) and it enrols at its next link"
    )]
    Full { count: usize },
    #[error(
        "{path} is locked by another trapdesk (its lock file {lock} is fresh); try again, or delete the lock file if no trapdesk is changing secrets"
    )]
    Locked { path: PathBuf, lock: PathBuf },
}

fn now_ms() -> u64 {
    crate::session::model::epoch_ms(SystemTime::now())
}

/// Gives `computer` (an id or label) a secret of its own, replacing any it had, and returns
/// it (the only time it is shown).
///
/// # Errors
/// A bad computer name, or the file cannot be read or written.
pub fn add(dir: &Path, computer: &str) -> Result<String, SecretError> {
    let computer = computer.trim();
    // A label CC could not give a computer (`StringUtil.normaliseLabel`) would bind nothing.
    let by_label = !computer.bytes().all(|b| b.is_ascii_digit());
    if computer.is_empty()
        || computer.contains(':')
        || (by_label
            && trapdesk_proto::protocol::label::normalise(Some(computer)).as_deref()
                != Some(computer))
    {
        return Err(SecretError::BadComputer(computer.to_owned()));
    }
    let secret = generate_secret();
    let hash = crate::trust::hash(&secret);
    change(dir, |store| {
        store.computers.retain(|c| c.computer != computer);
        store.computers.push(ComputerSecret {
            computer: computer.to_owned(),
            secret_sha256: hash,
            pending: false,
            how: Some("added".into()),
            label: None,
            since_ms: now_ms(),
            ids: Vec::new(),
        });
        Ok(((), true))
    })?;
    Ok(secret)
}

/// Removes the own secret of `computer`: its id (`7`), the name it was added under, or the
/// label it enrolled with when that names one binding only. Returns what was removed. The
/// computer can then enrol again (or link with the shared secret, with an older client).
///
/// # Errors
/// No such binding, or the file cannot be read or written.
pub fn forget(dir: &Path, computer: &str) -> Result<Vec<ComputerSecret>, SecretError> {
    let computer = computer.trim();
    change(dir, |store| {
        let direct = store.computers.iter().any(|c| c.computer == computer);
        let by_label = store
            .computers
            .iter()
            .filter(|c| c.label.as_deref() == Some(computer))
            .count();
        let hit = |c: &ComputerSecret| {
            c.computer == computer
                || (!direct && by_label == 1 && c.label.as_deref() == Some(computer))
        };
        let (gone, kept): (Vec<_>, Vec<_>) = store.computers.drain(..).partition(|c| hit(c));
        store.computers = kept;
        if gone.is_empty() {
            return Err(SecretError::Unknown {
                computer: computer.to_owned(),
                known: store.computers.iter().map(|c| c.computer.clone()).collect(),
            });
        }
        Ok((gone, true))
    })
}

/// Every binding, in the order made (hashes included; callers show none of them).
///
/// # Errors
/// An unreadable or invalid file.
pub fn list(dir: &Path) -> Result<Vec<ComputerSecret>, SecretError> {
    Ok(load(dir)?.computers)
}

/// Whether enrolment is open (the default).
///
/// # Errors
/// An unreadable or invalid file.
pub fn enrolment_open(dir: &Path) -> Result<bool, SecretError> {
    Ok(!load(dir)?.enrolment_closed)
}

/// Opens or closes enrolment; returns whether that changed anything.
///
/// # Errors
/// The file cannot be read or written.
pub fn set_enrolment(dir: &Path, open: bool) -> Result<bool, SecretError> {
    change(dir, |store| {
        let changed = store.enrolment_closed == open;
        store.enrolment_closed = !open;
        Ok((changed, changed))
    })
}

/// Writes a new shared secret to `<data dir>/secret` and returns it.
///
/// # Errors
/// When the file cannot be written.
pub fn rotate(dir: &Path) -> Result<String, SecretError> {
    let path = dir.join("secret");
    let secret = generate_secret();
    // By rename, as the bindings: the gateway notices the new inode at the next hello.
    let tmp = dir.join("secret.tmp");
    write_private(&tmp, secret.as_bytes())
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| SecretError::Io { path, source })?;
    Ok(secret)
}

/// The verdict on one `hello`'s secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The shared secret, for an id with no secret of its own, from a client that did not ask
    /// to enrol (or a pending id): links, unbound.
    Shared,
    /// The computer's own secret. `pending`: its binding is not firm yet, or is a label binding
    /// that has not recorded this id yet, and this hello makes it so ([`confirm`]).
    Own { pending: bool },
    /// The shared secret from a client that can enrol, for an id that is not (firmly) bound:
    /// enrol it ([`enrol`]) and send the new secret in `welcome`.
    Enrol,
    /// Refused (`auth_failed`).
    Refused(Refusal),
}

/// Why a secret was refused, as the computer (and the person) are told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Neither the shared secret nor this computer's own.
    Wrong,
    /// The shared secret under an id (or label) that has its own secret.
    Bound { computer: String },
    /// The shared secret for an unbound id while enrolment is closed.
    EnrolmentClosed,
    /// The secrets file cannot be read: refusing is safer than letting a computer past its own
    /// secret.
    Unreadable,
}

impl Refusal {
    /// The `auth_failed` message: what happened and what to do about it.
    pub fn message(&self) -> String {
        match self {
            Refusal::Wrong => "wrong secret".into(),
            Refusal::Bound { computer } => format!(
                "computer {computer} is enrolled with its own secret; the shared secret no longer links it; on the host: trapdesk secret forget {computer}"
            ),
            Refusal::EnrolmentClosed => {
                "enrolment is closed: the shared secret links no new computer; on the host: trapdesk secret enrol on".into()
            }
            Refusal::Unreadable => {
                "the host cannot read its computer secrets file; see its log".into()
            }
        }
    }

    /// What the session log says about it (never a secret).
    pub fn why(&self) -> String {
        match self {
            Refusal::Wrong => "wrong secret (auth_failed): the computer's secret is neither this host's shared secret nor its own".into(),
            other => format!("auth_failed: {}", other.message()),
        }
    }
}

/// Decides on one hello from the bindings and the shared secret, both given as SHA-256 (a
/// relabel is judged again from the hash its link kept, never the secret). Both comparisons are
/// made in constant time, and both are always made, so the answer's timing says nothing about
/// which one failed. `shared_hash` is `None` when there is no shared secret.
fn judge(
    store: &Store,
    shared_hash: Option<&str>,
    id: u64,
    label: Option<&str>,
    given_hash: &str,
    enrol: bool,
) -> Verdict {
    let is_shared =
        shared_hash.is_some_and(|h| bool::from(given_hash.as_bytes().ct_eq(h.as_bytes())));
    match store.binding(id, label) {
        Some(own) => {
            if bool::from(given_hash.as_bytes().ct_eq(own.secret_sha256.as_bytes())) {
                Verdict::Own {
                    pending: own.pending || (own.by_label() && !own.ids.contains(&id)),
                }
            } else if is_shared && own.pending && !store.enrolment_closed {
                if enrol {
                    Verdict::Enrol
                } else {
                    Verdict::Shared
                }
            } else if is_shared && own.pending {
                Verdict::Refused(Refusal::EnrolmentClosed)
            } else if is_shared {
                Verdict::Refused(Refusal::Bound {
                    computer: own.computer.clone(),
                })
            } else {
                Verdict::Refused(Refusal::Wrong)
            }
        }
        None if !is_shared => Verdict::Refused(Refusal::Wrong),
        None if store.enrolment_closed => Verdict::Refused(Refusal::EnrolmentClosed),
        None if enrol => Verdict::Enrol,
        None => Verdict::Shared,
    }
}

/// What an enrolment gave: the secret for `welcome` and its hash, which the connection keeps
/// to confirm exactly this binding when the computer says `enrolled`.
#[derive(Debug, Clone)]
pub struct Enrolled {
    pub secret: String,
    pub secret_sha256: String,
}

/// Gives computer `id` a new secret of its own, stored as a pending binding (replacing a
/// pending one). Blocking (file I/O): the gateway runs it off its threads.
///
/// # Errors
/// [`Refusal::Bound`] when a firm binding appeared meanwhile (another hello, `secret add`),
/// [`Refusal::EnrolmentClosed`] when enrolment was closed meanwhile, or the file error.
pub fn enrol(
    dir: &Path,
    id: u64,
    label: Option<&str>,
) -> Result<Result<Enrolled, Refusal>, SecretError> {
    let secret = generate_secret();
    let hash = crate::trust::hash(&secret);
    change(dir, |store| {
        // Decided again on the file as it is now, under the lock.
        match store.binding(id, label) {
            Some(own) if !own.pending => {
                return Ok((
                    Err(Refusal::Bound {
                        computer: own.computer.clone(),
                    }),
                    false,
                ));
            }
            _ if store.enrolment_closed => return Ok((Err(Refusal::EnrolmentClosed), false)),
            _ => {}
        }
        let key = id.to_string();
        store.computers.retain(|c| c.computer != key);
        let count = store.computers.iter().filter(|c| c.enrolled()).count();
        if count >= MAX_ENROLLED {
            return Err(SecretError::Full { count });
        }
        store.computers.push(ComputerSecret {
            computer: key,
            secret_sha256: hash.clone(),
            pending: true,
            how: Some("enrolled".into()),
            label: label.filter(|l| !l.is_empty()).map(str::to_owned),
            since_ms: now_ms(),
            ids: Vec::new(),
        });
        Ok((
            Ok(Enrolled {
                secret,
                secret_sha256: hash,
            }),
            true,
        ))
    })
}

/// Makes the pending binding of `id` with this hash firm (the computer stored its secret), or
/// records `id` in the label binding with this hash (the computer linked with the label's
/// secret: its id is bound from then on, and an enrolment of that id, by whoever, goes).
/// Returns whether it changed anything: a binding already firm, replaced or forgotten meanwhile
/// is left as it is.
///
/// # Errors
/// The file cannot be read or written.
pub fn confirm(dir: &Path, id: u64, secret_sha256: &str) -> Result<bool, SecretError> {
    let key = id.to_string();
    change(dir, |store| {
        let hit = store
            .computers
            .iter_mut()
            .find(|c| c.computer == key && c.pending && c.secret_sha256 == secret_sha256);
        match hit {
            Some(c) => {
                c.pending = false;
                c.since_ms = now_ms();
                Ok((true, true))
            }
            None => {
                let label = store.computers.iter_mut().find(|c| {
                    c.by_label() && c.secret_sha256 == secret_sha256 && !c.ids.contains(&id)
                });
                let Some(c) = label else {
                    return Ok((false, false));
                };
                if c.ids.len() >= MAX_IDS {
                    c.ids.remove(0);
                }
                c.ids.push(id);
                store
                    .computers
                    .retain(|c| !(c.computer == key && c.enrolled()));
                Ok((true, true))
            }
        }
    })
}

#[cfg(test)]
mod tests;

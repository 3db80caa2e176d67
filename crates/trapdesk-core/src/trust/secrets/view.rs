//! The gateway's view of the secrets: the bindings file and the shared secret kept parsed
//! between hellos, each looked at with one `stat` per hello and read again only when it
//! changed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use std::time::{Duration, Instant};

use super::{CANNOT_ENROL_LOGGED, ENROL_PER_MINUTE, Refusal, Store, Verdict, judge, load, path};
use crate::config::{SecretSource, Settings};
use crate::trust::stamp::Stamp;

/// A file kept parsed between hellos, read again only when its stamp changed.
#[derive(Debug)]
pub(super) struct Cached<T> {
    path: PathBuf,
    held: Mutex<Option<(Stamp, Arc<T>)>>,
}

impl<T> Cached<T> {
    fn new(path: PathBuf) -> Self {
        Cached {
            path,
            held: Mutex::new(None),
        }
    }

    pub(super) fn get<E>(&self, read: impl FnOnce(&Path) -> Result<T, E>) -> Result<Arc<T>, E> {
        let stamp = Stamp::of(&self.path);
        if let Some(stamp) = &stamp {
            let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((s, v)) = held.as_ref()
                && s == stamp
            {
                return Ok(v.clone());
            }
        }
        let value = Arc::new(read(&self.path)?);
        // The stamp was taken before the read: a change in between shows as a new stamp at
        // the next hello, which reads again.
        if let Some(stamp) = stamp {
            *self.held.lock().unwrap_or_else(|p| p.into_inner()) = Some((stamp, value.clone()));
        }
        Ok(value)
    }
}

/// The gateway's view of the secrets: the bindings file and the shared secret, each checked
/// with one `stat` per hello.
#[derive(Debug)]
pub struct Secrets {
    dir: PathBuf,
    pub(super) store: Cached<Store>,
    /// The shared secret's file when it is the stored one (`secret rotate` writes it); `None`
    /// when it came from a flag, the environment or config.toml, which a running host keeps.
    shared_file: Option<Cached<String>>,
    shared_fixed: String,
    /// Ids already logged as running a client that cannot enrol.
    cannot_enrol: Mutex<HashSet<u64>>,
    /// Enrolments let through in the current minute, and when that minute began.
    enrolments: Mutex<(Instant, u32)>,
}

impl Secrets {
    pub fn new(settings: &Settings) -> Self {
        let shared_file = match &settings.secret_source {
            SecretSource::Generated(p) | SecretSource::Stored(p) => Some(Cached::new(p.clone())),
            _ => None,
        };
        Secrets {
            dir: settings.data_dir.clone(),
            store: Cached::new(path(&settings.data_dir)),
            shared_file,
            shared_fixed: settings.secret.clone(),
            cannot_enrol: Mutex::new(HashSet::new()),
            enrolments: Mutex::new((Instant::now(), 0)),
        }
    }

    /// The data directory the bindings live in (for [`enrol`] and [`confirm`]).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The shared secret now: a stored one is looked at again, so `secret rotate` applies at
    /// once; an empty or unreadable file leaves the one the host started with.
    fn shared(&self) -> Arc<String> {
        let fixed = || Arc::new(self.shared_fixed.clone());
        let Some(file) = &self.shared_file else {
            return fixed();
        };
        file.get(|p| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .ok_or(())
        })
        .unwrap_or_else(|()| fixed())
    }

    /// The verdict on a hello's secret. Reads nothing when neither file changed.
    pub fn check(&self, id: u64, label: Option<&str>, given: &str, enrol: bool) -> Verdict {
        let store = match self.store.get(|_| load(&self.dir)) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("refusing computers: {e}");
                return Verdict::Refused(Refusal::Unreadable);
            }
        };
        let shared = self.shared();
        let shared_hash = (!shared.is_empty()).then(|| crate::trust::hash(&shared));
        let given = crate::trust::hash(given);
        let verdict = judge(&store, shared_hash.as_deref(), id, label, &given, enrol);
        if verdict == Verdict::Shared && !enrol {
            self.cannot_enrol(id);
        }
        if verdict == Verdict::Enrol && !self.may_enrol() {
            // Each enrolment rewrites the file: past the rate, link unbound, as a client that
            // cannot enrol would; the computer enrols at a later link.
            return Verdict::Shared;
        }
        verdict
    }

    /// Whether a computer `id` called `old`, linked with the secrets hashed `held` (the one its
    /// hello gave, and the one it enrolled with, if it did), may be called `label` now. When
    /// the new label brings a binding other than the one that applied already, it is judged as
    /// a hello with that label would be, so a `label` message cannot take a label bound with
    /// `secret add` that a hello could not; otherwise nothing changed about what binds it (a
    /// `secret rotate` or `enrol off` since it linked does not unlink it on a relabel). Reads
    /// nothing when neither file changed.
    ///
    /// # Errors
    /// The refusal a hello with that label would get.
    pub fn relabel(
        &self,
        id: u64,
        old: Option<&str>,
        label: Option<&str>,
        held: &[String],
    ) -> Result<(), Refusal> {
        let store = self.store.get(|_| load(&self.dir)).map_err(|e| {
            tracing::warn!("refusing a relabel: {e}");
            Refusal::Unreadable
        })?;
        match (store.binding(id, label), store.binding(id, old)) {
            (None, _) => return Ok(()),
            (Some(new), Some(was)) if std::ptr::eq(new, was) => return Ok(()),
            _ => {}
        }
        let shared = self.shared();
        let shared_hash = (!shared.is_empty()).then(|| crate::trust::hash(&shared));
        let mut refusal = Refusal::Wrong;
        for (i, h) in held.iter().enumerate() {
            match judge(&store, shared_hash.as_deref(), id, label, h, false) {
                Verdict::Refused(r) => {
                    if i == 0 {
                        refusal = r;
                    }
                }
                _ => return Ok(()),
            }
        }
        Err(refusal)
    }

    /// Takes one enrolment from this minute's [`ENROL_PER_MINUTE`].
    fn may_enrol(&self) -> bool {
        let mut e = self.enrolments.lock().unwrap_or_else(|p| p.into_inner());
        if e.0.elapsed() >= Duration::from_secs(60) {
            *e = (Instant::now(), 0);
        }
        if e.1 >= ENROL_PER_MINUTE {
            return false;
        }
        e.1 += 1;
        true
    }

    /// Says once per id that a computer links with the shared secret because its client
    /// cannot enrol (it predates enrolment, or is a scripted one): such a computer's id can be
    /// taken by anyone holding the shared secret.
    fn cannot_enrol(&self, id: u64) {
        let mut seen = self.cannot_enrol.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() > CANNOT_ENROL_LOGGED || !seen.insert(id) {
            return;
        }
        if seen.len() > CANNOT_ENROL_LOGGED {
            tracing::info!(
                "more than {CANNOT_ENROL_LOGGED} computers run a client that cannot enrol; the rest are not logged one by one"
            );
        } else {
            tracing::info!(
                "computer {id} runs a client that cannot enrol: it links with the shared secret, unbound (re-run the installer to update it)"
            );
        }
    }
}

/// The shared secret a hello must present now: the stored file read again (so a `secret
/// rotate` from another process shows at once), else the one the host started with. For the
/// console, which shows it.
pub fn shared_now(settings: &Settings) -> String {
    Secrets::new(settings).shared().as_str().to_owned()
}

/// Whether a computer (`id`, `label`) presenting `given` may link, without enrolling: the
/// one-shot form of [`Secrets::check`] for callers that hold no [`Secrets`].
pub fn accepts(settings: &Settings, id: u64, label: Option<&str>, given: &str) -> bool {
    matches!(
        Secrets::new(settings).check(id, label, given, false),
        Verdict::Shared | Verdict::Own { .. }
    )
}

//! `trapdesk sync LOCAL_DIR COMPUTER[:REMOTE_DIR]`: a folder in the person's editor mirrored
//! onto a computer, through the running trapdesk's MCP endpoint under the origin `sync`.
//!
//! It first compares the folder with the computer (size, and a CRC-32 the computer computes
//! with `file-info`, so nothing unchanged is re-sent), pushes what differs, then watches the
//! folder (file events debounced for [`DEBOUNCE`]) and pushes each saved file, keeping the
//! content hash of what the computer has so that an unchanged save sends nothing. `--run`
//! runs a program after each push, streaming its output to stdout and cancelling a run still
//! going when a new save arrives. Pushes that fail because the computer is away (unlinked,
//! timed out) stay pending and go out when it is back; a file the computer refuses is
//! reported and the others go on. Status lines go to stderr, the program's output to stdout.
//!
//! # Layout
//!
//! - [`scan`]: which local files belong to the sync, their names and hashes.
//! - `remote`: what the computer has (sizes and checksums), `--pull`.
//! - `run`: `--run`'s program, started after a push and stopped by the next save.

mod remote;
mod run;
pub mod scan;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clap::Args;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::commands::remote::{ClientArgs, Conn, Failure, Interrupt, exit, split_target, transfer};
use run::{Running, start_run, stop_run};
use scan::{Hash, Tree};
use trapdesk_core::session::Origin;

/// How long file events settle before the changed files are pushed: editors save in several
/// steps (write a temp file, rename, touch), and one push per save is the point.
pub const DEBOUNCE: Duration = Duration::from_millis(60);
/// Why a `--run` is cancelled when a save comes while it is going.
const NEW_SAVE: &str = "a new save arrived";
/// How often pushes waiting for an absent computer are retried.
const RETRY: Duration = Duration::from_millis(500);

/// `trapdesk sync`.
#[derive(Debug, Args, Clone)]
pub struct SyncArgs {
    /// Local folder to mirror.
    pub local: PathBuf,
    /// COMPUTER or COMPUTER:REMOTE_DIR [default dir: the computer's root].
    pub target: String,
    /// After each push run this program on the computer: "PATH ARGS" (shell-quoted).
    #[arg(long, value_name = "\"PATH ARGS\"")]
    pub run: Option<String>,
    /// Push what differs (and run once with --run), then exit.
    #[arg(long)]
    pub once: bool,
    /// Delete files on the computer that were deleted locally.
    #[arg(long)]
    pub delete: bool,
    /// Leave out files matching this glob (repeatable); .gitignore is respected too.
    #[arg(long, value_name = "GLOB")]
    pub ignore: Vec<String>,
    /// First copy the computer's folder down (files that differ), then sync.
    #[arg(long)]
    pub pull: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

fn say(line: &str) {
    eprintln!("sync: {}", trapdesk_proto::text::printable_lines(line));
}

/// What the sync knows.
struct State {
    conn: Arc<Conn>,
    computer: String,
    remote_dir: String,
    tree: Tree,
    /// Hash of what the computer has, per relative name.
    sent: BTreeMap<String, Hash>,
    /// Names waiting for the computer to come back (a push or a delete).
    pending: BTreeSet<String>,
    /// Names the computer refused in this run (no space, a read-only path, the policy): `--once`
    /// exits non-zero while any is left, so a Makefile does not go on with a stale computer.
    refused: BTreeSet<String>,
    delete: bool,
    timeout: Option<Duration>,
}

/// How one push went.
enum Pushed {
    Sent,
    Unchanged,
    Away,
    Failed,
}

impl State {
    fn remote(&self, rel: &str) -> String {
        transfer::join(&self.remote_dir, rel)
    }

    /// Pushes (or deletes) one name; remembers it when the computer is away.
    async fn push(&mut self, rel: &str) -> Pushed {
        let Some(path) = self.tree.local(rel) else {
            return Pushed::Failed;
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                say(&format!("cannot read {rel}: {e}; skipped"));
                return Pushed::Failed;
            }
        };
        let result = match &bytes {
            Some(b) => {
                let h = scan::hash(b);
                if self.sent.get(rel) == Some(&h) {
                    self.pending.remove(rel);
                    return Pushed::Unchanged;
                }
                let remote = self.remote(rel);
                transfer::put(&self.conn, &self.computer, &remote, b, self.timeout, false)
                    .await
                    .map(|_| {
                        self.sent.insert(rel.to_owned(), h);
                        say(&format!("pushed {rel} ({} bytes)", b.len()));
                    })
            }
            None if self.delete && self.sent.contains_key(rel) => {
                let remote = self.remote(rel);
                transfer::delete(&self.conn, &self.computer, &remote, self.timeout)
                    .await
                    .map(|()| {
                        self.sent.remove(rel);
                        say(&format!("deleted {rel}"));
                    })
            }
            None => {
                self.pending.remove(rel);
                return Pushed::Unchanged;
            }
        };
        match result {
            Ok(()) => {
                self.pending.remove(rel);
                self.refused.remove(rel);
                Pushed::Sent
            }
            Err(f) if f.code == exit::UNREACHABLE => {
                if self.pending.insert(rel.to_owned()) {
                    say(&format!(
                        "{rel} waits for {} to be back ({})",
                        self.computer, f.message
                    ));
                }
                Pushed::Away
            }
            Err(f) => {
                self.pending.remove(rel);
                self.refused.insert(rel.to_owned());
                say(&format!("{rel} not pushed: {}", f.message));
                Pushed::Failed
            }
        }
    }

    /// Pushes a set of names; true when anything reached the computer.
    async fn push_all(&mut self, names: impl IntoIterator<Item = String>) -> bool {
        let mut any = false;
        for rel in names {
            match self.push(&rel).await {
                Pushed::Sent => any = true,
                Pushed::Away => {
                    // The rest would wait too; keep them for the retry.
                    self.pending.insert(rel);
                }
                Pushed::Unchanged | Pushed::Failed => {}
            }
        }
        any
    }
}

/// `trapdesk sync`.
///
/// # Errors
/// A [`Failure`]: 2 for a bad folder or flag, 3 when no trapdesk answers, 130 on Ctrl-C, 143
/// on SIGTERM.
pub async fn sync(a: SyncArgs) -> Result<(), Failure> {
    let (computer, dir) = split_target(&a.target);
    let remote_dir = dir.unwrap_or("").trim_end_matches('/').to_owned();
    let tree = Tree::new(&a.local, &a.ignore).map_err(|e| Failure::new(exit::USAGE, e))?;
    let program = program_words(a.run.as_deref())?;
    let interrupted = Interrupted::watch();
    let conn = Arc::new(a.client.open(Origin::SYNC_CLIENT).await?);
    let mut st = State {
        conn: conn.clone(),
        computer: computer.to_owned(),
        remote_dir,
        tree,
        sent: BTreeMap::new(),
        pending: BTreeSet::new(),
        refused: BTreeSet::new(),
        delete: a.delete,
        timeout: a.client.timeout,
    };
    // Watching starts before the first push: a save made while it reads and sends would
    // otherwise fall between the two and never go (the watch saw nothing, the push read the
    // file before it). What the push itself wrote is unchanged content and sends nothing.
    let watching = if a.once {
        None
    } else {
        Some(Watching::start(&st.tree.root)?)
    };
    if a.pull {
        remote::pull(&mut st).await?;
    }
    first_push(&mut st).await?;
    let mut run = None;
    if let Some(p) = &program {
        run = Some(start_run(
            conn.clone(),
            st.computer.clone(),
            p.clone(),
            a.client.timeout,
        ));
    }
    match watching {
        None => once(st, conn, run, &interrupted).await,
        Some(w) => watch(st, w, program, run, a.client.timeout, interrupted).await,
    }
}

/// The folder's watcher and the paths it saw change, oldest first.
struct Watching {
    /// Kept alive: dropping it stops the watch.
    _watcher: notify::RecommendedWatcher,
    changed: mpsc::UnboundedReceiver<PathBuf>,
}

impl Watching {
    fn start(root: &std::path::Path) -> Result<Watching, Failure> {
        use notify::Watcher;
        let (tx, changed) = mpsc::unbounded_channel::<PathBuf>();
        let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            if let Ok(ev) = ev
                && changes_content(&ev.kind)
            {
                for p in ev.paths {
                    let _ = tx.send(p);
                }
            }
        })
        .map_err(|e| Failure::new(exit::FAILED, format!("cannot watch the folder: {e}")))?;
        watcher
            .watch(root, notify::RecursiveMode::Recursive)
            .map_err(|e| Failure::new(exit::FAILED, format!("cannot watch the folder: {e}")))?;
        Ok(Watching {
            _watcher: watcher,
            changed,
        })
    }
}

/// `--run`'s program and arguments, split as a shell would.
fn program_words(run: Option<&str>) -> Result<Option<Vec<String>>, Failure> {
    let Some(r) = run else {
        return Ok(None);
    };
    let words = shell_words::split(r)
        .map_err(|e| Failure::new(exit::USAGE, format!("--run {r:?}: {e}")))?;
    if words.is_empty() {
        return Err(Failure::new(exit::USAGE, "--run needs a program path"));
    }
    Ok(Some(words))
}

/// One watcher for the whole sync: a Ctrl-C or SIGTERM that arrives while a push is going (no
/// signal future waiting) would otherwise be lost.
struct Interrupted {
    token: CancellationToken,
    which: Arc<OnceLock<Interrupt>>,
}

impl Interrupted {
    fn watch() -> Interrupted {
        let token = CancellationToken::new();
        let which = Arc::new(OnceLock::new());
        let (t, w) = (token.clone(), which.clone());
        tokio::spawn(async move {
            let _ = w.set(crate::commands::remote::conn::signal().await);
            t.cancel();
        });
        Interrupted { token, which }
    }

    /// Resolves once interrupted, with what did it.
    async fn cancelled(&self) -> Interrupt {
        self.token.cancelled().await;
        self.which.get().copied().unwrap_or(Interrupt::CtrlC)
    }
}

/// How the sync ends when `i` stops it: the code a shell expects (130 Ctrl-C, 143 SIGTERM) and
/// the line saying so.
fn stopped_by(i: Interrupt) -> Failure {
    Failure::new(i.code(), format!("{}: sync stopped", i.name()))
}

/// Pushes what differs from the computer's copy (and, with `--delete`, deletes what the folder
/// no longer has), then says how it stands.
async fn first_push(st: &mut State) -> Result<(), Failure> {
    let local = st.tree.files();
    let remote = remote::sums(st).await?;
    let mut differ = Vec::new();
    for (rel, h) in &local {
        let same = match (remote.get(rel), st.tree.local(rel)) {
            (Some(r), Some(p)) => std::fs::read(p).is_ok_and(|b| remote::sum_of(&b) == *r),
            _ => false,
        };
        if same {
            st.sent.insert(rel.clone(), *h);
        } else {
            differ.push(rel.clone());
        }
    }
    if st.delete {
        for rel in remote.keys().filter(|r| !local.contains_key(*r)) {
            // Deletes go through `push` of a missing file, which needs the name known.
            st.sent.insert(rel.clone(), [0; 32]);
            differ.push(rel.clone());
        }
    }
    let unchanged = local.len().saturating_sub(differ.len());
    st.push_all(differ).await;
    say(&format!(
        "{} up to date with {}:{} ({unchanged} unchanged, {} pending)",
        st.tree.root.display(),
        st.computer,
        if st.remote_dir.is_empty() {
            "/"
        } else {
            &st.remote_dir
        },
        st.pending.len()
    ));
    Ok(())
}

/// `--once`: waits for the run, if any, and exits as it did (1 when the program failed), so
/// that a Makefile or an editor's build task stops on the failure; files still pending or
/// refused fail it first.
async fn once(
    mut st: State,
    conn: Arc<Conn>,
    mut run: Option<Running>,
    interrupted: &Interrupted,
) -> Result<(), Failure> {
    let mut ran = Ok(());
    if let Some(mut r) = run.take() {
        let ended = tokio::select! {
            done = &mut r.task => Ok(done),
            i = interrupted.cancelled() => Err(i),
        };
        match ended {
            Ok(done) => ran = done.unwrap_or(Ok(())),
            Err(i) => {
                // Waits for the run to say it was cancelled, and why, before the sync ends.
                stop_run(&mut Some(r), i.name()).await;
                return Err(stopped_by(i));
            }
        }
    }
    let failed = !st.pending.is_empty();
    let refused: Vec<String> = std::mem::take(&mut st.refused).into_iter().collect();
    drop(st);
    if let Ok(c) = Arc::try_unwrap(conn) {
        c.close().await;
    }
    if failed {
        Err(Failure::new(
            exit::UNREACHABLE,
            "some files are still pending: the computer is not linked",
        ))
    } else if !refused.is_empty() {
        // Each refusal was already said with its reason; this line counts them.
        Err(Failure::new(
            exit::FAILED,
            format!(
                "{} not pushed (refused by the computer or the policy): {}",
                plural(refused.len(), "file"),
                refused.join(", ")
            ),
        ))
    } else {
        ran
    }
}

/// Watches the folder until Ctrl-C.
async fn watch(
    mut st: State,
    watching: Watching,
    program: Option<Vec<String>>,
    mut run: Option<Running>,
    timeout: Option<Duration>,
    interrupted: Interrupted,
) -> Result<(), Failure> {
    let Watching {
        _watcher,
        changed: mut rx,
    } = watching;
    say(&format!(
        "watching {} (Ctrl-C stops)",
        st.tree.root.display()
    ));
    let mut retry = tokio::time::interval(RETRY);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let mut changed = BTreeSet::new();
        tokio::select! {
            Some(p) = rx.recv() => { changed.extend(names(&st, &p)); }
            _ = retry.tick(), if !st.pending.is_empty() => {}
            i = interrupted.cancelled() => {
                stop_run(&mut run, i.name()).await;
                return Err(stopped_by(i));
            }
        }
        // Let the editor finish its save, then take everything that arrived meanwhile.
        tokio::time::sleep(DEBOUNCE).await;
        while let Ok(p) = rx.try_recv() {
            changed.extend(names(&st, &p));
        }
        changed.extend(st.pending.iter().cloned());
        if changed.is_empty() {
            continue;
        }
        // A run still going is stopped before its files change under it.
        let will_send = changed.iter().any(|rel| would_send(&st, rel));
        if will_send && program.is_some() {
            stop_run(&mut run, NEW_SAVE).await;
        }
        let sent = st.push_all(changed).await;
        if sent && let Some(p) = &program {
            stop_run(&mut run, NEW_SAVE).await;
            run = Some(start_run(
                st.conn.clone(),
                st.computer.clone(),
                p.clone(),
                timeout,
            ));
        }
    }
}

/// Whether a file event can mean new content. Opening or reading a file is an event too
/// (inotify's open and close-nowrite), and the sync reads each file it pushes: counting those
/// made every push wake the watcher again, so an idle sync re-read its files every
/// [`DEBOUNCE`] forever and a save landed in a debounce window already running.
fn changes_content(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode, EventKind};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Relative names an event touches (files only; a directory event pushes nothing).
fn names(st: &State, p: &std::path::Path) -> Option<String> {
    if p.is_dir() {
        return None;
    }
    st.tree.rel(p)
}

/// Whether pushing `rel` would send or delete something.
fn would_send(st: &State, rel: &str) -> bool {
    match st.tree.local(rel).map(std::fs::read) {
        Some(Ok(b)) => st.sent.get(rel) != Some(&scan::hash(&b)),
        _ => st.delete && st.sent.contains_key(rel),
    }
}

/// "1 file", "2 files".
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests;

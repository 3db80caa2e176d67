//! The MCP endpoint's credentials: the install's own local token, and named agents' tokens,
//! which give an MCP client a name it cannot forge.
//!
//! Every computer of a Minecraft server on the same machine makes its HTTP requests from
//! loopback, with no `Origin` (CC: Tweaked's HTTP client sets none), so loopback proves
//! nothing: the endpoint needs a credential on every request, always. A fresh install makes
//! one, the **local token** in `<data dir>/mcp-token` (0600, [`local_token`]). Everything of
//! the install's own that runs as the same user (the CLI, `sync`, `mcp-stdio`, `doctor`) reads
//! it from there, so nobody types it; a program that can read the data dir could anyway do all
//! the person can (docs/security.md).
//!
//! A client's `clientInfo` name is whatever it says it is. `trapdesk agent add NAME` makes a
//! random token for NAME and stores only its SHA-256 in `<data dir>/agents.json` (0600); the
//! token itself is printed once and never kept. A request with a named agent's token carries
//! that name into the session, the log and the policy. Named agents do not lock out the local
//! token: they name agents, the local token is the install's own tools.
//!
//! **Who is the person's own tool** is a credential too, never a `clientInfo` name: the host
//! keeps a second private token, the **person token** in `<data dir>/person-token` (0600,
//! [`person_token`]), which only the person's one-shot tools (the CLI and `sync`) present and
//! `mcp-stdio` never reads. A request with it is `cli` or `sync` (its clientInfo then only picks
//! between the two); every other credential (the local token, a named agent's, `--mcp-token`)
//! is an agent whatever it calls itself, so stop-all holds against every client name.
//!
//! The file is checked on each request, so `trapdesk agent remove NAME` (another process) stops
//! that agent's calls at once, with no reload. Checked, not read: [`Verifier`] looks at the
//! file's inode, size and times (one `stat`) and reads it again only when one changed; every
//! change made here replaces the file by a rename, which always gives it a new inode.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::hash;
use super::stamp::Stamp;

/// The file in the data directory.
pub const FILE: &str = "agents.json";

/// The local token's file in the data directory.
pub const LOCAL_FILE: &str = "mcp-token";

/// The person token's file in the data directory: the credential of the person's own
/// one-shot tools (the CLI, `sync`), never of an agent.
pub const PERSON_FILE: &str = "person-token";

/// One named agent as stored: never the token, only its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub name: String,
    /// Hex SHA-256 of the token.
    pub token_sha256: String,
    /// When it was added, epoch milliseconds.
    pub created_ms: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Store {
    agents: Vec<AgentRecord>,
}

/// Why the agents file could not be used or changed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid agents file: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("agent name {0:?} is not allowed: use 1 to 64 letters, digits, '-', '_' or '.'")]
    BadName(String),
    #[error("an agent named {0:?} exists already; remove it first to give it a new token")]
    Exists(String),
    #[error("no agent named {name:?}; named agents: {}", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    Unknown { name: String, known: Vec<String> },
}

fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

fn load(dir: &Path) -> Result<Store, AgentError> {
    let p = path(dir);
    match crate::config::private::read_checked(&p) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| AgentError::Parse {
            path: p,
            message: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Store::default()),
        Err(source) => Err(AgentError::Read { path: p, source }),
    }
}

fn save(dir: &Path, store: &Store) -> Result<(), AgentError> {
    let p = path(dir);
    let text = serde_json::to_string_pretty(store).unwrap_or_default();
    // Written beside and renamed over, so a reader never sees half a file.
    let tmp = dir.join(format!("{FILE}.tmp"));
    crate::config::write_private(&tmp, text.as_bytes())
        .and_then(|()| std::fs::rename(&tmp, &p))
        .map_err(|source| AgentError::Write { path: p, source })
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Adds a named agent and returns its new token (the only time it exists outside the client).
///
/// # Errors
/// A bad or taken name, or an unreadable or unwritable file.
pub fn add(dir: &Path, name: &str) -> Result<String, AgentError> {
    if !valid_name(name) {
        return Err(AgentError::BadName(name.to_owned()));
    }
    let mut store = load(dir)?;
    if store.agents.iter().any(|a| a.name == name) {
        return Err(AgentError::Exists(name.to_owned()));
    }
    let token = new_token();
    store.agents.push(AgentRecord {
        name: name.to_owned(),
        token_sha256: hash(&token),
        created_ms: crate::session::model::epoch_ms(std::time::SystemTime::now()),
    });
    crate::config::private::create_dir(dir).map_err(|source| AgentError::Write {
        path: path(dir),
        source,
    })?;
    save(dir, &store)?;
    Ok(token)
}

/// Removes a named agent; its token stops working at the next request.
///
/// # Errors
/// No such agent, or an unreadable or unwritable file.
pub fn remove(dir: &Path, name: &str) -> Result<(), AgentError> {
    let mut store = load(dir)?;
    let before = store.agents.len();
    store.agents.retain(|a| a.name != name);
    if store.agents.len() == before {
        return Err(AgentError::Unknown {
            name: name.to_owned(),
            known: store.agents.iter().map(|a| a.name.clone()).collect(),
        });
    }
    save(dir, &store)
}

/// The named agents, in the order they were added.
///
/// # Errors
/// An unreadable or invalid file.
pub fn list(dir: &Path) -> Result<Vec<AgentRecord>, AgentError> {
    Ok(load(dir)?.agents)
}

/// What a bearer token proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The token belongs to this agent.
    Agent(String),
    /// No token, or none of the named agents' (it may still be the local or the host's one).
    Refused,
}

/// The install's local token: read from `<dir>/mcp-token`, or made there (0600) when absent.
/// The host calls it at start, so that the file exists before any client looks for it.
///
/// # Errors
/// The file cannot be read or written.
pub fn local_token(dir: &Path) -> Result<String, AgentError> {
    stored_or_made(dir, LOCAL_FILE)
}

/// The person token (see the module doc): read from `<dir>/person-token`, or made there (0600)
/// when absent, like [`local_token`].
///
/// # Errors
/// The file cannot be read or written.
pub fn person_token(dir: &Path) -> Result<String, AgentError> {
    stored_or_made(dir, PERSON_FILE)
}

fn stored_or_made(dir: &Path, file: &str) -> Result<String, AgentError> {
    if let Some(t) = read_stored(dir, file)? {
        return Ok(t);
    }
    let p = dir.join(file);
    let token = new_token();
    crate::config::private::create_dir(dir).map_err(|source| AgentError::Write {
        path: p.clone(),
        source,
    })?;
    // Beside and renamed over: a client reading at the same moment sees no half token.
    let tmp = dir.join(format!("{file}.tmp"));
    crate::config::write_private(&tmp, token.as_bytes())
        .and_then(|()| std::fs::rename(&tmp, &p))
        .map_err(|source| AgentError::Write { path: p, source })?;
    Ok(token)
}

/// The local token of the install whose data dir is `dir`, when one was made (a host has run
/// there). An empty file counts as none.
///
/// # Errors
/// The file exists but cannot be read.
pub fn read_local(dir: &Path) -> Result<Option<String>, AgentError> {
    read_stored(dir, LOCAL_FILE)
}

/// The person token of the install whose data dir is `dir`, when a host has made one.
///
/// # Errors
/// The file exists but cannot be read.
pub fn read_person(dir: &Path) -> Result<Option<String>, AgentError> {
    read_stored(dir, PERSON_FILE)
}

fn read_stored(dir: &Path, file: &str) -> Result<Option<String>, AgentError> {
    let p = dir.join(file);
    // A token in a directory others can write may be theirs: never sent anywhere.
    match crate::config::private::check_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(AgentError::Read { path: p, source: e });
        }
        _ => {}
    }
    match crate::config::private::read_checked(&p) {
        Ok(t) => Ok(Some(t.trim().to_owned()).filter(|t| !t.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(AgentError::Read { path: p, source }),
    }
}

/// Checks a presented token against the file. The comparison is of hashes, in constant time.
/// An unreadable file refuses everyone rather than letting everyone in.
pub fn verify(dir: &Path, token: Option<&str>) -> Verdict {
    match load(dir) {
        Ok(store) => check(&store, token),
        Err(e) => {
            tracing::warn!("refusing MCP requests: {e}");
            Verdict::Refused
        }
    }
}

/// Where a client of the running host (the CLI and `sync`, `mcp-stdio`) takes its bearer token
/// from: an environment variable when one is set, else a token file of the install whose data
/// dir it is pointed at (`--data-dir`, env `TRAPDESK_DATA_DIR`, else the platform's): the
/// person token for the CLI and `sync` ([`Credential::person`]), the local token for
/// `mcp-stdio` ([`Credential::find`]), so that the person never types one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    Env {
        var: &'static str,
        token: String,
    },
    Local {
        path: PathBuf,
        token: String,
    },
    /// Nothing found; `looked` is the local token's path that did not exist, `var` the
    /// environment variable that would have been read first.
    Missing {
        looked: Option<PathBuf>,
        var: &'static str,
    },
}

impl Credential {
    /// The first of `vars` that is set and not empty, else the local token in `data_dir` (or
    /// the default data dir): what an agent's `mcp-stdio` presents.
    pub fn find(vars: &[&'static str], data_dir: Option<&Path>) -> Credential {
        Self::find_in(vars, data_dir, LOCAL_FILE)
    }

    /// The first of `vars` that is set and not empty, else the person token in `data_dir`:
    /// what the person's CLI and `sync` present (a token from `vars` makes them an agent).
    pub fn person(vars: &[&'static str], data_dir: Option<&Path>) -> Credential {
        Self::find_in(vars, data_dir, PERSON_FILE)
    }

    fn find_in(vars: &[&'static str], data_dir: Option<&Path>, file: &str) -> Credential {
        for var in vars {
            if let Ok(token) = std::env::var(var)
                && !token.trim().is_empty()
            {
                let token = token.trim().to_owned();
                return Credential::Env { var, token };
            }
        }
        let var = vars.first().copied().unwrap_or("TRAPDESK_TOKEN");
        let dir = data_dir
            .map(Path::to_path_buf)
            .or_else(crate::config::default_data_dir);
        let Some(dir) = dir else {
            return Credential::Missing { looked: None, var };
        };
        let path = dir.join(file);
        match read_stored(&dir, file) {
            Ok(Some(token)) => Credential::Local { path, token },
            Ok(None) => Credential::Missing {
                looked: Some(path),
                var,
            },
            Err(e) => {
                tracing::debug!("{e}");
                Credential::Missing {
                    looked: Some(path),
                    var,
                }
            }
        }
    }

    pub fn token(&self) -> Option<&str> {
        match self {
            Credential::Env { token, .. } | Credential::Local { token, .. } => Some(token),
            Credential::Missing { .. } => None,
        }
    }

    /// One line saying why the host at `url` answered 401 and what to do, in a person's words.
    pub fn refused(&self, url: &str) -> String {
        match self {
            Credential::Env { var, .. } => format!(
                "the trapdesk at {url} refused the token in {var} (trapdesk agent list shows the named agents; unset {var} to use this install's own token)"
            ),
            Credential::Local { path, .. } => format!(
                "the trapdesk at {url} refused the token in {} (that host keeps its data elsewhere: pass its --data-dir, or set a named agent's token)",
                path.display()
            ),
            Credential::Missing { looked, var } => format!(
                "the trapdesk at {url} needs a token (set {var} to a named agent's token, or pass the host's --data-dir; {})",
                match looked {
                    Some(p) => format!(
                        "no token in {}: start the host once on this data dir",
                        p.display()
                    ),
                    None => "no home directory to find the token file in".to_owned(),
                }
            ),
        }
    }
}

/// [`verify`] with the file kept between requests and read again only when it changed.
#[derive(Debug)]
pub struct Verifier {
    dir: PathBuf,
    cache: std::sync::Mutex<Option<(Stamp, std::sync::Arc<Store>)>>,
}

impl Verifier {
    /// A verifier for the agents file in `dir`.
    pub fn new(dir: &Path) -> Self {
        Verifier {
            dir: dir.to_owned(),
            cache: std::sync::Mutex::new(None),
        }
    }

    /// Like [`verify`]. Costs one `stat` when the file did not change, and a read when it did.
    pub fn verify(&self, token: Option<&str>) -> Verdict {
        let Some(stamp) = Stamp::of(&path(&self.dir)) else {
            return verify(&self.dir, token);
        };
        let cached = {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            cache
                .as_ref()
                .filter(|(s, _)| *s == stamp)
                .map(|(_, store)| store.clone())
        };
        let store = match cached {
            Some(store) => store,
            None => {
                let store = match load(&self.dir) {
                    Ok(s) => std::sync::Arc::new(s),
                    Err(e) => {
                        tracing::warn!("refusing MCP requests: {e}");
                        return Verdict::Refused;
                    }
                };
                // The stamp was taken before the read: if the file changed in between, the
                // next request sees a new stamp and reads it again.
                *self.cache.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some((stamp, store.clone()));
                store
            }
        };
        check(&store, token)
    }
}

fn check(store: &Store, token: Option<&str>) -> Verdict {
    use subtle::ConstantTimeEq;
    let Some(token) = token else {
        return Verdict::Refused;
    };
    let given = hash(token);
    store
        .agents
        .iter()
        .find(|a| bool::from(a.token_sha256.as_bytes().ct_eq(given.as_bytes())))
        .map_or(Verdict::Refused, |a| Verdict::Agent(a.name.clone()))
}

/// `td_` and 40 random characters (about 238 bits).
fn new_token() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    let body: String = (0..40)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect();
    format!("td_{body}")
}

#[cfg(test)]
mod tests;

//! The person's tools' side of the control channel: finds the running host of a data dir and
//! asks it, with the local token read from that data dir (never made: a client writes
//! nothing).

use std::path::Path;
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::control::PREFIX;

/// Why the running host could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// No local token in the data dir: no host ever ran on it (or another data dir is meant).
    #[error(
        "no local token in {0}: no trapdesk has run on this data dir (pass the running host's --data-dir)"
    )]
    NoToken(std::path::PathBuf),
    #[error("cannot read the local token: {0}")]
    Token(String),
    /// Nothing answers at the address.
    #[error("no trapdesk answers at {url} ({why}); start `trapdesk` or `trapdesk --mcp-only`")]
    Unreachable { url: String, why: String },
    /// It answered, but refused the token (another data dir's host).
    #[error(
        "the trapdesk at {url} refused the local token of {dir} (it keeps its data elsewhere: pass its --data-dir)"
    )]
    Refused {
        url: String,
        dir: std::path::PathBuf,
    },
    /// It answered something else (an older trapdesk without the channel, another program).
    #[error("the program at {url} answered HTTP {code}: not a trapdesk with a control channel")]
    Other { url: String, code: u16 },
}

/// `http://host:port` of the MCP endpoint `mcp_url` (its path dropped).
pub fn base_of(mcp_url: &str) -> Option<String> {
    let (scheme, rest) = mcp_url.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    Some(format!("{scheme}://{authority}"))
}

/// The MCP URL of the host running on `data_dir`, from its `host.json` (a wildcard bind is
/// reached on loopback). Only [`find`] reads it, so that every front finds the same host.
fn running_url(data_dir: &Path) -> Option<String> {
    let r = crate::host::Running::read(data_dir)?;
    let mut addr = r.mcp;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    Some(format!("http://{addr}/mcp"))
}

/// No host was named and none is recorded as running: nothing to send a credential to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no trapdesk is running on {} (no live host in {}): start `trapdesk` or `trapdesk --mcp-only`, pass the running host's --data-dir, or name it with --connect URL",
    dir.display(),
    dir.join(crate::host::RUNNING_FILE).display()
)]
pub struct NoHost {
    /// The data dir whose `host.json` was looked at.
    pub dir: std::path::PathBuf,
}

impl NoHost {
    /// The `host.json` that was looked at.
    pub fn file(&self) -> std::path::PathBuf {
        self.dir.join(crate::host::RUNNING_FILE)
    }
}

/// The host a front talks to, and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The person named it: `--connect` (or env `TRAPDESK_CONNECT`), a URL given to `attach`.
    Named(String),
    /// The live host recorded in this `host.json`.
    Recorded {
        url: String,
        file: std::path::PathBuf,
    },
}

impl Found {
    /// Its MCP URL.
    pub fn url(&self) -> &str {
        match self {
            Found::Named(u) | Found::Recorded { url: u, .. } => u,
        }
    }
}

/// The host every front of this install talks to (the CLI, `sync`, `doctor`, `pause`,
/// `secret show`, `attach` and `mcp-stdio` all call this, so none finds a host another
/// misses): `connect` when the person named one, else the live host recorded in `data_dir`'s
/// `host.json`. Never a default address: a credential goes only where one of those two
/// points, so a process that took a well-known port first collects nothing.
///
/// # Errors
/// [`NoHost`] when neither names a host.
pub fn find(connect: Option<&str>, data_dir: &Path) -> Result<Found, NoHost> {
    if let Some(c) = connect {
        return Ok(Found::Named(c.to_owned()));
    }
    match running_url(data_dir) {
        Some(url) => Ok(Found::Recorded {
            url,
            file: data_dir.join(crate::host::RUNNING_FILE),
        }),
        None => Err(NoHost {
            dir: data_dir.to_owned(),
        }),
    }
}

/// The MCP URL [`find`] finds.
///
/// # Errors
/// As [`find`].
pub fn target(connect: Option<&str>, data_dir: &Path) -> Result<String, NoHost> {
    find(connect, data_dir).map(|f| f.url().to_owned())
}

/// Asks `GET <base>/control/<what>` with the local token of `data_dir`.
///
/// # Errors
/// An [`AskError`] that says what to do.
pub async fn ask<T: DeserializeOwned>(
    base: &str,
    data_dir: &Path,
    what: &str,
) -> Result<T, AskError> {
    request(reqwest::Method::GET, base, data_dir, what).await
}

/// `POST <base>/control/<what>` (a change: `pause`, `resume`), as [`ask`].
///
/// # Errors
/// As [`ask`].
pub async fn tell<T: DeserializeOwned>(
    base: &str,
    data_dir: &Path,
    what: &str,
) -> Result<T, AskError> {
    request(reqwest::Method::POST, base, data_dir, what).await
}

async fn request<T: DeserializeOwned>(
    method: reqwest::Method,
    base: &str,
    data_dir: &Path,
    what: &str,
) -> Result<T, AskError> {
    let token = trapdesk_core::trust::agents::read_local(data_dir)
        .map_err(|e| AskError::Token(e.to_string()))?
        .ok_or_else(|| {
            AskError::NoToken(data_dir.join(trapdesk_core::trust::agents::LOCAL_FILE))
        })?;
    let url = format!("{base}{PREFIX}/{what}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()
        .map_err(|e| AskError::Unreachable {
            url: url.clone(),
            why: e.to_string(),
        })?;
    let resp = client
        .request(method, &url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| AskError::Unreachable {
            url: base.to_owned(),
            why: plain(&e),
        })?;
    let code = resp.status().as_u16();
    match code {
        200 => resp.json::<T>().await.map_err(|_| AskError::Other {
            url: base.to_owned(),
            code,
        }),
        401 | 403 => Err(AskError::Refused {
            url: base.to_owned(),
            dir: data_dir.to_owned(),
        }),
        _ => Err(AskError::Other {
            url: base.to_owned(),
            code,
        }),
    }
}

/// A reqwest error in the words a person reads ("connection refused"), not its chain.
fn plain(e: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    let mut last = e.to_string();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    if e.is_timeout() {
        "no answer within 5 s".into()
    } else {
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_is_the_mcp_urls_scheme_and_authority() {
        assert_eq!(
            base_of("http://127.0.0.1:4445/mcp"),
            Some("http://127.0.0.1:4445".into())
        );
        assert_eq!(base_of("http://[::1]:9/mcp"), Some("http://[::1]:9".into()));
        assert_eq!(base_of("ws://x:1/"), None);
    }
}

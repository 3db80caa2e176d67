//! `<data dir>/host.json`: where the host that uses a data dir listens, so that the install's
//! own tools (`doctor`) look at the running gateway's port, not the defaults.

use std::net::SocketAddr;

/// The file in the data dir that says where the host using it listens.
pub const RUNNING_FILE: &str = "host.json";

/// `<data dir>/host.json`: the running host's process and addresses. Written at start,
/// removed at a clean stop; a host that died leaves it behind, so a reader checks that the
/// process still exists.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Running {
    pub pid: u32,
    pub gateway: SocketAddr,
    pub mcp: SocketAddr,
}

impl Running {
    pub(super) fn write(
        dir: &std::path::Path,
        gateway: SocketAddr,
        mcp: SocketAddr,
    ) -> std::io::Result<()> {
        let me = Running {
            pid: std::process::id(),
            gateway,
            mcp,
        };
        let text = serde_json::to_string(&me).unwrap_or_default();
        trapdesk_core::config::private::create_dir(dir)?;
        // Beside and renamed over: a reader never sees half of it.
        let tmp = dir.join(format!("{RUNNING_FILE}.{}", std::process::id()));
        trapdesk_core::config::write_private(&tmp, text.as_bytes())?;
        std::fs::rename(&tmp, dir.join(RUNNING_FILE))
    }

    /// Removes the file if it is still this process's (another host may have taken the dir).
    pub(super) fn remove(dir: &std::path::Path, pid: u32) {
        if Running::read_any(dir).is_some_and(|r| r.pid == pid) {
            let _ = std::fs::remove_file(dir.join(RUNNING_FILE));
        }
    }

    fn read_any(dir: &std::path::Path) -> Option<Running> {
        // One in a directory others can write, or that others can write, may point the
        // install's tools (and their token) at someone else's listener: not taken.
        trapdesk_core::config::private::check_dir(dir).ok()?;
        let text = trapdesk_core::config::private::read_checked(&dir.join(RUNNING_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The host running on the data dir `dir`, if its process is alive (on Linux, by
    /// `/proc`; elsewhere the file is taken as it is).
    pub fn read(dir: &std::path::Path) -> Option<Running> {
        let r = Running::read_any(dir)?;
        let proc = std::path::Path::new("/proc");
        if proc.exists() && !proc.join(r.pid.to_string()).exists() {
            return None;
        }
        Some(r)
    }
}

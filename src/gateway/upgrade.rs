//! Clients too old to upgrade themselves, brought up to date by the host.
//!
//! A client that names its installed version in `hello` (`client_version`) compares it with the
//! one `welcome` announces and fetches the new files by itself (docs/protocol.md, "Client
//! upgrades"). The trapdesk client from before that (0.1) never looks at `welcome`'s version, so
//! without help it would run its old code until a player ran the installer again by hand. For
//! such a client the host sends one `exec-lua` as soon as it serves it: the chunk fetches this
//! host's `/install.lua` and runs it with `--upgrade`, which writes every new file or none and
//! migrates the startup arrangement (`lua/apis/setup.lua`), and touches nothing else. The old
//! client keeps serving until the computer next boots (its programs loaded their modules when
//! they started, so new files on disk do not change them); from that boot on the new client
//! runs, names its version, and upgrades itself from then on. The host does not reboot the
//! computer: a player's running programs are theirs.

use std::time::Duration;

use trapdesk_core::session::{Origin, RequestSpec, Session};
use trapdesk_proto::protocol::kind::ExecLua;

/// What a trapdesk client's `hello.client` starts with; other clients (a player's own program
/// speaking the protocol) are never sent code to upgrade.
pub(super) const CLIENT_PREFIX: &str = "trapdesk-lua/";

/// How long the host waits for the linked computer to serve `exec-lua` before giving up on
/// upgrading it this link (its server starts beside the daemon, within a second or two).
const SERVE_WAIT: Duration = Duration::from_secs(30);

/// How long the upgrade itself may take: about 60 KB fetched over `http.get` and written.
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(120);

/// The chunk the old client runs. The install URL comes from the computer's own `sandbox.url`
/// (the address it reaches the gateway by), so the installer the gateway serves bakes in that
/// same address, as when a player runs the one-liner.
pub(crate) const UPGRADE_CHUNK: &str = r#"-- trapdesk: the host upgrades this client (it predates self-upgrades).
local url = settings.get("sandbox.url")
if type(url) ~= "string" then error("upgrade: sandbox.url is not set", 0) end
local base = url:gsub("^ws", "http"):gsub("/gateway.*$", "")
local res, err = http.get({ url = base .. "/install.lua", binary = true })
if not res then error("upgrade: cannot fetch " .. base .. "/install.lua: " .. tostring(err), 0) end
local src = res.readAll() or ""
res.close()
local installer, lerr = load(src, "=install.lua", "t", _ENV)
if not installer then error("upgrade: the installer does not load: " .. tostring(lerr), 0) end
local ok, why = installer("--upgrade")
if not ok then error("upgrade: " .. tostring(why), 0) end
return "upgraded: the new client starts at this computer's next boot"
"#;

/// Upgrades the client linked as `trapos_id` in the background: waits until it serves
/// `exec-lua`, then runs [`UPGRADE_CHUNK`] as the host. The outcome is in the session log and
/// the host's log; nothing waits for it.
pub(super) fn push(session: Session, trapos_id: String, client: String) {
    tokio::spawn(async move {
        let serving = async {
            loop {
                let serves = session
                    .computer(&trapos_id)
                    .is_some_and(|c| c.online && c.serves.iter().any(|s| s == "exec-lua"));
                if serves {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };
        if tokio::time::timeout(SERVE_WAIT, serving).await.is_err() {
            tracing::warn!(computer = %trapos_id, %client, "old client not upgraded: it did not serve exec-lua within {SERVE_WAIT:?}");
            return;
        }
        tracing::info!(computer = %trapos_id, %client, "upgrading a client that predates self-upgrades");
        let spec = RequestSpec::of(ExecLua {
            code: UPGRADE_CHUNK.to_owned(),
            name: Some("trapdesk-upgrade".to_owned()),
        })
        .timeout(Some(UPGRADE_TIMEOUT));
        match session.request(&trapos_id, spec, Origin::Host).await {
            Ok(r) if r.get("ok").and_then(serde_json::Value::as_bool) == Some(true) => {
                tracing::info!(computer = %trapos_id, "client upgraded on disk; it runs from the next boot");
            }
            Ok(r) => {
                let why = r
                    .get("error")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("no error text");
                tracing::warn!(computer = %trapos_id, "client upgrade failed on the computer: {why}");
            }
            Err(e) => tracing::warn!(computer = %trapos_id, "client upgrade not run: {e}"),
        }
    });
}

//! Putting the client onto a computer's disk (what `install.lua` does over HTTP), and the two run
//! modes built on it: `--demo N` and `trapdesk emulate`.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::computer::Computer;
use super::error::EmuError;
use super::kind::Device;
use super::spec::{ComputerSpec, Limits};

/// Labels of the demo computers, in id order (wrapping with a number after the last).
const DEMO_LABELS: &[&str] = &[
    "miner", "farm", "lab", "storage", "reactor", "mill", "gate", "relay",
];

/// The devices `--demo N` links after its N computers (ids N+1, N+2): a mining turtle with
/// no fuel yet but coal, blocks and logs in its slots (`programs/tunnel.lua` refuels), and a
/// pocket computer.
fn demo_devices(first_id: u64, root: impl Fn(u64) -> std::path::PathBuf) -> [ComputerSpec; 2] {
    let turtle = ComputerSpec::new(first_id, Some("turtle".to_owned()), root(first_id))
        .turtle()
        .with_tools()
        .with_slot(1, "coal", 16)
        .with_slot(2, "cobblestone", 64)
        .with_slot(3, "dirt", 23)
        .with_slot(5, "oak_log", 8);
    let pocket =
        ComputerSpec::new(first_id + 1, Some("pocket".to_owned()), root(first_id + 1)).pocket();
    [turtle, pocket]
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> EmuError + '_ {
    move |source| EmuError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), EmuError> {
    if let Some(parent) = path.parent() {
        super::fs::private_dir(parent).map_err(io_err(parent))?;
    }
    super::fs::write_private(path, bytes).map_err(io_err(path))
}

/// A Lua string literal that holds `s` byte for byte (what `textutils.serialize` would write).
fn lua_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(b));
            }
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out.push('"');
    out
}

/// The computer's own secret (`trapdesk.secret`) in the `/.settings` already on its disk, if
/// any. The file is what `settings.save` wrote (`textutils.serialize`: a table constructor of
/// string keys), but the computer's programs can write anything there, so it is parsed, not
/// run: [`serialized_string_field`] reads only that shape, bounded in size and depth.
fn own_secret(root: &Path) -> Option<String> {
    let bytes = std::fs::read(root.join(".settings")).ok()?;
    if bytes.len() > SETTINGS_MAX {
        return None;
    }
    serialized_string_field(&bytes, "trapdesk.secret").filter(|s| !s.is_empty())
}

/// A `.settings` larger than this is not read for a secret (the disk holds 1 MB at most).
const SETTINGS_MAX: usize = 1 << 20;

/// The string value of the top-level field `key` in a table written by `textutils.serialize`
/// (`{ [ "k" ] = "v", k2 = 1, nested = { ... }, }`); `None` for anything else.
fn serialized_string_field(text: &[u8], key: &str) -> Option<String> {
    let mut p = Parser { s: text, i: 0 };
    let fields = p.table(0)?;
    p.skip();
    if p.i != text.len() {
        return None;
    }
    fields.into_iter().find_map(|(k, v)| match (k, v) {
        (Lit::Str(k), Lit::Str(v)) if k == key.as_bytes() => String::from_utf8(v).ok(),
        _ => None,
    })
}

/// A value in a serialised table; only strings are kept (the rest is checked and dropped).
enum Lit {
    Str(Vec<u8>),
    Other,
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.skip();
        (self.peek() == Some(b)).then(|| self.i += 1)
    }

    /// `{ field, ... }`, at most 32 tables deep.
    fn table(&mut self, depth: usize) -> Option<Vec<(Lit, Lit)>> {
        if depth > 32 {
            return None;
        }
        self.eat(b'{')?;
        let mut fields = Vec::new();
        loop {
            self.skip();
            match self.peek()? {
                b'}' => {
                    self.i += 1;
                    return Some(fields);
                }
                b'[' => {
                    self.i += 1;
                    let k = self.value(depth)?;
                    self.eat(b']')?;
                    self.eat(b'=')?;
                    let v = self.value(depth)?;
                    fields.push((k, v));
                }
                b if b.is_ascii_alphabetic() || b == b'_' => {
                    let start = self.i;
                    while self
                        .peek()
                        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                    {
                        self.i += 1;
                    }
                    let word = self.s[start..self.i].to_vec();
                    self.skip();
                    if self.peek() == Some(b'=') {
                        self.i += 1;
                        let v = self.value(depth)?;
                        fields.push((Lit::Str(word), v));
                    } else if matches!(word.as_slice(), b"true" | b"false" | b"nil") {
                        fields.push((Lit::Other, Lit::Other));
                    } else {
                        return None;
                    }
                }
                _ => {
                    let v = self.value(depth)?;
                    fields.push((Lit::Other, v));
                }
            }
            self.skip();
            match self.peek()? {
                b',' | b';' => self.i += 1,
                b'}' => {}
                _ => return None,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<Lit> {
        self.skip();
        match self.peek()? {
            b'"' | b'\'' => self.string().map(Lit::Str),
            b'{' => self.table(depth + 1).map(|_| Lit::Other),
            b'-' | b'.' | b'0'..=b'9' => {
                while self
                    .peek()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
                {
                    self.i += 1;
                }
                Some(Lit::Other)
            }
            _ => {
                let start = self.i;
                while self.peek().is_some_and(|b| b.is_ascii_alphabetic()) {
                    self.i += 1;
                }
                matches!(&self.s[start..self.i], b"true" | b"false" | b"nil").then_some(Lit::Other)
            }
        }
    }

    /// A quoted string with Lua's escapes (`%q` writes `\"`, `\\`, `\` + newline, `\ddd`).
    fn string(&mut self) -> Option<Vec<u8>> {
        let quote = self.peek()?;
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let b = self.peek()?;
            self.i += 1;
            match b {
                b if b == quote => return Some(out),
                b'\n' => return None,
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    match e {
                        b'n' | b'\n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'a' => out.push(7),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'v' => out.push(11),
                        b'0'..=b'9' => {
                            let mut n = u32::from(e - b'0');
                            for _ in 0..2 {
                                match self.peek() {
                                    Some(d @ b'0'..=b'9') => {
                                        n = n * 10 + u32::from(d - b'0');
                                        self.i += 1;
                                    }
                                    _ => break,
                                }
                            }
                            out.push(u8::try_from(n).ok()?);
                        }
                        b'"' | b'\'' | b'\\' => out.push(e),
                        _ => return None,
                    }
                }
                b => out.push(b),
            }
        }
    }
}

/// The line only the client's startup wrapper holds (`lua/apis/setup.lua`, `setup.MARK`).
const WRAPPER_MARK: &[u8] = b"-- trapdesk-startup-wrapper";

/// The startup arrangement `lua/apis/setup.lua` makes (`setup.arrange`): the player's own
/// startup program (`/startup`, else `/startup.lua`, whichever CC would run) moves to
/// `/startup.player.lua` (or `.2.lua`, ... when that is taken), an old-style
/// `/startup/trapdesk.lua` goes, and `/startup.lua` becomes the wrapper.
fn arrange_startup(root: &Path, wrapper: &[u8]) -> Result<(), EmuError> {
    let node = ["startup", "startup.lua"]
        .iter()
        .map(|n| root.join(n))
        .find(|p| p.is_file());
    if let Some(node) = node {
        let ours = std::fs::read(&node)
            .map_err(io_err(&node))?
            .windows(WRAPPER_MARK.len())
            .any(|w| w == WRAPPER_MARK);
        if !ours {
            let mut dest = root.join("startup.player.lua");
            let mut n = 1;
            while dest.exists() {
                n += 1;
                dest = root.join(format!("startup.player.{n}.lua"));
            }
            std::fs::rename(&node, &dest).map_err(io_err(&node))?;
        }
    }
    let old = root.join("startup").join("trapdesk.lua");
    if old.exists() {
        std::fs::remove_file(&old).map_err(io_err(&old))?;
    }
    let folder = root.join("startup");
    if folder.is_dir()
        && std::fs::read_dir(&folder)
            .map_err(io_err(&folder))?
            .next()
            .is_none()
    {
        std::fs::remove_dir(&folder).map_err(io_err(&folder))?;
    }
    write(&root.join("startup.lua"), wrapper)
}

/// Writes the client as the installer would, without HTTP: every embedded `lua/` file except
/// `install.lua` to `/trapdesk/<path>` in the root, its version to `/trapdesk/version`, the
/// startup arrangement ([`arrange_startup`]: `lua/startup.lua` is `/startup.lua`), and settings `sandbox.url` and `sandbox.password` into `/.settings`
/// (in `textutils.serialize` form, which the emulator's `settings.load` reads, as CC's does).
/// The computer's own secret (`trapdesk.secret`), when it enrolled on an earlier boot, is
/// kept, as the installer keeps it: a demo disk reused by the next `--demo` relinks with it.
/// Other settings already in `/.settings` are dropped.
///
/// # Errors
/// `EmuError::Io` when a file cannot be written.
pub fn install_client(root: &Path, url: &str, secret: &str) -> Result<(), EmuError> {
    let own = own_secret(root);
    for (path, bytes) in trapdesk_client::lua_files::FILES {
        if *path == "install.lua" {
            continue;
        }
        write(&root.join("trapdesk").join(path), bytes)?;
        if *path == "startup.lua" {
            arrange_startup(root, bytes)?;
        }
    }
    write(
        &root.join("trapdesk").join("version"),
        format!("{}\n", trapdesk_client::lua_files::version()).as_bytes(),
    )?;
    let own = own
        .map(|s| format!("  [ \"trapdesk.secret\" ] = {},\n", lua_quote(&s)))
        .unwrap_or_default();
    let settings = format!(
        "{{\n  [ \"sandbox.url\" ] = {},\n  [ \"sandbox.password\" ] = {},\n{own}}}",
        lua_quote(url),
        lua_quote(secret)
    );
    write(&root.join(".settings"), settings.as_bytes())
}

/// Sample programs on every demo computer, so that F6 (run a file with arguments), live output
/// and cancel have something to run on a first try. Written only where the file is missing, so
/// edits made on a demo disk survive a restart.
const DEMO_PROGRAMS: &[(&str, &[u8])] = &[
    ("programs/dig.lua", include_bytes!("demo/dig.lua")),
    ("programs/hello.lua", include_bytes!("demo/hello.lua")),
];

/// What the demo turtle has beside them: a program that really moves it (and burns fuel).
const TURTLE_PROGRAMS: &[(&str, &[u8])] =
    &[("programs/tunnel.lua", include_bytes!("demo/tunnel.lua"))];

/// Writes `programs` under `root` where missing (edits made on a demo disk survive a restart).
fn write_programs(root: &Path, programs: &[(&str, &[u8])]) -> Result<(), EmuError> {
    for (path, bytes) in programs {
        let dest = root.join(path);
        if !dest.exists() {
            write(&dest, bytes)?;
        }
    }
    Ok(())
}

/// `--demo N`: installs and boots N labelled computers (ids 1..=N) under
/// `data_dir/computers/<id>/`, and beside them (N ≥ 1) a turtle `N+1:turtle` and a pocket
/// computer `N+2:pocket`, linked to `url` with `secret`, until `shutdown` is cancelled; then
/// turns them all off and waits for them.
///
/// # Errors
/// `EmuError::Io` when a disk cannot be prepared, `EmuError::Setup` when a computer cannot start.
pub async fn run_demo(
    n: u32,
    url: &str,
    secret: &str,
    data_dir: &Path,
    shutdown: CancellationToken,
) -> Result<(), EmuError> {
    let folder = data_dir.join("computers");
    super::fs::private_folder(&folder).map_err(io_err(&folder))?;
    let mut computers = Vec::new();
    for id in 1..=u64::from(n) {
        let idx = (id - 1) as usize;
        let label = match DEMO_LABELS.get(idx) {
            Some(l) => (*l).to_owned(),
            None => format!(
                "{}{}",
                DEMO_LABELS[idx % DEMO_LABELS.len()],
                idx / DEMO_LABELS.len() + 1
            ),
        };
        let root = data_dir.join("computers").join(id.to_string());
        install_client(&root, url, secret)?;
        write_programs(&root, DEMO_PROGRAMS)?;
        let around = super::peripherals::demo(id);
        let spec = around.into_iter().fold(
            ComputerSpec::new(id, Some(label), root),
            |spec, (name, p)| spec.with_peripheral(name, p),
        );
        computers.push(Computer::spawn(spec, tokio::runtime::Handle::current())?);
    }
    if n >= 1 {
        let root = |id: u64| data_dir.join("computers").join(id.to_string());
        for spec in demo_devices(u64::from(n) + 1, root) {
            install_client(&spec.root, url, secret)?;
            write_programs(&spec.root, DEMO_PROGRAMS)?;
            if matches!(spec.device, Device::Turtle(_)) {
                write_programs(&spec.root, TURTLE_PROGRAMS)?;
            }
            computers.push(Computer::spawn(spec, tokio::runtime::Handle::current())?);
        }
    }
    shutdown.cancelled().await;
    for c in &computers {
        c.shutdown();
    }
    for c in &computers {
        // A computer stuck in Lua would hold the process: give up on it after a while.
        let _ = tokio::time::timeout(Duration::from_secs(3), c.wait_stopped()).await;
    }
    Ok(())
}

/// `trapdesk emulate --url ... --id 7 --label miner [--secret S] [--kind turtle]`: one
/// computer on `root` with the server's `limits`, made what `shape` makes of it (a turtle, a
/// pocket computer: [`ComputerSpec::turtle`]), until `shutdown` is cancelled or the computer
/// turns itself off.
///
/// # Errors
/// As [`run_demo`].
#[allow(clippy::too_many_arguments)]
pub async fn run_emulate(
    url: &str,
    id: u64,
    label: Option<String>,
    secret: &str,
    root: &Path,
    limits: Limits,
    shape: impl FnOnce(ComputerSpec) -> ComputerSpec,
    shutdown: CancellationToken,
) -> Result<(), EmuError> {
    install_client(root, url, secret)?;
    let mut spec = shape(ComputerSpec::new(id, label, root.to_path_buf()));
    spec.limits = limits;
    let computer = Computer::spawn(spec, tokio::runtime::Handle::current())?;
    let status = tokio::spawn(print_link_status(root.join("trapdesk/daemon.log")));
    tokio::select! {
        () = shutdown.cancelled() => {
            computer.shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(3), computer.wait_stopped()).await;
        }
        () = computer.wait_stopped() => {}
    }
    status.abort();
    Ok(())
}

/// What `trapdesk emulate` tells the person about the link, from one line of the real
/// daemon's log (`/trapdesk/daemon.log` on the emulated disk), or `None` for the rest.
pub fn link_status(line: &str) -> Option<String> {
    // Lines are "[epoch ms] message".
    let msg = line.split_once("] ").map_or(line, |(_, m)| m);
    if let Some(id) = msg.strip_prefix("linked as ") {
        return Some(format!("linked as {id}"));
    }
    // The host's reason comes first, in its `auth_failed` error; the close that follows adds
    // nothing, unless the reason was lost.
    if let Some(why) = msg.strip_prefix("host error auth_failed: ") {
        if why == "wrong secret" {
            return Some("refused: wrong secret; pass the host's secret with --secret".to_owned());
        }
        return Some(format!("refused: {why}"));
    }
    if msg.starts_with("link down (4001)") {
        return None;
    }
    if msg.starts_with("link down (4003)") {
        return Some("refused: the host speaks another protocol version".to_owned());
    }
    if let Some(rest) = msg.strip_prefix("link down ") {
        return Some(format!("link down {rest}"));
    }
    if let Some(rest) = msg.strip_prefix("connect failed: ") {
        return Some(format!("cannot connect: {rest}"));
    }
    msg.starts_with("retrying in ").then(|| msg.to_owned())
}

/// Follows the daemon's log and prints [`link_status`] lines on stderr. The daemon writes its
/// log itself, so this reports what the real client saw, not a guess of the host's.
async fn print_link_status(log: std::path::PathBuf) {
    let mut offset = 0usize;
    loop {
        if let Ok(bytes) = std::fs::read(&log) {
            // The daemon starts the log afresh past 16 KiB.
            if bytes.len() < offset {
                offset = 0;
            }
            let text = String::from_utf8_lossy(&bytes[offset..]);
            if let Some(end) = text.rfind('\n') {
                for line in text[..end].lines() {
                    if let Some(s) = link_status(line) {
                        eprintln!("{s}");
                    }
                }
                offset += end + 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests;

//! The computer's disk: a host directory seen through CC's path rules. Paths are normalised the
//! way CC does (`\` is `/`, `.` and `..` resolved), and a path that would climb above the root is
//! refused, so a program can never touch the host outside its computer's directory. `/rom` is an
//! empty read-only directory, as a stand-in for CC's ROM.
//!
//! Native functions answer `true, values...` or `false, message`; the bios turns the latter into
//! a Lua error with a string message (mlua's own errors are userdata, CC's are strings).

use std::fs;
use std::path::{Path, PathBuf};

use mlua::{IntoLuaMulti, Lua, MultiValue, Table, Value};

pub(crate) use super::handles::ReadHandle;
use super::handles::{UpdateHandle, WriteHandle};

use super::kernel::Ctx;

/// CC's default disk size per computer.
const CAPACITY: u64 = 1_000_000;

/// Normalises a CC path to `a/b/c` (no leading slash; `""` is the root) as CC: Tweaked's
/// `FileSystem.sanitizePath` does: `\\` is `/`; control characters and `"*:<>?|` are dropped
/// (`*` and `?` are kept when `lenient`, for `fs.combine`, `getName` and `getDir`); each part is
/// trimmed; `.`, `...` and longer runs of dots are nothing; a part is cut to 255 characters.
/// `..` above the root is kept when `lenient` and refused otherwise.
pub(crate) fn normalize(path: &str, lenient: bool) -> Result<String, String> {
    let dropped: &[char] = if lenient {
        &['"', ':', '<', '>', '|']
    } else {
        &['"', '*', ':', '<', '>', '?', '|']
    };
    let clean: String = path
        .chars()
        .filter(|c| *c >= ' ' && !dropped.contains(c))
        .collect();
    let mut parts: Vec<String> = Vec::new();
    for part in clean.split(['/', '\\']) {
        let part = part.trim();
        if part.is_empty() || part.chars().all(|c| c == '.') && part != ".." {
            continue;
        }
        if part == ".." {
            match parts.last() {
                Some(p) if p != ".." => {
                    parts.pop();
                }
                _ if lenient => parts.push("..".to_owned()),
                _ => return Err(format!("/{}: Invalid Path", path.trim_start_matches('/'))),
            }
            continue;
        }
        let cut: String = part.chars().take(255).collect();
        parts.push(cut.trim().to_owned());
    }
    Ok(parts.join("/"))
}

/// Answers `true, values...`.
fn ok(lua: &Lua, v: impl IntoLuaMulti) -> mlua::Result<MultiValue> {
    let mut m = v.into_lua_multi(lua)?;
    m.push_front(Value::Boolean(true));
    Ok(m)
}

/// Answers `false, message`.
fn fail(lua: &Lua, msg: impl AsRef<str>) -> mlua::Result<MultiValue> {
    (false, msg.as_ref()).into_lua_multi(lua)
}

struct Disk {
    root: PathBuf,
}

impl Disk {
    /// The host path of a CC path, or the CC error text.
    fn host(&self, path: &str) -> Result<(String, PathBuf), String> {
        let p = normalize(path, false)?;
        let host = if p.is_empty() {
            self.root.clone()
        } else {
            self.root.join(&p)
        };
        Self::no_symlinks(&self.root, &p)?;
        Ok((p, host))
    }

    /// Refuses a path that passes through a symlink inside the computer's directory. CC has no
    /// symlinks, so one there was put by someone on the host, and following it (even a dangling
    /// one, which `File::create` would) could reach outside the directory.
    fn no_symlinks(root: &Path, p: &str) -> Result<(), String> {
        let mut at = root.to_path_buf();
        for part in p.split('/').filter(|s| !s.is_empty()) {
            at.push(part);
            match fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(format!("/{p}: Access denied"));
                }
                Ok(_) => {}
                // Nothing further exists, so nothing further can be a link.
                Err(_) => return Ok(()),
            }
        }
        Ok(())
    }

    fn is_rom(p: &str) -> bool {
        p == "rom" || p.starts_with("rom/")
    }

    fn used(dir: &Path) -> u64 {
        let Ok(rd) = fs::read_dir(dir) else { return 0 };
        rd.flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => Self::used(&e.path()),
                _ => e.metadata().map(|m| m.len()).unwrap_or(0),
            })
            .sum()
    }
}

/// The native `fs` table.
pub(crate) fn native(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let disk = std::sync::Arc::new(Disk {
        root: ctx.root.clone(),
    });
    macro_rules! f {
        ($name:expr, |$lua:ident, $d:ident, $args:tt : $ty:ty| $body:expr) => {{
            let $d = disk.clone();
            t.set($name, lua.create_function(move |$lua, $args: $ty| $body)?)?;
        }};
    }
    f!(
        "combine",
        |lua, _d, parts: mlua::Variadic<mlua::LuaString>| {
            let joined: Vec<String> = parts.iter().map(|p| p.to_string_lossy()).collect();
            match normalize(&joined.join("/"), true) {
                Ok(p) => ok(lua, p),
                Err(e) => fail(lua, e),
            }
        }
    );
    f!("getName", |lua, _d, p: mlua::LuaString| {
        let p = normalize(&p.to_string_lossy(), true).unwrap_or_default();
        ok(
            lua,
            if p.is_empty() {
                "root".to_owned()
            } else {
                p.rsplit('/').next().unwrap_or("").to_owned()
            },
        )
    });
    f!("getDir", |lua, _d, p: mlua::LuaString| {
        let p = normalize(&p.to_string_lossy(), true).unwrap_or_default();
        ok(
            lua,
            if p.is_empty() {
                "..".to_owned()
            } else {
                p.rsplit_once('/')
                    .map(|(d, _)| d.to_owned())
                    .unwrap_or_default()
            },
        )
    });
    f!(
        "exists",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, h)) => ok(lua, p == "rom" || h.exists()),
            Err(_) => ok(lua, false),
        }
    );
    f!(
        "isDir",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, h)) => ok(lua, p == "rom" || h.is_dir()),
            Err(_) => ok(lua, false),
        }
    );
    f!(
        "isReadOnly",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, _)) => ok(lua, Disk::is_rom(&p)),
            Err(_) => ok(lua, false),
        }
    );
    f!(
        "getDrive",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) => ok(lua, "rom"),
            Ok((_, h)) if h.exists() => ok(lua, "hdd"),
            _ => ok(lua, Value::Nil),
        }
    );
    f!(
        "getSize",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, h)) => match fs::metadata(&h) {
                Ok(m) => ok(lua, if m.is_dir() { 0.0 } else { m.len() as f64 }),
                Err(_) if p == "rom" => ok(lua, 0.0),
                Err(_) => fail(lua, format!("/{p}: No such file")),
            },
            Err(e) => fail(lua, e),
        }
    );
    // The ROM is read-only: no free space and no capacity (nil), as CC: Tweaked's MountWrapper.
    f!(
        "getFreeSpace",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) => ok(lua, 0.0),
            Ok(_) => ok(lua, CAPACITY.saturating_sub(Disk::used(&d.root)) as f64),
            Err(e) => fail(lua, e),
        }
    );
    f!(
        "getCapacity",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) => ok(lua, Value::Nil),
            Ok(_) => ok(lua, CAPACITY as f64),
            Err(e) => fail(lua, e),
        }
    );
    f!(
        "list",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if p == "rom" => ok(lua, lua.create_table()?),
            Ok((p, h)) => match fs::read_dir(&h) {
                Ok(rd) => {
                    let mut names: Vec<String> = rd
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect();
                    if p.is_empty() && !names.iter().any(|n| n == "rom") {
                        names.push("rom".into());
                    }
                    names.sort();
                    ok(lua, names)
                }
                Err(_) if h.exists() => fail(lua, format!("/{p}: Not a directory")),
                Err(_) => fail(lua, format!("/{p}: No such file")),
            },
            Err(e) => fail(lua, e),
        }
    );
    f!(
        "makeDir",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) => fail(lua, format!("/{p}: Access denied")),
            Ok((p, h)) => match fs::create_dir_all(&h) {
                Ok(()) => ok(lua, ()),
                Err(_) => fail(lua, format!("/{p}: File exists")),
            },
            Err(e) => fail(lua, e),
        }
    );
    f!(
        "delete",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) || p.is_empty() =>
                fail(lua, format!("/{p}: Access denied")),
            Ok((p, h)) => {
                let r = if h.is_dir() {
                    fs::remove_dir_all(&h)
                } else if h.exists() {
                    fs::remove_file(&h)
                } else {
                    Ok(())
                };
                match r {
                    Ok(()) => ok(lua, ()),
                    Err(e) => fail(lua, format!("/{p}: {e}")),
                }
            }
            Err(e) => fail(lua, e),
        }
    );
    for (name, is_move) in [("move", true), ("copy", false)] {
        f!(
            name,
            |lua, d, (from, to): (mlua::LuaString, mlua::LuaString)| {
                let ((fp, fh), (tp, th)) = match (
                    d.host(&from.to_string_lossy()),
                    d.host(&to.to_string_lossy()),
                ) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(e), _) | (_, Err(e)) => return fail(lua, e),
                };
                // CC: Tweaked's FileSystem.move words its errors without a path, copy with
                // the path each one is about.
                let about = |path: &str, why: &str| {
                    if is_move {
                        why.to_owned()
                    } else {
                        format!("/{path}: {why}")
                    }
                };
                if Disk::is_rom(&tp) || (is_move && Disk::is_rom(&fp)) {
                    return fail(lua, about(&tp, "Access denied"));
                }
                if !fh.exists() {
                    return fail(lua, about(&fp, "No such file"));
                }
                if th.exists() {
                    return fail(lua, about(&tp, "File exists"));
                }
                if tp.starts_with(&format!("{fp}/")) {
                    let why = if is_move {
                        "Can't move a directory inside itself"
                    } else {
                        "Can't copy a directory inside itself"
                    };
                    return fail(lua, about(&fp, why));
                }
                if let Some(parent) = th.parent() {
                    let _ = fs::create_dir_all(parent);
                }
                let r = if is_move {
                    fs::rename(&fh, &th)
                } else {
                    copy_tree(&fh, &th)
                };
                match r {
                    Ok(()) => ok(lua, ()),
                    Err(e) => fail(lua, format!("/{fp}: {e}")),
                }
            }
        );
    }
    f!(
        "attributes",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, h)) => match fs::metadata(&h) {
                Ok(m) => {
                    let a = lua.create_table()?;
                    let ms = |t: std::io::Result<std::time::SystemTime>| {
                        t.ok()
                            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                            .map(|d| d.as_millis() as f64)
                            .unwrap_or(0.0)
                    };
                    a.set("size", if m.is_dir() { 0.0 } else { m.len() as f64 })?;
                    a.set("isDir", m.is_dir())?;
                    a.set("isReadOnly", Disk::is_rom(&p))?;
                    a.set("created", ms(m.created()))?;
                    a.set("modified", ms(m.modified()))?;
                    a.set("modification", ms(m.modified()))?;
                    ok(lua, a)
                }
                Err(_) => fail(lua, format!("/{p}: No such file")),
            },
            Err(e) => fail(lua, e),
        }
    );
    f!("open", |lua, d, (p, mode): (mlua::LuaString, String)| {
        let (p, h) = match d.host(&p.to_string_lossy()) {
            Ok(x) => x,
            Err(e) => return fail(lua, e),
        };
        let binary = mode.contains('b');
        match mode.trim_end_matches('b') {
            "r" => {
                if h.is_dir() {
                    return fail(lua, format!("/{p}: Not a file"));
                }
                match fs::read(&h) {
                    Ok(data) => ok(lua, lua.create_userdata(ReadHandle::new(data, binary))?),
                    Err(_) => fail(lua, format!("/{p}: No such file")),
                }
            }
            m @ ("w" | "a") => {
                if Disk::is_rom(&p) {
                    return fail(lua, format!("/{p}: Access denied"));
                }
                if h.is_dir() || p.is_empty() {
                    return fail(lua, format!("/{p}: Cannot write to directory"));
                }
                if let Some(parent) = h.parent() {
                    // A failure shows in the open below.
                    let _ = fs::create_dir_all(parent);
                }
                let file = fs::OpenOptions::new()
                    .create(true)
                    .write(m == "w")
                    .append(m == "a")
                    .truncate(m == "w")
                    .open(&h);
                match file {
                    Ok(f) => ok(
                        lua,
                        lua.create_userdata(WriteHandle {
                            file: Some(f),
                            binary,
                        })?,
                    ),
                    Err(e) => fail(lua, format!("/{p}: {e}")),
                }
            }
            // r+ keeps the content and needs the file; w+ empties or creates it.
            m @ ("r+" | "w+") => {
                if Disk::is_rom(&p) {
                    return fail(lua, format!("/{p}: Access denied"));
                }
                if h.is_dir() || p.is_empty() {
                    let why = if m == "w+" {
                        "Cannot write to directory"
                    } else {
                        "Not a file"
                    };
                    return fail(lua, format!("/{p}: {why}"));
                }
                if m == "r+" && !h.exists() {
                    return fail(lua, format!("/{p}: No such file"));
                }
                if let Some(parent) = h.parent() {
                    // A failure shows in the open below.
                    let _ = fs::create_dir_all(parent);
                }
                let file = fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(m == "w+")
                    .truncate(m == "w+")
                    .open(&h);
                match file {
                    Ok(f) => ok(
                        lua,
                        lua.create_userdata(UpdateHandle {
                            file: Some(f),
                            binary,
                        })?,
                    ),
                    Err(e) => fail(lua, format!("/{p}: {e}")),
                }
            }
            // The bios raises "Unsupported mode" before asking.
            _ => fail(lua, "Unsupported mode"),
        }
    });
    Ok(t)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if from.is_dir() {
        fs::create_dir_all(to)?;
        for e in fs::read_dir(from)? {
            let e = e?;
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
        Ok(())
    } else {
        fs::copy(from, to).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn paths_normalise_like_cc() {
        assert_eq!(normalize("/a//b/./c/", false).as_deref(), Ok("a/b/c"));
        assert_eq!(normalize("a\\b/../c", false).as_deref(), Ok("a/c"));
        assert_eq!(normalize("/", false).as_deref(), Ok(""));
        assert!(normalize("../etc/passwd", false).is_err());
        assert!(normalize("a/../../x", false).is_err());
        assert_eq!(normalize("a/../../x", true).as_deref(), Ok("../x"));
        // CC: Tweaked's sanitizePath: dropped characters, trimmed parts, runs of dots.
        assert_eq!(normalize("a:b*c?d", false).as_deref(), Ok("abcd"));
        assert_eq!(normalize("a:b*c?d", true).as_deref(), Ok("ab*c?d"));
        assert_eq!(normalize(" a / b ", true).as_deref(), Ok("a/b"));
        assert_eq!(normalize("a/.../b/.", false).as_deref(), Ok("a/b"));
        assert_eq!(normalize(&"x".repeat(300), false).map(|p| p.len()), Ok(255));
    }
}

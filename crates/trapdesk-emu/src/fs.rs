//! The computer's disk: a host directory seen through CC's path rules. Paths are normalised the
//! way CC does (`\` is `/`, `.` and `..` resolved), and a path that would climb above the root is
//! refused, so a program can never touch the host outside its computer's directory. `/rom` is an
//! empty read-only directory, as a stand-in for CC's ROM.
//!
//! Native functions answer `true, values...` or `false, message`; the bios turns the latter into
//! a Lua error with a string message (mlua's own errors are userdata, CC's are strings).

use std::fs;

use mlua::{IntoLuaMulti, Lua, MultiValue, Table, Value};

pub(crate) use super::handles::ReadHandle;
use super::handles::{UpdateHandle, WriteHandle};
pub(crate) use super::quota::{MINIMUM_FILE_SIZE, OUT_OF_SPACE, Quota};

use super::kernel::Ctx;
use std::sync::Arc;

mod disk;
mod private;

use disk::{Disk, FLOPPY_MOUNT};
pub(crate) use private::{private_dir, private_file, private_folder, tighten, write_private};

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

/// The native `fs` table.
pub(crate) fn native(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let disk = Arc::new(Disk {
        root: ctx.root.clone(),
        quota: Arc::new(Quota::measure(&ctx.root, ctx.disk_space)),
        drive: ctx.drive.clone(),
        floppy_quota: std::sync::Mutex::new(None),
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
            // A floppy's drive is named by the drive's peripheral name.
            Ok((p, _)) if Disk::below_mount(&p).is_some() && d.floppy().is_some() =>
                ok(lua, d.floppy().map(|(side, _, _)| side)),
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
            Ok((p, _)) => ok(lua, d.quota(&p).remaining() as f64),
            Err(e) => fail(lua, e),
        }
    );
    f!(
        "getCapacity",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) => ok(lua, Value::Nil),
            Ok((p, _)) => ok(lua, d.quota(&p).capacity() as f64),
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
                    if p.is_empty()
                        && d.floppy().is_some()
                        && !names.iter().any(|n| n == FLOPPY_MOUNT)
                    {
                        names.push(FLOPPY_MOUNT.into());
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
            Ok((p, h)) => match d.make_dir(&p, &h) {
                Ok(()) => ok(lua, ()),
                Err(e) => fail(lua, e),
            },
            Err(e) => fail(lua, e),
        }
    );
    f!(
        "delete",
        |lua, d, p: mlua::LuaString| match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) || p.is_empty() || d.is_mount_root(&p) =>
                fail(lua, format!("/{p}: Access denied")),
            Ok((p, h)) => {
                let r = if h.is_dir() {
                    fs::remove_dir_all(&h)
                } else if h.exists() {
                    fs::remove_file(&h)
                } else {
                    Ok(())
                };
                // What went is given back, as `WritableFileMount.deleteRecursively` does (even
                // when part of it could not go).
                d.quota(&p).refresh();
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
                if Disk::is_rom(&tp) || (is_move && (Disk::is_rom(&fp) || d.is_mount_root(&fp))) {
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
                if is_move && !Arc::ptr_eq(&d.quota(&fp), &d.quota(&tp)) {
                    // From one mount to another: a copy, then a delete (`FileSystem.move`).
                    let r = d.copy_tree(&tp, &fh, &th).and_then(|()| {
                        let gone = if fh.is_dir() {
                            fs::remove_dir_all(&fh)
                        } else {
                            fs::remove_file(&fh)
                        };
                        gone.map_err(|e| format!("/{fp}: {e}"))
                    });
                    d.quota(&fp).refresh();
                    match r {
                        Ok(()) => ok(lua, ()),
                        Err(e) => fail(lua, e),
                    }
                } else if is_move {
                    // A move within the disk costs nothing (`WritableFileMount.rename`); its
                    // new parent folder is made as CC's `Files.move` needs it.
                    if let Some(((dir, _), parent)) = tp.rsplit_once('/').zip(th.parent())
                        && let Err(e) = d.make_dir(dir, parent)
                    {
                        return fail(lua, e);
                    }
                    match fs::rename(&fh, &th) {
                        Ok(()) => ok(lua, ()),
                        Err(e) => fail(lua, format!("/{fp}: {e}")),
                    }
                } else {
                    match d.copy_tree(&tp, &fh, &th) {
                        Ok(()) => ok(lua, ()),
                        Err(e) => fail(lua, e),
                    }
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
                let mut options = private_file();
                options
                    .create(true)
                    .write(m == "w")
                    .append(m == "a")
                    .truncate(m == "w");
                match d.open_write(&p, &h, &options, m == "w") {
                    Ok(f) => ok(
                        lua,
                        lua.create_userdata(WriteHandle {
                            file: Some(f),
                            binary,
                            append: m == "a",
                            quota: d.quota(&p),
                        })?,
                    ),
                    Err(e) => fail(lua, e),
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
                let mut options = private_file();
                options
                    .read(true)
                    .write(true)
                    .create(m == "w+")
                    .truncate(m == "w+");
                match d.open_write(&p, &h, &options, m == "w+") {
                    Ok(f) => ok(
                        lua,
                        lua.create_userdata(UpdateHandle {
                            file: Some(f),
                            binary,
                            quota: d.quota(&p),
                        })?,
                    ),
                    Err(e) => fail(lua, e),
                }
            }
            // The bios raises "Unsupported mode" before asking.
            _ => fail(lua, "Unsupported mode"),
        }
    });
    Ok(t)
}

#[cfg(test)]
mod tests;

//! The native `fs` table: one registration function per group of functions, and the larger
//! bodies (`move`/`copy`, `attributes`, `open`) as functions of their own.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use mlua::{FromLuaMulti, IntoLuaMulti, Lua, MaybeSend, MultiValue, Table, Value};

use super::disk::{Disk, FLOPPY_MOUNT};
use super::path::normalize;
use super::private::private_file;
use crate::handles::{ReadHandle, UpdateHandle, WriteHandle};
use crate::kernel::Ctx;
use crate::quota::Quota;

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

/// The table being filled and the disk every one of its functions shares.
struct Native<'a> {
    lua: &'a Lua,
    t: Table,
    disk: Arc<Disk>,
}

impl Native<'_> {
    /// Sets `name` to a native function given its own handle on the disk.
    fn set<A, F>(&self, name: &str, f: F) -> mlua::Result<()>
    where
        A: FromLuaMulti,
        F: Fn(&Lua, &Disk, A) -> mlua::Result<MultiValue> + MaybeSend + 'static,
    {
        let d = self.disk.clone();
        self.t.set(
            name,
            self.lua
                .create_function(move |lua, args: A| f(lua, &d, args))?,
        )
    }
}

/// The native `fs` table. Its functions are set in a fixed order: the table's `pairs` order
/// follows it, and a program may list the table.
pub(crate) fn native(lua: &Lua, ctx: &Ctx) -> mlua::Result<Table> {
    let n = Native {
        lua,
        t: lua.create_table()?,
        disk: Arc::new(Disk {
            root: ctx.root.clone(),
            quota: Arc::new(Quota::measure(&ctx.root, ctx.disk_space)),
            drive: ctx.drive.clone(),
            floppy_quota: std::sync::Mutex::new(None),
        }),
    };
    names(&n)?;
    queries(&n)?;
    space(&n)?;
    changes(&n)?;
    n.set("attributes", |lua, d, p: mlua::LuaString| {
        attributes(lua, d, &p.to_string_lossy())
    })?;
    n.set("open", |lua, d, (p, mode): (mlua::LuaString, String)| {
        open(lua, d, &p.to_string_lossy(), &mode)
    })?;
    Ok(n.t)
}

/// `combine`, `getName` and `getDir`: path arithmetic, which never looks at the disk.
fn names(n: &Native) -> mlua::Result<()> {
    n.set(
        "combine",
        |lua, _d, parts: mlua::Variadic<mlua::LuaString>| {
            let joined: Vec<String> = parts.iter().map(|p| p.to_string_lossy()).collect();
            match normalize(&joined.join("/"), true) {
                Ok(p) => ok(lua, p),
                Err(e) => fail(lua, e),
            }
        },
    )?;
    n.set("getName", |lua, _d, p: mlua::LuaString| {
        let p = normalize(&p.to_string_lossy(), true).unwrap_or_default();
        ok(
            lua,
            if p.is_empty() {
                "root".to_owned()
            } else {
                p.rsplit('/').next().unwrap_or("").to_owned()
            },
        )
    })?;
    n.set("getDir", |lua, _d, p: mlua::LuaString| {
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
    })
}

/// `exists`, `isDir`, `isReadOnly`, `getDrive` and `getSize`: what a path is.
fn queries(n: &Native) -> mlua::Result<()> {
    n.set("exists", |lua, d, p: mlua::LuaString| {
        match d.host(&p.to_string_lossy()) {
            Ok((p, h)) => ok(lua, p == "rom" || h.exists()),
            Err(_) => ok(lua, false),
        }
    })?;
    n.set("isDir", |lua, d, p: mlua::LuaString| {
        match d.host(&p.to_string_lossy()) {
            Ok((p, h)) => ok(lua, p == "rom" || h.is_dir()),
            Err(_) => ok(lua, false),
        }
    })?;
    n.set("isReadOnly", |lua, d, p: mlua::LuaString| {
        match d.host(&p.to_string_lossy()) {
            Ok((p, _)) => ok(lua, Disk::is_rom(&p)),
            Err(_) => ok(lua, false),
        }
    })?;
    n.set("getDrive", |lua, d, p: mlua::LuaString| {
        match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) => ok(lua, "rom"),
            // A floppy's drive is named by the drive's peripheral name.
            Ok((p, _)) if Disk::below_mount(&p).is_some() && d.floppy().is_some() => {
                ok(lua, d.floppy().map(|(side, _, _)| side))
            }
            Ok((_, h)) if h.exists() => ok(lua, "hdd"),
            _ => ok(lua, Value::Nil),
        }
    })?;
    n.set("getSize", |lua, d, p: mlua::LuaString| {
        match d.host(&p.to_string_lossy()) {
            Ok((p, h)) => match fs::metadata(&h) {
                Ok(m) => ok(lua, if m.is_dir() { 0.0 } else { m.len() as f64 }),
                Err(_) if p == "rom" => ok(lua, 0.0),
                Err(_) => fail(lua, format!("/{p}: No such file")),
            },
            Err(e) => fail(lua, e),
        }
    })
}

/// `getFreeSpace` and `getCapacity`. The ROM is read-only: no free space and no capacity (nil),
/// as CC: Tweaked's MountWrapper.
fn space(n: &Native) -> mlua::Result<()> {
    n.set("getFreeSpace", |lua, d, p: mlua::LuaString| {
        match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) => ok(lua, 0.0),
            Ok((p, _)) => ok(lua, d.quota(&p).remaining() as f64),
            Err(e) => fail(lua, e),
        }
    })?;
    n.set("getCapacity", |lua, d, p: mlua::LuaString| {
        match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) => ok(lua, Value::Nil),
            Ok((p, _)) => ok(lua, d.quota(&p).capacity() as f64),
            Err(e) => fail(lua, e),
        }
    })
}

/// `list`, `makeDir`, `delete`, `move` and `copy`: listing and changing the tree.
fn changes(n: &Native) -> mlua::Result<()> {
    n.set("list", |lua, d, p: mlua::LuaString| {
        list(lua, d, &p.to_string_lossy())
    })?;
    n.set("makeDir", |lua, d, p: mlua::LuaString| {
        match d.host(&p.to_string_lossy()) {
            Ok((p, _)) if Disk::is_rom(&p) => fail(lua, format!("/{p}: Access denied")),
            Ok((p, h)) => match d.make_dir(&p, &h) {
                Ok(()) => ok(lua, ()),
                Err(e) => fail(lua, e),
            },
            Err(e) => fail(lua, e),
        }
    })?;
    n.set("delete", |lua, d, p: mlua::LuaString| {
        delete(lua, d, &p.to_string_lossy())
    })?;
    for (name, is_move) in [("move", true), ("copy", false)] {
        n.set(
            name,
            move |lua, d, (from, to): (mlua::LuaString, mlua::LuaString)| {
                move_or_copy(
                    lua,
                    d,
                    &from.to_string_lossy(),
                    &to.to_string_lossy(),
                    is_move,
                )
            },
        )?;
    }
    Ok(())
}

/// `fs.list`: the names in a folder, sorted, with `rom` (and the floppy's mount) in the root.
fn list(lua: &Lua, d: &Disk, p: &str) -> mlua::Result<MultiValue> {
    match d.host(p) {
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
                if p.is_empty() && d.floppy().is_some() && !names.iter().any(|n| n == FLOPPY_MOUNT)
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
}

/// `fs.delete`: a file or a whole folder; the root, the ROM and a mount's root refuse.
fn delete(lua: &Lua, d: &Disk, p: &str) -> mlua::Result<MultiValue> {
    match d.host(p) {
        Ok((p, _)) if Disk::is_rom(&p) || p.is_empty() || d.is_mount_root(&p) => {
            fail(lua, format!("/{p}: Access denied"))
        }
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
}

/// `fs.move` (`is_move`) or `fs.copy`: the checks both make, then the work.
fn move_or_copy(
    lua: &Lua,
    d: &Disk,
    from: &str,
    to: &str,
    is_move: bool,
) -> mlua::Result<MultiValue> {
    let ((fp, fh), (tp, th)) = match (d.host(from), d.host(to)) {
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
    let r = if is_move && !Arc::ptr_eq(&d.quota(&fp), &d.quota(&tp)) {
        move_across(d, (&fp, &fh), (&tp, &th))
    } else if is_move {
        rename(d, (&fp, &fh), (&tp, &th))
    } else {
        d.copy_tree(&tp, &fh, &th)
    };
    match r {
        Ok(()) => ok(lua, ()),
        Err(e) => fail(lua, e),
    }
}

/// A move from one mount to another: a copy, then a delete (`FileSystem.move`).
fn move_across(d: &Disk, (fp, fh): (&str, &Path), (tp, th): (&str, &Path)) -> Result<(), String> {
    let r = d.copy_tree(tp, fh, th).and_then(|()| {
        let gone = if fh.is_dir() {
            fs::remove_dir_all(fh)
        } else {
            fs::remove_file(fh)
        };
        gone.map_err(|e| format!("/{fp}: {e}"))
    });
    d.quota(fp).refresh();
    r
}

/// A move within the disk costs nothing (`WritableFileMount.rename`); its new parent folder is
/// made as CC's `Files.move` needs it.
fn rename(d: &Disk, (fp, fh): (&str, &Path), (tp, th): (&str, &Path)) -> Result<(), String> {
    if let Some(((dir, _), parent)) = tp.rsplit_once('/').zip(th.parent()) {
        d.make_dir(dir, parent)?;
    }
    fs::rename(fh, th).map_err(|e| format!("/{fp}: {e}"))
}

/// `fs.attributes`: size, kind and times of a path.
fn attributes(lua: &Lua, d: &Disk, p: &str) -> mlua::Result<MultiValue> {
    let (p, h) = match d.host(p) {
        Ok(x) => x,
        Err(e) => return fail(lua, e),
    };
    let Ok(m) = fs::metadata(&h) else {
        return fail(lua, format!("/{p}: No such file"));
    };
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

/// `fs.open`: a handle for reading, writing/appending, or updating (`r+`/`w+`).
fn open(lua: &Lua, d: &Disk, p: &str, mode: &str) -> mlua::Result<MultiValue> {
    let (p, h) = match d.host(p) {
        Ok(x) => x,
        Err(e) => return fail(lua, e),
    };
    let binary = mode.contains('b');
    match mode.trim_end_matches('b') {
        "r" => open_read(lua, &p, &h, binary),
        m @ ("w" | "a") => open_write(lua, d, (&p, &h), m, binary),
        m @ ("r+" | "w+") => open_update(lua, d, (&p, &h), m, binary),
        // The bios raises "Unsupported mode" before asking.
        _ => fail(lua, "Unsupported mode"),
    }
}

/// Mode `r`: the whole file, read at once.
fn open_read(lua: &Lua, p: &str, h: &Path, binary: bool) -> mlua::Result<MultiValue> {
    if h.is_dir() {
        return fail(lua, format!("/{p}: Not a file"));
    }
    match fs::read(h) {
        Ok(data) => ok(lua, lua.create_userdata(ReadHandle::new(data, binary))?),
        Err(_) => fail(lua, format!("/{p}: No such file")),
    }
}

/// Modes `w` (emptied or created) and `a` (appended to).
fn open_write(
    lua: &Lua,
    d: &Disk,
    (p, h): (&str, &Path),
    m: &str,
    binary: bool,
) -> mlua::Result<MultiValue> {
    if Disk::is_rom(p) {
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
    match d.open_write(p, h, &options, m == "w") {
        Ok(f) => ok(
            lua,
            lua.create_userdata(WriteHandle {
                file: Some(f),
                binary,
                append: m == "a",
                quota: d.quota(p),
            })?,
        ),
        Err(e) => fail(lua, e),
    }
}

/// Modes `r+` (keeps the content and needs the file) and `w+` (empties or creates it).
fn open_update(
    lua: &Lua,
    d: &Disk,
    (p, h): (&str, &Path),
    m: &str,
    binary: bool,
) -> mlua::Result<MultiValue> {
    if Disk::is_rom(p) {
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
    match d.open_write(p, h, &options, m == "w+") {
        Ok(f) => ok(
            lua,
            lua.create_userdata(UpdateHandle {
                file: Some(f),
                binary,
                quota: d.quota(p),
            })?,
        ),
        Err(e) => fail(lua, e),
    }
}

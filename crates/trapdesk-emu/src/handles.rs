//! File handles as CC hands them out: read handles hold the whole content (files and HTTP
//! bodies alike), write handles write straight through to the host file. The bios wraps them in
//! CC's handle tables.

use std::io::Write as _;
use std::sync::Arc;

use mlua::{UserData, UserDataMethods, Value};

use super::quota::Quota;

/// A file opened for reading (or an HTTP body): the whole content, read up front.
pub(crate) struct ReadHandle {
    data: Vec<u8>,
    pos: usize,
    binary: bool,
    closed: bool,
}

impl ReadHandle {
    pub(crate) fn new(data: Vec<u8>, binary: bool) -> Self {
        Self {
            data,
            pos: 0,
            binary,
            closed: false,
        }
    }

    fn check(&self) -> mlua::Result<()> {
        if self.closed {
            return Err(mlua::Error::RuntimeError(
                "attempt to use a closed file".into(),
            ));
        }
        Ok(())
    }
}

impl UserData for ReadHandle {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method_mut("readAll", |lua, h, ()| {
            h.check()?;
            let rest = &h.data[h.pos.min(h.data.len())..];
            let s = lua.create_string(rest)?;
            h.pos = h.data.len();
            Ok(s)
        });
        m.add_method_mut("readLine", |lua, h, keep: Option<bool>| {
            h.check()?;
            if h.pos >= h.data.len() {
                return Ok(Value::Nil);
            }
            let rest = &h.data[h.pos..];
            let (line, used) = match rest.iter().position(|b| *b == b'\n') {
                Some(i) if keep.unwrap_or(false) => (&rest[..=i], i + 1),
                Some(i) => (rest[..i].strip_suffix(b"\r").unwrap_or(&rest[..i]), i + 1),
                None => (rest, rest.len()),
            };
            let s = lua.create_string(line)?;
            h.pos += used;
            Ok(Value::String(s))
        });
        m.add_method_mut("read", |lua, h, n: Option<f64>| {
            h.check()?;
            if h.pos >= h.data.len() {
                return Ok(Value::Nil);
            }
            if n.is_none() && h.binary {
                let b = h.data[h.pos];
                h.pos += 1;
                return Ok(Value::Number(f64::from(b)));
            }
            let n = n.unwrap_or(1.0).max(0.0) as usize;
            let end = (h.pos + n).min(h.data.len());
            let s = lua.create_string(&h.data[h.pos..end])?;
            h.pos = end;
            Ok(Value::String(s))
        });
        m.add_method_mut(
            "seek",
            |_, h, (whence, off): (Option<String>, Option<f64>)| {
                h.check()?;
                let base = match whence.as_deref().unwrap_or("cur") {
                    "set" => 0,
                    "end" => h.data.len() as i64,
                    _ => h.pos as i64,
                };
                h.pos = (base + off.unwrap_or(0.0) as i64).max(0) as usize;
                Ok(h.pos as f64)
            },
        );
        m.add_method_mut("close", |_, h, ()| {
            h.check()?;
            h.closed = true;
            Ok(())
        });
    }
}

/// A file opened for writing or appending; bytes go straight to the host file, each write
/// counted against the disk's quota first.
pub(crate) struct WriteHandle {
    pub(crate) file: Option<std::fs::File>,
    pub(crate) binary: bool,
    /// Opened with "a": every write lands at the end, wherever the position is.
    pub(crate) append: bool,
    pub(crate) quota: Arc<Quota>,
}

impl WriteHandle {
    /// Writes `bytes` where CC would, if the disk has room for them: all or nothing, as
    /// `WritableFileMount.CountingChannel.write`, raising "Out of space" (`AbstractHandle.write`
    /// raises the exception's message).
    fn write_bytes(&mut self, bytes: &[u8]) -> mlua::Result<Option<&'static str>> {
        use std::io::Seek as _;
        let Some(f) = self.file.as_mut() else {
            return Err(mlua::Error::RuntimeError(
                "attempt to use a closed file".into(),
            ));
        };
        let io = |e: std::io::Error| mlua::Error::RuntimeError(e.to_string());
        let size = f.metadata().map_err(io)?.len();
        let pos = if self.append {
            size
        } else {
            f.stream_position().map_err(io)?
        };
        if let Err(e) = self.quota.write(pos, bytes.len() as u64, size) {
            return Ok(Some(e));
        }
        f.write_all(bytes).map_err(io)?;
        Ok(None)
    }

    /// Writes a value as `write` / `writeLine` do; `Some(message)` when the disk is full, for
    /// the bios to raise as a string.
    fn write_value(&mut self, v: Value, newline: bool) -> mlua::Result<Option<&'static str>> {
        if self.file.is_none() {
            return Err(mlua::Error::RuntimeError(
                "attempt to use a closed file".into(),
            ));
        }
        let bytes = match v {
            Value::String(s) => s.as_bytes().to_vec(),
            Value::Number(n) if self.binary && !newline => vec![n as i64 as u8],
            Value::Integer(n) if self.binary && !newline => vec![n as u8],
            Value::Number(n) => super::number::number_text(n).into_bytes(),
            Value::Integer(n) => n.to_string().into_bytes(),
            other => {
                return Err(mlua::Error::RuntimeError(format!(
                    "bad argument #1 (string expected, got {})",
                    other.type_name()
                )));
            }
        };
        // `writeLine` writes the text, then the newline: two writes, as CC's does.
        if let Some(full) = self.write_bytes(&bytes)? {
            return Ok(Some(full));
        }
        if newline {
            return self.write_bytes(b"\n");
        }
        Ok(None)
    }
}

impl UserData for WriteHandle {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method_mut("write", |_, h, v: Value| h.write_value(v, false));
        m.add_method_mut("writeLine", |_, h, v: Value| h.write_value(v, true));
        m.add_method_mut(
            "seek",
            |_, h, (whence, off): (Option<String>, Option<f64>)| h.seek(whence, off),
        );
        m.add_method_mut("flush", |_, h, ()| {
            if let Some(f) = h.file.as_mut() {
                f.flush()
                    .map_err(|e| mlua::Error::RuntimeError(e.to_string()))?;
            }
            Ok(())
        });
        m.add_method_mut("close", |_, h, ()| match h.file.take() {
            Some(_) => Ok(()),
            None => Err(mlua::Error::RuntimeError(
                "attempt to use a closed file".into(),
            )),
        });
    }
}

impl WriteHandle {
    fn seek(&mut self, whence: Option<String>, off: Option<f64>) -> mlua::Result<Value> {
        let Some(f) = self.file.as_mut() else {
            return Err(mlua::Error::RuntimeError(
                "attempt to use a closed file".into(),
            ));
        };
        seek_file(f, whence, off)
    }
}

/// `seek(whence, offset)` on a host file, as CC: Tweaked's handles answer it: the new position,
/// or `nil, message` for a bad `whence` or a position before the start.
fn seek_file(
    f: &mut std::fs::File,
    whence: Option<String>,
    off: Option<f64>,
) -> mlua::Result<Value> {
    use std::io::{Seek as _, SeekFrom};
    let off = off.unwrap_or(0.0) as i64;
    let at = match whence.as_deref().unwrap_or("cur") {
        "set" => u64::try_from(off).ok().map(SeekFrom::Start),
        "cur" => Some(SeekFrom::Current(off)),
        "end" => Some(SeekFrom::End(off)),
        other => {
            return Err(mlua::Error::RuntimeError(format!(
                "bad argument #1 to 'seek' (invalid option '{other}')"
            )));
        }
    };
    match at.map(|at| f.seek(at)) {
        Some(Ok(p)) => Ok(Value::Number(p as f64)),
        _ => Ok(Value::Nil),
    }
}

/// A file opened with `r+` or `w+` (CC: Tweaked 1.109): reads and writes at one position in
/// the host file.
pub(crate) struct UpdateHandle {
    pub(crate) file: Option<std::fs::File>,
    pub(crate) binary: bool,
    pub(crate) quota: Arc<Quota>,
}

impl UpdateHandle {
    fn file(&mut self) -> mlua::Result<&mut std::fs::File> {
        self.file
            .as_mut()
            .ok_or_else(|| mlua::Error::RuntimeError("attempt to use a closed file".into()))
    }

    /// Writes as a write handle does, at the current position.
    fn write_value(&mut self, v: Value, newline: bool) -> mlua::Result<Option<&'static str>> {
        let mut w = WriteHandle {
            file: self.file.take(),
            binary: self.binary,
            append: false,
            quota: self.quota.clone(),
        };
        let r = w.write_value(v, newline);
        self.file = w.file;
        r
    }

    /// Up to `n` bytes from the position (fewer at the end).
    fn take(&mut self, n: usize) -> mlua::Result<Vec<u8>> {
        use std::io::Read as _;
        let mut out = Vec::new();
        self.file()?
            .take(n as u64)
            .read_to_end(&mut out)
            .map_err(|e| mlua::Error::RuntimeError(e.to_string()))?;
        Ok(out)
    }
}

impl UserData for UpdateHandle {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        use std::io::Read as _;
        m.add_method_mut("readAll", |lua, h, ()| {
            let mut out = Vec::new();
            h.file()?
                .read_to_end(&mut out)
                .map_err(|e| mlua::Error::RuntimeError(e.to_string()))?;
            lua.create_string(&out)
        });
        m.add_method_mut("readLine", |lua, h, keep: Option<bool>| {
            // Byte by byte up to the newline: update handles are for small records, and the
            // position must stay exactly after the line for a following write.
            let mut line = Vec::new();
            let mut any = false;
            loop {
                let b = h.take(1)?;
                let Some(&b) = b.first() else { break };
                any = true;
                if b == b'\n' {
                    if keep.unwrap_or(false) {
                        line.push(b);
                    } else if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    break;
                }
                line.push(b);
            }
            if !any {
                return Ok(Value::Nil);
            }
            Ok(Value::String(lua.create_string(&line)?))
        });
        m.add_method_mut("read", |lua, h, n: Option<f64>| {
            if n.is_none() && h.binary {
                return Ok(match h.take(1)?.first() {
                    Some(&b) => Value::Number(f64::from(b)),
                    None => Value::Nil,
                });
            }
            let n = n.unwrap_or(1.0).max(0.0) as usize;
            let bytes = h.take(n)?;
            if bytes.is_empty() && n > 0 {
                return Ok(Value::Nil);
            }
            Ok(Value::String(lua.create_string(&bytes)?))
        });
        m.add_method_mut("write", |_, h, v: Value| h.write_value(v, false));
        m.add_method_mut("writeLine", |_, h, v: Value| h.write_value(v, true));
        m.add_method_mut("flush", |_, h, ()| {
            h.file()?
                .flush()
                .map_err(|e| mlua::Error::RuntimeError(e.to_string()))
        });
        m.add_method_mut(
            "seek",
            |_, h, (whence, off): (Option<String>, Option<f64>)| seek_file(h.file()?, whence, off),
        );
        m.add_method_mut("close", |_, h, ()| match h.file.take() {
            Some(_) => Ok(()),
            None => Err(mlua::Error::RuntimeError(
                "attempt to use a closed file".into(),
            )),
        });
    }
}

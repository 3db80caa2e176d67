//! File handles as CC hands them out: read handles hold the whole content (files and HTTP
//! bodies alike), write handles write straight through to the host file. The bios wraps them in
//! CC's handle tables.

use std::io::Write as _;

use mlua::{UserData, UserDataMethods, Value};

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

/// A file opened for writing or appending; bytes go straight to the host file.
pub(crate) struct WriteHandle {
    pub(crate) file: Option<std::fs::File>,
    pub(crate) binary: bool,
}

impl WriteHandle {
    fn write_value(&mut self, v: Value, newline: bool) -> mlua::Result<()> {
        let Some(f) = self.file.as_mut() else {
            return Err(mlua::Error::RuntimeError(
                "attempt to use a closed file".into(),
            ));
        };
        let mut bytes = match v {
            Value::String(s) => s.as_bytes().to_vec(),
            Value::Number(n) if self.binary && !newline => vec![n as i64 as u8],
            Value::Integer(n) if self.binary && !newline => vec![n as u8],
            Value::Number(n) => super::os_api::number_text(n).into_bytes(),
            Value::Integer(n) => n.to_string().into_bytes(),
            other => {
                return Err(mlua::Error::RuntimeError(format!(
                    "bad argument #1 (string expected, got {})",
                    other.type_name()
                )));
            }
        };
        if newline {
            bytes.push(b'\n');
        }
        f.write_all(&bytes)
            .map_err(|e| mlua::Error::RuntimeError(e.to_string()))
    }
}

impl UserData for WriteHandle {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method_mut("write", |_, h, v: Value| h.write_value(v, false));
        m.add_method_mut("writeLine", |_, h, v: Value| h.write_value(v, true));
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

//! Event arguments on their way into Lua. Events are built on other threads (tokio tasks for
//! sockets, the public handle) where no Lua state exists, so they carry plain Rust values and
//! become Lua values only on the machine's thread. [`Event`] is a name and such values.

use std::sync::Arc;

use mlua::{IntoLua, Lua, Value};

use super::handles::ReadHandle;
use super::websocket::WsHandle;

/// One argument of an event queued from Rust, as CC would pass it to Lua.
#[derive(Debug, Clone, PartialEq)]
pub enum EventArg {
    /// A Lua string: bytes, not necessarily UTF-8.
    Str(Vec<u8>),
    /// A Lua number (CC has doubles only).
    Num(f64),
    /// A boolean.
    Bool(bool),
    /// nil.
    Nil,
}

/// One event argument.
#[derive(Debug, Clone)]
pub(crate) enum Val {
    Nil,
    Bool(bool),
    Num(f64),
    Str(Vec<u8>),
    /// A connected websocket; becomes the handle table of `websocket_success`.
    Ws(Arc<WsHandle>),
    /// A finished HTTP response; becomes the handle table of `http_success`/`http_failure`.
    Response(Arc<Response>),
    /// Any other Lua value queued by `os.queueEvent` (tables, functions): kept in the registry.
    Lua(Arc<mlua::RegistryKey>),
}

/// One event: a name and its arguments.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub name: Vec<u8>,
    pub args: Vec<Val>,
}

impl Event {
    pub(crate) fn new(name: &str, args: Vec<Val>) -> Self {
        Self {
            name: name.as_bytes().to_vec(),
            args,
        }
    }
}

/// A complete HTTP response, read before the event is queued (CC reads the body up front too).
#[derive(Debug)]
pub(crate) struct Response {
    pub code: u16,
    /// The status line's reason phrase ("Not Found"): CC's `http_failure` message.
    pub reason: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub binary: bool,
}

impl From<EventArg> for Val {
    fn from(a: EventArg) -> Self {
        match a {
            EventArg::Str(s) => Val::Str(s),
            EventArg::Num(n) => Val::Num(n),
            EventArg::Bool(b) => Val::Bool(b),
            EventArg::Nil => Val::Nil,
        }
    }
}

impl From<&str> for Val {
    fn from(s: &str) -> Self {
        Val::Str(s.as_bytes().to_vec())
    }
}

/// The Lua functions of the bios that turn native objects into CC-shaped handle tables.
pub(crate) struct Wrappers {
    pub ws: mlua::Function,
    pub response: mlua::Function,
}

impl Val {
    /// The Lua value, wrapping native handles through the bios.
    pub(crate) fn to_lua(&self, lua: &Lua, wrap: &Wrappers) -> mlua::Result<Value> {
        Ok(match self {
            Val::Nil => Value::Nil,
            Val::Bool(b) => Value::Boolean(*b),
            Val::Num(n) => Value::Number(*n),
            Val::Str(s) => Value::String(lua.create_string(s)?),
            Val::Lua(key) => lua.registry_value::<Value>(key)?,
            Val::Ws(h) => {
                let ud = lua.create_userdata(super::websocket::WsUser(h.clone()))?;
                wrap.ws.call::<Value>((ud, h.url.as_str()))?
            }
            Val::Response(r) => {
                let reader = lua.create_userdata(ReadHandle::new(r.body.clone(), r.binary))?;
                let headers = lua.create_table()?;
                for (k, v) in &r.headers {
                    headers.set(k.as_str(), v.as_str())?;
                }
                wrap.response
                    .call::<Value>((reader, f64::from(r.code), headers))?
            }
        })
    }
}

impl IntoLua for EventArg {
    fn into_lua(self, lua: &Lua) -> mlua::Result<Value> {
        match self {
            EventArg::Str(s) => Ok(Value::String(lua.create_string(s)?)),
            EventArg::Num(n) => Ok(Value::Number(n)),
            EventArg::Bool(b) => Ok(Value::Boolean(b)),
            EventArg::Nil => Ok(Value::Nil),
        }
    }
}

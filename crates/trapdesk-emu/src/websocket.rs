//! A program's open websocket as Lua holds it: the handle its `send` and `close` talk to, while
//! the socket itself belongs to a task in `net.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mlua::{IntoLuaMulti, UserData, UserDataMethods};
use tokio_tungstenite::tungstenite::Message;

/// What CC: Tweaked allows when the rule's `max_websocket_message` is 0 ("no limit"):
/// `Websocket.MAX_MESSAGE_SIZE`, 1 GiB.
pub(crate) const UNLIMITED_MESSAGE: usize = 1 << 30;
pub(super) enum WsCmd {
    Send(Message),
    Close,
}

/// A connected websocket, owned by its task; Lua holds this to send and close.
#[derive(Debug)]
pub(crate) struct WsHandle {
    /// The URL exactly as the program passed it: events carry it.
    pub url: String,
    /// The rule's `max_websocket_message` (0: no limit).
    pub max_message: usize,
    /// Set by the socket's task before it queues `websocket_closed`, so that a send after that
    /// event fails at once, as CC: Tweaked's `isClosed` check does (its `close` marks the
    /// socket closed before queueing the event).
    pub(super) closed: Arc<AtomicBool>,
    pub(super) tx: tokio::sync::mpsc::UnboundedSender<WsCmd>,
    /// The computer's watchdog: once its hard abort has struck, nothing more leaves the
    /// computer. CC: Tweaked closes the Lua machine at the hard abort (`ComputerExecutor`'s
    /// abort), so no code runs to send; here the hook raises between instructions instead, and
    /// a `pcall` may run a few more lines before the error escapes, which must not reach the
    /// socket.
    pub(super) watchdog: Arc<std::sync::Mutex<crate::watchdog::Watchdog>>,
}

/// The userdata the bios wraps into CC's websocket handle table.
pub(crate) struct WsUser(pub Arc<WsHandle>);

impl UserData for WsUser {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method(
            "send",
            |lua, h, (msg, binary): (mlua::LuaString, Option<bool>)| {
                if h.0.closed.load(Ordering::SeqCst) {
                    return (false, "attempt to use a closed file").into_lua_multi(lua);
                }
                if crate::sync::lock(&h.0.watchdog).killed {
                    return Err(mlua::Error::RuntimeError(
                        "Too long without yielding".to_owned(),
                    ));
                }
                let bytes = msg.as_bytes().to_vec();
                // CC: Tweaked's WebsocketHandle.send: only a non-zero limit is checked.
                if h.0.max_message != 0 && bytes.len() > h.0.max_message {
                    return (false, "Message is too large").into_lua_multi(lua);
                }
                // A text send goes out as a text frame of the string decoded as UTF-8, invalid
                // bytes replaced by U+FFFD (docs/cc-tweaked.md, "WebSocket text and bytes").
                let frame = if binary.unwrap_or(false) {
                    Message::Binary(bytes.into())
                } else {
                    Message::Text(String::from_utf8_lossy(&bytes).into_owned().into())
                };
                match h.0.tx.send(WsCmd::Send(frame)) {
                    Ok(()) => true.into_lua_multi(lua),
                    Err(_) => (false, "attempt to use a closed file").into_lua_multi(lua),
                }
            },
        );
        m.add_method("close", |_, h, ()| {
            // Already closed: nothing to do.
            let _ = h.0.tx.send(WsCmd::Close);
            Ok(())
        });
    }
}

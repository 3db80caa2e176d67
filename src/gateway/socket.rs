//! What a link needs of its socket: a sink of WebSocket messages and a stream of them. axum's
//! `WebSocket` halves are one pair; a channel pair is another, so the link loop and the
//! handshake run in unit tests without a listener (as axum's testing-websockets example does).

use axum::extract::ws::Message as WsMessage;
use futures_util::{Sink, Stream};

/// The sending half of a computer's socket.
pub trait SocketTx: Sink<WsMessage, Error = axum::Error> + Unpin + Send {}
impl<T: Sink<WsMessage, Error = axum::Error> + Unpin + Send> SocketTx for T {}

/// The receiving half of a computer's socket.
pub trait SocketRx:
    futures_util::Stream<Item = Result<WsMessage, axum::Error>> + Unpin + Send
{
}
impl<T: Stream<Item = Result<WsMessage, axum::Error>> + Unpin + Send> SocketRx for T {}

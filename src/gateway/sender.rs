//! A link's sending side: it knows the computer's frame limit and fragments above it
//! (`docs/protocol.md`, "Fragments"), and gives up on a socket that takes no frame for a while.
//! Generic over the socket's sink, so that the link loop can be tested with a channel.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message as WsMessage, Utf8Bytes};
use futures_util::SinkExt;
use serde_json::json;

use super::binary;
use super::fragment;
use super::protocol::{Message, Outgoing};
use super::socket::SocketTx;

/// Per-connection sending side: knows the computer's frame limit and fragments above it.
pub(super) struct Sender<Tx> {
    tx: Tx,
    pub(super) limit: usize,
    /// The computer takes binary frames (its hello said so): file contents go as raw bytes
    /// (docs/protocol.md, "Binary frames").
    pub(super) binary: bool,
    next_mid: u64,
    /// How long one frame may wait for the socket: a computer that stops reading would
    /// otherwise hold this task (and its heartbeat) forever.
    stall: Duration,
}

/// A send in progress, boxed (see [`Sender::send`]).
type Sending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl<Tx: SocketTx> Sender<Tx> {
    pub(super) fn new(tx: Tx, limit: usize, stall: Duration) -> Self {
        Sender {
            tx,
            limit,
            binary: false,
            next_mid: 0,
            stall,
        }
    }

    /// Boxed, as are [`Sender::error`] and [`Sender::close`]: an async fn's state is as large
    /// as the largest thing it awaits, and this task lives as long as the link. Inline, these
    /// futures (a timer, the frame, its fragments) made every idle link's task ~3.3 KiB; a box
    /// per frame sent costs less than the frame's own encoding (BENCHMARKS.md,
    /// "Fleets and the floor").
    pub(super) fn send<'a>(&'a mut self, msg: &'a Message) -> Sending<'a, Result<(), axum::Error>> {
        Box::pin(async move { self.send_text(msg.encode()).await })
    }

    /// A request to the computer: its JSON frame, or on a binary link what
    /// [`binary::outgoing`] makes of it. Boxed as [`Sender::send`] is.
    pub(super) fn send_request<'a>(
        &'a mut self,
        req: &'a Outgoing,
    ) -> Sending<'a, Result<(), axum::Error>> {
        Box::pin(async move {
            if self.binary
                && let Some((blobs, frame)) = binary::outgoing(req, self.limit)
            {
                // The content first: the request that names it follows, so the computer has
                // it all when the request comes.
                for b in blobs {
                    self.write_frame(WsMessage::Binary(b.into())).await?;
                }
                return self.send_text(frame).await;
            }
            self.send_text(Message::GatewayRequest(req.to_wire()).encode())
                .await
        })
    }

    /// Sends a message's text, fragmented above the limit.
    async fn send_text(&mut self, frame: String) -> Result<(), axum::Error> {
        if frame.len() <= self.limit {
            return self.write(frame).await;
        }
        self.next_mid += 1;
        let mid = format!("g-{}", self.next_mid);
        for piece in fragment::split(frame, &mid, self.limit) {
            self.write(piece).await?;
        }
        Ok(())
    }

    async fn write(&mut self, frame: String) -> Result<(), axum::Error> {
        self.write_frame(WsMessage::Text(frame.into())).await
    }

    async fn write_frame(&mut self, frame: WsMessage) -> Result<(), axum::Error> {
        match tokio::time::timeout(self.stall, self.tx.send(frame)).await {
            Ok(r) => r,
            Err(_) => Err(axum::Error::new(format!(
                "the socket took no frame for {} s (the computer is not reading)",
                self.stall.as_secs()
            ))),
        }
    }

    /// Sends a message it owns (the caller's state then holds no message while it waits).
    pub(super) fn send_owned<'a>(
        &'a mut self,
        msg: Message,
    ) -> Sending<'a, Result<(), axum::Error>> {
        Box::pin(async move { self.send(&msg).await })
    }

    /// The heartbeat's `ping`.
    pub(super) fn send_ping<'a>(&'a mut self, t: u64) -> Sending<'a, Result<(), axum::Error>> {
        self.send_owned(Message::Ping { t: json!(t) })
    }

    pub(super) fn error<'a>(
        &'a mut self,
        code: &'a str,
        message: impl Into<String>,
        id: Option<String>,
    ) -> Sending<'a, ()> {
        let msg = Message::Error {
            code: code.to_owned(),
            message: message.into(),
            id,
        };
        Box::pin(async move {
            if let Err(e) = self.send(&msg).await {
                tracing::debug!("could not send error {code}: {e}");
            }
        })
    }

    pub(super) fn close<'a>(&'a mut self, code: u16, reason: &str) -> Sending<'a, ()> {
        let frame = CloseFrame {
            code,
            reason: Utf8Bytes::from(reason.to_owned()),
        };
        Box::pin(async move {
            // The peer may be gone already, or not reading; then there is nobody to tell.
            let _ = tokio::time::timeout(self.stall, async {
                let _ = self.tx.send(WsMessage::Close(Some(frame))).await;
                let _ = self.tx.close().await;
            })
            .await;
        })
    }
}

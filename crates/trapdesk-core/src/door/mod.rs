//! Every listener's door: the accept loop, a deadline for a request's headers, and a bound on
//! the connections that have not proved themselves yet. The gateway (computers) and the MCP
//! listener (agents, the person's tools) are served through it alike ([`serve`]).
//!
//! Every secret and token is checked and a right one gets in at once (there is no per-address
//! slowing: every computer of a Minecraft server shares that server's address, and every local
//! process shares loopback). What a flood can still cost is sockets and memory held by
//! connections that never prove anything: a TCP connection that sends half an HTTP request and
//! stops, an upgrade that sends no `hello` (5 s, `hello_timeout`), a slow download. Two things
//! bound them:
//!
//! - **A deadline on a request's headers** ([`HEADER_DEADLINE`], hyper's `header_read_timeout`
//!   with tokio's timer): a connection that has not sent a whole request head within it is
//!   closed, also between requests on a kept-alive connection. A response being written (an
//!   SSE stream, a download) and an upgraded WebSocket (a link, an attached console) are not
//!   reading headers, so the deadline never cuts them.
//! - **A cap on the waiting** ([`Waiting`]): every accepted connection takes a place among the
//!   *waiting* ones and gives it up when it proves itself (a computer's `welcome` is sent; a
//!   request on the MCP listener passed its token check: [`proven`]) or closes. At most the
//!   listener's cap wait; the next one to arrive pushes out the **oldest**: a real computer
//!   sends its `hello`, a real client its token, within milliseconds of connecting, so the
//!   newest are the ones worth keeping, and a flood of idle sockets cannot keep anyone out. The
//!   pushed-out connection's reads and writes fail at once (the HTTP layer drops it, also in
//!   the middle of a response its peer does not read); one that was already upgraded and
//!   waiting for its `hello` is closed with 1013 `try_again_later` (its writes still go, each
//!   bounded by the link's stall timeout).

mod serve;

pub use serve::{HEADER_DEADLINE, serve};

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Connections that may wait to link to the gateway at once. A waiting upgraded connection
/// costs about what an idle link does (BENCHMARKS.md: ~12 KiB), so this bounds them at a few
/// tens of MiB. The load test's storm keeps 256 handshakes in flight.
pub const MAX_WAITING: usize = 1024;

/// The waiting connections, oldest first.
#[derive(Debug)]
pub struct Waiting {
    open: Mutex<BTreeMap<u64, Arc<Place>>>,
    next: AtomicU64,
    pushed_out: AtomicU64,
    /// How many may wait at once.
    cap: usize,
}

impl Default for Waiting {
    /// The gateway's: [`MAX_WAITING`].
    fn default() -> Self {
        Waiting::with_cap(MAX_WAITING)
    }
}

impl Waiting {
    /// At most `cap` connections waiting at once (at least one).
    pub fn with_cap(cap: usize) -> Self {
        Waiting {
            open: Mutex::default(),
            next: AtomicU64::new(0),
            pushed_out: AtomicU64::new(0),
            cap: cap.max(1),
        }
    }

    /// How many may wait at once.
    pub fn cap(&self) -> usize {
        self.cap
    }

    fn open(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Place>>> {
        // A panic elsewhere while holding this cannot leave a map worth refusing service for.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a new connection, pushing out the oldest waiting one when all are taken.
    pub fn admit(self: &Arc<Self>) -> Arc<Place> {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        let place = Arc::new(Place {
            seq,
            waiting: Arc::downgrade(self),
            out: CancellationToken::new(),
            gone: AtomicBool::new(false),
            upgraded: AtomicBool::new(false),
            reader: AtomicWaker::new(),
            writer: AtomicWaker::new(),
        });
        let victims: Vec<Arc<Place>> = {
            let mut open = self.open();
            open.insert(seq, place.clone());
            let mut victims = Vec::new();
            while open.len() > self.cap {
                match open.pop_first() {
                    Some((_, v)) => victims.push(v),
                    None => break,
                }
            }
            victims
        };
        for v in victims {
            self.pushed_out.fetch_add(1, Ordering::Relaxed);
            v.push_out();
        }
        place
    }

    /// Connections waiting to link now.
    pub fn len(&self) -> usize {
        self.open().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Connections pushed out since the start.
    pub fn pushed_out(&self) -> u64 {
        self.pushed_out.load(Ordering::Relaxed)
    }
}

/// One connection's place among the waiting.
#[derive(Debug)]
pub struct Place {
    seq: u64,
    waiting: Weak<Waiting>,
    /// Cancelled when the connection is pushed out.
    out: CancellationToken,
    /// Set when it is pushed out (checked on every read and write, without a lock).
    gone: AtomicBool,
    /// Set once it is a WebSocket: its handshake then says goodbye itself (1013), so its
    /// writes must keep working.
    upgraded: AtomicBool,
    /// The tasks reading and writing the connection, woken when it is pushed out.
    reader: AtomicWaker,
    writer: AtomicWaker,
}

impl Place {
    fn push_out(&self) {
        self.gone.store(true, Ordering::Release);
        self.out.cancel();
        self.reader.wake();
        self.writer.wake();
    }

    /// The connection is a WebSocket now (its handshake task owns it).
    pub fn upgraded(&self) {
        self.upgraded.store(true, Ordering::Release);
    }

    /// Whether a write must fail: pushed out, and not a WebSocket saying goodbye.
    fn write_refused(&self) -> bool {
        self.gone.load(Ordering::Acquire) && !self.upgraded.load(Ordering::Acquire)
    }

    /// The connection linked (or proved its token): it no longer waits and can no longer be
    /// pushed out.
    pub fn linked(&self) {
        self.leave();
    }

    fn leave(&self) {
        if let Some(w) = self.waiting.upgrade() {
            w.open().remove(&self.seq);
        }
    }

    /// Resolves when the connection is pushed out.
    pub async fn pushed_out(&self) {
        self.out.cancelled().await;
    }
}

/// An accepted connection holding its place until it is dropped.
#[derive(Debug)]
pub struct Guarded {
    tcp: TcpStream,
    place: Arc<Place>,
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.place.leave();
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.place.gone.load(Ordering::Acquire) {
            return pushed_out();
        }
        self.place.reader.register(cx.waker());
        // Checked again after registering, so a push-out in between is not missed.
        if self.place.gone.load(Ordering::Acquire) {
            return pushed_out();
        }
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

fn pushed_out<T>() -> Poll<io::Result<T>> {
    Poll::Ready(Err(io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "pushed out: too many connections waiting to link",
    )))
}

impl Guarded {
    /// Whether a write must fail now; registers the writer to be woken when it must.
    fn refuse_write(&self, cx: &Context<'_>) -> bool {
        if self.place.write_refused() {
            return true;
        }
        self.place.writer.register(cx.waker());
        // Checked again after registering, so a push-out in between is not missed.
        self.place.write_refused()
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.refuse_write(cx) {
            return pushed_out();
        }
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.refuse_write(cx) {
            return pushed_out();
        }
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.refuse_write(cx) {
            return pushed_out();
        }
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}

/// A listener: TCP with `TCP_NODELAY`, each connection given a [`Place`] among `waiting`.
pub struct Door {
    pub listener: TcpListener,
    pub waiting: Arc<Waiting>,
}

impl Door {
    /// The next connection, with its place. Never fails: a connection that failed before it
    /// was accepted is skipped, and anything else (EMFILE) waits a moment and tries again.
    pub async fn accept(&mut self) -> (Guarded, SocketAddr) {
        loop {
            match self.listener.accept().await {
                Ok((tcp, addr)) => {
                    // Requests are small frames sent back to back (and progress notifications
                    // small writes in a row); without TCP_NODELAY, Nagle's algorithm and the
                    // peer's delayed ACK hold the second of two for ~40 ms (BENCHMARKS.md).
                    if let Err(e) = tcp.set_nodelay(true) {
                        tracing::debug!("TCP_NODELAY not set: {e}");
                    }
                    let place = self.waiting.admit();
                    return (Guarded { tcp, place }, addr);
                }
                // As axum's own TCP listener: a connection that failed before it was accepted
                // is the peer's business; anything else (EMFILE) waits a moment.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionRefused
                            | io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                    ) => {}
                Err(e) => {
                    tracing::error!("accept error: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }
}

/// What a handler learns of its connection (as `ConnectInfo<Peer>` among the request's
/// extensions, put there by [`serve`]): the peer's address and the connection's place.
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    pub place: Arc<Place>,
}

/// The request's connection proved itself (its token was right): it leaves the waiting and is
/// never pushed out. A request not served through [`serve`] has no place; nothing to do.
pub fn proven(extensions: &axum::http::Extensions) {
    if let Some(axum::extract::ConnectInfo(peer)) =
        extensions.get::<axum::extract::ConnectInfo<Peer>>()
    {
        peer.place.linked();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_waiting_is_pushed_out_and_linked_ones_never_are() {
        let w = Arc::new(Waiting::default());
        let first = w.admit();
        let linked = w.admit();
        linked.linked();
        let rest: Vec<_> = (0..MAX_WAITING).map(|_| w.admit()).collect();
        assert_eq!(w.len(), MAX_WAITING);
        assert!(first.gone.load(Ordering::Acquire), "the oldest went");
        assert!(!linked.gone.load(Ordering::Acquire), "a linked one stays");
        assert!(rest.iter().all(|p| !p.gone.load(Ordering::Acquire)));
        assert_eq!(w.pushed_out(), 1);
        // Pushed out, its writes fail too (a response its peer never reads cannot hold the
        // socket), unless it is a WebSocket closing with 1013.
        assert!(first.write_refused());
        rest[0].upgraded();
        let _ = w.admit();
        assert!(rest[0].gone.load(Ordering::Acquire) && !rest[0].write_refused());
        for p in &rest {
            p.leave();
        }
        assert_eq!(w.len(), 1);
    }
}

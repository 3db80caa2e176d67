//! Sending to a computer: its link's queue sent while it has free slots ([`Conn::send_queued`]).
//! A full outbound channel means the link is too slow for what it is sent: the state drops
//! it (`State::overflowed`).

use tokio::sync::mpsc;
use tokio::time::Instant;

use std::collections::HashMap;

use super::{Conn, Outbound, Pending};
use trapdesk_proto::protocol::Outgoing;

/// A link's outbound channel was full: the computer is not reading.
pub(crate) struct Full;

impl Conn {
    /// Sends queued requests while this link has free slots (`max` in flight): detached runs
    /// were counted against their own budget when they started, and go out at once. `Full`
    /// when the link's channel is full (the request goes back to the front of its line).
    pub(super) fn send_queued(
        &mut self,
        pending: &mut HashMap<String, Pending>,
        max: usize,
    ) -> Result<(), Full> {
        let conn = self;
        loop {
            // Detached runs were counted against their own budget when they started; they go
            // out at once, whatever the ordinary requests hold.
            let (id, detached) = if let Some(id) = conn.detached_queue.pop_front() {
                (id, true)
            } else if conn.in_flight >= max {
                return Ok(());
            } else if let Some(id) = conn.queue.pop_front() {
                (id, false)
            } else {
                return Ok(());
            };
            let Some((p, body)) = pending
                .get_mut(&id)
                .and_then(|p| p.body.clone().map(|b| (p, b)))
            else {
                continue;
            };
            let now = Instant::now();
            let remaining = p.info.deadline.saturating_duration_since(now);
            let req = Outgoing {
                id: id.clone(),
                body,
                as_written: p.as_written.clone(),
                timeout_ms: (!p.info.no_deadline).then(|| remaining.as_millis().max(1) as u64),
                detach: detached.then(|| trapdesk_proto::protocol::Detach {
                    by: p.info.origin.name().to_owned(),
                }),
            };
            let back = |conn: &mut Conn, id: String| {
                if detached {
                    conn.detached_queue.push_front(id);
                } else {
                    conn.queue.push_front(id);
                }
            };
            match conn.tx.try_send(Outbound::Request(Box::new(req))) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    // The connection task is gone; its unlink will fail this request.
                    back(conn, id);
                    return Ok(());
                }
                Err(mpsc::error::TrySendError::Full(_)) => {
                    back(conn, id);
                    return Err(Full);
                }
            }
            if detached {
                conn.detached += 1;
            } else {
                conn.in_flight += 1;
            }
            p.info.sent = true;
            p.sent_at = Some(now);
        }
    }
}

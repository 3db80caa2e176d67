//! Sending to a computer: its queue pumped while it has free slots, and what a full outbound
//! channel means (the link is too slow for what it is sent, so it is dropped).

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Conn, Outbound, State};
use trapdesk_proto::protocol::Outgoing;

impl State {
    /// Sends queued requests of a computer while it has free slots.
    pub fn pump(&mut self, trapos_id: &str) {
        self.send_queued(trapos_id);
        if let Some(c) = self.computers.get_mut(trapos_id) {
            c.show_counts();
        }
    }

    pub(crate) fn send_queued(&mut self, trapos_id: &str) {
        let max = self.settings.max_in_flight;
        loop {
            let Some(computer) = self.computers.get_mut(trapos_id) else {
                return;
            };
            let Some(conn) = computer.conn.as_mut() else {
                return;
            };
            // Detached runs were counted against their own budget when they started; they go
            // out at once, whatever the ordinary requests hold.
            let (id, detached) = if let Some(id) = conn.detached_queue.pop_front() {
                (id, true)
            } else if conn.in_flight >= max {
                return;
            } else if let Some(id) = conn.queue.pop_front() {
                (id, false)
            } else {
                return;
            };
            let Some((p, body)) = self
                .pending
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
                    return;
                }
                Err(mpsc::error::TrySendError::Full(_)) => {
                    back(conn, id);
                    let conn_id = conn.id;
                    self.overflowed(trapos_id, conn_id);
                    return;
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

    /// Sends `msg` to the computer's connection `conn_id` if it is still the current one. A
    /// full queue unlinks it (see [`State::overflowed`]); a closed one is already unlinking.
    pub fn send_to(&mut self, trapos_id: &str, conn_id: u64, msg: Outbound) {
        let Some(conn) = self
            .computers
            .get(trapos_id)
            .and_then(|c| c.conn.as_ref())
            .filter(|c| c.id == conn_id)
        else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(_)) = conn.tx.try_send(msg) {
            self.overflowed(trapos_id, conn_id);
        }
    }

    /// The connection's outbound queue is full: its socket has not taken a message for as long
    /// as `outbound_queue` messages took to pile up, so the computer is not reading. It is
    /// unlinked like a dropped link (its requests end `disconnected`); dropping the sender ends
    /// the connection task once it has written what it holds.
    pub(crate) fn overflowed(&mut self, trapos_id: &str, conn_id: u64) {
        let limit = self.settings.outbound_queue;
        tracing::warn!(computer = %trapos_id, limit, "unlinked: outbound queue full (the computer is not reading)");
        self.conns.remove(&conn_id);
        self.unlink(
            trapos_id,
            conn_id,
            format!("outbound queue full ({limit} messages): the computer is not reading"),
        );
    }
}

//! The gateway's side of the session: a linked connection reports what its computer says.
//!
//! A [`Link`] is held by the one task that owns a computer's socket. The session reaches that
//! task through the [`Outbound`] channel given at link time; the task reports back through
//! these methods (`reports.rs`). Dropping the link unlinks the computer and fails its pending
//! requests.

use crate::session::LogEvent;
use std::time::SystemTime;

use tokio::sync::mpsc;

mod reports;

use super::Session;
use super::model::{ComputerInfo, Event};
use super::state::{Computer, Conn, Outbound, State};
use trapdesk_proto::protocol::{CLOSE_REPLACED, Hello};

/// One linked connection. Reports go to the computer it linked, as long as it is the current
/// connection for that traposId.
pub struct Link {
    session: Session,
    conn_id: u64,
    trapos_id: String,
    reason: Option<String>,
    /// SHA-256 of the secrets this computer showed it holds (its hello's; the one it enrolled
    /// with): a relabel is judged on them as a hello would be ([`Link::relabel`]). Hashes only:
    /// the secret itself is not kept for the link's life.
    held: Vec<String>,
}

/// What a `label` message did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relabelled {
    /// The computer is known as this traposId from now on.
    Renamed(String),
    /// Nothing changed (the same label, or a name another link holds: logged).
    Unchanged,
    /// The new label is bound (`trapdesk secret add LABEL`) to a secret this computer did not
    /// show: it keeps its old name, and the link is to be closed with `auth_failed`.
    Refused(crate::trust::secrets::Refusal),
}

impl Session {
    /// A computer that tried to link and was turned away (wrong secret, bad or missing `hello`,
    /// another protocol): logged as `refused` (and a line in `trapdesk.log`), so that the
    /// console and `session-log` show who tried, from where and why. `who` is the traposId the
    /// hello claimed, when there was one. A flood is logged at most
    /// [`super::throttle::LINK_REFUSALS_PER_MINUTE`] a minute one by one; the rest are counted,
    /// and the next entry written says how many (see [`super::throttle`]).
    pub fn link_refused(&self, who: Option<&str>, from: Option<std::net::SocketAddr>, why: &str) {
        let note = self.shared.refusals.note();
        if !note.write {
            tracing::debug!(computer = who.unwrap_or("unknown"), "link refused: {why}");
            return;
        }
        if note.left_out > 0 {
            self.log_left_out(note.left_out);
        }
        let from = from.map_or_else(|| "an unknown address".to_owned(), |a| a.to_string());
        // Never the secret itself: `why` names what was wrong, not what was sent.
        tracing::warn!(
            computer = who.unwrap_or("unknown"),
            "link refused from {from}: {why}"
        );
        let mut entry = State::entry(LogEvent::Refused, format!("from {from}: {why}"));
        entry.who = Some(who.unwrap_or("unknown computer").to_owned());
        entry.trapos_id = who.map(str::to_owned);
        entry.status = Some(super::model::Status::Failed);
        self.lock().log(entry);
    }

    /// Logs how many refused links a minute that is over left out, if any (the gateway calls
    /// this every half minute: a flood that stopped is still counted in the log).
    pub fn flush_link_refusals(&self) {
        if let Some(n) = self.shared.refusals.flush() {
            self.log_left_out(n);
        }
    }

    /// The entry that counts refused links not logged one by one.
    fn log_left_out(&self, n: u64) {
        let per = super::throttle::LINK_REFUSALS_PER_MINUTE;
        let detail = format!(
            "since the last one logged (not logged one by one: at most {per} a minute are)"
        );
        tracing::warn!("{n} more links refused {detail}");
        let mut entry = State::entry(LogEvent::Refused, detail);
        entry.who = Some(format!("{n} more"));
        entry.status = Some(super::model::Status::Failed);
        self.lock().log(entry);
    }

    /// Registers a computer that passed the handshake. A computer already linked under the same
    /// traposId is replaced: its socket is told to close with 4002 and its pending requests fail
    /// at once with `disconnected`.
    pub fn link(&self, hello: &Hello, tx: mpsc::Sender<Outbound>) -> Link {
        let trapos_id = hello.trapos_id();
        let mut st = self.lock();
        let conn_id = st.new_conn_id();
        replace(&mut st, &trapos_id);
        let info = ComputerInfo {
            trapos_id: trapos_id.clone(),
            id: hello.computer_id,
            label: hello.label.clone().filter(|l| !l.is_empty()),
            online: true,
            connected_at: SystemTime::now(),
            disconnected_at: None,
            serves: hello.serves.clone(),
            running: 0,
            queued: 0,
            detached: 0,
            last_rtt_ms: None,
            client: hello.client.clone(),
            host: hello.host.clone(),
            max_message: hello.max_message.unwrap_or(131_072),
            machine: Default::default(),
            status: None,
        };
        let conn = Conn {
            id: conn_id,
            tx,
            in_flight: 0,
            queue: Default::default(),
            detached: 0,
            detached_queue: Default::default(),
        };
        let mut back = None;
        match st.computers.get_mut(&trapos_id) {
            Some(c) => {
                c.info = info;
                c.conn = Some(conn);
                back = c.off.take();
            }
            None => {
                let output = st.new_ring(&trapos_id);
                st.computers.insert(
                    trapos_id.clone(),
                    Computer {
                        info,
                        conn: Some(conn),
                        output,
                        off: None,
                    },
                );
            }
        }
        st.computers.connect(conn_id, trapos_id.clone());
        log_linked(&mut st, hello, &trapos_id, back.is_some());
        // Before `Linked` is heard: a view that pulls on it must find no frame of the old link.
        self.screens_relinked(&trapos_id);
        st.emit(Event::Linked {
            trapos_id: trapos_id.clone(),
        });
        drop(st);
        let held = (!hello.secret.is_empty())
            .then(|| crate::trust::hash(&hello.secret))
            .into_iter()
            .collect();
        Link {
            session: self.clone(),
            conn_id,
            trapos_id,
            reason: None,
            held,
        }
    }
}

/// Ends the connection `trapos_id` has, if any, for a new one: its socket is told to close
/// with 4002 and its pending requests fail at once with `disconnected`.
fn replace(st: &mut State, trapos_id: &str) {
    let replaced = st.computers.get_mut(trapos_id).and_then(|c| c.conn.take());
    if let Some(old) = replaced {
        // The old task may already be gone; then it is closed anyway.
        // A full queue cannot take the order; dropping the sender below ends it all the same.
        let _ = old.tx.try_send(Outbound::Close {
            code: CLOSE_REPLACED,
            reason: "replaced".into(),
        });
        st.computers.disconnect(old.id);
        st.fail_conn(old.id);
        let mut entry = State::entry(LogEvent::Unlinked, "replaced by a new connection");
        entry.trapos_id = Some(trapos_id.to_owned());
        st.log(entry);
    }
}

/// The log's `linked` entry, and `back` for a computer that was reported switched off.
fn log_linked(st: &mut State, hello: &Hello, trapos_id: &str, back: bool) {
    let detail = format!(
        "{} ({})",
        hello.client.as_deref().unwrap_or("unknown client"),
        hello.host.as_deref().unwrap_or("unknown host")
    );
    let mut entry = State::entry(LogEvent::Linked, detail);
    entry.trapos_id = Some(trapos_id.to_owned());
    st.log(entry);
    if back {
        // It was reported switched off by a hard abort: say that it is back.
        let mut entry = State::entry(
            LogEvent::Back,
            "on again and linked after it went off during a long chunk",
        );
        entry.trapos_id = Some(trapos_id.to_owned());
        st.log(entry);
    }
}

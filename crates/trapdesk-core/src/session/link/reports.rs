//! What a linked computer reports, applied to the session: answers, lost requests, live
//! output, its label, what it serves, its machine, its round trip; and its link's end.

use crate::session::LogEvent;
use std::borrow::Cow;

use serde_json::Value;
use tokio::sync::mpsc;

use super::{Link, Relabelled};
use crate::session::Session;
use crate::session::model::{Event, RequestError, Stream};
use crate::session::state::{OutputChunk, State};
use trapdesk_client::lua_map;
use trapdesk_proto::protocol::Response;

impl Link {
    pub fn trapos_id(&self) -> &str {
        &self.trapos_id
    }

    /// The computer enrolled on this link and holds the secret hashed `sha256` too.
    pub fn holds(&mut self, sha256: String) {
        self.held.push(sha256);
    }

    /// The computer's label changed while linked (`label`), checked against the label bindings
    /// as a hello with the new label would be ([`Secrets::relabel`]): a computer that linked
    /// with the shared secret, or another computer's, cannot take a label bound with `trapdesk
    /// secret add` by a `label` message after linking. A refused relabel is logged and keeps
    /// the old name; the caller closes the link with `auth_failed`, as the next hello would be.
    ///
    /// [`Secrets::relabel`]: crate::trust::secrets::Secrets::relabel
    pub fn relabel(
        &mut self,
        label: Option<String>,
        secrets: &crate::trust::secrets::Secrets,
    ) -> Relabelled {
        let label = trapdesk_proto::protocol::label::normalise(label.as_deref());
        let (id, old) = {
            let st = self.session.lock();
            match st.computers.get(&self.trapos_id) {
                Some(c) if self.current(&st) => (c.info.id, c.info.label.clone()),
                _ => return Relabelled::Unchanged,
            }
        };
        if let Err(refusal) = secrets.relabel(id, old.as_deref(), label.as_deref(), &self.held) {
            let mut st = self.session.lock();
            let mut entry = State::entry(
                LogEvent::Refused,
                format!(
                    "{} was labelled {:?}: {}",
                    self.trapos_id,
                    label.as_deref().unwrap_or(""),
                    refusal.why()
                ),
            );
            entry.trapos_id = Some(self.trapos_id.clone());
            entry.status = Some(crate::session::model::Status::Failed);
            st.log(entry);
            return Relabelled::Refused(refusal);
        }
        match self.rename(label) {
            Some(now) => Relabelled::Renamed(now),
            None => Relabelled::Unchanged,
        }
    }

    pub(crate) fn conn_id(&self) -> u64 {
        self.conn_id
    }

    /// Whether this connection is still the computer's current one.
    fn current(&self, st: &State) -> bool {
        st.computers.is_live(self.conn_id)
    }

    /// The computer answered a request. A response to an id that is not pending on this
    /// connection (late, duplicate, unknown) is dropped and logged.
    pub fn response(&self, resp: Response) {
        let mut st = self.session.lock();
        let ours = st
            .pending
            .get(&resp.id)
            .is_some_and(|p| p.conn_id == self.conn_id && p.info.sent);
        if !ours && crate::session::stopping::answered_late(&mut st, &resp.id) {
            return;
        }
        if ours && crate::session::stopping::stopped_in_time(&mut st, &resp.id) {
            return;
        }
        if !ours {
            tracing::warn!(
                computer = %self.trapos_id,
                id = %resp.id,
                "dropped a response to a request that is not pending (late, duplicate or unknown)"
            );
            let mut entry = State::entry(
                LogEvent::Dropped,
                format!("response to {} which is not pending", resp.id),
            );
            entry.trapos_id = Some(self.trapos_id.clone());
            entry.request_id = Some(resp.id);
            st.log(entry);
            return;
        }
        // Asked only of text that may hold a position: most answers hold none.
        let mapped = |text: &str| text.contains(".lua") && self.runs_served_client(&st);
        let result = if resp.ok {
            let mut payload = resp
                .payload
                .unwrap_or_else(|| Value::Object(Default::default()));
            // A chunk's error, traceback and output name the served client's lines: name
            // lua/'s, as in the live output.
            for key in ["error", "traceback", "output"] {
                if let Some(Value::String(text)) = payload.get_mut(key)
                    && mapped(text)
                    && let Cow::Owned(t) = lua_map::translate(text)
                {
                    *text = t;
                }
            }
            Ok(payload)
        } else {
            let mut err = resp
                .error
                .unwrap_or_else(|| trapdesk_proto::protocol::ErrorBody {
                    code: "internal".into(),
                    message: "the computer answered ok:false without an error".into(),
                    output: None,
                });
            if mapped(&err.message)
                && let Cow::Owned(m) = lua_map::translate(&err.message)
            {
                err.message = m;
            }
            if let Some(out) = &err.output
                && mapped(out)
                && let Cow::Owned(o) = lua_map::translate(out)
            {
                err.output = Some(o);
            }
            if err.code == "cancelled" {
                Err(RequestError::Cancelled { output: err.output })
            } else {
                Err(RequestError::Remote {
                    code: err.code,
                    message: err.message,
                    output: err.output,
                })
            }
        };
        st.finish(&resp.id, result);
    }

    /// The computer sent no `received` for request `id` within `after_ms`: its
    /// `websocket_message` was dropped from a full event queue. It fails as `lost` now, long
    /// before its own timeout.
    pub fn lost(&self, id: &str, after_ms: u64) {
        let mut st = self.session.lock();
        let ours = st
            .pending
            .get(id)
            .is_some_and(|p| p.conn_id == self.conn_id && p.info.sent);
        if !ours {
            return;
        }
        let message = format!(
            "the computer never got the request (no receipt within {} s): CC keeps at most 256 \
             queued events and drops the rest, and its queue was full; try again",
            after_ms / 1000
        );
        st.finish(
            id,
            Err(RequestError::Lost {
                reason: "no_receipt",
                message,
            }),
        );
    }

    /// Live output of a running request (or of no request, with an unknown id).
    pub fn output(&self, request_id: &str, stream: Stream, text: &str) {
        let mut st = self.session.lock();
        if !self.current(&st) {
            return;
        }
        // A position in the client's own files, as a program prints it (its error, a
        // traceback), names lua/'s line (a position split across two pieces stays as it came).
        let text = &*if text.contains(".lua") && self.runs_served_client(&st) {
            lua_map::translate(text)
        } else {
            Cow::Borrowed(text)
        };
        let known = match st.pending.get_mut(request_id) {
            Some(p) if p.conn_id == self.conn_id => {
                p.live.push(text);
                if let Some(tx) = &p.output_tx {
                    p.output_dropped = offer(tx, p.output_dropped, stream, text);
                }
                if p.quiet {
                    return;
                }
                true
            }
            _ => false,
        };
        let rid = known.then_some(request_id);
        st.push_output(&self.trapos_id, rid, stream, text);
    }

    /// Whether this link's computer runs the client this host serves (its hello named its
    /// version), the one [`lua_map`] describes.
    fn runs_served_client(&self, st: &State) -> bool {
        st.computers
            .get(&self.trapos_id)
            .is_some_and(|c| lua_map::describes(c.info.machine.client_version.as_deref()))
    }

    /// `text` from this link's computer with the served client's positions named in `lua/`
    /// ([`lua_map::translate`]), when it runs the client this host serves; else as it came.
    pub fn translate<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.runs_served_client(&self.session.lock()) {
            lua_map::translate(text)
        } else {
            Cow::Borrowed(text)
        }
    }

    /// The computer changed the request types it serves.
    pub fn serve(&self, types: Vec<String>) {
        let mut st = self.session.lock();
        if !self.current(&st) {
            return;
        }
        let before = match st.computers.get_mut(&self.trapos_id) {
            Some(c) => std::mem::replace(&mut c.info.serves, types.clone()),
            None => Vec::new(),
        };
        st.emit(Event::ComputerChanged {
            trapos_id: self.trapos_id.clone(),
        });
        drop(st);
        self.screen_served(&before, &types);
    }

    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// What the computer is, as its `hello` said (kept apart from [`Session::link`]'s `Hello`,
    /// which many callers build by hand).
    pub fn describe(&self, machine: trapdesk_proto::protocol::MachineInfo) {
        let mut st = self.session.lock();
        if !self.current(&st) {
            return;
        }
        if let Some(c) = st.computers.get_mut(&self.trapos_id) {
            c.info.machine = machine;
        }
        st.emit(Event::ComputerChanged {
            trapos_id: self.trapos_id.clone(),
        });
    }

    /// A heartbeat round trip completed.
    pub fn rtt(&self, ms: u64) {
        let mut st = self.session.lock();
        if !self.current(&st) {
            return;
        }
        if let Some(c) = st.computers.get_mut(&self.trapos_id) {
            c.info.last_rtt_ms = Some(ms);
        }
        st.emit(Event::ComputerChanged {
            trapos_id: self.trapos_id.clone(),
        });
    }

    /// The computer found the largest frame its socket takes (`limit`): shown with the
    /// computer, as the limit its link now works under.
    pub fn max_message(&self, bytes: u64) {
        let mut st = self.session.lock();
        if !self.current(&st) {
            return;
        }
        if let Some(c) = st.computers.get_mut(&self.trapos_id) {
            c.info.max_message = bytes;
        }
        st.emit(Event::ComputerChanged {
            trapos_id: self.trapos_id.clone(),
        });
    }

    /// The computer's label changed while linked (`label`): it is known as `<id>:<label>` from
    /// now on, everywhere a traposId is (the computer list, its scrollback and screen, its
    /// pending requests, name resolution), and the old name stops resolving. An offline entry
    /// already under the new name is this same computer from an earlier link: it is replaced.
    /// Returns the new traposId, or `None` when nothing changed. Unchecked: the gateway goes
    /// through [`Link::relabel`].
    pub(crate) fn rename(&mut self, label: Option<String>) -> Option<String> {
        let label = trapdesk_proto::protocol::label::normalise(label.as_deref());
        let mut st = self.session.lock();
        if !self.current(&st) {
            return None;
        }
        let old = self.trapos_id.clone();
        let mut computer = st.computers.remove(&old)?;
        let id = computer.info.id;
        let new = match &label {
            Some(l) => format!("{id}:{l}"),
            None => format!("{id}:"),
        };
        if new == old {
            st.computers.insert(old, computer);
            return None;
        }
        if st.computers.get(&new).is_some_and(|c| c.conn.is_some()) {
            // Another computer with this id is linked under that name (two worlds share the
            // host): keep both as they are, and say why this one was not renamed.
            st.computers.insert(old.clone(), computer);
            let mut entry = State::entry(
                LogEvent::Relabelled,
                format!("{old} was labelled {new}, which another link holds: still {old}"),
            );
            entry.trapos_id = Some(old);
            entry.status = Some(crate::session::model::Status::Failed);
            st.log(entry);
            return None;
        }
        // An offline entry already under the new name is this computer's from an earlier link.
        st.computers.remove(&new);
        computer.info.trapos_id = new.clone();
        computer.info.label = label;
        st.computers.insert(new.clone(), computer);
        st.computers.connect(self.conn_id, new.clone());
        for p in st.pending.values_mut() {
            if p.info.trapos_id == old {
                p.info.trapos_id = new.clone();
            }
        }
        let mut entry = State::entry(LogEvent::Relabelled, format!("{old} is now {new}"));
        entry.trapos_id = Some(new.clone());
        st.log(entry);
        st.emit(Event::Unlinked {
            trapos_id: old.clone(),
            reason: format!("relabelled: now {new}"),
        });
        st.emit(Event::Linked {
            trapos_id: new.clone(),
        });
        drop(st);
        self.session.screens_renamed(&old, &new);
        self.trapos_id = new.clone();
        Some(new)
    }

    /// Sets the reason recorded when this link is dropped.
    pub fn set_reason(&mut self, reason: impl Into<String>) {
        self.reason = Some(reason.into());
    }
}

/// Offers a live-output chunk to a streaming request's reader without waiting: the reader
/// may be slow (an agent's SSE stream nobody reads) and the computer must not wait on it.
/// When the buffer is full the chunk is dropped and counted; the next chunk that fits is
/// preceded by a line saying how many were dropped. The scrollback and the result still
/// carry the output. Returns the count still unreported.
pub(crate) fn offer(
    tx: &mpsc::Sender<OutputChunk>,
    dropped: u64,
    stream: Stream,
    text: &str,
) -> u64 {
    use mpsc::error::TrySendError;
    if dropped > 0 {
        // Needs two places: the note and the chunk, or the note would take the chunk's.
        if tx.capacity() < 2 {
            return dropped + 1;
        }
        let note = OutputChunk {
            stream: Stream::Err,
            text: format!(
                "[trapdesk: {dropped} output chunks dropped here: the reader fell behind]\n"
            ),
        };
        if tx.try_send(note).is_err() {
            return dropped + 1;
        }
    }
    match tx.try_send(OutputChunk {
        stream,
        text: text.to_owned(),
    }) {
        Ok(()) => 0,
        // Stopped listening: nothing more to report to it.
        Err(TrySendError::Closed(_)) => 0,
        Err(TrySendError::Full(_)) => 1,
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let mut st = self.session.lock();
        if st.computers.disconnect(self.conn_id).is_none() {
            // Replaced: the new connection already took over and failed our requests.
            return;
        }
        let reason = self
            .reason
            .take()
            .unwrap_or_else(|| "connection closed".into());
        st.unlink(&self.trapos_id, self.conn_id, reason);
    }
}

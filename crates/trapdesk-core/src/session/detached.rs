//! Detached runs and what outlives a request: runs that keep going when their requester, their
//! link or the host goes away, the results `wait-request` gives after the end, and the
//! adoption of the runs a computer kept through a dropped link (docs/protocol.md, "Detached
//! runs"; docs/mcp.md, "Detached runs").
//!
//! What the state keeps of them is `store` ([`RunStore`]: the results for `wait-request`, in
//! `finished`, and the runs' record); what a hello's claim of runs comes to, in `claim`.

use crate::session::LogEvent;
use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::Session;
use super::link::Link;
use super::model::{Event, RequestError, Stream};
use super::state::{ORPHANED, Outbound, Pending, State};
use trapdesk_proto::protocol::{DetachedRun, Kind};

mod claim;
mod fate;
mod finished;
mod store;
mod taken;

use claim::{Claim, Dropped, computer_of, issued_before};
pub use fate::Fate;
pub use finished::{FINISHED_FOR, FINISHED_KEPT, FinishedRequest, RequestState};
pub(crate) use store::RunStore;
use taken::{taken_back_header, taken_back_info, terms_of};

/// Detached runs whose link is down that the host keeps pending, all computers together: past
/// it, the oldest ends as `lost`. Without it, a computer that takes back runs, drops its link
/// and links again under a new label (a new traposId) would leave runs pending without end.
pub const ORPHANS_KEPT: usize = 1024;
/// What was dropped of hellos' claims (`detached`) is logged at most once per this, with the
/// count since the last time.
pub const CLAIMS_LOGGED_EVERY: Duration = Duration::from_secs(60);

/// Who a run is attributed to when no record says who started it: the computer that named it,
/// as an agent would be (never the person: what a computer says of a run is a claim).
pub fn computer_origin(trapos_id: &str) -> super::Origin {
    super::Origin::Agent(format!("computer {trapos_id}"))
}

impl Session {
    /// Takes back the detached runs a computer names in its hello (`runs`) on its new link.
    /// The list is a claim: one this host still has pending goes on under its requestId; one
    /// it does not have (the host restarted) is taken back only when its id is one an earlier
    /// start of this host could have given, and only while the computer has fewer than
    /// `max_detached`; it is attributed to whoever the host's record (`history::runs`) says
    /// started it, else to the computer, never to what the hello says (`by`), and gets the
    /// deadline it was started with (the record's), else the longest any request gets
    /// (`max_request_timeout`). The rest is dropped, and logged at most once a minute. A
    /// pending (or recorded) detached run of this computer that it does not name is gone (it
    /// restarted meanwhile) and ends as `lost`. Output and answers come on the new link like
    /// any request's.
    pub fn adopt(&self, link: &Link, runs: Vec<DetachedRun>) {
        let trapos_id = link.trapos_id().to_owned();
        let conn_id = link.conn_id();
        let mut st = self.lock();
        let named: HashSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        let gone: Vec<String> = st
            .pending
            .values()
            .filter(|p| {
                p.detached
                    && p.conn_id == ORPHANED
                    && p.info.trapos_id == trapos_id
                    && !named.contains(p.info.request_id.as_str())
            })
            .map(|p| p.info.request_id.clone())
            .collect();
        for id in gone {
            st.finish(&id, Err(lost()));
        }
        // Recorded as running here by an earlier start, and not named: gone with the computer's
        // restart, which the record now says.
        let forgotten: Vec<String> = st
            .store
            .runs()
            .running_on(&trapos_id)
            .into_iter()
            .filter(|id| !st.pending.contains_key(id) && !named.contains(id.as_str()))
            .collect();
        st.store.runs_mut().ended_all(
            forgotten.iter().map(String::as_str),
            "lost",
            Some(RESTARTED),
        );
        let mut claim = Claim::default();
        let mut seen = HashSet::new();
        let mut adopted = Vec::new();
        for run in &runs {
            if !seen.insert(run.id.as_str()) {
                claim.refuse(Dropped::Twice);
                continue;
            }
            match take_back(&mut st, &trapos_id, conn_id, run) {
                Ok(Some(deadline)) => {
                    claim.taken += 1;
                    adopted.push(deadline);
                }
                Ok(None) => claim.taken += 1,
                Err(why) => claim.refuse(why),
            }
        }
        let records: Vec<_> = adopted.iter().filter_map(|a| a.record.clone()).collect();
        st.store.runs_mut().adopted(records);
        for a in adopted {
            if let Some((at, timeout)) = a.deadline {
                // A deadline's key is unique by its request number, which runs taken back do
                // not take: `set_deadline` sets them a nanosecond apart instead.
                self.expire_after(&mut st, &a.id, at, timeout);
            }
        }
        log_claim(&mut st, &trapos_id, runs.len(), &claim);
        st.pump(&trapos_id);
    }

    /// What the host's record says of detached run `id` (see `history::runs`): who started
    /// it, when, and how it ended; `None` when this host never recorded it.
    pub fn run_record(&self, id: &str) -> Option<super::history::runs::RunRecord> {
        self.lock().store.runs().lookup(id)
    }

    /// How many entries the session keeps per computer and per request, for the bounds in
    /// RELIABILITY.md ("Adopted runs and per-id bookkeeping").
    pub fn bookkeeping(&self) -> Bookkeeping {
        let st = self.lock();
        let (runs_running, runs_ended) = st.store.runs().counts();
        Bookkeeping {
            computers: st.computers.len(),
            pending: st.pending.len(),
            orphaned: st
                .pending
                .values()
                .filter(|p| p.conn_id == ORPHANED)
                .count(),
            seq_floors: st.seq_floors(),
            runs_running,
            runs_ended,
        }
    }
}

/// Entry counts of the session's bookkeeping (see [`Session::bookkeeping`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bookkeeping {
    /// Linked computers and the recently unlinked ones kept for display.
    pub computers: usize,
    /// Pending requests, detached runs included.
    pub pending: usize,
    /// Pending detached runs whose link is down (at most [`ORPHANS_KEPT`]).
    pub orphaned: usize,
    /// Computers whose own scrollback numbering is kept (at most `SEQ_FLOORS_KEPT`).
    pub seq_floors: usize,
    /// Detached runs recorded running and ended (see `history::runs`).
    pub runs_running: usize,
    pub runs_ended: usize,
}

/// A run taken back that the host did not have pending: its deadline to set, and its record
/// when no record had it.
struct Adopted {
    id: String,
    deadline: Option<(Instant, Duration)>,
    record: Option<super::history::runs::RunRecord>,
}

/// A `lost` run's reason when its computer linked again without it.
const RESTARTED: &str = "computer_restarted";

fn lost() -> RequestError {
    RequestError::Lost {
        reason: RESTARTED,
        message: "the computer linked again without this detached run: it restarted \
                  (or its client did) while the link was down, and the run is gone \
                  (a client from before detached runs keeps none: re-run the \
                  installer there)"
            .into(),
    }
}

/// Takes back one named run: `Ok(None)` for one this host had pending, `Ok(Some(_))` for
/// one adopted, `Err` why it was not.
fn take_back(
    st: &mut State,
    trapos_id: &str,
    conn_id: u64,
    run: &DetachedRun,
) -> Result<Option<Adopted>, Dropped> {
    let (cancel, adopted) = match st.pending.get_mut(&run.id) {
        Some(p) if p.detached && p.info.trapos_id == trapos_id && p.conn_id != conn_id => {
            p.conn_id = conn_id;
            (p.info.cancel_requested, None)
        }
        // An id this host uses for something else cannot be this run (ids are never reused
        // across restarts, so this is a confused computer): leave it alone.
        Some(_) => return Err(Dropped::NotItsOwn),
        None if st.store.ended_here(&run.id) => {
            // It ended here while the link was down (cancelled, timed out): the computer
            // still runs it, so it is told to stop; its answer is dropped as not pending.
            st.send_to(trapos_id, conn_id, Outbound::Cancel { id: run.id.clone() });
            return Ok(None);
        }
        None => (false, Some(adopt_unknown(st, trapos_id, conn_id, run)?)),
    };
    if let Some(c) = st.computers.get_mut(trapos_id)
        && let Some(conn) = c.conn.as_mut()
    {
        conn.detached += 1;
        c.show_counts();
    }
    if let Some(p) = st.pending.get_mut(&run.id) {
        p.dropped_unlinked += run.dropped_bytes;
    }
    if run.dropped_bytes > 0 {
        let note = format!(
            "[trapdesk: the computer dropped {} bytes of this run's output while unlinked]\n",
            run.dropped_bytes
        );
        st.push_output(trapos_id, Some(&run.id), Stream::Err, &note);
    }
    let mut entry = State::entry(
        LogEvent::Adopted,
        match run.status.as_deref() {
            Some("finished") => "taken back after the link came back: it finished meanwhile",
            _ => "taken back after the link came back: still running",
        },
    );
    entry.trapos_id = Some(trapos_id.to_owned());
    entry.request_id = Some(run.id.clone());
    if let Some(p) = st.pending.get(&run.id) {
        entry.who = Some(p.info.origin.name().to_owned());
        entry.what = Some(p.info.kind.to_string());
    }
    st.log(entry);
    if cancel {
        // Cancelled while its link was down: the computer hears it now.
        st.send_to(trapos_id, conn_id, Outbound::Cancel { id: run.id.clone() });
    }
    Ok(adopted)
}

/// A run this host does not have pending (it restarted meanwhile), if it is one to take
/// back (see [`Session::adopt`]): pending again under its id, on behalf of whoever the
/// record says started it, with the deadline it had, and nobody waiting.
fn adopt_unknown(
    st: &mut State,
    trapos_id: &str,
    conn_id: u64,
    run: &DetachedRun,
) -> Result<Adopted, Dropped> {
    if !issued_before(&run.id, st.run_tag()) {
        return Err(Dropped::NotOurs);
    }
    let record = st.store.runs().running(&run.id).cloned();
    if record
        .as_ref()
        .is_some_and(|r| computer_of(&r.trapos_id) != computer_of(trapos_id))
    {
        return Err(Dropped::NotItsOwn);
    }
    let kind = match &record {
        Some(r) => r.kind,
        None => run
            .request
            .parse::<Kind>()
            .map_err(|_| Dropped::UnknownKind)?,
    };
    if st.detached_on(trapos_id) >= st.settings.max_detached {
        return Err(Dropped::OverLimit);
    }
    let now = Instant::now();
    let wall = SystemTime::now();
    let terms = terms_of(
        record.as_ref(),
        trapos_id,
        &run.id,
        kind,
        (now, wall),
        st.settings.max_request_timeout,
    );
    let info = taken_back_info(&run.id, trapos_id, kind, &terms, (now, wall));
    if let Some(c) = st.computers.get_mut(trapos_id) {
        c.output
            .push(taken_back_header(&info, terms.origin.clone()));
    }
    st.pending.insert(
        run.id.clone(),
        Pending {
            info: info.clone(),
            conn_id,
            body: None,
            as_written: None,
            waiter: None,
            output_tx: None,
            output_dropped: 0,
            timer: None,
            sent_at: Some(now),
            live: Default::default(),
            cancel_by: None,
            quiet: false,
            local: false,
            detached: true,
            dropped_unlinked: 0,
            timed_out: None,
            stopped: None,
        },
    );
    st.emit(Event::RequestStarted { info });
    Ok(Adopted {
        id: run.id.clone(),
        deadline: terms.deadline,
        record: terms.record,
    })
}

/// Logs what a hello's claim came to when some of it was dropped: at most once per
/// [`CLAIMS_LOGGED_EVERY`] (with the count since), so a flood of hellos writes a line a
/// minute, not one per run.
fn log_claim(st: &mut State, trapos_id: &str, named: usize, claim: &Claim) {
    let dropped = claim.dropped() as u64;
    if dropped == 0 {
        return;
    }
    let Some(before) = st.store.claims_to_log(dropped) else {
        return;
    };
    let earlier = if before > 0 {
        format!(
            " ({before} more dropped from other hellos since the last such line, a minute \
             or less before)"
        )
    } else {
        String::new()
    };
    let mut entry = State::entry(
        LogEvent::Detached,
        format!(
            "of the detached runs its hello named ({named} read, at most {}): {} taken back, {dropped} dropped ({}){earlier}",
            trapdesk_proto::protocol::NAMED_READ,
            claim.taken,
            claim.reasons()
        ),
    );
    entry.trapos_id = Some(trapos_id.to_owned());
    st.log(entry);
}

impl Session {
    /// A cursor into a computer's output as this host start knows it: one at or past the next
    /// line's number cannot be of this start (numbers only grow; a restarted host counts from
    /// 1 again), so it reads from the oldest kept line.
    pub fn output_cursor(&self, trapos_id: &str, after: u64) -> u64 {
        let st = self.lock();
        match st.computers.get(trapos_id) {
            Some(c) if after >= c.output.next_seq() => 0,
            _ => after,
        }
    }

    /// Where request `id` stands: pending, or ended with its result while that is kept
    /// ([`FINISHED_KEPT`], [`FINISHED_FOR`]); `None` when the host does not know it.
    pub fn request_state(&self, id: &str) -> Option<RequestState> {
        let mut st = self.lock();
        if let Some(p) = st.pending.get(id) {
            return Some(RequestState::Running {
                trapos_id: p.info.trapos_id.clone(),
                kind: p.info.kind,
            });
        }
        st.store
            .finished(id)
            .map(|f| RequestState::Ended(Box::new(f.clone())))
    }
}

#[cfg(test)]
#[path = "detached_tests.rs"]
mod tests;

//! What became of a request that is neither pending nor kept ([`Fate`]): lost (and why),
//! ended with its result no longer kept, or never issued here. The record of detached runs
//! and of this host's start tags (`history::runs`) tells them apart.

use crate::session::LogEvent;
use crate::session::Session;
use crate::session::history::runs::Runs;
use crate::session::state::State;

/// What became of a request that is neither pending nor kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// A detached run this host no longer follows: `reason` is one of `LOST_REASONS`.
    Lost {
        reason: String,
        trapos_id: String,
        message: String,
    },
    /// Issued by this host; it ended and its result is no longer kept.
    Expired {
        trapos_id: Option<String>,
        message: String,
    },
    /// An id this host never issued.
    Unknown,
}

impl Session {
    /// What became of request `id`, which is neither pending nor kept; logged (`lost`,
    /// `expired`, `unknown_request`).
    pub fn fate_of(&self, id: &str) -> Fate {
        let mut st = self.lock();
        let fate = st.fate(id);
        let (event, trapos_id, detail) = match &fate {
            Fate::Lost {
                reason,
                trapos_id,
                message,
            } => (
                LogEvent::Lost,
                Some(trapos_id.clone()),
                format!("{reason}: {message}"),
            ),
            Fate::Expired { trapos_id, message } => {
                (LogEvent::Expired, trapos_id.clone(), message.clone())
            }
            Fate::Unknown => (
                LogEvent::UnknownRequest,
                None,
                "asked for a request id this host never issued".to_owned(),
            ),
        };
        let mut entry = State::entry(event, detail);
        entry.trapos_id = trapos_id;
        entry.request_id = Some(id.to_owned());
        st.log(entry);
        fate
    }
}

/// What became of `id` as the record of detached runs and this start's tag (`run_tag`, with
/// the next request number it gives) tell.
pub(super) fn fate(runs: &Runs, id: &str, run_tag: &str, next_request: u64) -> Fate {
    if let Some(r) = runs.lookup(id) {
        let t = r.trapos_id.clone();
        return match r.ended {
            Some(end) if end.code == "lost" => {
                let reason = end.reason.unwrap_or_else(|| "computer_restarted".into());
                let message = lost_message(&reason, id, &t);
                Fate::Lost {
                    reason,
                    trapos_id: t,
                    message,
                }
            }
            Some(end) => Fate::Expired {
                message: format!(
                    "detached run {id} on {t} ended ({}) and its result is no longer kept \
                         (15 minutes, the last 64 detached runs); its lines may still be in \
                         computer-output",
                    end.code
                ),
                trapos_id: Some(t),
            },
            None => Fate::Lost {
                message: lost_message("not_followed", id, &t),
                reason: "not_followed".into(),
                trapos_id: t,
            },
        };
    }
    let Some((tag, n)) = id
        .strip_prefix("h-")
        .and_then(|rest| rest.split_once('-'))
        .and_then(|(tag, n)| Some((tag, n.parse::<u64>().ok()?)))
    else {
        return Fate::Unknown;
    };
    let message = if tag == run_tag && n >= 1 && n < next_request {
        format!(
            "request {id} ended and its result is no longer kept (15 minutes, the last 64 \
                 requests of its sort); its lines may still be in computer-output"
        )
    } else if tag != run_tag && runs.issued(tag) {
        format!(
            "request {id} was issued before this host restarted: a request that is not \
                 detached ends with its host, and no result is kept across a restart"
        )
    } else {
        return Fate::Unknown;
    };
    Fate::Expired {
        trapos_id: None,
        message,
    }
}

fn lost_message(reason: &str, id: &str, t: &str) -> String {
    match reason {
        "host_restarted" => format!(
            "detached run {id} ended with its host: {t} was an emulated computer in the host's \
             own process (--demo), which a restart ends"
        ),
        "not_followed" => format!(
            "detached run {id} was started by an earlier start of this host, and {t} has not \
             linked again with it since: it may still run there, and is followed again when \
             {t} names it in its next hello"
        ),
        "no_receipt" => format!("the computer never received request {id} (no receipt)"),
        _ => format!(
            "{t} linked again without detached run {id}: it restarted while the link was \
             down, and the run is gone"
        ),
    }
}

impl Session {
    /// Computers that live in this host's process (`--demo`), by id: a detached run on one
    /// is recorded as ending with the host (see `history::runs`).
    pub fn mark_in_process(&self, ids: impl IntoIterator<Item = u64>) {
        self.lock().store.mark_in_process(ids);
    }
}

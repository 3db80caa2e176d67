//! What a run taken back after a host restart is (see `State::adopt_unknown`): on whose
//! behalf, with what deadline, and how its scrollback header says so.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::computer_origin;
use crate::session::history::runs::RunRecord;
use crate::session::model::{Origin, OutputEntry, PendingInfo, StartEntry, epoch_ms};
use trapdesk_proto::protocol::Kind;

/// On whose behalf and with what deadline a run taken back is pending, and the record to keep
/// of it when the host had none.
pub(super) struct Terms {
    pub origin: Origin,
    pub timeout_ms: u64,
    pub deadline: Option<(Instant, Duration)>,
    pub record: Option<RunRecord>,
}

/// On whose behalf and with what deadline a run taken back after a restart is pending:
/// as the host's record of it says, else as the computer's, with the longest deadline.
pub(super) fn terms_of(
    record: Option<&RunRecord>,
    trapos_id: &str,
    id: &str,
    kind: Kind,
    (now, wall): (Instant, SystemTime),
    max_timeout: Duration,
) -> Terms {
    match record {
        Some(r) if r.timeout_ms == 0 => Terms {
            origin: r.origin.clone(),
            timeout_ms: 0,
            deadline: None,
            record: None,
        },
        Some(r) => {
            let timeout = Duration::from_millis(r.timeout_ms);
            let started = std::time::UNIX_EPOCH + Duration::from_millis(r.started_ms);
            let ran = wall.duration_since(started).unwrap_or_default();
            let left = timeout.saturating_sub(ran).max(Duration::from_millis(1));
            Terms {
                origin: r.origin.clone(),
                timeout_ms: r.timeout_ms,
                deadline: Some((now + left, timeout)),
                record: None,
            }
        }
        None => {
            let origin = computer_origin(trapos_id);
            let timeout = max_timeout;
            let ms = timeout.as_millis() as u64;
            let rec = RunRecord {
                id: id.to_owned(),
                trapos_id: trapos_id.to_owned(),
                kind,
                origin: origin.clone(),
                started_ms: epoch_ms(wall),
                timeout_ms: ms,
                in_process: false,
                ended: None,
            };
            Terms {
                origin,
                timeout_ms: ms,
                deadline: Some((now + timeout, timeout)),
                record: Some(rec),
            }
        }
    }
}

/// What is shown of a run taken back, pending again on `terms`.
pub(super) fn taken_back_info(
    id: &str,
    trapos_id: &str,
    kind: Kind,
    terms: &Terms,
    (now, wall): (Instant, SystemTime),
) -> PendingInfo {
    PendingInfo {
        request_id: id.to_owned(),
        trapos_id: trapos_id.to_owned(),
        origin: terms.origin.clone(),
        kind,
        summary: format!("{kind} (detached, taken back after a host restart)"),
        started_at: wall,
        started: now,
        deadline: terms
            .deadline
            .map_or(now + crate::session::NO_DEADLINE, |d| d.0),
        timeout_ms: terms.timeout_ms,
        no_deadline: terms.deadline.is_none(),
        sent: true,
        cancel_requested: false,
        awaiting_approval: false,
    }
}

/// The scrollback header of a run taken back.
pub(super) fn taken_back_header(info: &PendingInfo, origin: Origin) -> OutputEntry {
    OutputEntry::Start(Box::new(StartEntry {
        request_id: info.request_id.clone(),
        origin,
        kind: info.kind,
        summary: info.summary.clone(),
        at: info.started_at,
    }))
}

//! The session log ([`Log`]): every entry numbered once, written to the transcript (or, when
//! that is off, to the history), kept in the recent log and told to live views.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::broadcast;

use crate::config::Settings;
use crate::session::LogEvent;
use crate::session::history::History;
use crate::session::model::{Event, LogEntry, epoch_ms};
use crate::session::transcript::{Extra, Transcript};

pub(crate) struct Log {
    /// The newest entries, at most `recent_events`.
    recent: VecDeque<LogEntry>,
    /// The next entry's number.
    next: u64,
    transcript: Transcript,
}

/// What a log entry is written with: the settings, the history, the live views.
pub(super) struct Sinks<'a> {
    pub settings: &'a Settings,
    pub history: Option<&'a History>,
    pub events: &'a broadcast::Sender<Event>,
}

impl Log {
    /// The log of a new session, and the history it writes to with the first number of this
    /// start's output (see `State::new`): with `persist`, the transcript is written to the data
    /// directory, and with `history` on, the log starts with what `history.db` kept.
    pub(super) fn open(settings: &Settings, persist: bool) -> (Log, Option<Arc<History>>, u64) {
        let history = (persist && settings.history)
            .then(|| match History::open(&settings.data_dir, settings) {
                Ok(h) => Some(Arc::new(h)),
                Err(e) => {
                    tracing::warn!("history off: {e}");
                    None
                }
            })
            .flatten();
        let transcript = Transcript::open(
            persist.then_some(settings.data_dir.as_path()),
            settings.transcript_max_bytes,
            settings.transcript_keep,
            settings.transcript_queue,
            history.clone(),
            settings.transcript_full_text,
        );
        let first_seq = history.as_ref().map_or(1, |h| h.first_seq());
        let recent: VecDeque<LogEntry> = history
            .as_ref()
            .map(|h| h.recent_log(settings.recent_events).into())
            .unwrap_or_default();
        let log = Log {
            recent,
            next: first_seq,
            transcript,
        };
        (log, history, first_seq)
    }

    pub(super) fn recent(&self) -> &VecDeque<LogEntry> {
        &self.recent
    }

    /// Logs an entry whose transcript line carries more than the log keeps (see [`Extra`]).
    pub(super) fn write(&mut self, mut entry: LogEntry, mut extra: Extra, to: &Sinks) {
        entry.seq = self.next;
        self.next += 1;
        entry.time_ms = epoch_ms(SystemTime::now());
        let failed = if self.transcript.is_on() {
            // The writer thread makes the line (off the session's lock) and hands it to the
            // history too: it gets its own copy of the entry, which the recent log and the live
            // views keep too.
            self.transcript.append(entry.clone(), extra)
        } else {
            // No transcript file (or its writer stopped): the history still gets the line, with
            // big payloads kept as their size, hash and head (docs/security.md).
            if let Some(h) = to.history {
                if !to.settings.transcript_full_text
                    && let Some(args) = &extra.args
                    && crate::session::history::trim::needs_trim(args)
                {
                    extra.args = Some(crate::session::history::trim::trim(args));
                }
                if let Some(line) = crate::session::transcript::line(&entry, &extra) {
                    h.log(entry.seq, entry.time_ms, line);
                }
            }
            None
        };
        self.remember(entry, to);
        if let Some(why) = failed {
            // Said once, where the person and agents look (console log, session-log), not only
            // in the tracing log: the transcript is off from here on, requests carry on.
            let mut alarm = super::State::entry(
                LogEvent::TranscriptFailed,
                format!(
                    "the transcript in {} stopped: {why}; requests are still served, but nothing more is recorded there",
                    to.settings.data_dir.display()
                ),
            );
            alarm.seq = self.next;
            self.next += 1;
            alarm.time_ms = epoch_ms(SystemTime::now());
            self.remember(alarm, to);
        }
    }

    /// Keeps an entry in the recent log and tells live views, only when one is there (the
    /// console, a `wait-request`): a host without a console served every agent call copies of
    /// each log entry for nobody.
    fn remember(&mut self, entry: LogEntry, to: &Sinks) {
        if to.events.receiver_count() > 0 {
            // No subscriber is fine: events are for live views only.
            let _ = to.events.send(Event::Logged {
                entry: entry.clone(),
            });
        }
        self.recent.push_back(entry);
        while self.recent.len() > to.settings.recent_events {
            self.recent.pop_front();
        }
    }
}

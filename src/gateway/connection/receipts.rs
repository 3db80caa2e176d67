//! The receipt deadline: the requests sent on a link whose `received` has not come, and which
//! of them are overdue (docs/protocol.md, "Receipts").

use std::collections::VecDeque;
use std::time::Duration;

use super::super::protocol::RECEIPT_DEADLINE_MS;

/// How long a request may go without its `received`.
pub(super) const RECEIPT_DEADLINE: Duration = Duration::from_millis(RECEIPT_DEADLINE_MS);

/// The requests sent on a link whose `received` has not come, oldest first.
#[derive(Default)]
pub(super) struct Receipts {
    pub(super) sent: VecDeque<(String, tokio::time::Instant)>,
    /// The client sends receipts (it sent `limit`): overdue requests are lost. Until then they
    /// are only forgotten.
    pub(super) held: bool,
}

impl Receipts {
    pub(super) fn done(&mut self, id: &str) {
        if let Some(i) = self.sent.iter().position(|(s, _)| s == id) {
            self.sent.remove(i);
        }
    }

    /// Takes the requests past their deadline: the ones to fail, when receipts are held.
    pub(super) fn overdue(&mut self) -> Vec<String> {
        let now = tokio::time::Instant::now();
        let mut lost = Vec::new();
        while let Some((_, at)) = self.sent.front() {
            if *at + RECEIPT_DEADLINE > now {
                break;
            }
            if let Some((id, _)) = self.sent.pop_front()
                && self.held
            {
                lost.push(id);
            }
        }
        lost
    }

    pub(super) fn next_due(&self) -> Option<tokio::time::Instant> {
        self.sent.front().map(|(_, at)| *at + RECEIPT_DEADLINE)
    }
}

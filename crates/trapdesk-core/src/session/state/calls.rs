//! Agents' tool calls kept for the activity pane ([`ToolCalls`]): numbered once each, the
//! newest [`TOOL_CALLS_KEPT`] kept.

use std::collections::VecDeque;

use crate::session::model::ToolCall;

/// Tool calls kept for the activity pane.
const TOOL_CALLS_KEPT: usize = 500;

pub(crate) struct ToolCalls {
    /// Oldest first.
    kept: VecDeque<ToolCall>,
    /// The next call's number.
    next: u64,
}

impl Default for ToolCalls {
    fn default() -> ToolCalls {
        ToolCalls {
            kept: VecDeque::new(),
            next: 1,
        }
    }
}

impl ToolCalls {
    /// A new call's number.
    pub(crate) fn next_id(&mut self) -> u64 {
        let id = self.next;
        self.next += 1;
        id
    }

    /// Keeps a call, or replaces the one of its number.
    pub(crate) fn record(&mut self, call: ToolCall) {
        if let Some(existing) = self.find_mut(call.call_id) {
            *existing = call;
        } else {
            self.kept.push_back(call);
            while self.kept.len() > TOOL_CALLS_KEPT {
                self.kept.pop_front();
            }
        }
    }

    /// The kept call of number `id`. Newest last, and the call looked for is nearly always one
    /// of the newest: searched from the back rather than through up to 500 older ones.
    pub(crate) fn find_mut(&mut self, id: u64) -> Option<&mut ToolCall> {
        self.kept.iter_mut().rev().find(|c| c.call_id == id)
    }

    /// The kept calls, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &ToolCall> {
        self.kept.iter()
    }
}

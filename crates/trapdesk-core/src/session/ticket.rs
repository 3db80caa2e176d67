//! A started request, as its caller holds it.

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::Session;
use super::model::{Ending, RequestError};
use super::state::OutputChunk;

/// A started request. Dropping it before the outcome arrives cancels the request, so a caller
/// that goes away (an agent closing its stream) does not leave work running for nobody.
pub struct Ticket {
    /// The request's id on the wire and everywhere else.
    pub id: String,
    /// The computer it runs on.
    pub trapos_id: String,
    pub(super) outcome: Option<oneshot::Receiver<Ending>>,
    pub(super) output: Option<mpsc::Receiver<OutputChunk>>,
    pub(super) session: Session,
}

/// What a waiter gets when the session went away without an answer.
fn gone() -> Ending {
    Ending {
        result: Err(RequestError::ShuttingDown),
        output: None,
        output_bytes: 0,
        output_lines: 0,
        cancelled_by: None,
        elapsed_ms: 0,
        stopped: None,
    }
}

impl Ticket {
    /// Live output, when the request was started with [`RequestSpec::streaming`].
    pub fn output(&mut self) -> Option<&mut mpsc::Receiver<OutputChunk>> {
        self.output.as_mut()
    }

    /// Waits for the outcome: the computer's answer payload, or why there is none.
    ///
    /// # Errors
    /// A [`RequestError`]: timeout, disconnect, cancellation, or a dispatch failure.
    pub async fn wait(self) -> Result<Value, RequestError> {
        self.wait_ending().await.result
    }

    /// Waits for the outcome with what the host knows beyond the answer: the output received
    /// so far (for failures without an answer), who cancelled, how long it took.
    pub async fn wait_ending(mut self) -> Ending {
        let ending = match self.outcome.as_mut() {
            Some(rx) => rx.await.unwrap_or_else(|_| gone()),
            None => gone(),
        };
        // Only now is the request over; dropped mid-wait, `Drop` cancels it.
        self.outcome = None;
        ending
    }

    /// Waits for the outcome while forwarding live output to `on_output`.
    ///
    /// # Errors
    /// As [`Ticket::wait`].
    pub async fn wait_with_output(
        self,
        on_output: impl FnMut(OutputChunk),
    ) -> Result<Value, RequestError> {
        self.wait_ending_with_output(on_output).await.result
    }

    /// [`Ticket::wait_ending`] while forwarding live output to `on_output`.
    pub async fn wait_ending_with_output(
        mut self,
        mut on_output: impl FnMut(OutputChunk),
    ) -> Ending {
        let mut out = self.output.take();
        let ending = {
            let Some(rx) = self.outcome.as_mut() else {
                return gone();
            };
            loop {
                let Some(chunks) = out.as_mut() else {
                    break rx.await.unwrap_or_else(|_| gone());
                };
                tokio::select! {
                    biased;
                    chunk = chunks.recv() => match chunk {
                        Some(c) => on_output(c),
                        None => out = None,
                    },
                    result = &mut *rx => {
                        // Output sent before the outcome is still queued: deliver it first.
                        while let Ok(c) = chunks.try_recv() {
                            on_output(c);
                        }
                        break result.unwrap_or_else(|_| gone());
                    }
                }
            }
        };
        self.outcome = None;
        ending
    }
}

impl Ticket {
    /// Lets the request run on without this ticket: a detached run, which only its end or a
    /// cancel ends. Its outcome is still logged, and `wait-request` gives it.
    pub fn detach(mut self) {
        self.outcome = None;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.outcome.is_some() {
            self.session.abandon(&self.id);
        }
    }
}

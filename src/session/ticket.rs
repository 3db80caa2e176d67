//! A started request, as its caller holds it.

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::Session;
use super::model::RequestError;
use super::state::OutputChunk;

/// A started request. Dropping it before the outcome arrives cancels the request, so a caller
/// that goes away (an agent closing its stream) does not leave work running for nobody.
pub struct Ticket {
    /// The request's id on the wire and everywhere else.
    pub id: String,
    /// The computer it runs on.
    pub trapos_id: String,
    pub(super) outcome: Option<oneshot::Receiver<Result<Value, RequestError>>>,
    pub(super) output: Option<mpsc::UnboundedReceiver<OutputChunk>>,
    pub(super) session: Session,
}

impl Ticket {
    /// Live output, when the request was started with [`RequestSpec::streaming`].
    pub fn output(&mut self) -> Option<&mut mpsc::UnboundedReceiver<OutputChunk>> {
        self.output.as_mut()
    }

    /// Waits for the outcome: the computer's answer payload, or why there is none.
    ///
    /// # Errors
    /// A [`RequestError`]: timeout, disconnect, cancellation, or a dispatch failure.
    pub async fn wait(mut self) -> Result<Value, RequestError> {
        let result = match self.outcome.as_mut() {
            Some(rx) => rx.await.unwrap_or(Err(RequestError::ShuttingDown)),
            None => Err(RequestError::ShuttingDown),
        };
        // Only now is the request over; dropped mid-wait, `Drop` cancels it.
        self.outcome = None;
        result
    }

    /// Waits for the outcome while forwarding live output to `on_output`.
    ///
    /// # Errors
    /// As [`Ticket::wait`].
    pub async fn wait_with_output(
        mut self,
        mut on_output: impl FnMut(OutputChunk),
    ) -> Result<Value, RequestError> {
        let mut out = self.output.take();
        let result = {
            let Some(rx) = self.outcome.as_mut() else {
                return Err(RequestError::ShuttingDown);
            };
            loop {
                let Some(chunks) = out.as_mut() else {
                    break rx.await.unwrap_or(Err(RequestError::ShuttingDown));
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
                        break result.unwrap_or(Err(RequestError::ShuttingDown));
                    }
                }
            }
        };
        self.outcome = None;
        result
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.outcome.is_some() {
            // Already finished is fine: then there is nothing to cancel.
            let _ = self.session.cancel(&self.id);
        }
    }
}

//! A request on its way to a computer, its payload still typed ([`Outgoing`]).

use serde_json::Value;

use super::{Detach, Kind, Request, RequestBody};

/// A request the session hands to a computer's connection. Its payload stays typed (a
/// write-file's content as bytes) until the gateway makes the frame: a JSON
/// [`Request`] ([`Outgoing::to_wire`]) or, on a binary link, binary frames and a header.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub id: String,
    pub body: RequestBody,
    pub timeout_ms: Option<u64>,
    pub detach: Option<Detach>,
    /// A payload that goes as written instead of the body's: only a test's payload of the
    /// wrong shape, which the body cannot hold, so that the computer's own checks are reached.
    pub as_written: Option<Value>,
}

impl Outgoing {
    pub fn kind(&self) -> Kind {
        self.body.kind()
    }

    /// The payload as a JSON frame carries it.
    pub fn payload(&self) -> Value {
        match &self.as_written {
            Some(v) => v.clone(),
            None => self.body.to_value(),
        }
    }

    /// The `gateway_request` a JSON frame carries.
    pub fn to_wire(&self) -> Request {
        Request {
            id: self.id.clone(),
            request: self.kind(),
            payload: self.payload(),
            timeout_ms: self.timeout_ms,
            detach: self.detach.clone(),
        }
    }
}

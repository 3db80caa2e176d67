//! Detached runs on the wire (docs/protocol.md, "Detached runs"): the `detach` of a
//! `gateway_request`, and the runs a computer names in its `hello` after a dropped link.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Hello, HelloError};

/// What the computer keeps of a detached run so that a host that never saw it (restarted)
/// can take it back: who started it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detach {
    /// The requester's name (`person`, an agent's client name).
    pub by: String,
}

/// One detached run a computer names in its `hello` (`detached`): still running, or finished
/// with its answer queued behind the hello (`output` frames, then `computer_response`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetachedRun {
    pub id: String,
    pub request: String,
    #[serde(default)]
    pub by: Option<String>,
    /// `running` or `finished` (its answer follows).
    #[serde(default)]
    pub status: Option<String>,
    /// Bytes of output the computer dropped while unlinked (it keeps a bounded tail).
    #[serde(default)]
    pub dropped_bytes: u64,
}

/// Most entries of a hello's `detached` read: four times the most detached runs a host lets a
/// computer have (`max_detached` at most 256), so runs of an earlier host with other limits
/// are still read.
pub const NAMED_READ: usize = 1024;

impl Hello {
    /// The detached runs a `hello` names (`detached`, docs/protocol.md "Detached runs"): the
    /// runs the computer kept through a dropped link. Read beside [`Hello::from_value`], as
    /// [`Hello::enrol_of`] is; an entry that does not parse is left out (logged by the caller
    /// as missing: the host then fails that run as lost).
    ///
    /// # Errors
    /// [`HelloError::Bad`] when `detached` is present and neither an array, `{}` nor null.
    pub fn detached_of(v: &Value) -> Result<Vec<DetachedRun>, HelloError> {
        match v.get("detached") {
            None | Some(Value::Null) => Ok(Vec::new()),
            // CC's own JSON writes an empty table as {}.
            Some(Value::Object(o)) if o.is_empty() => Ok(Vec::new()),
            // Read in place (no copy of each item), and no more than a computer can have
            // been given: the rest of a longer list is a claim nobody needs read.
            Some(Value::Array(items)) => Ok(items
                .iter()
                .take(NAMED_READ)
                .filter_map(|i| DetachedRun::deserialize(i).ok())
                .collect()),
            Some(_) => Err(HelloError::Bad("detached must be an array".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::protocol::{Kind, Request};

    #[test]
    fn a_detached_request_says_so_and_an_ordinary_one_does_not() {
        let mut r = Request {
            id: "h-k3x9qa-7".into(),
            request: Kind::ExecLua,
            payload: json!({"code": "x"}),
            timeout_ms: None,
            detach: None,
        };
        assert!(!serde_json::to_string(&r).unwrap().contains("detach"));
        r.detach = Some(Detach { by: "bot".into() });
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["detach"], json!({"by": "bot"}));
    }

    #[test]
    fn the_hello_names_kept_runs_and_reads_absent_empty_and_bad() {
        let runs = Hello::detached_of(&json!({"detached": [
            {"id": "h-a-1", "request": "exec-lua", "by": "bot", "status": "running", "dropped_bytes": 5},
            {"id": "h-a-2", "request": "run-file", "status": "finished"},
            {"no": "id"},
        ]}))
        .unwrap();
        assert_eq!(runs.len(), 2, "an entry without an id is left out");
        assert_eq!(runs[0].dropped_bytes, 5);
        assert_eq!(runs[1].by, None);
        assert!(Hello::detached_of(&json!({})).unwrap().is_empty());
        assert!(
            Hello::detached_of(&json!({"detached": {}}))
                .unwrap()
                .is_empty()
        );
        assert!(Hello::detached_of(&json!({"detached": 3})).is_err());
    }
}

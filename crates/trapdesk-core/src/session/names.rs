//! Which linked computer a caller means: a full traposId, a bare id or a unique label, case
//! ignored as the globs ignore it (docs/mcp.md, "Tools").
//!
//! A query shaped like a traposId (`<digits>:<rest>`) names that id only: a label may hold a
//! `:` (CC allows it), so `label set 7:vault` on computer 12 must not make `12:7:vault` the
//! answer to `7:vault` while computer 7 is offline. Only other shapes fall back to labels.

use super::model::RequestError;
use super::state::Computer;

/// The computers by traposId, linked or recently unlinked (`State`'s table): every name is
/// looked up in it alone.
type Table = super::state::Computers;

/// The traposIds of the linked computers, sorted.
fn linked_ids(computers: &Table) -> Vec<String> {
    let mut ids: Vec<String> = computers
        .values()
        .filter(|c| c.conn.is_some())
        .map(|c| c.info.trapos_id.clone())
        .collect();
    ids.sort();
    ids
}

/// Finds the linked computer a caller means: full traposId, bare id, or unique label. A
/// query shaped like a traposId ([`traposid_shape`]) is matched against traposIds only,
/// never against labels: offline, it is the offline or unknown answer.
/// Case counts only to choose between names that differ in nothing else: `7:MINER` and
/// `MINER` find `7:miner`, as the globs of the filter and the policy do (ASCII case
/// ignored); an exact match wins over one that ignores case.
pub(super) fn resolve(computers: &Table, query: &str) -> Result<String, RequestError> {
    let query = query.trim();
    if let Some(c) = computers.get(query)
        && c.conn.is_some()
    {
        return Ok(query.to_owned());
    }
    let linked = linked_ids(computers);
    let online = || computers.values().filter(|c| c.conn.is_some());
    let ids = |f: &dyn Fn(&&Computer) -> bool| -> Vec<String> {
        online()
            .filter(|c| f(c))
            .map(|c| c.info.trapos_id.clone())
            .collect()
    };
    let matches: Vec<String> = if let Ok(id) = query.parse::<u64>() {
        ids(&|c| c.info.id == id)
    } else if traposid_shape(query) {
        let exact = ids(&|c| c.info.trapos_id == query);
        if exact.is_empty() {
            ids(&|c| c.info.trapos_id.eq_ignore_ascii_case(query))
        } else {
            exact
        }
    } else {
        let exact = ids(&|c| c.info.label.as_deref() == Some(query));
        if exact.is_empty() {
            let full = ids(&|c| c.info.trapos_id.eq_ignore_ascii_case(query));
            if full.is_empty() {
                ids(&|c| {
                    c.info
                        .label
                        .as_deref()
                        .is_some_and(|l| l.eq_ignore_ascii_case(query))
                })
            } else {
                full
            }
        } else {
            exact
        }
    };
    if matches.is_empty()
        && let Some(note) = off_note(computers, query)
    {
        return Err(RequestError::Remote {
            code: "shut_down".into(),
            message: note,
            output: None,
        });
    }
    match matches.len() {
        1 => Ok(matches.into_iter().next().unwrap_or_default()),
        0 => Err(RequestError::UnknownComputer {
            query: query.to_owned(),
            linked,
        }),
        _ => {
            let mut matches = matches;
            matches.sort();
            Err(RequestError::Ambiguous {
                query: query.to_owned(),
                matches,
            })
        }
    }
}

/// What was said when the offline computer `query` names (its traposId, id or label) went
/// off in a hard abort: a request for it then says so rather than "no linked computer".
fn off_note(computers: &Table, query: &str) -> Option<String> {
    computers.values().find_map(|c| {
        let named = c.info.trapos_id.eq_ignore_ascii_case(query)
            || query.parse::<u64>().is_ok_and(|id| id == c.info.id)
            || (!traposid_shape(query) && c.info.label.as_deref() == Some(query));
        if c.conn.is_none() && named {
            c.off.clone()
        } else {
            None
        }
    })
}

/// Whether `query` has a traposId's shape, `<digits>:<rest>`: then it names that id only.
pub(crate) fn traposid_shape(query: &str) -> bool {
    query
        .split_once(':')
        .is_some_and(|(id, _)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

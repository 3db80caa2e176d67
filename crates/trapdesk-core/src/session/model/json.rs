//! How the model's times (ms since the Unix epoch) and JSON-text fields are written to JSON
//! and read back (the attach channel rebuilds the values from their JSON).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::Value;

use super::epoch_ms;

pub(super) fn ser_time<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(epoch_ms(*t))
}

/// JSON text serialized as the JSON it holds (text that does not parse, as a string).
pub(super) fn ser_json_text<S: serde::Serializer>(
    t: &Option<std::sync::Arc<str>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match t.as_deref().map(serde_json::from_str::<Value>) {
        Some(Ok(v)) => s.serialize_some(&v),
        Some(Err(_)) => s.serialize_some(&t.as_deref()),
        None => s.serialize_none(),
    }
}

pub(super) fn ser_opt_time<S: serde::Serializer>(
    t: &Option<SystemTime>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_some(&epoch_ms(*t)),
        None => s.serialize_none(),
    }
}

// The readers of the writers above, for the attach channel (`control::attach::wire`), whose far
// side rebuilds these values from their JSON.

pub(super) fn de_time<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    let ms = u64::deserialize(d)?;
    Ok(UNIX_EPOCH + Duration::from_millis(ms))
}

pub(super) fn de_opt_time<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<SystemTime>, D::Error> {
    let ms = Option::<u64>::deserialize(d)?;
    Ok(ms.map(|ms| UNIX_EPOCH + Duration::from_millis(ms)))
}

/// The JSON a result was serialized as, back to its text.
pub(super) fn de_json_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<std::sync::Arc<str>>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    Ok(v.map(|v| match v {
        Value::String(s) => s.into(),
        v => v.to_string().into(),
    }))
}

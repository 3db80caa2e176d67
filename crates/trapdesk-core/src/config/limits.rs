//! The allowed ranges of the `config.toml` knobs that have no flag. Values outside are refused
//! rather than quietly bent: a heartbeat of 1 ms was almost certainly meant as 1 s, and saying
//! so beats a host that floods its computers.

use super::ConfigError;

/// Allowed values of the `config.toml` knobs that have no flag.
pub const HEARTBEAT_MS: std::ops::RangeInclusive<u64> = 1_000..=300_000;
pub const REQUEST_TIMEOUT_MS: std::ops::RangeInclusive<u64> = 100..=600_000;
pub const MAX_IN_FLIGHT: std::ops::RangeInclusive<usize> = 1..=1_024;
pub const MAX_DETACHED: std::ops::RangeInclusive<usize> = 0..=256;
pub const MAX_QUEUED: std::ops::RangeInclusive<usize> = 0..=100_000;
pub const SCROLLBACK_LINES: std::ops::RangeInclusive<usize> = 100..=10_000_000;
/// At least what `max_in_flight` requests and their cancels need.
pub const OUTBOUND_QUEUE: std::ops::RangeInclusive<usize> = 64..=1_000_000;
pub const STREAM_BUFFER: std::ops::RangeInclusive<usize> = 16..=1_000_000;
pub const TRANSCRIPT_QUEUE: std::ops::RangeInclusive<usize> = 64..=10_000_000;
/// `history.db`: at least 1 MiB (a few thousand lines), at most 1 TiB.
pub const HISTORY_MAX_MB: std::ops::RangeInclusive<u64> = 1..=1 << 20;
/// A day to ten years.
pub const HISTORY_DAYS: std::ops::RangeInclusive<u64> = 1..=3_650;
pub const HISTORY_QUEUE: std::ops::RangeInclusive<usize> = 1_024..=10_000_000;
/// A tool call with a few KiB of code must fit; 1 GiB is surely a mistake.
pub const MAX_BODY_BYTES: std::ops::RangeInclusive<usize> = 65_536..=1 << 30;

/// `value` when it lies in `range`, else an error naming the key and the allowed range.
pub(super) fn in_range<T>(
    key: &str,
    value: Option<T>,
    range: std::ops::RangeInclusive<T>,
) -> Result<Option<T>, ConfigError>
where
    T: PartialOrd + std::fmt::Display + Copy,
{
    match value {
        Some(v) if !range.contains(&v) => Err(ConfigError::Invalid(format!(
            "config {key} = {v} is out of range: allowed {}..={}",
            range.start(),
            range.end()
        ))),
        other => Ok(other),
    }
}

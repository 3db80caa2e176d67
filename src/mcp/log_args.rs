//! `session-log`'s `since` given as a time: RFC 3339 text or an age.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The time `text` means, in ms since the Unix epoch: RFC 3339 ("2026-12-02T05:00:00Z") or
/// an age before `now` ("90s", "5m", "2h", "1d").
///
/// # Errors
/// A sentence naming both forms, for an invalid-arguments result.
pub fn since_time(text: &str, now: SystemTime) -> Result<u64, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "invalid argument since: expected a previous answer's latest (a number), an RFC 3339 time such as \"2026-12-02T05:00:00Z\", or an age such as \"90s\", \"5m\", \"2h\", \"1d\"; got {text:?}"
        )
    };
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return u64::try_from(t.timestamp_millis()).map_err(|_| bad());
    }
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = text.split_at(split);
    let n: u64 = n.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => return age(now, Duration::from_millis(n)).ok_or_else(bad),
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(86_400),
        _ => return Err(bad()),
    };
    age(now, Duration::from_secs(secs)).ok_or_else(bad)
}

fn age(now: SystemTime, ago: Duration) -> Option<u64> {
    let at = now.checked_sub(ago).unwrap_or(UNIX_EPOCH);
    let ms = at.duration_since(UNIX_EPOCH).ok()?.as_millis();
    u64::try_from(ms).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_ages() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(since_time("5m", now), Ok(1_000_000_000 - 300_000));
        assert_eq!(since_time("90s", now), Ok(1_000_000_000 - 90_000));
        assert_eq!(since_time("250ms", now), Ok(1_000_000_000 - 250));
        assert_eq!(since_time("1970-01-01T00:00:10Z", now), Ok(10_000));
        for bad in ["", "soon", "5", "5 weeks", "-3m"] {
            assert!(since_time(bad, now).is_err(), "{bad}");
        }
    }
}

//! Retry policy: which statuses are retried, exponential backoff with jitter, and the
//! `Retry-After` / `retry-after-ms` headers (seconds or an HTTP date).
//!
//! The headers come from outside: every number in them goes through checked arithmetic, so a
//! huge or odd value (`1e300`, a year 292277026596) means "wait as long as allowed", never a
//! panic.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;

/// Statuses that mean "try again later": timeout, conflict, rate limit, server errors.
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..=599).contains(&status)
}

/// How long to wait before retry number `attempt` (1-based): the server's `Retry-After` if it
/// gave one (capped at `max`), else `base * 2^(attempt-1)` capped at `max`, with "equal jitter"
/// (a random point in the upper half) so many clients do not retry in lockstep.
pub(crate) fn backoff_delay(
    attempt: u32,
    base: Duration,
    max: Duration,
    retry_after: Option<Duration>,
) -> Duration {
    if let Some(retry_after) = retry_after {
        return retry_after.min(max);
    }
    let exponent = attempt.saturating_sub(1).min(20);
    let full = base.saturating_mul(1u32 << exponent).min(max);
    let half = full / 2;
    half + half.mul_f64(random_unit())
}

/// Reads `retry-after-ms` (milliseconds) or `Retry-After` (seconds, possibly fractional, or an
/// HTTP date) from a response.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Some(delay) = seconds(ms / 1000.0)
    {
        return Some(delay);
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return seconds(secs);
    }
    let at = parse_http_date(value)?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// A number of seconds from a header as a duration: None when it is negative or not a number,
/// `Duration::MAX` when it is too large for one (the caller caps it).
fn seconds(secs: f64) -> Option<Duration> {
    if secs.is_nan() || secs < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

/// Parses an IMF-fixdate, the HTTP date format: `Wed, 21 Oct 2015 07:28:00 GMT`.
pub(crate) fn parse_http_date(value: &str) -> Option<SystemTime> {
    let mut parts = value.split_whitespace();
    let _weekday = parts.next()?;
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    // Beyond this the day count below would overflow; no server means such a date.
    if !(0..=MAX_HTTP_DATE_YEAR).contains(&year) {
        return None;
    }
    let mut time = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (hour, minute, second) = (time.next()??, time.next()??, time.next()??);
    if parts.next()? != "GMT" || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60
    {
        return None;
    }
    let days = days_from_civil(year, month, day as i64);
    let secs = u64::try_from(days)
        .ok()?
        .checked_mul(86_400)?
        .checked_add(hour * 3600 + minute * 60 + second)?;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// The latest year an HTTP date may name; later ones are ignored as malformed.
const MAX_HTTP_DATE_YEAR: i64 = 1_000_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// A number in [0, 1) from the std hasher's per-process random keys; good enough for jitter.
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn statuses() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }

    #[test]
    fn backoff_grows_with_jitter_and_caps() {
        let base = Duration::from_millis(500);
        let max = Duration::from_secs(30);
        for attempt in 1..=12 {
            let full = base.saturating_mul(1 << (attempt - 1)).min(max);
            let delay = backoff_delay(attempt, base, max, None);
            assert!(
                delay >= full / 2 && delay <= full,
                "attempt {attempt}: {delay:?}"
            );
        }
        assert_eq!(
            backoff_delay(1, base, max, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            backoff_delay(1, base, max, Some(Duration::from_secs(999))),
            max
        );
    }

    #[test]
    fn retry_after_forms() {
        let check = |pairs: &[(&'static str, &str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, HeaderValue::from_str(value).unwrap());
            }
            retry_after(&headers)
        };
        assert_eq!(check(&[]), None);
        assert_eq!(check(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
        assert_eq!(
            check(&[("retry-after", "1.5")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            check(&[("retry-after", "7"), ("retry-after-ms", "250")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            check(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(check(&[("retry-after", "soon")]), None);
        assert_eq!(check(&[("retry-after", "-3")]), None);
        assert_eq!(check(&[("retry-after", "NaN")]), None);
    }

    #[test]
    fn huge_retry_after_values_wait_the_maximum_instead_of_panicking() {
        let check = |name: &'static str, value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_str(value).unwrap());
            retry_after(&headers)
        };
        for value in ["1e300", "inf", "1e23"] {
            assert_eq!(check("retry-after", value), Some(Duration::MAX), "{value}");
            assert_eq!(
                check("retry-after-ms", value),
                Some(Duration::MAX),
                "{value}"
            );
        }
        let max = Duration::from_secs(30);
        let delay = backoff_delay(
            1,
            Duration::from_millis(500),
            max,
            check("retry-after", "1e300"),
        );
        assert_eq!(delay, max);
        assert_eq!(
            check("retry-after", "Fri, 31 Dec 9999999999 23:59:59 GMT"),
            None,
            "a date too far ahead is malformed"
        );
        assert!(
            check("retry-after", "Fri, 31 Dec 999999 23:59:59 GMT").is_some(),
            "a far date is still a date"
        );
    }

    #[test]
    fn http_dates() {
        let secs =
            |s: &str| parse_http_date(s).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs());
        assert_eq!(secs("Wed, 21 Oct 2015 07:28:00 GMT"), Some(1_445_412_480));
        assert_eq!(secs("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(secs("Tue, 29 Feb 2028 12:00:01 GMT"), Some(1_835_438_401));
        assert_eq!(secs("Wed, 21 Foo 2015 07:28:00 GMT"), None);
        assert_eq!(secs("Wed, 21 Oct 2015 07:28:00 PST"), None);
    }
}

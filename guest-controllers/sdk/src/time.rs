//! Time as the contract carries it. Guests have no clock; `now` comes with each request
//! ([`Request::now`](crate::Request::now)), so that a reconcile is a function of its request and
//! cache, and a replay gives the same answer.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// A point in time, Unix seconds and nanoseconds (as `wasi:clocks/wall-clock`), ordered.
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
/// use wasmcm_guest::Instant;
///
/// let now = Instant::parse_rfc3339("2026-11-26T10:00:30Z").unwrap();
/// assert_eq!(now.seconds, 1_795_687_230);
/// let became_ready = Time("2026-11-26T10:00:00Z".parse().unwrap());
/// assert_eq!(now.since(&became_ready).as_secs(), 30);
/// // A timestamp for a status field, as the API server writes them.
/// assert_eq!(serde_json::to_value(now.time()).unwrap(), "2026-11-26T10:00:30Z");
/// assert!(Instant::parse_rfc3339("2026-11-26T10:00:00Z").unwrap() < now);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant {
    /// Seconds since the Unix epoch.
    pub seconds: i64,
    /// Nanoseconds within the second, below 1,000,000,000.
    pub nanoseconds: u32,
}

impl Instant {
    /// As a jiff [`Timestamp`] (the epoch if out of its range).
    pub fn timestamp(self) -> Timestamp {
        Timestamp::new(self.seconds, self.nanoseconds as i32).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// From a jiff [`Timestamp`].
    pub fn from_timestamp(t: Timestamp) -> Self {
        Instant { seconds: t.as_second(), nanoseconds: t.subsec_nanosecond().max(0) as u32 }
    }

    /// As a Kubernetes [`Time`], for timestamps in status (`lastTransitionTime`).
    pub fn time(self) -> Time {
        Time(self.timestamp())
    }

    /// `now - t`, as Go's `time.Sub` (may be negative).
    pub fn since(self, t: &Time) -> SignedDuration {
        self.timestamp().duration_since(t.0)
    }

    /// From RFC 3339 text (`2026-11-26T10:00:00Z`), as objects carry times.
    pub fn parse_rfc3339(s: &str) -> Result<Self, String> {
        s.parse::<Timestamp>().map(Self::from_timestamp).map_err(|e| format!("invalid RFC 3339 time {s:?}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_rfc3339() {
        let t = Instant::parse_rfc3339("2026-01-02T03:04:05.5Z").unwrap();
        assert_eq!(t.nanoseconds, 500_000_000);
        assert_eq!(t.timestamp().to_string(), "2026-01-02T03:04:05.5Z");
        assert!(Instant::parse_rfc3339("yesterday").is_err());
    }
}

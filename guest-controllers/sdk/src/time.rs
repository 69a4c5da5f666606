//! Time as the contract carries it. Guests have no clock; `now` comes with each request.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant {
    pub seconds: i64,
    pub nanoseconds: u32,
}

impl Instant {
    pub fn timestamp(self) -> Timestamp {
        Timestamp::new(self.seconds, self.nanoseconds as i32).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    pub fn from_timestamp(t: Timestamp) -> Self {
        Instant { seconds: t.as_second(), nanoseconds: t.subsec_nanosecond().max(0) as u32 }
    }

    pub fn time(self) -> Time {
        Time(self.timestamp())
    }

    /// `now - t`, as Go's `time.Sub` (may be negative).
    pub fn since(self, t: &Time) -> SignedDuration {
        self.timestamp().duration_since(t.0)
    }

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

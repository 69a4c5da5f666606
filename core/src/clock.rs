//! The cluster's clock, shared by the embedded API server (what it stamps objects with, how long
//! its kubelet's simulated runs last) and the host (the `now` it gives plugins, how long a
//! `requeue-after` waits): the system clock, or a test clock that starts where a test wants and
//! runs faster, so a CronJob that runs every minute can be tested in seconds.
//!
//! A test clock is `WASMCM_CLOCK=rate=<r>,epoch=<RFC 3339>[,start=<RFC 3339>]`: at real time
//! *t* it reads `start + (t - epoch) * r` (`start` defaults to `epoch`). Both processes of a test
//! read the same variable, and since the clock is a function of the real time, they agree
//! without talking to each other. It owns that arithmetic only; who reads which clock is the
//! caller's.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// The environment variable a test clock is read from.
pub const CLOCK_ENV: &str = "WASMCM_CLOCK";

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Clock {
    test: Option<TestClock>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct TestClock {
    epoch: Timestamp,
    start: Timestamp,
    rate: f64,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// A test clock reading `start` at real time `epoch` and running `rate` times as fast.
    pub fn test(epoch: Timestamp, start: Timestamp, rate: f64) -> Result<Clock, String> {
        if !(rate.is_finite() && rate > 0.0 && rate <= 10_000.0) {
            return Err(format!("{CLOCK_ENV}: rate must be a number above 0 and at most 10000, not {rate}"));
        }
        Ok(Clock { test: Some(TestClock { epoch, start, rate }) })
    }

    /// `rate=<r>,epoch=<RFC 3339>[,start=<RFC 3339>]`; the empty string is the system clock.
    pub fn parse(spec: &str) -> Result<Clock, String> {
        if spec.trim().is_empty() {
            return Ok(Clock::system());
        }
        let (mut rate, mut epoch, mut start) = (None, None, None);
        for part in spec.split(',').map(str::trim) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(format!("{CLOCK_ENV}: {part:?} is not key=value (rate, epoch, start)"));
            };
            let time = |v: &str| -> Result<Timestamp, String> {
                v.parse().map_err(|e| format!("{CLOCK_ENV}: {key}={v:?} is not an RFC 3339 time: {e}"))
            };
            match key {
                "rate" => {
                    rate =
                        Some(value.parse::<f64>().map_err(|_| format!("{CLOCK_ENV}: rate={value:?} is not a number"))?)
                }
                "epoch" => epoch = Some(time(value)?),
                "start" => start = Some(time(value)?),
                _ => return Err(format!("{CLOCK_ENV}: unknown key {key:?} (rate, epoch, start)")),
            }
        }
        let epoch = epoch.ok_or_else(|| {
            format!("{CLOCK_ENV}: epoch=<RFC 3339> is required (the real time at which the clock reads start)")
        })?;
        Clock::test(epoch, start.unwrap_or(epoch), rate.unwrap_or(1.0))
    }

    /// The clock of [`CLOCK_ENV`], the system clock when it is unset.
    pub fn from_env() -> Result<Clock, String> {
        match std::env::var(CLOCK_ENV) {
            Ok(spec) => Clock::parse(&spec),
            Err(std::env::VarError::NotPresent) => Ok(Clock::system()),
            Err(e) => Err(format!("{CLOCK_ENV}: {e}")),
        }
    }

    /// Whether this is a test clock.
    pub fn is_test(&self) -> bool {
        self.test.is_some()
    }

    /// The time now.
    pub fn now(&self) -> Timestamp {
        self.at(Timestamp::now())
    }

    /// What the clock reads at the real time `real`.
    pub fn at(&self, real: Timestamp) -> Timestamp {
        let Some(t) = self.test else { return real };
        let elapsed = real.duration_since(t.epoch).as_secs_f64() * t.rate;
        SignedDuration::try_from_secs_f64(elapsed).ok().and_then(|d| t.start.checked_add(d).ok()).unwrap_or(t.start)
    }

    /// How long, in real time, the clock takes to advance by `span`.
    pub fn real(&self, span: Duration) -> Duration {
        match self.test {
            Some(t) => span.div_f64(t.rate),
            None => span,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_clock_runs_from_its_start_at_its_rate() {
        let clock = Clock::parse("rate=60, epoch=2026-01-01T00:00:00Z, start=2030-06-01T11:59:50Z").unwrap();
        assert!(clock.is_test());
        let real = |s: &str| s.parse::<Timestamp>().unwrap();
        assert_eq!(clock.at(real("2026-01-01T00:00:00Z")).to_string(), "2030-06-01T11:59:50Z");
        assert_eq!(clock.at(real("2026-01-01T00:00:01Z")).to_string(), "2030-06-01T12:00:50Z");
        assert_eq!(clock.real(Duration::from_secs(120)), Duration::from_secs(2));
        let plain = Clock::parse("epoch=2026-01-01T00:00:00Z").unwrap();
        assert_eq!(plain.at(real("2026-01-01T00:00:07Z")).to_string(), "2026-01-01T00:00:07Z");
        assert_eq!(Clock::parse("").unwrap(), Clock::system());
        assert_eq!(Clock::system().real(Duration::from_secs(3)), Duration::from_secs(3));
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (spec, want) in [
            ("rate=60", "epoch=<RFC 3339> is required"),
            ("rate=fast,epoch=2026-01-01T00:00:00Z", "rate=\"fast\" is not a number"),
            ("rate=0,epoch=2026-01-01T00:00:00Z", "rate must be a number above 0"),
            ("epoch=yesterday", "epoch=\"yesterday\" is not an RFC 3339 time"),
            ("speed=2", "unknown key \"speed\""),
            ("60x", "is not key=value"),
        ] {
            let err = Clock::parse(spec).unwrap_err();
            assert!(err.starts_with(CLOCK_ENV) && err.contains(want), "{spec}: {err}");
        }
    }
}

//! Cron schedules as Kubernetes reads them: robfig/cron v3's `ParseStandard` (five fields,
//! the `@hourly`-style descriptors and `@every <duration>`, an optional `TZ=`/`CRON_TZ=`
//! prefix) and its `Schedule.Next`, to the second, with its error texts. The API server's
//! CronJob validation and the CronJob plugin both use it, so a schedule the server accepts is
//! the schedule the controller runs.
//!
//! Time zones come from jiff's database (the system's, or the copy jiff bundles where there is
//! none, as in the guests' wasm32 target). Go's `time.Local` (a schedule with neither a zone
//! prefix nor a `timeZone`) is UTC here: kube-controller-manager's containers run in UTC.
//!
//! It owns the parsing and the arithmetic of schedules only: which schedule time a CronJob
//! acts on is the CronJob controller's (`guest-controllers/cronjob`).

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// A parsed schedule: robfig/cron v3's `SpecSchedule` or `ConstantDelaySchedule`.
#[derive(Clone, Debug)]
pub enum Schedule {
    /// Fields as bit sets (bit *n* set: value *n* matches; bit 63: the field was `*` or `?`).
    Spec(SpecSchedule),
    /// `@every <duration>`: whole seconds, at least one.
    Every { seconds: i64 },
}

#[derive(Clone, Debug)]
pub struct SpecSchedule {
    second: u64,
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
    zone: TimeZone,
}

const STAR_BIT: u64 = 1 << 63;

/// A field's bounds and names (robfig's `bounds`).
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const SECONDS: Bounds = Bounds { min: 0, max: 59, names: &[] };
const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[] };
const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[] };
const DOM: Bounds = Bounds { min: 1, max: 31, names: &[] };
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)],
};

/// Go's `%q`, close enough for the strings that reach these messages.
fn q(s: &str) -> String {
    format!("{s:?}")
}

/// `time.LoadLocation`: "" and "UTC" are UTC, "Local" is UTC here (see the module doc), any
/// other name comes from the time zone database.
pub fn load_location(name: &str) -> Result<TimeZone, String> {
    match name {
        "" | "UTC" | "Local" => Ok(TimeZone::UTC),
        _ => jiff::tz::db().get(name).map_err(|_| format!("unknown time zone {name}")),
    }
}

/// robfig/cron v3 `ParseStandard`: the schedule, or robfig's error text.
pub fn parse_standard(spec: &str) -> Result<Schedule, String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    let mut zone = TimeZone::UTC;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        let Some(space) = spec.find(' ') else {
            // Go slices spec[eq+1:-1] here and panics; reporting the location as bad is the
            // useful part of that.
            let name = &spec[eq + 1..];
            return Err(format!("provided bad location {name}: unknown time zone {name}"));
        };
        let name = spec.get(eq + 1..space).unwrap_or("");
        zone = load_location(name).map_err(|e| format!("provided bad location {name}: {e}"))?;
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec, zone);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        let shown = format!("[{}]", fields.join(" "));
        return Err(format!("expected exactly 5 fields, found {}: {shown}", fields.len()));
    }
    Ok(Schedule::Spec(SpecSchedule {
        second: 1 << SECONDS.min,
        minute: get_field(fields[0], &MINUTES)?,
        hour: get_field(fields[1], &HOURS)?,
        dom: get_field(fields[2], &DOM)?,
        month: get_field(fields[3], &MONTHS)?,
        dow: get_field(fields[4], &DOW)?,
        zone,
    }))
}

fn all(r: &Bounds) -> u64 {
    bits(r.min, r.max, 1) | STAR_BIT
}

fn parse_descriptor(descriptor: &str, zone: TimeZone) -> Result<Schedule, String> {
    let spec = |minute, hour, dom, month, dow| {
        Ok(Schedule::Spec(SpecSchedule { second: 1 << SECONDS.min, minute, hour, dom, month, dow, zone: zone.clone() }))
    };
    let (m, h, d, mo) = (1 << MINUTES.min, 1 << HOURS.min, 1 << DOM.min, 1 << MONTHS.min);
    match descriptor {
        "@yearly" | "@annually" => spec(m, h, d, mo, all(&DOW)),
        "@monthly" => spec(m, h, d, all(&MONTHS), all(&DOW)),
        "@weekly" => spec(m, h, all(&DOM), all(&MONTHS), 1 << DOW.min),
        "@daily" | "@midnight" => spec(m, h, all(&DOM), all(&MONTHS), all(&DOW)),
        "@hourly" => spec(m, all(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
        _ => match descriptor.strip_prefix("@every ") {
            Some(d) => {
                let nanos = parse_go_duration(d).map_err(|e| format!("failed to parse duration {descriptor}: {e}"))?;
                // cron.Every: at least a second, rounded down to whole seconds.
                let seconds = (nanos / 1_000_000_000).max(1) as i64;
                Ok(Schedule::Every { seconds })
            }
            None => Err(format!("unrecognized descriptor: {descriptor}")),
        },
    }
}

/// robfig's getField: the comma-separated ranges of one field.
fn get_field(field: &str, r: &Bounds) -> Result<u64, String> {
    let mut out = 0;
    for range in field.split(',').filter(|r| !r.is_empty()) {
        out |= get_range(range, r)?;
    }
    Ok(out)
}

/// robfig's getRange for one comma-separated part of a field.
fn get_range(expr: &str, r: &Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let mut extra = 0;
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        extra = STAR_BIT;
        (r.min, r.max)
    } else {
        let start = int_or_name(low_and_high[0], r)?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_and_high[1], r)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if single {
                end = r.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < r.min {
        return Err(format!("beginning of range ({start}) below minimum ({}): {expr}", r.min));
    }
    if end > r.max {
        return Err(format!("end of range ({end}) above maximum ({}): {expr}", r.max));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(bits(start, end, step) | extra)
}

fn bits(min: u64, max: u64, step: u64) -> u64 {
    if step == 1 {
        return !(u64::MAX << (max + 1)) & (u64::MAX << min);
    }
    (min..=max).step_by(step as usize).fold(0, |acc, i| acc | 1 << i)
}

fn int_or_name(expr: &str, r: &Bounds) -> Result<u64, String> {
    let lower = expr.to_ascii_lowercase();
    match r.names.iter().find(|(name, _)| *name == lower) {
        Some((_, n)) => Ok(*n),
        None => must_parse_int(expr),
    }
}

/// mustParseInt: strconv.Atoi, with its error text, and no negatives.
fn must_parse_int(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("failed to parse int from {expr}: strconv.Atoi: parsing {}: invalid syntax", q(expr)));
    }
    match expr.parse::<i64>() {
        Err(_) => {
            Err(format!("failed to parse int from {expr}: strconv.Atoi: parsing {}: value out of range", q(expr)))
        }
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {expr}")),
        Ok(n) => Ok(n.unsigned_abs()),
    }
}

/// Go's `time.ParseDuration`: nanoseconds (negative allowed), or its error text.
pub fn parse_go_duration(s: &str) -> Result<i128, String> {
    let invalid = || format!("time: invalid duration {}", q(s));
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    const LIMIT: u128 = 1 << 63;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        if !(rest.starts_with('.') || rest.as_bytes()[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let int_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (int_part, after) = rest.split_at(int_end);
        let mut value: u128 = 0;
        for b in int_part.bytes() {
            value = value * 10 + u128::from(b - b'0');
            if value > LIMIT {
                return Err(invalid());
            }
        }
        rest = after;
        let (mut fraction, mut scale, mut post) = (0u128, 1f64, false);
        if let Some(after_dot) = rest.strip_prefix('.') {
            let frac_end = after_dot.find(|c: char| !c.is_ascii_digit()).unwrap_or(after_dot.len());
            post = frac_end > 0;
            // leadingFraction: digits past what fits are ignored.
            let mut overflow = false;
            for b in after_dot[..frac_end].bytes() {
                if overflow || fraction > (LIMIT - 1) / 10 {
                    overflow = true;
                    continue;
                }
                fraction = fraction * 10 + u128::from(b - b'0');
                scale *= 10.0;
            }
            rest = &after_dot[frac_end..];
        }
        if int_end == 0 && !post {
            return Err(invalid());
        }
        let unit_end = rest.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(rest.len());
        if unit_end == 0 {
            return Err(format!("time: missing unit in duration {}", q(s)));
        }
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let unit_nanos: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(format!("time: unknown unit {} in duration {}", q(unit), q(s))),
        };
        if value > LIMIT / unit_nanos {
            return Err(invalid());
        }
        value *= unit_nanos;
        if fraction > 0 {
            value += (fraction as f64 * (unit_nanos as f64 / scale)) as u128;
            if value > LIMIT {
                return Err(invalid());
            }
        }
        total += value;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if !neg && total > LIMIT - 1 {
        return Err(invalid());
    }
    Ok(if neg { -(total as i128) } else { total as i128 })
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z): what `Next` answers when no time matches
/// within five years (a schedule such as `59 23 31 2 *`).
pub fn go_zero_time() -> Timestamp {
    Timestamp::from_second(GO_ZERO_SECONDS).unwrap_or(Timestamp::MIN)
}

/// Seconds from the Unix epoch back to 0001-01-01T00:00:00Z.
const GO_ZERO_SECONDS: i64 = -62_135_596_800;

impl Schedule {
    /// robfig's `Schedule.Next`: the first matching time strictly after `t` (to the second),
    /// or [`go_zero_time`] when there is none within five years.
    pub fn next(&self, t: Timestamp) -> Timestamp {
        match self {
            // ConstantDelaySchedule: t rounded down to the second, plus the delay.
            Schedule::Every { seconds } => {
                Timestamp::from_second(t.as_second().saturating_add(*seconds)).unwrap_or(Timestamp::MAX)
            }
            Schedule::Spec(s) => s.next(t),
        }
    }
}

/// A point in time as Go's `time.Time` in a location: whole seconds from the epoch, and the
/// civil fields in the zone.
#[derive(Clone, Copy)]
struct Civil {
    unix: i64,
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    /// 0 = Sunday.
    weekday: i64,
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn offset_at(zone: &TimeZone, unix: i64) -> i64 {
    match Timestamp::from_second(unix) {
        Ok(ts) => i64::from(zone.to_offset(ts).seconds()),
        Err(_) => 0,
    }
}

fn civil(zone: &TimeZone, unix: i64) -> Civil {
    let local = unix + offset_at(zone, unix);
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    Civil {
        unix,
        year,
        month,
        day,
        hour: secs / 3600,
        minute: secs % 3600 / 60,
        second: secs % 60,
        weekday: (days + 4).rem_euclid(7),
    }
}

/// Go's `time.Date(year, month, day, hour, min, sec, 0, loc)`: out-of-range fields carry
/// over, and a local time a transition skips or repeats resolves as Go resolves it (the offset
/// in effect at the local time read as UTC, unless the result falls outside that offset's
/// span).
fn go_date(zone: &TimeZone, year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64) -> Civil {
    let m0 = month - 1;
    let (year, month) = (year + m0.div_euclid(12), m0.rem_euclid(12) + 1);
    let local = days_from_civil(year, month, 1) * 86_400 + (day - 1) * 86_400 + hour * 3600 + minute * 60 + second;
    let guess = offset_at(zone, local);
    let mut unix = local - guess;
    let actual = offset_at(zone, unix);
    if actual != guess {
        unix = local - actual;
    }
    civil(zone, unix)
}

impl SpecSchedule {
    fn day_matches(&self, t: &Civil) -> bool {
        let dom = 1 << t.day & self.dom > 0;
        let dow = 1 << t.weekday & self.dow > 0;
        if self.dom & STAR_BIT > 0 || self.dow & STAR_BIT > 0 { dom && dow } else { dom || dow }
    }

    /// robfig's SpecSchedule.Next, step by step (with its wrap-arounds and its handling of
    /// days whose midnight a daylight-saving change skips).
    fn next(&self, t: Timestamp) -> Timestamp {
        let zone = &self.zone;
        // The upcoming second.
        let mut t = civil(zone, t.as_second() + 1);
        let mut added = false;
        let year_limit = t.year + 5;
        'wrap: loop {
            if t.year > year_limit {
                return go_zero_time();
            }
            while 1 << t.month & self.month == 0 {
                if !added {
                    added = true;
                    t = go_date(zone, t.year, t.month, 1, 0, 0, 0);
                }
                t = go_date(zone, t.year, t.month + 1, t.day, t.hour, t.minute, t.second);
                if t.month == 1 {
                    continue 'wrap;
                }
            }
            while !self.day_matches(&t) {
                if !added {
                    added = true;
                    t = go_date(zone, t.year, t.month, t.day, 0, 0, 0);
                }
                t = go_date(zone, t.year, t.month, t.day + 1, t.hour, t.minute, t.second);
                if t.hour != 0 {
                    let shift = if t.hour > 12 { 24 - t.hour } else { -t.hour };
                    t = civil(zone, t.unix + shift * 3600);
                }
                if t.day == 1 {
                    continue 'wrap;
                }
            }
            while 1 << t.hour & self.hour == 0 {
                if !added {
                    added = true;
                    t = go_date(zone, t.year, t.month, t.day, t.hour, 0, 0);
                }
                t = civil(zone, t.unix + 3600);
                if t.hour == 0 {
                    continue 'wrap;
                }
            }
            while 1 << t.minute & self.minute == 0 {
                if !added {
                    added = true;
                    t = civil(zone, t.unix - t.unix.rem_euclid(60));
                }
                t = civil(zone, t.unix + 60);
                if t.minute == 0 {
                    continue 'wrap;
                }
            }
            while 1 << t.second & self.second == 0 {
                if !added {
                    added = true;
                }
                t = civil(zone, t.unix + 1);
                if t.second == 0 {
                    continue 'wrap;
                }
            }
            return Timestamp::from_second(t.unix).unwrap_or(Timestamp::MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn next(spec: &str, from: &str) -> String {
        parse_standard(spec).unwrap().next(ts(from)).to_string()
    }

    #[test]
    fn schedules_parse_as_robfig_cron_does() {
        for ok in [
            "*/1 * * * *",
            "0 0 * * 0",
            "5 4 * * sun",
            "0 0 1 jan,JUL *",
            "@hourly",
            "@every 1h30m",
            "0-59/15 * * * *",
            "? * * * *",
            "TZ=America/New_York 0 * * * *",
            "CRON_TZ=UTC @daily",
        ] {
            assert!(parse_standard(ok).is_ok(), "{ok}");
        }
        for (bad, want) in [
            ("", "empty spec string"),
            ("bad", "expected exactly 5 fields, found 1: [bad]"),
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
            ("*/0 * * * *", "step of range should be a positive number: */0"),
            ("x * * * *", "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("*/1/2 * * * *", "too many slashes: */1/2"),
            ("* * * * 7", "end of range (7) above maximum (6): 7"),
            ("@often", "unrecognized descriptor: @often"),
            ("@every 5", "failed to parse duration @every 5: time: missing unit in duration \"5\""),
            ("TZ=Mars/Olympus * * * * *", "provided bad location Mars/Olympus: unknown time zone Mars/Olympus"),
        ] {
            assert_eq!(parse_standard(bad).unwrap_err(), want, "{bad}");
        }
    }

    /// robfig/cron v3's TestActivation and TestNext, the standard-parser rows, restated.
    #[test]
    fn next_times_as_robfig_cron_computes_them() {
        for (spec, from, want) in [
            // Simple.
            ("* * * * *", "2012-07-09T14:45:00Z", "2012-07-09T14:46:00Z"),
            ("0/15 * * * *", "2012-07-09T14:45:00Z", "2012-07-09T15:00:00Z"),
            ("15 * * * *", "2012-07-09T14:45:00Z", "2012-07-09T15:15:00Z"),
            ("*/15 * * * *", "2012-07-09T14:59:59Z", "2012-07-09T15:00:00Z"),
            // Wrap around hours, days, months, years.
            ("5,15 * * * *", "2012-07-09T14:45:00Z", "2012-07-09T15:05:00Z"),
            ("0 22-23 * * *", "2012-07-09T23:35:00Z", "2012-07-10T22:00:00Z"),
            ("0 0 * 7-8 *", "2012-07-09T23:35:00Z", "2012-07-10T00:00:00Z"),
            ("0 0 1 * *", "2012-07-09T23:35:00Z", "2012-08-01T00:00:00Z"),
            ("0 0 * jan *", "2012-07-09T23:35:00Z", "2013-01-01T00:00:00Z"),
            // Leap years.
            ("0 0 29 feb *", "2012-02-29T00:00:00Z", "2016-02-29T00:00:00Z"),
            // Day of month or day of week (either, as neither is '*').
            ("0 0 1,15 * mon", "2012-07-01T00:00:00Z", "2012-07-02T00:00:00Z"),
            ("0 0 * * mon", "2012-07-01T00:00:00Z", "2012-07-02T00:00:00Z"),
            ("0 0 1 * *", "2012-07-15T00:00:00Z", "2012-08-01T00:00:00Z"),
            // Descriptors.
            ("@hourly", "2012-07-09T14:45:10Z", "2012-07-09T15:00:00Z"),
            ("@daily", "2012-07-09T14:45:10Z", "2012-07-10T00:00:00Z"),
            ("@weekly", "2012-07-09T14:45:10Z", "2012-07-15T00:00:00Z"),
            ("@monthly", "2012-07-09T14:45:10Z", "2012-08-01T00:00:00Z"),
            ("@yearly", "2012-07-09T14:45:10Z", "2013-01-01T00:00:00Z"),
            ("@every 1h", "2012-07-09T14:45:10.5Z", "2012-07-09T15:45:10Z"),
            ("@every 100ms", "2012-07-09T14:45:10Z", "2012-07-09T14:45:11Z"),
            // In a zone: on the hour in New York is on the hour in UTC too; 9:00 is 13:00 UTC
            // in summer and 14:00 in winter.
            ("TZ=America/New_York 0 9 * * *", "2012-07-09T14:45:00Z", "2012-07-10T13:00:00Z"),
            ("TZ=America/New_York 0 9 * * *", "2012-12-09T14:45:00Z", "2012-12-10T14:00:00Z"),
            // Across a daylight-saving change: 2:30 does not exist on 2012-03-11 in New York.
            ("TZ=America/New_York 30 2 * * *", "2012-03-10T12:00:00Z", "2012-03-12T06:30:00Z"),
            // Unsatisfiable: Go's zero time.
            ("0 0 30 feb *", "2012-07-09T14:45:00Z", "0001-01-01T00:00:00Z"),
        ] {
            assert_eq!(next(spec, from), want, "{spec} after {from}");
        }
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(parse_go_duration("1.5h"), Ok(5_400_000_000_000));
        assert_eq!(parse_go_duration("-2s"), Ok(-2_000_000_000));
        assert_eq!(parse_go_duration("0"), Ok(0));
        assert_eq!(parse_go_duration(".5s"), Ok(500_000_000));
        assert_eq!(parse_go_duration(""), Err("time: invalid duration \"\"".into()));
        assert_eq!(parse_go_duration("5"), Err("time: missing unit in duration \"5\"".into()));
        assert_eq!(parse_go_duration("5d"), Err("time: unknown unit \"d\" in duration \"5d\"".into()));
        assert_eq!(parse_go_duration("9999999999h"), Err("time: invalid duration \"9999999999h\"".into()));
    }
}

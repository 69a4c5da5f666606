//! The string formats a CRD schema may name, checked as kube-openapi's `strfmt.Default`
//! registry checks them (its validators and govalidator's patterns, ported). Go's `net`
//! and `net/mail` parsers are approximated by the standard library's and by their grammar's
//! shape; every other check is the upstream pattern or algorithm.
//!
//! Only formats `props` kept reach here (upstream strips the others before validating).

use std::net::{IpAddr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

fn rx(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|re| re.is_match(s))
}

static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    rx(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID4: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static UUID5: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static CREDIT_CARD: LazyLock<Option<Regex>> = LazyLock::new(|| {
    rx(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$",
    )
});
static HEX_COLOR: LazyLock<Option<Regex>> = LazyLock::new(|| rx(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let n = r"(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])";
    rx(&format!(r"^rgb\(\s*{n}\s*,\s*{n}\s*,\s*{n}\s*\)$"))
});
static BASE64: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"));
static SHORT_NAME: LazyLock<Option<Regex>> = LazyLock::new(|| rx(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static LONG_NAME: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"));
static SSN: LazyLock<Option<Regex>> = LazyLock::new(|| rx(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static DATE_TIME: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"));
static GO_DURATION: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$"));
static SCALA_DURATION: LazyLock<Option<Regex>> = LazyLock::new(|| rx(r"((\d+)\s*([A-Za-zµ]+))"));
static MAC: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let colon = |n: usize| format!("[0-9a-fA-F]{{2}}(:[0-9a-fA-F]{{2}}){{{n}}}");
    let dash = |n: usize| format!("[0-9a-fA-F]{{2}}(-[0-9a-fA-F]{{2}}){{{n}}}");
    let dot = |n: usize| format!("[0-9a-fA-F]{{4}}(\\.[0-9a-fA-F]{{4}}){{{n}}}");
    rx(&format!(
        "^({}|{}|{}|{}|{}|{}|{}|{}|{})$",
        colon(5),
        colon(7),
        colon(19),
        dash(5),
        dash(7),
        dash(19),
        dot(2),
        dot(3),
        dot(9)
    ))
});

/// Whether `s` is valid in `format` (a name `props` kept, dashes allowed).
pub(super) fn valid(format: &str, s: &str) -> bool {
    match format.replace('-', "").as_str() {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => request_uri(s),
        "email" => email(s),
        "hostname" => matches(&HOSTNAME, s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63),
        // Go's ParseIP (leading zeros tolerated), and a dot for a v4 address.
        "ipv4" => parse_ip(s).is_some() && s.contains('.'),
        "ipv6" => parse_ip(s).is_some() && s.contains(':'),
        "cidr" => s.split_once('/').is_some_and(|(ip, bits)| {
            let max = match parse_ip(ip) {
                Some(IpAddr::V4(_)) => 32,
                Some(IpAddr::V6(_)) => 128,
                None => return false,
            };
            !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit()) && bits.parse::<u32>().is_ok_and(|b| b <= max)
        }),
        "mac" => matches(&MAC, s),
        "uuid" => matches(&UUID, s),
        "uuid3" => matches(&UUID3, s),
        "uuid4" => matches(&UUID4, s),
        "uuid5" => matches(&UUID5, s),
        "isbn" => isbn(s, 10) || isbn(s, 13),
        "isbn10" => isbn(s, 10),
        "isbn13" => isbn(s, 13),
        "creditcard" => credit_card(s),
        "ssn" => s.len() == 11 && matches(&SSN, s),
        "hexcolor" => matches(&HEX_COLOR, s),
        "rgbcolor" => matches(&RGB_COLOR, s),
        "byte" => matches(&BASE64, s),
        "date" => date(s),
        "duration" => duration(s),
        "datetime" => date_time(s),
        "k8sshortname" => s.len() <= 63 && matches(&SHORT_NAME, s),
        "k8slongname" => s.len() <= 253 && matches(&LONG_NAME, s),
        _ => true,
    }
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse::<Ipv6Addr>() {
        return Some(IpAddr::V6(ip));
    }
    // ParseIPSloppy: dotted decimal, each part up to 255, leading zeros allowed.
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(&parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    Some(IpAddr::from(octets))
}

/// Go's `url.ParseRequestURI`: an absolute URI or an absolute path, no spaces or controls.
fn request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    match s.split_once(':') {
        Some((scheme, _)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// Go's `mail.ParseAddress`, in shape: `local@domain`, optionally as `Name <local@domain>`.
fn email(s: &str) -> bool {
    let addr = match (s.rfind('<'), s.strip_suffix('>')) {
        (Some(i), Some(inner)) => inner.get(i + 1..).unwrap_or(""),
        _ => s.trim(),
    };
    match addr.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !addr.chars().any(|c| c.is_whitespace() || c == '<' || c == '>')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    }
}

fn isbn(s: &str, version: usize) -> bool {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace() && *b != b'-').collect();
    let d = |b: u8| i32::from(b.wrapping_sub(b'0'));
    if version == 10 {
        let shape = digits.len() == 10
            && digits.iter().take(9).all(u8::is_ascii_digit)
            && digits.get(9).is_some_and(|b| b.is_ascii_digit() || *b == b'X');
        if !shape {
            return false;
        }
        let mut sum: i32 = digits.iter().take(9).enumerate().map(|(i, b)| (i as i32 + 1) * d(*b)).sum();
        sum += if digits.get(9) == Some(&b'X') { 100 } else { 10 * digits.get(9).map_or(0, |b| d(*b)) };
        sum % 11 == 0
    } else {
        if digits.len() != 13 || !digits.iter().all(u8::is_ascii_digit) {
            return false;
        }
        let sum: i32 =
            digits.iter().take(12).enumerate().map(|(i, b)| if i % 2 == 0 { d(*b) } else { 3 * d(*b) }).sum();
        digits.get(12).map_or(0, |b| d(*b)) - ((10 - sum % 10) % 10) == 0
    }
}

fn credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !matches(&CREDIT_CARD, &digits) {
        return false;
    }
    let mut sum = 0;
    for (i, b) in digits.bytes().rev().enumerate() {
        let mut n = u32::from(b - b'0');
        if i % 2 == 1 {
            n *= 2;
            if n >= 10 {
                n = n % 10 + 1;
            }
        }
        sum += n;
    }
    sum % 10 == 0
}

/// Go's `time.Parse("2006-01-02", s)`.
fn date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return false;
    }
    let num =
        |r: std::ops::Range<usize>| s.get(r).filter(|p| p.bytes().all(|c| c.is_ascii_digit()))?.parse::<i16>().ok();
    match (num(0..4), num(5..7), num(8..10)) {
        (Some(y), Some(m), Some(d)) => jiff::civil::Date::new(y, m as i8, d as i8).is_ok(),
        _ => false,
    }
}

fn date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !parts.first().is_some_and(|d| date(d)) {
        return false;
    }
    let Some(re) = DATE_TIME.as_ref() else { return false };
    let Some(c) = parts.get(1).and_then(|t| re.captures(t)) else { return false };
    let part = |i: usize| c.get(i).map_or("", |m| m.as_str());
    part(1) <= "23" && part(2) <= "59" && part(3) <= "59"
}

/// strfmt's `ParseDuration`: Go's syntax, or any number followed by a unit it knows.
fn duration(s: &str) -> bool {
    if matches(&GO_DURATION, s) {
        return true;
    }
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let Some(re) = SCALA_DURATION.as_ref() else { return false };
    re.captures_iter(s).any(|c| {
        let unit = c.get(3).map_or("", |m| m.as_str()).trim().to_lowercase();
        let number_ok = c.get(2).is_some_and(|m| m.as_str().parse::<i64>().is_ok());
        number_ok
            && UNITS.iter().any(|variants| {
                let last = variants.len() - 1;
                variants.iter().enumerate().any(|(i, v)| (i == last && unit.starts_with(v)) || unit == *v)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn formats_as_strfmt_checks_them() {
        let cases = [
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date-time", "2024-01-02T15:04:05Z", true),
            ("date-time", "2024-01-02T25:04:05Z", false),
            ("date-time", "2024-01-02 15:04:05", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "hello!", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "nope", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0", false),
            ("ipv6", "::1", true),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad-", false),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "soon", false),
            ("isbn10", "0321751043", true),
            ("isbn13", "978-0321751041", true),
            ("creditcard", "4111 1111 1111 1111", true),
            ("ssn", "123-45-6789", true),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("email", "a@example.com", true),
            ("email", "nobody", false),
            ("uri", "https://example.com/x", true),
            ("uri", "not a uri", false),
            ("k8s-short-name", "my-name", true),
            ("k8s-short-name", "My-name", false),
            ("k8s-long-name", "a.b-c.d", true),
            ("k8s-long-name", "a..b", false),
        ];
        for (format, s, want) in cases {
            assert_eq!(valid(format, s), want, "{format} {s:?}");
        }
    }
}

//! `resource.Quantity` arithmetic shared by defaulting (QoS class) and validation (requests
//! within limits).

/// A resource.Quantity in units of 10^-9, saturating; None when it does not parse.
pub fn nanos(s: &str) -> Option<i128> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(split);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let (exp10, binary): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 1),
        "Mi" => (0, 2),
        "Gi" => (0, 3),
        "Ti" => (0, 4),
        "Pi" => (0, 5),
        "Ei" => (0, 6),
        _ => {
            let exp = suffix.strip_prefix(['e', 'E'])?;
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (exp.parse::<i32>().ok()?, 0)
        }
    };
    let mantissa = whole
        .bytes()
        .chain(fraction.bytes())
        .fold(0i128, |m, b| m.saturating_mul(10).saturating_add(i128::from(b - b'0')));
    let exp10 = exp10.saturating_add(9).saturating_sub(i32::try_from(fraction.len()).ok()?);
    let value = if exp10 >= 0 {
        (0..exp10.min(60)).fold(mantissa, |m, _| m.saturating_mul(10))
    } else {
        let divisor = (0..(-exp10).min(40)).fold(1i128, |d, _| d.saturating_mul(10));
        if mantissa == 0 { 0 } else { mantissa.saturating_add(divisor - 1) / divisor }
    };
    let value = value.saturating_mul(1i128 << (10 * binary));
    Some(if negative { -value } else { value })
}

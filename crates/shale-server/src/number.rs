//! Numbers as Redis reads and writes them: strict integers (`string2ll`), floats
//! (`string2ld`) and the "human" float format of INCRBYFLOAT.

/// Parse `s` as a signed 64-bit integer exactly as Redis's `string2ll` does: no sign but
/// `-`, no leading zeros, no spaces, at most 20 characters. `None` when it is not one.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    // Redis's LONG_STR_SIZE is 21: a string of 21 bytes or more is never a number.
    if s.is_empty() || s.len() >= 21 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if negative {
        // i64::MIN's magnitude is one more than i64::MAX.
        if v > i64::MAX as u64 + 1 {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

/// Parse `s` as a float as Redis's `string2ld` does: no leading space, the whole string a
/// number, no NaN, no overflow to infinity or underflow to zero (an explicit `inf` is
/// accepted). Shale reads a double where Redis reads a long double.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() >= 5 * 1024 {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    if text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    if v.is_infinite() && !lower.contains("inf") {
        return None; // overflow (strtold's ERANGE with HUGE_VAL)
    }
    if v == 0.0 {
        // Underflow: a mantissa with a nonzero digit that still parsed to zero.
        let mantissa = lower.split('e').next().unwrap_or("");
        if mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c)) {
            return None;
        }
    }
    Some(v)
}

/// Format `v` as INCRBYFLOAT replies: Redis prints `%.17Lf` and strips trailing zeros. With
/// a double, the shortest representation that reads back as `v` is that same text for every
/// value a person types (`10.6`, not `10.59999999999999964`); a value with more than 17
/// decimals is rounded to 17 as Redis does (`1e-20` prints `0`).
pub fn format_f64(v: f64) -> String {
    let mut s = format!("{v}");
    if let Some(dot) = s.find('.')
        && s.len() - dot - 1 > 17
    {
        s = format!("{v:.17}");
    }
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".to_string();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_like_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"01",
            b"-0",
            b"+1",
            b" 1",
            b"1 ",
            b"-",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"1.0",
            b"123456789012345678901",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn floats_like_string2ld() {
        assert_eq!(parse_f64(b"10.5"), Some(10.5));
        assert_eq!(parse_f64(b"5.0e3"), Some(5000.0));
        assert_eq!(parse_f64(b"inf"), Some(f64::INFINITY));
        for bad in [&b""[..], b" 1", b"1 ", b"nan", b"1e400", b"1e-400", b"abc"] {
            assert_eq!(parse_f64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn human_float_format() {
        assert_eq!(format_f64(10.5 + 0.1), "10.6");
        assert_eq!(format_f64(5200.0), "5200");
        assert_eq!(format_f64(-0.0), "0");
        assert_eq!(format_f64(1e-20), "0");
        assert_eq!(format_f64(3.0e-5), "0.00003");
    }
}

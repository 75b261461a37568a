//! Printable text for arbitrary bytes, and back.
//!
//! Keys and values are bytes; the command line and `key<TAB>value` lines are text. The
//! escaped form is what `scan`, `dump` and `get` print and what `put`, `load` and the range
//! flags accept, so any byte string round-trips:
//!
//! - printable ASCII (0x20..=0x7e) except backslash is itself (so a tab is never literal);
//! - a backslash is `\\`;
//! - every other byte is `\xNN` with two lowercase hex digits.

/// The escaped, printable form of `bytes`.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                out.push_str("\\x");
                out.push(hex_digit(b >> 4));
                out.push(hex_digit(b & 0x0f));
            }
        }
    }
    out
}

fn hex_digit(n: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(n & 0x0f)])
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The bytes that `text` stands for: the inverse of [`escape`].
///
/// Any byte other than a backslash stands for itself (so hand-typed text works as is); a
/// backslash must start `\\` or `\xNN` (hex digits in either case).
///
/// # Errors
/// A description naming the byte offset of a bad escape sequence.
pub fn unescape(text: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        match text.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hi = text.get(i + 2).copied().and_then(hex_value);
                let lo = text.get(i + 3).copied().and_then(hex_value);
                match (hi, lo) {
                    (Some(hi), Some(lo)) => out.push(hi << 4 | lo),
                    _ => {
                        return Err(format!(
                            "bad escape at offset {i}: \\x must be followed by two hex digits"
                        ));
                    }
                }
                i += 4;
            }
            Some(_) => {
                return Err(format!(
                    "bad escape at offset {i}: a backslash must start \\\\ or \\xNN"
                ));
            }
            None => {
                return Err(format!(
                    "bad escape at offset {i}: the text ends with a lone backslash"
                ));
            }
        }
    }
    Ok(out)
}

/// [`unescape`] for a command-line argument, with the argument's name in the error.
pub fn unescape_arg(name: &str, text: &str) -> Result<Vec<u8>, String> {
    unescape(text.as_bytes()).map_err(|e| format!("{name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips_alone_and_together() {
        let all: Vec<u8> = (0..=255u8).collect();
        for &b in &all {
            let e = escape(&[b]);
            assert!(e.bytes().all(|c| (0x20..=0x7e).contains(&c)), "{e:?}");
            assert!(!e.contains('\t'));
            assert_eq!(
                unescape(e.as_bytes()).unwrap(),
                vec![b],
                "byte {b:#x} as {e:?}"
            );
        }
        let e = escape(&all);
        assert_eq!(unescape(e.as_bytes()).unwrap(), all);
        let rev: Vec<u8> = all.iter().rev().copied().collect();
        assert_eq!(unescape(escape(&rev).as_bytes()).unwrap(), rev);
    }

    #[test]
    fn printable_text_is_literal() {
        assert_eq!(escape(b"user123 a=b"), "user123 a=b");
        assert_eq!(escape(b"a\tb"), "a\\x09b");
        assert_eq!(escape(b"a\\b"), "a\\\\b");
        assert_eq!(escape(b"\x00\xff\n"), "\\x00\\xff\\x0a");
        assert_eq!(escape(b""), "");
    }

    #[test]
    fn tricky_strings_round_trip() {
        let cases: [&[u8]; 8] = [
            b"\\x41",
            b"\\\\",
            b"\\",
            b"x\\",
            b"\\xzz",
            b"\x7f\x80",
            "héllo".as_bytes(),
            b"tab\there\r\n",
        ];
        for c in cases {
            let e = escape(c);
            assert_eq!(unescape(e.as_bytes()).unwrap(), c, "{e:?}");
        }
    }

    #[test]
    fn unescape_accepts_hand_typed_text() {
        assert_eq!(unescape(b"\\x41\\x4a").unwrap(), b"AJ");
        assert_eq!(unescape(b"\\xAb").unwrap(), vec![0xab]);
        assert_eq!(unescape(b"a\tb").unwrap(), b"a\tb");
        assert_eq!(unescape("é".as_bytes()).unwrap(), "é".as_bytes());
    }

    #[test]
    fn unescape_rejects_bad_sequences_with_offset() {
        for bad in [&b"ab\\"[..], b"\\x4", b"\\xg0", b"\\n", b"ok\\q"] {
            let e = unescape(bad).unwrap_err();
            assert!(e.contains("offset"), "{e}");
        }
        assert!(unescape(b"ab\\").unwrap_err().contains("offset 2"));
        assert!(unescape_arg("KEY", "\\q").unwrap_err().starts_with("KEY:"));
    }
}

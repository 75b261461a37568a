//! Glob-style patterns of KEYS and SCAN MATCH, as Redis's `stringmatchlen` matches them:
//! `*`, `?`, `[abc]`, `[^abc]`, `[a-z]` and `\` to escape. Byte-wise and case-sensitive.

/// True if `string` matches `pattern`. `*` alone matches every key, the empty one too
/// (KEYS and SCAN special-case it in Redis; `stringmatchlen` alone would not match "").
pub fn matches(pattern: &[u8], string: &[u8]) -> bool {
    if pattern == b"*" {
        return true;
    }
    let mut skip_longer = false;
    match_impl(pattern, string, &mut skip_longer)
}

/// The literal bytes every match must start with (the pattern up to its first special
/// character), so a scan can seek instead of walking every key.
pub fn literal_prefix(pattern: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = pattern.get(i) {
        match c {
            b'*' | b'?' | b'[' => break,
            b'\\' => match pattern.get(i + 1) {
                Some(&n) => {
                    out.push(n);
                    i += 2;
                }
                None => break,
            },
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// A port of `stringmatchlen_impl` (Redis 7.0, `util.c`) with bounds-checked reads where
/// the C code reads the terminating NUL.
fn match_impl(mut p: &[u8], mut s: &[u8], skip_longer: &mut bool) -> bool {
    let at = |x: &[u8], i: usize| x.get(i).copied().unwrap_or(0);
    while !p.is_empty() && !s.is_empty() {
        match p[0] {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                while !s.is_empty() {
                    if match_impl(&p[1..], s, skip_longer) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s = &s[1..];
                }
                // No match for the rest of the pattern anywhere in the rest of the string:
                // an earlier `*` matching more cannot help either.
                *skip_longer = true;
                return false;
            }
            b'?' => s = &s[1..],
            b'[' => {
                p = &p[1..];
                let not = at(p, 0) == b'^';
                if not {
                    p = &p[1..];
                }
                let mut matched = false;
                loop {
                    if at(p, 0) == b'\\' && p.len() >= 2 {
                        p = &p[1..];
                        if p[0] == s[0] {
                            matched = true;
                        }
                    } else if at(p, 0) == b']' && !p.is_empty() {
                        break;
                    } else if p.is_empty() {
                        // An unterminated class: the C code steps back onto its last byte so
                        // that the advance below ends the pattern.
                        break;
                    } else if p.len() >= 3 && p[1] == b'-' {
                        let (mut start, mut end) = (p[0], p[2]);
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        p = &p[2..];
                        if (start..=end).contains(&s[0]) {
                            matched = true;
                        }
                    } else if p[0] == s[0] {
                        matched = true;
                    }
                    p = &p[1..];
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s = &s[1..];
                if p.is_empty() {
                    // The unterminated class consumed the whole pattern.
                    return s.is_empty();
                }
            }
            c => {
                let lit = if c == b'\\' && p.len() >= 2 {
                    p = &p[1..];
                    p[0]
                } else {
                    c
                };
                if lit != s[0] {
                    return false;
                }
                s = &s[1..];
            }
        }
        p = &p[1..];
        if s.is_empty() {
            while at(p, 0) == b'*' && !p.is_empty() {
                p = &p[1..];
            }
            break;
        }
    }
    p.is_empty() && s.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_redis() {
        let yes: &[(&str, &str)] = &[
            ("*", ""),
            ("*", "anything"),
            ("h?llo", "hello"),
            ("h*llo", "heeeello"),
            ("h[ae]llo", "hallo"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("h[b-a]llo", "hallo"),
            ("key:*", "key:000001"),
            ("a\\*b", "a*b"),
            ("*a*b*", "xaxbx"),
            ("a*", "a"),
        ];
        for (p, s) in yes {
            assert!(matches(p.as_bytes(), s.as_bytes()), "{p} {s}");
        }
        let no: &[(&str, &str)] = &[
            ("h?llo", "hllo"),
            ("h[ae]llo", "hillo"),
            ("h[^e]llo", "hello"),
            ("a\\*b", "axb"),
            ("abc", "ab"),
            ("ab", "abc"),
            ("", "a"),
            ("?", ""),
        ];
        for (p, s) in no {
            assert!(!matches(p.as_bytes(), s.as_bytes()), "{p} {s}");
        }
    }

    #[test]
    fn prefixes() {
        assert_eq!(literal_prefix(b"key:*"), b"key:");
        assert_eq!(literal_prefix(b"a\\*b*"), b"a*b");
        assert_eq!(literal_prefix(b"*"), b"");
        assert_eq!(literal_prefix(b"ab[c]"), b"ab");
    }
}

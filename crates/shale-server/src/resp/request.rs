//! The request parser: RESP arrays of bulk strings (what clients send) and inline commands
//! (what a person types into `telnet`), read incrementally from a connection's buffer.
//!
//! It follows Redis's `processMultibulkBuffer` and `processInlineBuffer` (7.0): the same
//! limits and the same error texts, so a client sees what Redis would have said. Declared
//! sizes are checked before any byte of the body is awaited, and nothing is allocated from a
//! declared size: a client that announces a 500 MB bulk and sends 10 bytes costs 10 bytes.
//!
//! Not thread-safe: one parser per connection.

use crate::number::parse_i64;

/// Redis's PROTO_INLINE_MAX_SIZE: an inline command, or a `*N`/`$N` header, must end
/// within this many bytes.
pub const INLINE_MAX: usize = 64 * 1024;

/// What a request may be.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The largest bulk string (one argument), in bytes.
    pub max_bulk_len: usize,
    /// The largest request (all its arguments, plus 16 bytes of bookkeeping each).
    pub max_request_size: usize,
}

/// A request the connection cannot continue after: the reply is this error, then the
/// connection is closed (Redis's `setProtocolError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

/// The arguments of one command; the first is the command name.
pub type Args = Vec<Vec<u8>>;

/// Per-argument bookkeeping counted against the request size, so that a million empty
/// arguments are as bounded as one large one.
const ARG_OVERHEAD: usize = 16;

/// Parser state between reads: the arguments completed so far of a multibulk request.
#[derive(Debug, Default)]
pub struct RequestParser {
    args: Args,
    /// Arguments still expected; 0 when not inside a multibulk request.
    remaining: usize,
    /// The length of the bulk string being awaited, once its `$N` header is read.
    bulk_len: Option<usize>,
    /// Bytes counted against [`Limits::max_request_size`].
    request_bytes: usize,
}

impl RequestParser {
    /// A parser at the start of a request.
    pub fn new() -> RequestParser {
        RequestParser::default()
    }

    /// True when part of a request has been read and the rest is awaited.
    pub fn in_request(&self) -> bool {
        self.remaining > 0
    }

    /// Parse the next request from `buf[*pos..]`, advancing `*pos` past what was consumed.
    /// `Ok(None)`: more bytes are needed (what was complete is kept). `authenticated`
    /// selects Redis's small limits for a client that has not authenticated yet.
    ///
    /// # Errors
    /// A [`ProtocolError`] with Redis's text for malformed or oversized input.
    pub fn next(
        &mut self,
        buf: &[u8],
        pos: &mut usize,
        limits: &Limits,
        authenticated: bool,
    ) -> Result<Option<Args>, ProtocolError> {
        loop {
            if self.remaining == 0 {
                let Some(&first) = buf.get(*pos) else {
                    return Ok(None);
                };
                if first != b'*' {
                    match self.inline(buf, pos)? {
                        None => return Ok(None),
                        Some(args) if args.is_empty() => continue, // an empty line
                        Some(args) => return Ok(Some(args)),
                    }
                }
                let Some(line) = header(buf, pos, "too big mbulk count string")? else {
                    return Ok(None);
                };
                let count = match parse_i64(line) {
                    Some(n) if n <= i64::from(i32::MAX) => n,
                    _ => return Err(err("invalid multibulk length")),
                };
                if count > 10 && !authenticated {
                    return Err(err("unauthenticated multibulk length"));
                }
                if count <= 0 {
                    continue; // `*0` and `*-1` are empty requests
                }
                self.remaining = count as usize;
                self.args = Vec::with_capacity(self.remaining.min(1024));
                self.request_bytes = 0;
            }
            while self.remaining > 0 {
                let len = match self.bulk_len {
                    Some(len) => len,
                    None => {
                        let Some(&first) = buf.get(*pos) else {
                            return Ok(None);
                        };
                        // Redis checks the header's length before its first byte.
                        let line_end = find_cr(buf, *pos);
                        if line_end.is_none() && buf.len() - *pos > INLINE_MAX {
                            return Err(err("too big bulk count string"));
                        }
                        if line_end.is_none_or(|e| e + 2 > buf.len()) {
                            return Ok(None);
                        }
                        if first != b'$' {
                            return Err(err(&format!("expected '$', got '{}'", char::from(first))));
                        }
                        let Some(line) = header(buf, pos, "too big bulk count string")? else {
                            return Ok(None);
                        };
                        let n = match parse_i64(line) {
                            Some(n) if n >= 0 && n as u64 <= limits.max_bulk_len as u64 => n,
                            _ => return Err(err("invalid bulk length")),
                        };
                        if n > 16384 && !authenticated {
                            return Err(err("unauthenticated bulk length"));
                        }
                        let n = n as usize;
                        self.request_bytes = self.request_bytes.saturating_add(n + ARG_OVERHEAD);
                        if self.request_bytes > limits.max_request_size {
                            return Err(ProtocolError(format!(
                                "ERR Protocol error: request larger than the {} bytes of --max-request-size",
                                limits.max_request_size
                            )));
                        }
                        self.bulk_len = Some(n);
                        n
                    }
                };
                // Like Redis, the two bytes after the data are taken as the CRLF unread.
                if buf.len() - *pos < len + 2 {
                    return Ok(None);
                }
                self.args.push(buf[*pos..*pos + len].to_vec());
                *pos += len + 2;
                self.bulk_len = None;
                self.remaining -= 1;
            }
            return Ok(Some(std::mem::take(&mut self.args)));
        }
    }

    /// An inline command: one line split like `sdssplitargs`.
    fn inline(&mut self, buf: &[u8], pos: &mut usize) -> Result<Option<Args>, ProtocolError> {
        let rest = &buf[*pos..];
        let Some(nl) = rest.iter().position(|&c| c == b'\n') else {
            if rest.len() > INLINE_MAX {
                return Err(err("too big inline request"));
            }
            return Ok(None);
        };
        let line = &rest[..nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let args = split_args(line).ok_or_else(|| err("unbalanced quotes in request"))?;
        *pos += nl + 1;
        Ok(Some(args))
    }
}

fn err(what: &str) -> ProtocolError {
    ProtocolError(format!("ERR Protocol error: {what}"))
}

fn find_cr(buf: &[u8], from: usize) -> Option<usize> {
    buf[from..]
        .iter()
        .position(|&c| c == b'\r')
        .map(|i| from + i)
}

/// Read a `*N\r\n` or `$N\r\n` header at `*pos`: `Ok(None)` if incomplete, else the bytes
/// after the type byte up to the CR (`*pos` then points past the CRLF).
fn header<'a>(
    buf: &'a [u8],
    pos: &mut usize,
    too_big: &str,
) -> Result<Option<&'a [u8]>, ProtocolError> {
    let Some(cr) = find_cr(buf, *pos) else {
        if buf.len() - *pos > INLINE_MAX {
            return Err(err(too_big));
        }
        return Ok(None);
    };
    if cr + 2 > buf.len() {
        return Ok(None);
    }
    let line = &buf[*pos + 1..cr];
    *pos = cr + 2;
    Ok(Some(line))
}

/// Split an inline command line into arguments as Redis's `sdssplitargs` does: spaces
/// separate, `"..."` understands `\n \r \t \b \a \\ \" \xHH`, `'...'` understands `\'`, and a
/// closing quote must be followed by a space or the end. `None` for unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Args> {
    // The C code reads a C string: a NUL byte ends the line.
    let line = &line[..line.iter().position(|&c| c == 0).unwrap_or(line.len())];
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let is_space = |c: u8| matches!(c, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c);
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let (mut in_dq, mut in_sq) = (false, false);
        let mut current = Vec::new();
        loop {
            let c = at(i);
            if in_dq {
                if c == b'\\'
                    && at(i + 1) == b'x'
                    && at(i + 2).is_ascii_hexdigit()
                    && at(i + 3).is_ascii_hexdigit()
                {
                    let hex = |h: u8| (h as char).to_digit(16).unwrap_or(0) as u8;
                    current.push(hex(at(i + 2)) * 16 + hex(at(i + 3)));
                    i += 3;
                } else if c == b'\\' && i + 1 < line.len() {
                    i += 1;
                    current.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if i + 1 < line.len() && !is_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else if i >= line.len() {
                    return None;
                } else {
                    current.push(c);
                }
            } else if in_sq {
                if c == b'\\' && at(i + 1) == b'\'' {
                    i += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < line.len() && !is_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else if i >= line.len() {
                    return None;
                } else {
                    current.push(c);
                }
            } else if i >= line.len() {
                break;
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        i += 1;
                        break;
                    }
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    _ => current.push(c),
                }
            }
            i += 1;
        }
        args.push(current);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_bulk_len: 1 << 20,
        max_request_size: 4 << 20,
    };

    fn parse_all(input: &[u8]) -> Result<Vec<Args>, ProtocolError> {
        let mut p = RequestParser::new();
        let mut pos = 0;
        let mut out = Vec::new();
        while let Some(a) = p.next(input, &mut pos, &LIMITS, true)? {
            out.push(a);
        }
        Ok(out)
    }

    fn strs(args: &Args) -> Vec<String> {
        args.iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    #[test]
    fn multibulk_and_pipelines() {
        let got = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n").unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(strs(&got[0]), ["GET", "k"]);
        assert_eq!(strs(&got[1]), ["PING"]);
    }

    #[test]
    fn byte_by_byte_is_the_same() {
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nva\r\nl\r\nPING\r\n";
        let mut p = RequestParser::new();
        let mut buf = Vec::new();
        let mut pos = 0;
        let mut out = Vec::new();
        for &b in input.iter() {
            buf.push(b);
            while let Some(a) = p.next(&buf, &mut pos, &LIMITS, true).unwrap() {
                out.push(a);
            }
        }
        assert_eq!(out.len(), 2);
        assert_eq!(out[0][2], b"va\r\nl");
        assert_eq!(strs(&out[1]), ["PING"]);
    }

    #[test]
    fn inline_commands() {
        let got = parse_all(b"set a \"b c\\x41\\n\"\r\n\r\nget 'it\\'s'\n").unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], [&b"set"[..], b"a", b"b cA\n"]);
        assert_eq!(strs(&got[1]), ["get", "it's"]);
        assert_eq!(split_args(b"a \"b"), None);
        assert_eq!(split_args(b"\"a\"b"), None);
        assert_eq!(split_args(b"  "), Some(vec![]));
    }

    #[test]
    fn redis_error_texts() {
        let e = |input: &[u8]| parse_all(input).unwrap_err().0;
        assert_eq!(e(b"*x\r\n"), "ERR Protocol error: invalid multibulk length");
        assert_eq!(
            e(b"*1\r\n$-5\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            e(b"*1\r\n$9999999999\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            e(b"*1\r\n+x\r\n"),
            "ERR Protocol error: expected '$', got '+'"
        );
        assert_eq!(
            e(b"a \"b\r\n"),
            "ERR Protocol error: unbalanced quotes in request"
        );
        let big = vec![b'a'; INLINE_MAX + 1];
        assert_eq!(e(&big), "ERR Protocol error: too big inline request");
    }

    #[test]
    fn unauthenticated_limits() {
        let mut p = RequestParser::new();
        let mut pos = 0;
        let r = p.next(b"*11\r\n", &mut pos, &LIMITS, false);
        assert_eq!(
            r.unwrap_err().0,
            "ERR Protocol error: unauthenticated multibulk length"
        );
        let mut p = RequestParser::new();
        let mut pos = 0;
        let r = p.next(b"*1\r\n$16385\r\n", &mut pos, &LIMITS, false);
        assert_eq!(
            r.unwrap_err().0,
            "ERR Protocol error: unauthenticated bulk length"
        );
    }

    #[test]
    fn request_size_is_bounded_before_the_body_arrives() {
        let mut p = RequestParser::new();
        let mut pos = 0;
        let mut input = b"*5\r\n".to_vec();
        for _ in 0..4 {
            input.extend_from_slice(format!("${}\r\n", 1 << 20).as_bytes());
            input.extend(std::iter::repeat_n(b'x', 1 << 20));
            input.extend_from_slice(b"\r\n");
        }
        input.extend_from_slice(b"$1000\r\n");
        let r = p.next(&input, &mut pos, &LIMITS, true);
        assert!(r.unwrap_err().0.contains("--max-request-size"));
    }
}

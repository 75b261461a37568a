//! The reply writer: RESP2 or RESP3 into a connection's output buffer.
//!
//! Commands write the shape they mean (a map, a null, a double) and the writer spells it
//! in the connection's protocol: a RESP3 map is a flat array of pairs in RESP2, a RESP3
//! null is `$-1` (a null bulk) or `*-1` (a null array), a double and a verbatim string are
//! bulk strings. Not thread-safe: one writer per connection.

/// A connection's output buffer and protocol version.
#[derive(Debug, Default)]
pub struct ReplyWriter {
    /// The encoded replies not yet sent.
    pub buf: Vec<u8>,
    /// RESP3 (after `HELLO 3`) rather than RESP2.
    pub resp3: bool,
}

impl ReplyWriter {
    /// An empty RESP2 writer.
    pub fn new() -> ReplyWriter {
        ReplyWriter::default()
    }

    fn line(&mut self, kind: u8, n: i64) {
        self.buf.push(kind);
        push_int(&mut self.buf, n);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+OK`.
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// A simple string (`+...`); `s` must not hold CR or LF.
    pub fn simple(&mut self, s: &str) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// An error. `msg` starts with its code (`ERR syntax error`, `WRONGPASS ...`); CR and
    /// LF become spaces, as Redis does for messages that quote user input.
    pub fn error(&mut self, msg: &str) {
        self.buf.push(b'-');
        self.buf.extend(
            msg.bytes()
                .map(|c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    /// An integer.
    pub fn int(&mut self, n: i64) {
        self.line(b':', n);
    }

    /// A bulk string.
    pub fn bulk(&mut self, data: &[u8]) {
        self.line(b'$', data.len() as i64);
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string, or a null when `None`.
    pub fn bulk_or_null(&mut self, data: Option<&[u8]>) {
        match data {
            Some(d) => self.bulk(d),
            None => self.null(),
        }
    }

    /// The null reply: `_` in RESP3, a null bulk string in RESP2.
    pub fn null(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// The header of an array of `n` elements.
    pub fn array(&mut self, n: usize) {
        self.line(b'*', n as i64);
    }

    /// The header of a map of `n` pairs (a flat array of `2n` elements in RESP2).
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.line(b'%', n as i64);
        } else {
            self.line(b'*', 2 * n as i64);
        }
    }

    /// The header of a set of `n` elements (an array in RESP2).
    pub fn set(&mut self, n: usize) {
        if self.resp3 {
            self.line(b'~', n as i64);
        } else {
            self.line(b'*', n as i64);
        }
    }

    /// A text for a person: a verbatim string (`=`) of format `txt` in RESP3, a bulk string
    /// in RESP2.
    pub fn verbatim(&mut self, text: &[u8]) {
        if self.resp3 {
            self.line(b'=', text.len() as i64 + 4);
            self.buf.extend_from_slice(b"txt:");
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }
}

/// Append the decimal digits of `n`.
fn push_int(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut v = n.unsigned_abs();
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_protocols() {
        let mut w = ReplyWriter::new();
        w.map(1);
        w.bulk(b"a");
        w.null();
        w.int(i64::MIN);
        w.verbatim(b"x");
        assert_eq!(
            w.buf,
            b"*2\r\n$1\r\na\r\n$-1\r\n:-9223372036854775808\r\n$1\r\nx\r\n"
        );
        let mut w = ReplyWriter {
            resp3: true,
            ..Default::default()
        };
        w.map(1);
        w.bulk(b"a");
        w.null();
        w.set(0);
        w.verbatim(b"x");
        w.error("ERR a\r\nb");
        assert_eq!(
            w.buf,
            b"%1\r\n$1\r\na\r\n_\r\n~0\r\n=5\r\ntxt:x\r\n-ERR a  b\r\n"
        );
    }
}

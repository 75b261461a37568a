//! A tiny JSON object writer for benchmark results (one object per line).
//!
//! Hand-written rather than pulling serde: the output is flat objects of strings, numbers,
//! nulls and small nested objects. Non-finite floats become `null`, since JSON has no NaN.

use std::fmt::Write as _;

/// An object being written; fields appear in the order they are added.
#[derive(Debug, Clone)]
pub struct JsonObject {
    buf: String,
    empty: bool,
}

impl Default for JsonObject {
    fn default() -> Self {
        JsonObject::new()
    }
}

impl JsonObject {
    /// An empty object.
    pub fn new() -> Self {
        JsonObject {
            buf: String::from("{"),
            empty: true,
        }
    }

    fn key(&mut self, k: &str) {
        if !self.empty {
            self.buf.push(',');
        }
        self.empty = false;
        push_string(&mut self.buf, k);
        self.buf.push(':');
    }

    /// Add a string field.
    pub fn str(&mut self, k: &str, v: &str) -> &mut Self {
        self.key(k);
        push_string(&mut self.buf, v);
        self
    }

    /// Add an unsigned integer field.
    pub fn u64(&mut self, k: &str, v: u64) -> &mut Self {
        self.key(k);
        let _ = write!(self.buf, "{v}");
        self
    }

    /// Add a float field (`null` when not finite).
    pub fn f64(&mut self, k: &str, v: f64) -> &mut Self {
        self.key(k);
        push_f64(&mut self.buf, v);
        self
    }

    /// Add an optional unsigned integer (`null` when absent).
    pub fn opt_u64(&mut self, k: &str, v: Option<u64>) -> &mut Self {
        match v {
            Some(v) => self.u64(k, v),
            None => self.null(k),
        }
    }

    /// Add an optional float (`null` when absent or not finite).
    pub fn opt_f64(&mut self, k: &str, v: Option<f64>) -> &mut Self {
        match v {
            Some(v) => self.f64(k, v),
            None => self.null(k),
        }
    }

    /// Add a `null` field.
    pub fn null(&mut self, k: &str) -> &mut Self {
        self.key(k);
        self.buf.push_str("null");
        self
    }

    /// Add a nested object.
    pub fn obj(&mut self, k: &str, v: JsonObject) -> &mut Self {
        self.key(k);
        self.buf.push_str(&v.finish());
        self
    }

    /// The object's text, without a trailing newline.
    pub fn finish(mut self) -> String {
        self.buf.push('}');
        self.buf
    }
}

fn push_f64(buf: &mut String, v: f64) {
    if !v.is_finite() {
        buf.push_str("null");
    } else if v == v.trunc() && v.abs() < 1e15 {
        // Whole numbers print without a fraction; JSON readers accept both.
        let _ = write!(buf, "{v:.1}");
    } else {
        // `{}` on f64 never prints an exponent without a mantissa digit or a NaN here.
        let _ = write!(buf, "{v}");
    }
}

/// Append `s` as a JSON string literal.
pub fn push_string(buf: &mut String, s: &str) {
    buf.push('"');
    for c in s.chars() {
        match c {
            '"' => buf.push_str("\\\""),
            '\\' => buf.push_str("\\\\"),
            '\n' => buf.push_str("\\n"),
            '\r' => buf.push_str("\\r"),
            '\t' => buf.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(buf, "\\u{:04x}", u32::from(c));
            }
            c => buf.push(c),
        }
    }
    buf.push('"');
}

#[cfg(test)]
pub mod parse {
    //! A minimal strict JSON parser, used only to check that the writer's output is valid.

    use std::collections::BTreeMap;

    /// A parsed JSON value.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        Null,
        Bool(bool),
        Num(f64),
        Str(String),
        Arr(Vec<Value>),
        Obj(BTreeMap<String, Value>),
    }

    impl Value {
        pub fn get(&self, k: &str) -> Option<&Value> {
            match self {
                Value::Obj(m) => m.get(k),
                _ => None,
            }
        }
    }

    /// Parse exactly one JSON value filling all of `s` (surrounding whitespace allowed).
    pub fn parse(s: &str) -> Result<Value, String> {
        let mut p = Parser {
            s: s.as_bytes(),
            i: 0,
        };
        let v = p.value()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("trailing text at {}", p.i));
        }
        Ok(v)
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl Parser<'_> {
        fn ws(&mut self) {
            while matches!(self.peek(), Some(b' ' | b'\n' | b'\t' | b'\r')) {
                self.i += 1;
            }
        }
        fn peek(&self) -> Option<u8> {
            self.s.get(self.i).copied()
        }
        fn eat(&mut self, lit: &str) -> Result<(), String> {
            if self.s[self.i..].starts_with(lit.as_bytes()) {
                self.i += lit.len();
                Ok(())
            } else {
                Err(format!("expected {lit} at {}", self.i))
            }
        }
        fn value(&mut self) -> Result<Value, String> {
            self.ws();
            match self.peek() {
                Some(b'{') => self.object(),
                Some(b'[') => {
                    self.i += 1;
                    let mut v = Vec::new();
                    self.ws();
                    if self.peek() == Some(b']') {
                        self.i += 1;
                        return Ok(Value::Arr(v));
                    }
                    loop {
                        v.push(self.value()?);
                        self.ws();
                        match self.peek() {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                return Ok(Value::Arr(v));
                            }
                            _ => return Err(format!("bad array at {}", self.i)),
                        }
                    }
                }
                Some(b'"') => Ok(Value::Str(self.string()?)),
                Some(b'n') => self.eat("null").map(|_| Value::Null),
                Some(b't') => self.eat("true").map(|_| Value::Bool(true)),
                Some(b'f') => self.eat("false").map(|_| Value::Bool(false)),
                Some(b'-' | b'0'..=b'9') => self.number(),
                _ => Err(format!("unexpected byte at {}", self.i)),
            }
        }
        fn object(&mut self) -> Result<Value, String> {
            self.i += 1;
            let mut m = BTreeMap::new();
            self.ws();
            if self.peek() == Some(b'}') {
                self.i += 1;
                return Ok(Value::Obj(m));
            }
            loop {
                self.ws();
                let k = self.string()?;
                self.ws();
                self.eat(":")?;
                let v = self.value()?;
                if m.insert(k.clone(), v).is_some() {
                    return Err(format!("duplicate key {k}"));
                }
                self.ws();
                match self.peek() {
                    Some(b',') => self.i += 1,
                    Some(b'}') => {
                        self.i += 1;
                        return Ok(Value::Obj(m));
                    }
                    _ => return Err(format!("bad object at {}", self.i)),
                }
            }
        }
        fn string(&mut self) -> Result<String, String> {
            self.eat("\"")?;
            let mut out = String::new();
            loop {
                let c = self.peek().ok_or("unterminated string")?;
                self.i += 1;
                match c {
                    b'"' => return Ok(out),
                    b'\\' => {
                        let e = self.peek().ok_or("bad escape")?;
                        self.i += 1;
                        match e {
                            b'"' => out.push('"'),
                            b'\\' => out.push('\\'),
                            b'/' => out.push('/'),
                            b'n' => out.push('\n'),
                            b'r' => out.push('\r'),
                            b't' => out.push('\t'),
                            b'b' => out.push('\u{8}'),
                            b'f' => out.push('\u{c}'),
                            b'u' => {
                                let h = std::str::from_utf8(&self.s[self.i..self.i + 4])
                                    .map_err(|e| e.to_string())?;
                                let n = u32::from_str_radix(h, 16).map_err(|e| e.to_string())?;
                                out.push(char::from_u32(n).ok_or("bad \\u")?);
                                self.i += 4;
                            }
                            _ => return Err("bad escape".into()),
                        }
                    }
                    c if c < 0x20 => return Err("control byte in string".into()),
                    _ => {
                        // Copy one UTF-8 sequence.
                        let start = self.i - 1;
                        while matches!(self.peek(), Some(0x80..=0xbf)) {
                            self.i += 1;
                        }
                        out.push_str(
                            std::str::from_utf8(&self.s[start..self.i])
                                .map_err(|e| e.to_string())?,
                        );
                    }
                }
            }
        }
        fn number(&mut self) -> Result<Value, String> {
            let start = self.i;
            while matches!(
                self.peek(),
                Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
            ) {
                self.i += 1;
            }
            let t = std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?;
            if t.starts_with('.') || t.ends_with('.') || t.starts_with("-.") {
                return Err(format!("bad number {t}"));
            }
            t.parse::<f64>()
                .map(Value::Num)
                .map_err(|_| format!("bad number {t}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse::{Value, parse};
    use super::*;

    #[test]
    fn writes_valid_json() {
        let mut inner = JsonObject::new();
        inner.u64("wal", 12).u64("flush", 0);
        let mut o = JsonObject::new();
        o.str("benchmark", "fill\"random\"\n\\")
            .u64("num", 1_000_000)
            .f64("seconds", 1.25)
            .f64("whole", 3.0)
            .f64("nan", f64::NAN)
            .f64("tiny", 1e-300)
            .opt_u64("found", None)
            .opt_f64("p50_us", Some(2.5))
            .str("ctl", "\u{1}é")
            .obj("engine_written", inner)
            .obj("empty", JsonObject::new());
        let text = o.finish();
        assert!(!text.contains('\n'));
        let v = parse(&text).unwrap();
        assert_eq!(
            v.get("benchmark"),
            Some(&Value::Str("fill\"random\"\n\\".into()))
        );
        assert_eq!(v.get("num"), Some(&Value::Num(1e6)));
        assert_eq!(v.get("seconds"), Some(&Value::Num(1.25)));
        assert_eq!(v.get("whole"), Some(&Value::Num(3.0)));
        assert_eq!(v.get("nan"), Some(&Value::Null));
        assert_eq!(v.get("tiny"), Some(&Value::Num(1e-300)));
        assert_eq!(v.get("found"), Some(&Value::Null));
        assert_eq!(v.get("ctl"), Some(&Value::Str("\u{1}é".into())));
        assert_eq!(
            v.get("engine_written").and_then(|w| w.get("wal")),
            Some(&Value::Num(12.0))
        );
        assert_eq!(v.get("empty"), Some(&Value::Obj(Default::default())));
    }

    #[test]
    fn parser_rejects_broken_text() {
        for bad in [
            "{",
            "{\"a\":}",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "[1,2",
            "\"x",
            "1.",
            "{} x",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}

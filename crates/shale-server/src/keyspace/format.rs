//! How the server lays Redis data into the engine's keys and values. Durable: on-disk,
//! never renumber a prefix or a tag. docs/server.md, "On-disk layout", has a worked example.
//!
//! ```text
//! engine key                      engine value
//! 'k' user-key                    tag: u8 | [expire-at: u64 LE, if tag = 1] | payload
//! 'm' name                        server metadata ("mformat" = "shale-server 1")
//! 's'                             the sync marker: only ever written as a deletion
//! ```
//!
//! Tags: 0 = string without expiry, 1 = string with an expiry (Unix time in milliseconds).
//! The prefix byte keeps user keys apart from the server's own, so no user key can collide
//! with the metadata or the marker, and a later data type gets a tag rather than a new
//! layout.

/// The prefix of every user key.
pub const DATA: u8 = b'k';
/// The engine key of the format marker, written when the server creates a store.
pub const FORMAT_KEY: &[u8] = b"mformat";
/// The format marker's value.
pub const FORMAT_VALUE: &[u8] = b"shale-server 1";
// Retired: `s` was the engine key whose synced deletion made earlier writes durable,
// before the engine had `sync_wal`. Never reuse it.

/// Tag of a string without expiry.
pub const TAG_STRING: u8 = 0;
/// Tag of a string with an expiry.
pub const TAG_STRING_EXPIRES: u8 = 1;

/// The largest header: tag and expiry.
pub const MAX_HEADER: usize = 9;

/// The engine key of user key `key`.
pub fn data_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(DATA);
    k.extend_from_slice(key);
    k
}

/// The first engine key after every data key that starts with `prefix` (an exclusive upper
/// bound for a prefix scan).
pub fn data_prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut k = data_key(prefix);
    while let Some(last) = k.pop() {
        if last < 0xff {
            k.push(last + 1);
            return k;
        }
    }
    // Unreachable: the first byte is DATA, below 0xff.
    vec![DATA + 1]
}

/// Encode a value: header then payload, into `out` (cleared first).
pub fn encode_value(out: &mut Vec<u8>, payload: &[u8], expire_at: Option<u64>) {
    out.clear();
    out.reserve(payload.len() + MAX_HEADER);
    match expire_at {
        None => out.push(TAG_STRING),
        Some(t) => {
            out.push(TAG_STRING_EXPIRES);
            out.extend_from_slice(&t.to_le_bytes());
        }
    }
    out.extend_from_slice(payload);
}

/// A decoded value header: where the payload starts and the expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Offset of the payload in the encoded value.
    pub payload_at: usize,
    /// Unix time in milliseconds at which the key expires.
    pub expire_at: Option<u64>,
}

/// Decode the header of an encoded value.
///
/// # Errors
/// What is wrong, for a value this server did not write.
pub fn decode_header(raw: &[u8]) -> Result<Header, String> {
    match raw.first() {
        Some(&TAG_STRING) => Ok(Header {
            payload_at: 1,
            expire_at: None,
        }),
        Some(&TAG_STRING_EXPIRES) => {
            let t: [u8; 8] = raw
                .get(1..9)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| {
                    format!("value of {} bytes is too short for its expiry", raw.len())
                })?;
            Ok(Header {
                payload_at: 9,
                expire_at: Some(u64::from_le_bytes(t)),
            })
        }
        Some(&t) => Err(format!("unknown value tag {t} (expected 0 or 1)")),
        None => Err("empty value (expected a tag byte)".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_worked_example() {
        let mut v = Vec::new();
        encode_value(&mut v, b"red", Some(1_700_000_000_000));
        // The example of docs/server.md.
        assert_eq!(
            v,
            [
                1, 0x00, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0x00, 0x00, b'r', b'e', b'd'
            ]
        );
        let h = decode_header(&v).unwrap();
        assert_eq!(h.expire_at, Some(1_700_000_000_000));
        assert_eq!(&v[h.payload_at..], b"red");
        encode_value(&mut v, b"", None);
        assert_eq!(v, [0]);
        assert!(decode_header(&[2]).is_err());
        assert!(decode_header(&[1, 0]).is_err());
        assert!(decode_header(&[]).is_err());
    }

    #[test]
    fn prefix_bounds() {
        assert_eq!(data_prefix_end(b""), b"l");
        assert_eq!(data_prefix_end(b"ab"), b"kac");
        assert_eq!(data_prefix_end(b"a\xff"), b"kb");
    }
}

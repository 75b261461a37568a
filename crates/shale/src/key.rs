//! Internal keys: (user key, sequence number, kind).
//!
//! Every entry the engine stores, in memory or on disk, is keyed by an *internal key*: the
//! user's key followed by an 8-byte little-endian trailer `(seqno << 8) | kind`. Internal
//! keys sort by user key ascending (bytewise), then by trailer *descending*, so that for one
//! user key the newest version comes first and a seek to `(key, snapshot)` lands on the
//! newest version visible at that snapshot.
//!
//! ```text
//! +----------------------+-------------------------------------+
//! | user key (n bytes)   | trailer: u64 LE = seqno << 8 | kind  |
//! +----------------------+-------------------------------------+
//! ```

use std::cmp::Ordering;

/// A sequence number: the position of a write in the store's history. 56 bits are usable.
pub type SeqNo = u64;

/// The largest sequence number that fits in a trailer.
pub const MAX_SEQNO: SeqNo = (1 << 56) - 1;

/// Length of the trailer that follows the user key.
pub const TRAILER_LEN: usize = 8;

/// What an entry means.
///
/// On-disk: these values are embedded in WAL records, tables and MANIFEST keys. Never
/// renumber them; retired values stay listed here as comments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone: the key was deleted.
    Delete = 0,
    /// A value stored inline, as the user wrote it.
    Value = 1,
    /// A pointer to a value stored elsewhere (the value-placement axis decides where and how
    /// the pointer is encoded).
    ValuePointer = 2,
    /// A range tombstone in a write batch or a log record: the key is the range's start
    /// and the value its end ([`crate::rangedel`]). Never in a memtable or a table, so
    /// [`ValueKind::from_u8`] (which reads internal keys) refuses it.
    RangeDelete = 3,
}

impl ValueKind {
    /// The kind used in seek keys: the largest kind, so that a seek key sorts before every
    /// entry of the same user key and sequence number.
    pub const FOR_SEEK: ValueKind = ValueKind::ValuePointer;

    /// Decode a kind byte; `None` for an unknown value (the caller reports corruption).
    pub fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Value),
            2 => Some(ValueKind::ValuePointer),
            _ => None,
        }
    }

    /// Decode the kind byte of a logged write (a write batch entry or a value-log record):
    /// the kinds of [`ValueKind::from_u8`] and [`ValueKind::RangeDelete`].
    pub fn from_logged_u8(b: u8) -> Option<ValueKind> {
        match b {
            3 => Some(ValueKind::RangeDelete),
            b => ValueKind::from_u8(b),
        }
    }
}

/// Pack a sequence number and kind into a trailer.
#[inline]
pub fn pack_trailer(seq: SeqNo, kind: ValueKind) -> u64 {
    debug_assert!(seq <= MAX_SEQNO);
    (seq << 8) | kind as u64
}

/// Append the internal key `(user_key, seq, kind)` to `buf`.
#[inline]
pub fn append_internal_key(buf: &mut Vec<u8>, user_key: &[u8], seq: SeqNo, kind: ValueKind) {
    buf.extend_from_slice(user_key);
    buf.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

/// Build an owned internal key.
pub fn make_internal_key(user_key: &[u8], seq: SeqNo, kind: ValueKind) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut v, user_key, seq, kind);
    v
}

/// The key to seek to for the newest version of `user_key` visible at `snapshot`.
pub fn seek_key(user_key: &[u8], snapshot: SeqNo) -> Vec<u8> {
    make_internal_key(user_key, snapshot, ValueKind::FOR_SEEK)
}

/// An internal key split into its parts. Borrowed from the encoded bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user's key.
    pub user_key: &'a [u8],
    /// The sequence number of the write.
    pub seq: SeqNo,
    /// What the entry means.
    pub kind: ValueKind,
}

/// Split an encoded internal key. Returns a description of the problem when the bytes are not
/// an internal key (too short, unknown kind); callers attach file and offset.
#[inline]
pub fn parse_internal_key(ikey: &[u8]) -> Result<ParsedKey<'_>, String> {
    if ikey.len() < TRAILER_LEN {
        return Err(format!(
            "internal key of {} bytes is shorter than its {TRAILER_LEN}-byte trailer",
            ikey.len()
        ));
    }
    let (user_key, t) = ikey.split_at(ikey.len() - TRAILER_LEN);
    let mut tb = [0u8; 8];
    tb.copy_from_slice(t);
    let trailer = u64::from_le_bytes(tb);
    let kind = ValueKind::from_u8((trailer & 0xff) as u8)
        .ok_or_else(|| format!("unknown value kind {} in internal key", trailer & 0xff))?;
    Ok(ParsedKey {
        user_key,
        seq: trailer >> 8,
        kind,
    })
}

/// The user-key part of an encoded internal key (the whole slice if it is too short).
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

/// The trailer of an encoded internal key (0 if it is too short).
#[inline]
pub fn trailer(ikey: &[u8]) -> u64 {
    if ikey.len() < TRAILER_LEN {
        return 0;
    }
    let mut tb = [0u8; 8];
    tb.copy_from_slice(&ikey[ikey.len() - TRAILER_LEN..]);
    u64::from_le_bytes(tb)
}

/// Compare two encoded internal keys: user key ascending, then trailer descending.
#[inline]
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    match user_key(a).cmp(user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_order() {
        let a = make_internal_key(b"apple", 7, ValueKind::Value);
        let p = parse_internal_key(&a).unwrap();
        assert_eq!(p.user_key, b"apple");
        assert_eq!(p.seq, 7);
        assert_eq!(p.kind, ValueKind::Value);

        let newer = make_internal_key(b"apple", 9, ValueKind::Delete);
        let b = make_internal_key(b"banana", 1, ValueKind::Value);
        assert_eq!(compare_internal(&newer, &a), Ordering::Less);
        assert_eq!(compare_internal(&a, &b), Ordering::Less);
        // a seek key at snapshot 8 lands after version 9 and on version 7
        let s = seek_key(b"apple", 8);
        assert_eq!(compare_internal(&newer, &s), Ordering::Less);
        assert_eq!(compare_internal(&s, &a), Ordering::Less);
        // a seek key at the same seq sorts before the entry
        let s7 = seek_key(b"apple", 7);
        assert_eq!(compare_internal(&s7, &a), Ordering::Less);
    }

    #[test]
    fn bad_keys_rejected() {
        assert!(parse_internal_key(b"short").is_err());
        let mut k = make_internal_key(b"k", 1, ValueKind::Value);
        let n = k.len();
        k[n - 8] = 0x77; // kind byte
        assert!(parse_internal_key(&k).is_err());
    }
}

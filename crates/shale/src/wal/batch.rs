//! The write batch: a group of puts and deletes applied atomically, and the payload of one
//! WAL record.
//!
//! The batch is kept encoded in one buffer (the *rep*) so that it is logged as it is, with no
//! re-encoding, and so that group commit concatenates batches with one copy:
//!
//! ```text
//! +----------------+-----------------+---------+---------+-----+
//! | seq: fixed64 LE| count: fixed32 LE| entry 0 | entry 1 | ... |
//! +----------------+-----------------+---------+---------+-----+
//! entry: kind: u8 | key: varint len + bytes | value: varint len + bytes (absent for delete)
//! (kind 3, a range tombstone: key = start, value = end)
//! ```
//!
//! Entry `i` gets sequence number `seq + i`. See `docs/format/wal.md`.

use crate::format::{Reader, decode_fixed32, decode_fixed64, put_length_prefixed};
use crate::key::{SeqNo, ValueKind};

/// Bytes of the header: sequence number (8) and count (4).
const HEADER_LEN: usize = 12;

/// The most bytes an entry takes besides its key and value: the kind byte and two varint
/// lengths.
const ENTRY_FRAMING: usize = 1 + 10 + 10;

/// A group of writes applied atomically, in order. Later entries for the same key win.
///
/// # Examples
/// ```
/// use shale::wal::WriteBatch;
/// let mut b = WriteBatch::new();
/// b.put(b"k1", b"v1");
/// b.delete(b"k0");
/// assert_eq!(b.len(), 2);
/// let keys: Vec<&[u8]> = b.iter().map(|e| e.key).collect();
/// assert_eq!(keys, [&b"k1"[..], &b"k0"[..]]);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    /// The encoded payload; always well-formed (built here or validated by `from_data`).
    rep: Vec<u8>,
}

/// One write in a [`WriteBatch`], borrowed from its encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    /// Put (`Value` or `ValuePointer`) or delete.
    pub kind: ValueKind,
    /// The user key.
    pub key: &'a [u8],
    /// The value; empty for a delete.
    pub value: &'a [u8],
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("sequence", &self.sequence())
            .field("count", &self.len())
            .field("bytes", &self.rep.len())
            .finish()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
        }
    }

    /// An empty batch with room for entries of `bytes` bytes of keys and values without
    /// growing (an entry also takes up to 21 bytes of framing; [`WriteBatch::entry_room`]).
    pub fn with_capacity(bytes: usize) -> WriteBatch {
        let mut rep = Vec::with_capacity(HEADER_LEN.saturating_add(bytes));
        rep.resize(HEADER_LEN, 0);
        WriteBatch { rep }
    }

    /// The room one entry of this key and value takes in a batch, framing included: the sum
    /// over a batch's entries is the capacity to ask [`WriteBatch::with_capacity`] for.
    pub fn entry_room(key: &[u8], value: &[u8]) -> usize {
        ENTRY_FRAMING + key.len() + value.len()
    }

    /// The room ([`WriteBatch::with_capacity`]) in which this batch's entries, pushed one
    /// by one, never grow the new batch: their bytes, plus the slack `push` asks for on top
    /// of the last one.
    pub(crate) fn room_to_copy(&self) -> usize {
        self.rep.len().saturating_sub(HEADER_LEN) + ENTRY_FRAMING
    }

    /// Set `key` to `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.push(ValueKind::Value, key, Some(value));
    }

    /// Delete `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.push(ValueKind::Delete, key, None);
    }

    /// Delete every key `k` with `start <= k < end` (RocksDB's `DeleteRange`): one entry,
    /// however many keys the range holds. `start >= end` deletes nothing; writing a batch
    /// with `start > end` fails with `InvalidArgument`. Layouts without ordered keys
    /// (`trie`) refuse a batch holding one with `Unsupported`.
    ///
    /// # Examples
    /// ```
    /// use shale::wal::WriteBatch;
    /// let mut b = WriteBatch::new();
    /// b.delete_range(b"a", b"m");
    /// assert_eq!(b.len(), 1);
    /// ```
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) {
        self.push(ValueKind::RangeDelete, start, Some(end));
    }

    /// Whether the batch holds a range tombstone ([`WriteBatch::delete_range`]).
    pub fn has_range_deletes(&self) -> bool {
        self.iter().any(|e| e.kind == ValueKind::RangeDelete)
    }

    /// Set `key` to a value pointer: the encoded location of a value kept elsewhere (by
    /// the value-placement axis).
    #[allow(
        dead_code,
        reason = "used by value placements that separate values (vlog)"
    )]
    pub(crate) fn put_value_pointer(&mut self, key: &[u8], pointer: &[u8]) {
        self.push(ValueKind::ValuePointer, key, Some(pointer));
    }

    /// Set `key` to a value pointer followed by the value it names, for a memtable that
    /// keeps the value beside the pointer (the value log's memtable entries,
    /// `docs/format/vlog.md` §2): the stored value is `pointer` then `value`.
    pub(crate) fn put_value_pointer_carrying(&mut self, key: &[u8], pointer: &[u8], value: &[u8]) {
        self.rep
            .reserve(ENTRY_FRAMING + key.len() + pointer.len() + value.len());
        self.rep.push(ValueKind::ValuePointer as u8);
        put_length_prefixed(&mut self.rep, key);
        crate::format::put_varint64(&mut self.rep, (pointer.len() + value.len()) as u64);
        self.rep.extend_from_slice(pointer);
        self.rep.extend_from_slice(value);
        self.set_count(self.count().saturating_add(1));
    }

    fn push(&mut self, kind: ValueKind, key: &[u8], value: Option<&[u8]>) {
        // One reservation per entry instead of several doublings of a small vector.
        let need = ENTRY_FRAMING + key.len() + value.map_or(0, <[u8]>::len);
        self.rep.reserve(need);
        self.rep.push(kind as u8);
        put_length_prefixed(&mut self.rep, key);
        if let Some(v) = value {
            put_length_prefixed(&mut self.rep, v);
        }
        // A batch of 2^32 entries would need at least 12 GiB; the count saturates rather
        // than wraps, and such a batch would then fail validation when read back.
        self.set_count(self.count().saturating_add(1));
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.count() as usize
    }

    /// True when the batch holds no entries.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Remove every entry (the sequence number is reset too).
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
    }

    /// Size of the encoded batch in bytes: what logging it writes, before framing.
    pub fn approximate_size(&self) -> usize {
        self.rep.len()
    }

    /// The entries, in the order they were added.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            r: Reader::new(self.rep.get(HEADER_LEN..).unwrap_or_default()),
            left: self.count(),
        }
    }

    /// Set the sequence number of the first entry (entry `i` gets `seq + i`).
    #[allow(dead_code, reason = "the engine's write path assigns sequence numbers")]
    pub(crate) fn set_sequence(&mut self, seq: SeqNo) {
        if let Some(h) = self.rep.get_mut(0..8) {
            h.copy_from_slice(&seq.to_le_bytes());
        }
    }

    /// The sequence number of the first entry.
    pub fn sequence(&self) -> SeqNo {
        decode_fixed64(&self.rep, 0).unwrap_or(0)
    }

    /// The encoded payload, ready to log.
    #[allow(dead_code, reason = "the engine's write path logs it")]
    pub(crate) fn data(&self) -> &[u8] {
        &self.rep
    }

    /// Take an encoded payload read from a log, validating all of it: the header, every
    /// entry's kind and lengths, that the count matches the entries and that no bytes
    /// follow the last entry.
    ///
    /// # Errors
    /// A description of the first problem; the caller attaches file and offset.
    #[allow(dead_code, reason = "the engine's recovery replays logged batches")]
    pub(crate) fn from_data(bytes: Vec<u8>) -> Result<WriteBatch, String> {
        if bytes.len() < HEADER_LEN {
            return Err(format!(
                "write batch of {} bytes is shorter than its {HEADER_LEN}-byte header",
                bytes.len()
            ));
        }
        let count = decode_fixed32(&bytes, 8)?;
        let seq = decode_fixed64(&bytes, 0)?;
        // Every entry's sequence number must fit in a key trailer: a batch that claims
        // otherwise would be applied with wrapped or clamped numbers, i.e. wrong answers.
        let last = seq.checked_add(u64::from(count).saturating_sub(1));
        if count > 0 && (seq == 0 || last.is_none_or(|l| l > crate::key::MAX_SEQNO)) {
            return Err(format!(
                "write batch sequence numbers {seq}..+{count} are outside 1..={}",
                crate::key::MAX_SEQNO
            ));
        }
        let mut r = Reader::new(bytes.get(HEADER_LEN..).unwrap_or_default());
        for i in 0..count {
            let at = HEADER_LEN + r.position();
            decode_entry(&mut r).map_err(|e| {
                format!("write batch entry {i} of {count} (byte {at} of the batch): {e}")
            })?;
        }
        if !r.is_empty() {
            return Err(format!(
                "write batch declares {count} entries but {} bytes follow the last one",
                r.remaining()
            ));
        }
        Ok(WriteBatch { rep: bytes })
    }

    /// Add every entry of `other` after this batch's entries (group commit). The sequence
    /// number of `self` is kept.
    pub fn append(&mut self, other: &WriteBatch) {
        self.rep
            .extend_from_slice(other.rep.get(HEADER_LEN..).unwrap_or_default());
        self.set_count(self.count().saturating_add(other.count()));
    }

    fn count(&self) -> u32 {
        decode_fixed32(&self.rep, 8).unwrap_or(0)
    }

    fn set_count(&mut self, n: u32) {
        if let Some(h) = self.rep.get_mut(8..HEADER_LEN) {
            h.copy_from_slice(&n.to_le_bytes());
        }
    }
}

/// Decode one entry from `r`.
fn decode_entry<'a>(r: &mut Reader<'a>) -> Result<BatchEntry<'a>, String> {
    let k = r.u8()?;
    let kind = ValueKind::from_logged_u8(k).ok_or_else(|| format!("unknown entry kind {k}"))?;
    let key = r.length_prefixed().map_err(|e| format!("key: {e}"))?;
    let value = match kind {
        ValueKind::Delete => &[][..],
        ValueKind::Value | ValueKind::ValuePointer | ValueKind::RangeDelete => {
            r.length_prefixed().map_err(|e| format!("value: {e}"))?
        }
    };
    Ok(BatchEntry { kind, key, value })
}

/// Iterator over the entries of a [`WriteBatch`].
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    r: Reader<'a>,
    left: u32,
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = BatchEntry<'a>;

    fn next(&mut self) -> Option<BatchEntry<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The rep is well-formed by construction, so this only stops early on a bug.
        match decode_entry(&mut self.r) {
            Ok(e) => Some(e),
            Err(_) => {
                self.left = 0;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}

impl<'a> IntoIterator for &'a WriteBatch {
    type Item = BatchEntry<'a>;
    type IntoIter = BatchIter<'a>;
    fn into_iter(self) -> BatchIter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::WriteBatch;

    #[test]
    fn a_batch_sized_by_entry_room_never_grows_and_encodes_as_a_new_one() {
        let entries: [(&[u8], Option<&[u8]>); 3] = [
            (b"key", Some(&[7u8; 300])),
            (&[1u8; 200], None),
            (b"", Some(b"")),
        ];
        let room = entries
            .iter()
            .map(|(k, v)| WriteBatch::entry_room(k, v.unwrap_or_default()))
            .sum();
        let mut sized = WriteBatch::with_capacity(room);
        let mut grown = WriteBatch::new();
        let capacity = sized.rep.capacity();
        for (k, v) in entries {
            match v {
                Some(v) => {
                    sized.put(k, v);
                    grown.put(k, v);
                }
                None => {
                    sized.delete(k);
                    grown.delete(k);
                }
            }
        }
        assert_eq!(sized.rep.capacity(), capacity, "the batch reallocated");
        assert_eq!(sized.data(), grown.data());
        assert_eq!(sized.len(), 3);
        // A copy made entry by entry in `room_to_copy` does not grow either.
        let mut copy = WriteBatch::with_capacity(sized.room_to_copy());
        let capacity = copy.rep.capacity();
        for e in sized.iter() {
            match e.kind {
                crate::key::ValueKind::Delete => copy.delete(e.key),
                _ => copy.put(e.key, e.value),
            }
        }
        assert_eq!(copy.rep.capacity(), capacity, "the copy reallocated");
        assert_eq!(copy.data(), sized.data());
    }
}

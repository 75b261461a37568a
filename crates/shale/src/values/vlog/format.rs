//! The value-log format: segment header, records and value pointers. The normative
//! byte-by-byte description with a worked example is `docs/format/vlog.md`.
//!
//! ```text
//! segment: | header (24 B) | record | record | ... |
//! header:  | magic "SHALEVLG" (8) | version u32 LE | segment number u64 LE | crc u32 LE |
//!          crc = mask_crc(crc32c(bytes 0..20 ++ store id u64 LE)) (version 1: bytes 0..20)
//!          version 3 (written): records may be range deletes; 2: the same header; 1: read
//! record:  | crc u32 LE | seq u64 LE | kind u8 | flags u8 | key_len u32 LE | value_len u32 LE |
//!          | key | value |
//!          crc = mask_crc(crc32c(bytes 4..end of record)); flags bit 0: last record of a batch
//! pointer (in the tree, ValueKind::ValuePointer): varint64 segment, varint64 offset,
//!          varint32 length (the whole record)
//! ```
//!
//! All integers little-endian. Every length read from disk is checked before use.

use crate::format::{Reader, crc32c, mask_crc, put_varint32, put_varint64, unmask_crc};
use crate::key::{SeqNo, ValueKind};
use crate::options::{MAX_KEY_SIZE, MAX_VALUE_SIZE};

/// The segment magic. On-disk: never change.
pub const MAGIC: &[u8; 8] = b"SHALEVLG";
/// The format version this code writes (and the newest it reads). On-disk. Version 3 is
/// version 2 whose records may include range deletes (kind 3): a release that reads only
/// versions 1 and 2 refuses the segment by its version instead of failing on the record.
/// Versions 2 and 3 have the same header (the checksum covers the store's id); version 1
/// (no store id) is still read. Version-2 segments written before the bump may hold kind-3
/// records too (range deletes reached the log before it): they are read as before.
pub const VERSION: u32 = 3;
/// The first version, whose header checksum covers the header's own bytes only.
const VERSION_1: u32 = 1;
/// The version whose header checksum first covered the store's id (no range deletes).
const VERSION_2: u32 = 2;

/// The message for a segment of a format version this build does not read.
fn newer_version(v: u32) -> String {
    format!(
        "segment format version {v}; this release reads versions {VERSION_1} to {VERSION} \
         (a segment written by a newer release)"
    )
}
/// Bytes of the segment header.
pub const HEADER_LEN: u64 = 24;
/// Bytes of a record header (before key and value).
pub const RECORD_HEADER_LEN: usize = 22;
/// Flag: the record is the last of its write batch. On-disk: never renumber.
pub const FLAG_LAST_IN_BATCH: u8 = 1;
/// The largest encoded pointer: two varint64 and a varint32.
pub const MAX_POINTER_LEN: usize = 10 + 10 + 5;

pub use crate::filename::segment_file_name;

/// The checksum of a version-2 header's first 20 bytes: over them and the store's id, so
/// a segment of another store fails it.
fn header_crc(body: &[u8], store_id: u64) -> u32 {
    let mut b = [0u8; 28];
    b[..20].copy_from_slice(body.get(..20).unwrap_or(&[0; 20]));
    b[20..].copy_from_slice(&store_id.to_le_bytes());
    crc32c(&b)
}

/// Encode the header of segment `number` of the store `store_id`.
pub fn encode_header(number: u64, store_id: u64) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..20].copy_from_slice(&number.to_le_bytes());
    let crc = mask_crc(header_crc(&h[..20], store_id));
    h[20..24].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Check a segment header read from segment `number` of the store `store_id`.
///
/// # Errors
/// A description of the first mismatch.
pub fn check_header(bytes: &[u8], number: u64, store_id: u64) -> Result<(), String> {
    let mut r = Reader::new(bytes);
    let magic = r.bytes(8)?;
    if magic != MAGIC {
        return Err("not a value-log segment (bad magic)".into());
    }
    let version = r.fixed32()?;
    let n = r.fixed64()?;
    let crc = unmask_crc(r.fixed32()?);
    let body = bytes.get(..20).ok_or("short header")?;
    match version {
        VERSION_1 if crc == crc32c(body) => {}
        VERSION_2 | VERSION if crc == header_crc(body, store_id) => {}
        VERSION_2 | VERSION if crc == crc32c(body) => {
            return Err(format!(
                "segment header checksum mismatch: a version-1 checksum in a version-{version} \
                 header"
            ));
        }
        VERSION_2 | VERSION => {
            return Err(format!(
                "segment header checksum mismatch for store {store_id:016x}: the segment \
                 belongs to another store (its checksum covers the store id), or its \
                 header is damaged"
            ));
        }
        VERSION_1 => return Err("segment header checksum mismatch".into()),
        v if v > VERSION && (crc == crc32c(body) || crc == header_crc(body, store_id)) => {
            return Err(newer_version(v));
        }
        _ => return Err("segment header checksum mismatch".into()),
    }
    if n != number {
        return Err(format!("header names segment {n}, file name says {number}"));
    }
    Ok(())
}

/// Check a segment header read from segment `number` when the store's id is unknown
/// (repair of a store whose MANIFEST and tables are gone): the magic, a version this build
/// reads and the number; a version-1 header's checksum too. A version-2 checksum covers the
/// store id, so it cannot be checked.
///
/// # Errors
/// A description of the first mismatch.
pub fn check_header_unbound(bytes: &[u8], number: u64) -> Result<(), String> {
    let mut r = Reader::new(bytes);
    if r.bytes(8)? != MAGIC {
        return Err("not a value-log segment (bad magic)".into());
    }
    let version = r.fixed32()?;
    let n = r.fixed64()?;
    let crc = unmask_crc(r.fixed32()?);
    let body = bytes.get(..20).ok_or("short header")?;
    match version {
        VERSION_1 if crc != crc32c(body) => {
            return Err("segment header checksum mismatch".into());
        }
        VERSION_1 | VERSION_2 | VERSION => {}
        v if v > VERSION => return Err(newer_version(v)),
        v => return Err(format!("unknown segment format version {v}")),
    }
    if n != number {
        return Err(format!("header names segment {n}, file name says {number}"));
    }
    Ok(())
}

/// Append one record to `buf`; returns its length.
pub fn encode_record(
    buf: &mut Vec<u8>,
    seq: SeqNo,
    kind: ValueKind,
    last_in_batch: bool,
    key: &[u8],
    value: &[u8],
) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&[0; 4]);
    buf.extend_from_slice(&seq.to_le_bytes());
    buf.push(kind as u8);
    buf.push(if last_in_batch { FLAG_LAST_IN_BATCH } else { 0 });
    buf.extend_from_slice(&(key.len() as u32).to_le_bytes());
    buf.extend_from_slice(&(value.len() as u32).to_le_bytes());
    buf.extend_from_slice(key);
    buf.extend_from_slice(value);
    let crc = mask_crc(crc32c(buf.get(start + 4..).unwrap_or_default()));
    if let Some(c) = buf.get_mut(start..start + 4) {
        c.copy_from_slice(&crc.to_le_bytes());
    }
    buf.len() - start
}

/// The length of a record with this key and value.
pub fn record_len(key: &[u8], value: &[u8]) -> usize {
    RECORD_HEADER_LEN + key.len() + value.len()
}

/// A record's fixed header, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// The stored checksum (masked).
    pub crc: u32,
    /// The write's sequence number.
    pub seq: SeqNo,
    /// Value or delete.
    pub kind: ValueKind,
    /// Flag bits.
    pub flags: u8,
    /// Key length.
    pub key_len: usize,
    /// Value length.
    pub value_len: usize,
}

impl RecordHeader {
    /// Bytes of the whole record.
    pub fn record_len(&self) -> usize {
        RECORD_HEADER_LEN + self.key_len + self.value_len
    }
}

/// Decode and bound-check a record header.
///
/// # Errors
/// A description: short input, unknown kind or flags, lengths over the engine's limits.
pub fn decode_header(bytes: &[u8]) -> Result<RecordHeader, String> {
    // Every field is at a fixed offset: read them from one bounds-checked array (this runs
    // for every value a scan resolves, cached or not). Short input takes the field-by-field
    // path, for its error.
    let Some(h) = bytes.first_chunk::<RECORD_HEADER_LEN>() else {
        return decode_header_fields(bytes);
    };
    let le32 = |at: usize| {
        h.get(at..at + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(0, u32::from_le_bytes)
    };
    let crc = le32(0);
    let seq = h
        .get(4..12)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes);
    let kind = header_kind(h.get(12).copied().unwrap_or_default())?;
    let flags = header_flags(h.get(13).copied().unwrap_or_default())?;
    let key_len = le32(14) as usize;
    let value_len = le32(18) as usize;
    header_lengths(key_len, value_len)?;
    Ok(RecordHeader {
        crc,
        seq,
        kind,
        flags,
        key_len,
        value_len,
    })
}

/// The error of [`decode_header`] for input shorter than a header: the first field cut
/// short, unless the kind or the flags before it are wrong.
fn decode_header_fields(bytes: &[u8]) -> Result<RecordHeader, String> {
    let mut r = Reader::new(bytes);
    r.fixed32()?;
    r.fixed64()?;
    header_kind(r.u8()?)?;
    header_flags(r.u8()?)?;
    r.fixed32()?;
    r.fixed32()?;
    Err("short record header".into())
}

/// A header's kind byte: a value, a delete or a range delete.
fn header_kind(kind_byte: u8) -> Result<ValueKind, String> {
    match ValueKind::from_logged_u8(kind_byte) {
        Some(k @ (ValueKind::Value | ValueKind::Delete | ValueKind::RangeDelete)) => Ok(k),
        _ => Err(format!(
            "record kind {kind_byte} is not a value, a delete or a range delete"
        )),
    }
}

/// A header's flag bits: only known ones.
fn header_flags(flags: u8) -> Result<u8, String> {
    if flags & !FLAG_LAST_IN_BATCH != 0 {
        return Err(format!("unknown record flags {flags:#04x}"));
    }
    Ok(flags)
}

/// A header's lengths: within the engine's limits.
fn header_lengths(key_len: usize, value_len: usize) -> Result<(), String> {
    if key_len > MAX_KEY_SIZE {
        return Err(format!("key length {key_len} exceeds {MAX_KEY_SIZE}"));
    }
    if value_len > MAX_VALUE_SIZE {
        return Err(format!("value length {value_len} exceeds {MAX_VALUE_SIZE}"));
    }
    Ok(())
}

/// A decoded record borrowing its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The write's sequence number.
    pub seq: SeqNo,
    /// Value or delete.
    pub kind: ValueKind,
    /// Whether this record ends its batch.
    pub last_in_batch: bool,
    /// The user key.
    pub key: &'a [u8],
    /// The value (empty for a delete).
    pub value: &'a [u8],
}

/// Decode one whole record (exactly `bytes`), checking its checksum.
///
/// # Errors
/// A description of the first problem.
pub fn decode_record(bytes: &[u8]) -> Result<Record<'_>, String> {
    decode_record_as(bytes, true)
}

/// [`decode_record`] of a record whose checksum already held when it was read (one kept in
/// the block cache): the same checks but the checksum's.
///
/// # Errors
/// As [`decode_record`], but for a checksum mismatch.
pub fn decode_checked_record(bytes: &[u8]) -> Result<Record<'_>, String> {
    decode_record_as(bytes, false)
}

fn decode_record_as(bytes: &[u8], check_crc: bool) -> Result<Record<'_>, String> {
    let h = decode_header(bytes)?;
    if bytes.len() != h.record_len() {
        return Err(format!(
            "record of {} bytes where its header says {}",
            bytes.len(),
            h.record_len()
        ));
    }
    let body = bytes.get(4..).ok_or("short record")?;
    if check_crc && unmask_crc(h.crc) != crc32c(body) {
        return Err("record checksum mismatch".into());
    }
    let key = bytes
        .get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + h.key_len)
        .ok_or("short key")?;
    let value = bytes
        .get(RECORD_HEADER_LEN + h.key_len..)
        .ok_or("short value")?;
    Ok(Record {
        seq: h.seq,
        kind: h.kind,
        last_in_batch: h.flags & FLAG_LAST_IN_BATCH != 0,
        key,
        value,
    })
}

/// The varint at the start of `bytes` if it is at most `max` (at most 9) bytes long, and
/// its length: a loop over a slice iterator (no bounds check per byte), for
/// [`Pointer::decode_short`].
#[inline(always)]
fn short_varint(bytes: &[u8], max: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    let mut shift = 0u32;
    let mut n = 0;
    for &b in bytes.get(..max).unwrap_or(bytes) {
        v |= u64::from(b & 0x7f) << shift;
        n += 1;
        if b < 0x80 {
            return Some((v, n));
        }
        shift += 7;
    }
    None
}

/// The range of the value in `bytes`, a whole record whose checksum already held when it
/// was read (one kept in the block cache), when it is a value of `key`: the checks of
/// [`decode_checked_record`] and of the key and kind, with no error to build. `None` for
/// anything else, which the general decoder then describes; where this gives a range, that
/// one decodes a value of `key` with the same range (a test checks both agree on any bytes).
/// A scan runs it once per cached value.
#[inline]
pub fn cached_value_range(bytes: &[u8], key: &[u8]) -> Option<std::ops::Range<usize>> {
    let h = bytes.first_chunk::<RECORD_HEADER_LEN>()?;
    let [.., kind, flags, k0, k1, k2, k3, v0, v1, v2, v3] = *h;
    if kind != ValueKind::Value as u8 || flags & !FLAG_LAST_IN_BATCH != 0 {
        return None;
    }
    let key_len = u32::from_le_bytes([k0, k1, k2, k3]) as usize;
    let value_len = u32::from_le_bytes([v0, v1, v2, v3]) as usize;
    if key_len != key.len()
        || key_len > MAX_KEY_SIZE
        || value_len > MAX_VALUE_SIZE
        || RECORD_HEADER_LEN + key_len + value_len != bytes.len()
    {
        return None;
    }
    let value_at = RECORD_HEADER_LEN + key_len;
    (bytes.get(RECORD_HEADER_LEN..value_at)? == key).then_some(value_at..bytes.len())
}

/// [`cached_value_range`] for a record just read from its segment: the same checks, and
/// its checksum. `None` for anything else, which [`decode_record`] then describes; where
/// this gives a range, that one decodes a value of `key` with the same range (a test
/// checks both agree on any bytes). A scan runs it for every value that misses the cache.
#[inline]
pub fn read_value_range(bytes: &[u8], key: &[u8]) -> Option<std::ops::Range<usize>> {
    let range = cached_value_range(bytes, key)?;
    let crc = u32::from_le_bytes(*bytes.first_chunk::<4>()?);
    (unmask_crc(crc) == crc32c(bytes.get(4..)?)).then_some(range)
}

/// What a memtable entry of `key` stores after its pointer (`docs/format/vlog.md` §2): a
/// copy of the value the pointer names, which a read uses instead of the segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carried {
    /// Nothing after the pointer (every table entry), or no pointer to decode (the
    /// segment read describes the problem).
    No,
    /// The value starts at this offset of the stored bytes.
    At(usize),
    /// Bytes after the pointer that are not the value it names: their length is not the
    /// record's value length (the second field).
    Bad(usize, usize),
}

/// Whether `stored`, a pointer entry of `key`, carries its value after the pointer, and
/// where: the bytes after the pointer are taken as the value only when their length is
/// exactly the value length of the record the pointer names.
#[inline]
pub fn carried_value(stored: &[u8], key: &[u8]) -> Carried {
    // A scan asks this of every pointer it meets: the pointer's record length and its end
    // from one 8-byte load where it fits, as `Pointer::decode_prefix` would give them.
    let (length, at) = match pointer_length_in_word(stored) {
        Some(found) => found,
        None => match Pointer::decode_prefix(stored) {
            Ok((p, at)) => (p.length, at),
            Err(_) => return Carried::No,
        },
    };
    let len = stored.len() - at.min(stored.len());
    if len == 0 {
        return Carried::No;
    }
    let expect = (length as usize).saturating_sub(RECORD_HEADER_LEN + key.len());
    if RECORD_HEADER_LEN + key.len() + len == length as usize {
        Carried::At(at)
    } else {
        Carried::Bad(len, expect)
    }
}

/// The record length of the pointer at the start of `bytes` and where the pointer ends,
/// when its three varints end within the first 8 bytes (a pointer whose segment number is
/// below 16,384, offset below 256 MiB and record below 16 KiB: every value a memtable keeps
/// under the default limit, in segments of the default size) and `bytes` has 8: the bytes that end a
/// varint (high bit clear) found in one word. `None` for anything else (the general
/// decoder's case); where this gives a result, [`Pointer::decode_prefix`] gives the same.
#[inline(always)]
fn pointer_length_in_word(bytes: &[u8]) -> Option<(u32, usize)> {
    let word = u64::from_le_bytes(*bytes.first_chunk::<8>()?);
    let stops = !word & 0x8080_8080_8080_8080;
    let second = stops & stops.wrapping_sub(1);
    let third = second & second.wrapping_sub(1);
    if third == 0 {
        return None;
    }
    // Byte positions just past the second and the third varint.
    let from = (second.trailing_zeros() / 8 + 1) as usize;
    let end = (third.trailing_zeros() / 8 + 1) as usize;
    if end - from > 5 {
        return None;
    }
    let mut length = 0u64;
    for (i, b) in bytes.get(from..end)?.iter().enumerate() {
        length |= u64::from(b & 0x7f) << (7 * i);
    }
    Some((u32::try_from(length).ok()?, end))
}

/// Where a separated value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pointer {
    /// The segment number.
    pub segment: u64,
    /// The record's offset in the segment.
    pub offset: u64,
    /// The whole record's length.
    pub length: u32,
}

impl Pointer {
    /// Encode into `buf`; returns the used prefix.
    pub fn encode<'b>(&self, buf: &'b mut [u8; MAX_POINTER_LEN]) -> &'b [u8] {
        // Written into a stack buffer: no allocation per write.
        let mut n = 0;
        for x in [self.segment, self.offset, u64::from(self.length)] {
            let mut x = x;
            loop {
                let byte = (x & 0x7f) as u8;
                x >>= 7;
                if let Some(b) = buf.get_mut(n) {
                    *b = if x == 0 { byte } else { byte | 0x80 };
                }
                n += 1;
                if x == 0 {
                    break;
                }
            }
        }
        buf.get(..n).unwrap_or_default()
    }

    /// Whether the pointer can name a record of a key of `key_len` bytes in a segment whose
    /// valid bytes end at `end`: after the header, long enough for the record head and the
    /// key, and ending by `end` (checked before any byte is read).
    pub fn fits(&self, key_len: usize, end: u64) -> bool {
        self.offset >= HEADER_LEN
            && self.length as usize >= RECORD_HEADER_LEN + key_len
            && self
                .offset
                .checked_add(u64::from(self.length))
                .is_some_and(|e| e <= end)
    }

    /// [`Pointer::decode`] of a pointer whose varints are at most 9 bytes each (every
    /// pointer a store writes): a scan decodes one per value. `None` for anything else,
    /// which the general decoder then accepts or describes; where this one gives a pointer,
    /// that one gives the same.
    #[inline]
    pub(crate) fn decode_short(bytes: &[u8]) -> Option<Pointer> {
        let (p, n) = Pointer::decode_short_prefix(bytes)?;
        (n == bytes.len()).then_some(p)
    }

    /// [`Pointer::decode_short`] of the pointer at the start of `bytes`, and its length.
    #[inline(always)]
    fn decode_short_prefix(bytes: &[u8]) -> Option<(Pointer, usize)> {
        let (segment, a) = short_varint(bytes, 9)?;
        let rest = bytes.get(a..)?;
        let (offset, b) = short_varint(rest, 9)?;
        let rest = rest.get(b..)?;
        let (length, c) = short_varint(rest, 5)?;
        let length = u32::try_from(length).ok()?;
        Some((
            Pointer {
                segment,
                offset,
                length,
            },
            a + b + c,
        ))
    }

    /// The pointer at the start of `bytes` and its length in bytes: a memtable entry may
    /// carry its value after the pointer ([`carried_value`]).
    ///
    /// # Errors
    /// A description of the problem.
    #[inline]
    pub fn decode_prefix(bytes: &[u8]) -> Result<(Pointer, usize), String> {
        match Pointer::decode_short_prefix(bytes) {
            Some(found) => Ok(found),
            None => Pointer::decode_prefix_general(bytes),
        }
    }

    /// [`Pointer::decode_prefix`] through the general varint reader, for any input.
    fn decode_prefix_general(bytes: &[u8]) -> Result<(Pointer, usize), String> {
        let mut r = Reader::new(bytes);
        let p = Pointer {
            segment: r.varint64()?,
            offset: r.varint64()?,
            length: r.varint32()?,
        };
        Ok((p, r.position()))
    }

    /// Encode into a new vector (tests, tools).
    pub fn to_vec(self) -> Vec<u8> {
        let mut v = Vec::new();
        put_varint64(&mut v, self.segment);
        put_varint64(&mut v, self.offset);
        put_varint32(&mut v, self.length);
        v
    }

    /// Decode a stored pointer.
    ///
    /// # Errors
    /// A description of the problem.
    pub fn decode(bytes: &[u8]) -> Result<Pointer, String> {
        if let Some(p) = Pointer::decode_short(bytes) {
            return Ok(p);
        }
        // Anything else (long varints, or an error to describe) the general way.
        Pointer::decode_general(bytes)
    }

    /// [`Pointer::decode`] through the general varint reader, for any input.
    fn decode_general(bytes: &[u8]) -> Result<Pointer, String> {
        let (p, n) = Pointer::decode_prefix_general(bytes)?;
        if n < bytes.len() {
            return Err(format!("{} bytes after a value pointer", bytes.len() - n));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn pointer_length_in_word_agrees_with_the_general_decoder() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut found = 0;
        for _ in 0..200_000 {
            let len = rng.random_range(0..14);
            let mut bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            // Mostly small varints, so that many inputs are pointers.
            for b in bytes.iter_mut() {
                if rng.random_range(0..3) == 0 {
                    *b &= 0x7f;
                }
            }
            if let Some((length, end)) = pointer_length_in_word(&bytes) {
                found += 1;
                let (p, at) = Pointer::decode_prefix(&bytes).expect("decodes");
                assert_eq!((p.length, at), (length, end), "{bytes:?}");
            }
        }
        assert!(found > 10_000, "{found}");
        for p in [
            Pointer {
                segment: 1,
                offset: 24,
                length: 1046,
            },
            Pointer {
                segment: 100,
                offset: (128 << 20) - 1,
                length: (2 << 20) - 1,
            },
        ] {
            let mut enc = p.to_vec();
            enc.extend_from_slice(&[0xff; 8]);
            assert_eq!(
                pointer_length_in_word(&enc),
                Some((p.length, p.to_vec().len()))
            );
        }
    }

    #[test]
    fn carried_value_takes_only_a_value_of_the_records_length() {
        let key = b"key";
        let value = vec![7u8; 1000];
        let p = Pointer {
            segment: 3,
            offset: 4096,
            length: record_len(key, &value) as u32,
        };
        let bare = p.to_vec();
        assert_eq!(carried_value(&bare, key), Carried::No);
        let mut carrying = bare.clone();
        carrying.extend_from_slice(&value);
        assert_eq!(carried_value(&carrying, key), Carried::At(bare.len()));
        // Another key's length, or a value cut or grown by one byte, is not taken.
        assert_eq!(
            carried_value(&carrying, b"longer key"),
            Carried::Bad(1000, 993)
        );
        carrying.pop();
        assert_eq!(carried_value(&carrying, key), Carried::Bad(999, 1000));
        carrying.extend_from_slice(&[1, 2]);
        assert_eq!(carried_value(&carrying, key), Carried::Bad(1001, 1000));
        // A short pointer and a short value (fewer than 8 bytes in all) take the general
        // decoder.
        let tiny = Pointer {
            segment: 1,
            offset: 30,
            length: (RECORD_HEADER_LEN + 3 + 2) as u32,
        };
        let mut short = tiny.to_vec();
        short.extend_from_slice(b"ab");
        assert!(short.len() < 8);
        assert_eq!(carried_value(&short, key), Carried::At(tiny.to_vec().len()));
        assert_eq!(carried_value(&[0xff, 0xff], key), Carried::No);
    }

    #[test]
    fn record_round_trip_and_flips() {
        let mut b = Vec::new();
        let n = encode_record(&mut b, 7, ValueKind::Value, true, b"key", b"value");
        assert_eq!(n, record_len(b"key", b"value"));
        let r = decode_record(&b).unwrap();
        assert_eq!(
            (r.seq, r.kind, r.last_in_batch, r.key, r.value),
            (7, ValueKind::Value, true, &b"key"[..], &b"value"[..])
        );
        for i in 0..b.len() {
            let mut d = b.clone();
            d[i] ^= 0x10;
            assert!(decode_record(&d).is_err(), "flip at {i}");
        }
        for cut in 0..b.len() {
            assert!(decode_record(&b[..cut]).is_err());
        }
    }

    #[test]
    fn zeros_are_no_record() {
        // Recovery relies on it: zeros decode as the header of an empty delete, whose
        // 22-byte record fails its checksum, so a zero-filled tail holds no whole record.
        let zeros = [0u8; RECORD_HEADER_LEN];
        assert_eq!(
            decode_header(&zeros).map(|h| h.record_len()),
            Ok(RECORD_HEADER_LEN)
        );
        assert_eq!(
            decode_record(&zeros).unwrap_err(),
            "record checksum mismatch"
        );
    }

    fn hex(b: &[u8]) -> String {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn worked_example_of_the_format_doc() {
        assert_eq!(
            hex(&encode_header(7, 0x0123_4567_89ab_cdef)),
            "53 48 41 4c 45 56 4c 47 03 00 00 00 07 00 00 00 00 00 00 00 47 80 08 0b"
        );
        let mut b = Vec::new();
        assert_eq!(
            encode_record(&mut b, 300, ValueKind::Value, false, b"k1", b"abc"),
            27
        );
        assert_eq!(
            encode_record(&mut b, 301, ValueKind::Delete, true, b"k2", b""),
            24
        );
        assert_eq!(
            hex(&b),
            "aa c1 84 b9 2c 01 00 00 00 00 00 00 01 00 02 00 00 00 03 00 00 00 6b 31 61 62 63 \
             78 9c ab 12 2d 01 00 00 00 00 00 00 00 01 02 00 00 00 00 00 00 00 6b 32"
        );
        let p = Pointer {
            segment: 7,
            offset: 24,
            length: 27,
        };
        assert_eq!(hex(&p.to_vec()), "07 18 1b");
    }

    #[test]
    fn header_checks() {
        let h = encode_header(42, 9);
        check_header(&h, 42, 9).unwrap();
        assert!(
            check_header(&h, 43, 9)
                .unwrap_err()
                .contains("names segment 42")
        );
        for i in 0..h.len() {
            let mut d = h;
            d[i] ^= 1;
            assert!(check_header(&d, 42, 9).is_err());
        }
        // Another store's segment.
        let e = check_header(&h, 42, 10).unwrap_err();
        assert!(e.contains("belongs to another store"), "{e}");
        // A version-1 header (no store id) written before version 2 is still read, for
        // any store.
        let mut v1 = [0u8; HEADER_LEN as usize];
        v1[..8].copy_from_slice(MAGIC);
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        v1[12..20].copy_from_slice(&42u64.to_le_bytes());
        let crc = mask_crc(crc32c(&v1[..20]));
        v1[20..].copy_from_slice(&crc.to_le_bytes());
        check_header(&v1, 42, 9).unwrap();
        check_header(&v1, 42, 10).unwrap();
        // A version-2 header (written before range deletes had a version) is still read,
        // for its own store only.
        let mut v2 = h;
        v2[8..12].copy_from_slice(&2u32.to_le_bytes());
        let crc = mask_crc(header_crc(&v2[..20], 9));
        v2[20..].copy_from_slice(&crc.to_le_bytes());
        check_header(&v2, 42, 9).unwrap();
        assert!(
            check_header(&v2, 42, 10)
                .unwrap_err()
                .contains("belongs to another store")
        );
        check_header_unbound(&v2, 42).unwrap();
        // The header this build writes is version 3.
        assert_eq!(h[8..12], 3u32.to_le_bytes());
        // A newer version is refused by its number, as a newer release's, not as damage,
        // whichever checksum it carries; repair refuses it the same way.
        for with_store in [false, true] {
            let mut v4 = v1;
            v4[8..12].copy_from_slice(&4u32.to_le_bytes());
            let crc = if with_store {
                header_crc(&v4[..20], 9)
            } else {
                crc32c(&v4[..20])
            };
            v4[20..].copy_from_slice(&mask_crc(crc).to_le_bytes());
            let e = check_header(&v4, 42, 9).unwrap_err();
            assert!(
                e.contains("version 4") && e.contains("newer release"),
                "{e}"
            );
            let e = check_header_unbound(&v4, 42).unwrap_err();
            assert!(
                e.contains("version 4") && e.contains("newer release"),
                "{e}"
            );
        }
    }

    #[test]
    fn pointer_round_trip() {
        for p in [
            Pointer {
                segment: 0,
                offset: 0,
                length: 0,
            },
            Pointer {
                segment: 123_456,
                offset: 1 << 40,
                length: u32::MAX,
            },
            Pointer {
                segment: u64::MAX,
                offset: u64::MAX,
                length: 4118,
            },
        ] {
            let mut buf = [0; MAX_POINTER_LEN];
            let enc = p.encode(&mut buf).to_vec();
            assert_eq!(enc, p.to_vec());
            assert_eq!(Pointer::decode(&enc).unwrap(), p);
        }
        assert!(Pointer::decode(&[1, 2]).is_err());
        assert!(Pointer::decode(&[1, 2, 3, 4]).is_err());
    }

    #[test]
    fn pointer_decoding_agrees_with_the_general_decoder_on_any_bytes() {
        // Every varint length (1 to 10 bytes, and 11: too long), values past 32 bits in the
        // length, trailing bytes, cuts: the same pointer or the same error.
        let mut rng = StdRng::seed_from_u64(0x9e37_79b9_7f4a_7c15u64);
        let mut next = || rng.random::<u64>();
        for _ in 0..20_000 {
            let mut bytes = Vec::new();
            for _ in 0..3 {
                let bits = next() % 70;
                let v = if bits >= 64 {
                    u64::MAX
                } else {
                    next() >> (63 - bits.min(63))
                };
                put_varint64(&mut bytes, v);
            }
            match next() % 5 {
                0 => bytes.push(next() as u8),
                1 => {
                    let cut = (next() as usize) % (bytes.len() + 1);
                    bytes.truncate(cut);
                }
                2 => {
                    // A continuation byte where the varint should end.
                    let at = (next() as usize) % bytes.len();
                    bytes[at] |= 0x80;
                }
                _ => {}
            }
            assert_eq!(
                Pointer::decode(&bytes),
                Pointer::decode_general(&bytes),
                "{bytes:?}"
            );
        }
        let long = [0x81u8; 11];
        assert_eq!(Pointer::decode(&long), Pointer::decode_general(&long));
    }

    #[test]
    fn the_cached_value_check_agrees_with_the_general_decoder_on_any_bytes() {
        // Records of every kind and flag, keys that match or differ (in length or bytes),
        // single bytes changed anywhere, cuts and extensions: where the fast check gives a
        // range, the general decoder (checksum skipped, as for a cached record) gives a
        // value of the key with that range; where it gives none, the general path refuses.
        // The same for the check of a record just read, checksum included.
        let mut rng = StdRng::seed_from_u64(0x2545_f491_4f6c_dd1du64);
        let mut next = || rng.random::<u64>();
        let general = |b: &[u8], key: &[u8]| {
            decode_checked_record(b)
                .ok()
                .filter(|r| r.key == key && r.kind == ValueKind::Value)
                .map(|r| b.len() - r.value.len()..b.len())
        };
        let general_read = |b: &[u8], key: &[u8]| {
            decode_record(b)
                .ok()
                .filter(|r| r.key == key && r.kind == ValueKind::Value)
                .map(|r| b.len() - r.value.len()..b.len())
        };
        let (mut accepted, mut accepted_read) = (0, 0);
        for _ in 0..20_000 {
            let key: Vec<u8> = (0..next() % 6).map(|_| b'a' + (next() % 3) as u8).collect();
            let value: Vec<u8> = (0..next() % 40).map(|_| next() as u8).collect();
            let kind = [ValueKind::Value, ValueKind::Delete, ValueKind::RangeDelete]
                [(next() % 4).min(2) as usize];
            let mut b = Vec::new();
            encode_record(&mut b, next(), kind, next() % 2 == 0, &key, &value);
            match next() % 6 {
                0 => {
                    let at = (next() as usize) % b.len();
                    b[at] = next() as u8;
                }
                1 => {
                    let cut = (next() as usize) % (b.len() + 1);
                    b.truncate(cut);
                }
                2 => b.push(next() as u8),
                _ => {}
            }
            let asked: Vec<u8> = match next() % 4 {
                0 => (0..key.len()).map(|_| b'a' + (next() % 3) as u8).collect(),
                1 => (0..next() % 6).map(|_| b'a' + (next() % 3) as u8).collect(),
                _ => key.clone(),
            };
            let fast = cached_value_range(&b, &asked);
            assert_eq!(fast, general(&b, &asked), "{b:?} {asked:?}");
            accepted += usize::from(fast.is_some());
            // And with the checksum, as a record just read is checked.
            let read = read_value_range(&b, &asked);
            assert_eq!(read, general_read(&b, &asked), "{b:?} {asked:?}");
            accepted_read += usize::from(read.is_some());
        }
        // Both outcomes were seen often.
        assert!((1_000..19_000).contains(&accepted), "{accepted}");
        assert!(
            (1_000..accepted).contains(&accepted_read),
            "{accepted_read}"
        );
    }

    #[test]
    fn short_headers_name_the_field_cut_short() {
        let mut b = Vec::new();
        encode_record(&mut b, 7, ValueKind::Value, true, b"key", b"value");
        let mut bad_kind = b.clone();
        bad_kind[12] = 0x7f;
        let mut bad_flags = b.clone();
        bad_flags[13] = 0x40;
        for cut in 0..RECORD_HEADER_LEN {
            let e = decode_header(&b[..cut]).unwrap_err();
            assert!(
                e.contains("truncated") || e.contains("short") || e.contains("end"),
                "{cut}: {e}"
            );
            // A bad kind or flags byte within the cut is named before the cut.
            let e = decode_header(&bad_kind[..cut]).unwrap_err();
            assert_eq!(e.contains("record kind"), cut > 12, "{cut}: {e}");
            let e = decode_header(&bad_flags[..cut]).unwrap_err();
            assert_eq!(e.contains("flags"), cut > 13, "{cut}: {e}");
        }
        assert!(
            decode_header(&bad_kind)
                .unwrap_err()
                .contains("record kind")
        );
        assert!(decode_header(&bad_flags).unwrap_err().contains("flags"));
        assert_eq!(decode_header(&b).unwrap().key_len, 3);
    }
}

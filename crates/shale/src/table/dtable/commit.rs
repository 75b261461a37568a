//! The commit record at the end of every DTable generation: the directory of segments
//! (a block with the sst block trailer) and the fixed 40-byte footer after it.
//!
//! ```text
//! footer (40 bytes, little-endian):
//! +------------------+----------------+-------------+--------------+-------------+-----------+-----------+
//! | directory off u64| directory size | segments u32| reserved u32 | version u32 | crc u32   | magic u64 |
//! |                  | u64            |             | (= 0)        | (= 1)       | masked    |           |
//! +------------------+----------------+-------------+--------------+-------------+-----------+-----------+
//!   0                  8                16            20             24            28          32        40
//! ```
//!
//! The crc is the masked CRC32C of bytes 0..28. The byte layout is specified in
//! `docs/format/dtable.md`.

use std::cmp::Ordering;

use crate::format::{Reader, decode_fixed32, decode_fixed64, mask_crc, put_fixed32, put_fixed64};
use crate::format::{crc32c, put_length_prefixed, put_varint32, put_varint64, unmask_crc};
use crate::key;
use crate::table::format::TableIdentity;
use crate::table::sst::{BLOCK_TRAILER_LEN, BlockHandle};

/// Magic number at the very end of every DTable generation: the bytes `SHALEDTB` read as a
/// little-endian u64.
///
/// On-disk: never change.
pub const DTABLE_MAGIC: u64 = 0x4254_4445_4c41_4853;

/// The DTable format version this code writes and reads.
///
/// On-disk: bump only with a reader for the old version beside it.
pub const DTABLE_VERSION: u32 = 1;

/// Length of the footer in bytes.
pub const FOOTER_LEN: usize = 40;

/// The fewest bytes a commit record (directory block with its trailer, then the footer)
/// takes: a directory holds at least a flag byte and a count.
pub const MIN_COMMIT_LEN: u64 = (2 + BLOCK_TRAILER_LEN + FOOTER_LEN) as u64;

/// The most segments one generation may list (a reader refuses more before allocating).
pub const MAX_SEGMENTS: u32 = 1 << 20;

/// The decoded footer of one generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    /// The directory block (its size excludes the 5-byte trailer).
    pub directory: BlockHandle,
    /// Segments the directory lists.
    pub segments: u32,
}

impl Footer {
    /// The 40 footer bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(FOOTER_LEN);
        put_fixed64(&mut b, self.directory.offset);
        put_fixed64(&mut b, self.directory.size);
        put_fixed32(&mut b, self.segments);
        put_fixed32(&mut b, 0);
        put_fixed32(&mut b, DTABLE_VERSION);
        let crc = mask_crc(crc32c(&b));
        put_fixed32(&mut b, crc);
        put_fixed64(&mut b, DTABLE_MAGIC);
        debug_assert_eq!(b.len(), FOOTER_LEN);
        b
    }

    /// Decode and check the footer that ends a generation of `len` bytes: magic, version,
    /// checksum, the reserved word, a segment count in `1..=MAX_SEGMENTS`, and a directory
    /// that ends exactly where the footer starts.
    ///
    /// # Errors
    /// A description of the first check that fails.
    pub fn decode(src: &[u8], len: u64) -> Result<Footer, String> {
        if src.len() != FOOTER_LEN {
            return Err(format!(
                "DTable footer is {} bytes, expected {FOOTER_LEN}",
                src.len()
            ));
        }
        let magic = decode_fixed64(src, 32)?;
        if magic != DTABLE_MAGIC {
            return Err(format!(
                "bad magic number {magic:#018x}, expected {DTABLE_MAGIC:#018x}: not the end of a \
                 DTable generation"
            ));
        }
        let version = decode_fixed32(src, 24)?;
        if version != DTABLE_VERSION {
            return Err(format!(
                "unsupported DTable format version {version}, this build reads {DTABLE_VERSION}"
            ));
        }
        let stored = unmask_crc(decode_fixed32(src, 28)?);
        let actual = crc32c(src.get(..28).unwrap_or_default());
        if stored != actual {
            return Err(format!(
                "DTable footer checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"
            ));
        }
        let reserved = decode_fixed32(src, 20)?;
        if reserved != 0 {
            return Err(format!(
                "DTable footer's reserved word is {reserved:#x}, not 0"
            ));
        }
        let footer = Footer {
            directory: BlockHandle {
                offset: decode_fixed64(src, 0)?,
                size: decode_fixed64(src, 8)?,
            },
            segments: decode_fixed32(src, 16)?,
        };
        if footer.segments == 0 || footer.segments > MAX_SEGMENTS {
            return Err(format!(
                "the footer counts {} segments (1..={MAX_SEGMENTS} allowed)",
                footer.segments
            ));
        }
        let footer_at = len.saturating_sub(FOOTER_LEN as u64);
        if footer.directory.end() != Some(footer_at) {
            return Err(format!(
                "the directory block (offset {}, size {}) does not end where the footer starts \
                 ({footer_at})",
                footer.directory.offset, footer.directory.size
            ));
        }
        Ok(footer)
    }
}

/// One segment as the directory lists it: where its sst image lies and what it holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentEntry {
    /// Offset of the segment's first byte.
    pub start: u64,
    /// Offset just past the segment's sst footer.
    pub end: u64,
    /// Entries (puts, pointers and tombstones).
    pub entries: u64,
    /// Tombstones among them.
    pub tombstones: u64,
    /// Smallest sequence number (0 when empty).
    pub smallest_seq: u64,
    /// Largest sequence number (0 when empty).
    pub largest_seq: u64,
    /// Smallest internal key (empty when the segment holds no entry).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty when the segment holds no entry).
    pub largest: Vec<u8>,
}

impl SegmentEntry {
    fn encode(&self, b: &mut Vec<u8>) {
        put_varint64(b, self.start);
        put_varint64(b, self.end);
        put_varint64(b, self.entries);
        put_varint64(b, self.tombstones);
        put_varint64(b, self.smallest_seq);
        put_varint64(b, self.largest_seq);
        put_length_prefixed(b, &self.smallest);
        put_length_prefixed(b, &self.largest);
    }

    fn decode(r: &mut Reader<'_>) -> Result<SegmentEntry, String> {
        Ok(SegmentEntry {
            start: r.varint64()?,
            end: r.varint64()?,
            entries: r.varint64()?,
            tombstones: r.varint64()?,
            smallest_seq: r.varint64()?,
            largest_seq: r.varint64()?,
            smallest: r.length_prefixed()?.to_vec(),
            largest: r.length_prefixed()?.to_vec(),
        })
    }

    /// The segment's smallest user key (empty for an empty segment).
    pub fn smallest_user_key(&self) -> &[u8] {
        key::user_key(&self.smallest)
    }

    /// The segment's largest user key (empty for an empty segment).
    pub fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.largest)
    }

    /// Check what one entry may hold on its own.
    fn check(&self) -> Result<(), String> {
        if self.start >= self.end {
            return Err(format!(
                "a segment spans {}..{}, which is empty or reversed",
                self.start, self.end
            ));
        }
        if self.tombstones > self.entries {
            return Err(format!(
                "a segment holds {} tombstones among {} entries",
                self.tombstones, self.entries
            ));
        }
        if self.entries == 0 {
            if !self.smallest.is_empty() || !self.largest.is_empty() {
                return Err("an empty segment lists keys".into());
            }
            return Ok(());
        }
        let lo = key::parse_internal_key(&self.smallest)
            .map_err(|d| format!("a segment's smallest key: {d}"))?;
        let hi = key::parse_internal_key(&self.largest)
            .map_err(|d| format!("a segment's largest key: {d}"))?;
        if key::compare_internal(&self.smallest, &self.largest) == Ordering::Greater {
            return Err("a segment's smallest key sorts after its largest".into());
        }
        if self.smallest_seq > self.largest_seq
            || lo.seq < self.smallest_seq
            || lo.seq > self.largest_seq
            || hi.seq < self.smallest_seq
            || hi.seq > self.largest_seq
        {
            return Err(format!(
                "a segment's sequence numbers {}..={} do not hold its keys' ({} and {})",
                self.smallest_seq, self.largest_seq, lo.seq, hi.seq
            ));
        }
        Ok(())
    }
}

/// The directory of one generation: the table's identity and its segments, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Directory {
    /// The store and file number the table belongs to (`None` outside a store).
    pub identity: Option<TableIdentity>,
    /// The committed segments, oldest first (the last is the newest).
    pub segments: Vec<SegmentEntry>,
}

impl Directory {
    /// The directory block's contents (before the block trailer).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self.identity {
            None => b.push(0),
            Some(id) => {
                b.push(1);
                put_varint64(&mut b, id.store_id);
                put_varint64(&mut b, id.number);
            }
        }
        put_varint32(&mut b, self.segments.len() as u32);
        for s in &self.segments {
            s.encode(&mut b);
        }
        b
    }

    /// Decode the directory of a generation whose footer counts `count` segments and whose
    /// directory block starts at `at`, and check the segments' chain: the first starts at
    /// 0, each later one at least a commit record after the previous one's end, the last
    /// ends where the directory starts, and every entry is well formed.
    ///
    /// # Errors
    /// A description of the first problem.
    pub fn decode(src: &[u8], count: u32, at: u64) -> Result<Directory, String> {
        let mut r = Reader::new(src);
        let identity = match r.u8()? {
            0 => None,
            1 => Some(TableIdentity {
                store_id: r.varint64()?,
                number: r.varint64()?,
            }),
            f => return Err(format!("unknown directory flags {f:#04x}")),
        };
        let n = r.varint32()?;
        if n != count {
            return Err(format!(
                "the directory lists {n} segments, the footer counts {count}"
            ));
        }
        let mut segments = Vec::new();
        for i in 0..n {
            // Each entry takes at least 8 bytes: a corrupt count fails here, not in an
            // allocation.
            let s = SegmentEntry::decode(&mut r).map_err(|d| format!("segment {}: {d}", i + 1))?;
            s.check().map_err(|d| format!("segment {}: {d}", i + 1))?;
            let want_start = match segments.last() {
                None => Some(0),
                Some(prev) => {
                    let prev: &SegmentEntry = prev;
                    if s.start < prev.end.saturating_add(MIN_COMMIT_LEN) {
                        return Err(format!(
                            "segment {} starts at {}, inside the commit record after segment {} \
                             (which ends at {})",
                            i + 1,
                            s.start,
                            i,
                            prev.end
                        ));
                    }
                    None
                }
            };
            if want_start.is_some_and(|w| w != s.start) {
                return Err(format!("the first segment starts at {}, not 0", s.start));
            }
            segments.push(s);
        }
        if !r.is_empty() {
            return Err(format!(
                "{} bytes follow the directory's last segment",
                r.remaining()
            ));
        }
        match segments.last() {
            Some(last) if last.end == at => {}
            Some(last) => {
                return Err(format!(
                    "the newest segment ends at {}, but the directory starts at {at}",
                    last.end
                ));
            }
            None => return Err("the directory lists no segment".into()),
        }
        Ok(Directory { identity, segments })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key};

    fn seg(start: u64, end: u64) -> SegmentEntry {
        SegmentEntry {
            start,
            end,
            entries: 2,
            tombstones: 1,
            smallest_seq: 3,
            largest_seq: 9,
            smallest: make_internal_key(b"a", 9, ValueKind::Value),
            largest: make_internal_key(b"c", 3, ValueKind::Delete),
        }
    }

    #[test]
    fn footer_round_trip_and_every_flip_refused() {
        let f = Footer {
            directory: BlockHandle {
                offset: 1000,
                size: 55,
            },
            segments: 3,
        };
        let b = f.encode();
        assert_eq!(b.len(), FOOTER_LEN);
        assert_eq!(&b[32..], b"SHALEDTB");
        let len = 1000 + 55 + BLOCK_TRAILER_LEN as u64 + FOOTER_LEN as u64;
        assert_eq!(Footer::decode(&b, len).unwrap(), f);
        assert!(Footer::decode(&b, len + 1).is_err());
        for i in 0..FOOTER_LEN {
            for bit in 0..8 {
                let mut bad = b.clone();
                bad[i] ^= 1 << bit;
                assert!(
                    Footer::decode(&bad, len).is_err(),
                    "flip at {i}.{bit} accepted"
                );
            }
        }
    }

    #[test]
    fn directory_round_trip_and_chain_checks() {
        let d = Directory {
            identity: Some(TableIdentity {
                store_id: 0xfeed,
                number: 7,
            }),
            segments: vec![seg(0, 100), seg(200, 300)],
        };
        let b = d.encode();
        assert_eq!(Directory::decode(&b, 2, 300).unwrap(), d);
        assert!(
            Directory::decode(&b, 3, 300)
                .unwrap_err()
                .contains("footer counts 3")
        );
        assert!(
            Directory::decode(&b, 2, 301)
                .unwrap_err()
                .contains("ends at 300")
        );
        let mut late = d.clone();
        late.segments[0].start = 1;
        assert!(Directory::decode(&late.encode(), 2, 300).is_err());
        let mut tight = d.clone();
        tight.segments[1].start = 110;
        assert!(
            Directory::decode(&tight.encode(), 2, 300)
                .unwrap_err()
                .contains("inside the commit record")
        );
        let mut seqs = d.clone();
        seqs.segments[1].largest_seq = 4;
        assert!(Directory::decode(&seqs.encode(), 2, 300).is_err());
        for cut in 0..b.len() {
            assert!(Directory::decode(&b[..cut], 2, 300).is_err(), "cut {cut}");
        }
        let anonymous = Directory {
            identity: None,
            segments: vec![seg(0, 100)],
        };
        assert_eq!(
            Directory::decode(&anonymous.encode(), 1, 100).unwrap(),
            anonymous
        );
    }
}

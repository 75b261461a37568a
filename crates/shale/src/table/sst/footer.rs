//! Block handles and the fixed-size footer at the end of every table file.
//!
//! ```text
//! footer (64 bytes, little-endian):
//! +--------------+--------------+--------------+--------------+-----------+-----------+--------+
//! | filter       | index        | properties   | version u32  | crc u32   | magic u64 |
//! | off u64 size | off u64 size | off u64 size | (= 1)        | masked    |           |
//! +--------------+--------------+--------------+--------------+-----------+-----------+--------+
//!   0              16             32             48             52          56        64
//! ```
//!
//! The crc is the masked CRC32C of bytes 0..52. A filter handle of size 0 means "no filter".

use crate::format::{Reader, decode_fixed32, decode_fixed64, mask_crc, put_fixed32, put_fixed64};
use crate::format::{crc32c, put_varint64, unmask_crc};

/// Magic number at the very end of every table file: the bytes `SHALESST` read as a
/// little-endian u64, so that a hex dump of the file ends in the word.
///
/// On-disk: never change.
pub const TABLE_MAGIC: u64 = 0x5453_5345_4c41_4853;

/// The table format version this code writes: 2 since filters are cache-local (version 1
/// tables hold classic filters; a build that reads only version 1 then refuses newer tables
/// by their version instead of misreading their filters).
///
/// On-disk: bump only with a reader for the old version beside it.
pub const FORMAT_VERSION: u32 = 2;

/// The oldest table format version this code reads.
pub const MIN_FORMAT_VERSION: u32 = 1;

/// Length of the footer in bytes.
pub const FOOTER_LEN: usize = 64;

/// Bytes that follow every block on disk: compression type (1) and masked CRC32C (4).
pub const BLOCK_TRAILER_LEN: usize = 5;

/// Where a block lives in its file. `size` excludes the block trailer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockHandle {
    /// Offset of the block's first byte.
    pub offset: u64,
    /// Length of the stored (possibly compressed) block, without its trailer.
    pub size: u64,
}

impl BlockHandle {
    /// The most bytes [`BlockHandle::encode_varint`] writes.
    pub const MAX_VARINT_LEN: usize = 20;

    /// Append as two varints (the form used in index entries).
    pub fn encode_varint(&self, buf: &mut Vec<u8>) {
        put_varint64(buf, self.offset);
        put_varint64(buf, self.size);
    }

    /// Decode two varints; trailing bytes are an error.
    ///
    /// # Errors
    /// A description when the bytes are truncated, overlong or followed by garbage.
    pub fn decode_varint(src: &[u8]) -> std::result::Result<BlockHandle, String> {
        let mut r = Reader::new(src);
        let offset = r.varint64()?;
        let size = r.varint64()?;
        if !r.is_empty() {
            return Err(format!(
                "block handle followed by {} unexpected bytes",
                r.remaining()
            ));
        }
        Ok(BlockHandle { offset, size })
    }

    /// The offset just past the block's trailer, or `None` on overflow.
    pub fn end(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }

    /// Check that the block and its trailer lie within `[0, limit)`.
    ///
    /// # Errors
    /// A description naming `what` when the block runs past `limit`.
    pub fn check_within(&self, limit: u64, what: &str) -> std::result::Result<(), String> {
        match self.end() {
            Some(end) if end <= limit => Ok(()),
            _ => Err(format!(
                "{what} block handle (offset {}, size {}) runs past the {limit} bytes available",
                self.offset, self.size
            )),
        }
    }
}

/// The decoded footer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footer {
    /// The bloom filter block; size 0 when the table has no filter.
    pub filter: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
}

impl Footer {
    /// The 64 footer bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(FOOTER_LEN);
        for h in [self.filter, self.index, self.properties] {
            put_fixed64(&mut b, h.offset);
            put_fixed64(&mut b, h.size);
        }
        put_fixed32(&mut b, FORMAT_VERSION);
        let crc = mask_crc(crc32c(&b));
        put_fixed32(&mut b, crc);
        put_fixed64(&mut b, TABLE_MAGIC);
        debug_assert_eq!(b.len(), FOOTER_LEN);
        b
    }

    /// Decode and check the footer of a file of `file_len` bytes: magic, version, checksum,
    /// and that every handle lies before the footer.
    ///
    /// # Errors
    /// A description of the first check that fails.
    pub fn decode(src: &[u8], file_len: u64) -> std::result::Result<Footer, String> {
        if src.len() != FOOTER_LEN {
            return Err(format!(
                "footer is {} bytes, expected {FOOTER_LEN}",
                src.len()
            ));
        }
        let magic = decode_fixed64(src, 56)?;
        if magic != TABLE_MAGIC {
            return Err(format!(
                "bad magic number {magic:#018x}, expected {TABLE_MAGIC:#018x}: not a Shale table"
            ));
        }
        let version = decode_fixed32(src, 48)?;
        if !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(format!(
                "unsupported table format version {version}, this build reads \
                 {MIN_FORMAT_VERSION}..={FORMAT_VERSION}"
            ));
        }
        let stored = unmask_crc(decode_fixed32(src, 52)?);
        let actual = crc32c(src.get(..52).unwrap_or_default());
        if stored != actual {
            return Err(format!(
                "footer checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"
            ));
        }
        let handle = |at: usize| -> std::result::Result<BlockHandle, String> {
            Ok(BlockHandle {
                offset: decode_fixed64(src, at)?,
                size: decode_fixed64(src, at + 8)?,
            })
        };
        let footer = Footer {
            filter: handle(0)?,
            index: handle(16)?,
            properties: handle(32)?,
        };
        let limit = file_len.saturating_sub(FOOTER_LEN as u64);
        if footer.filter.size != 0 {
            footer.filter.check_within(limit, "filter")?;
        }
        footer.index.check_within(limit, "index")?;
        footer.properties.check_within(limit, "properties")?;
        Ok(footer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_round_trip_and_checks() {
        let f = Footer {
            filter: BlockHandle {
                offset: 100,
                size: 20,
            },
            index: BlockHandle {
                offset: 150,
                size: 30,
            },
            properties: BlockHandle {
                offset: 125,
                size: 20,
            },
        };
        let b = f.encode();
        assert_eq!(b.len(), FOOTER_LEN);
        assert_eq!(&b[56..], b"SHALESST");
        assert_eq!(TABLE_MAGIC, u64::from_le_bytes(*b"SHALESST"));
        assert_eq!(Footer::decode(&b, 300).unwrap(), f);
        // the index would overlap the footer
        assert!(Footer::decode(&b, 240).is_err());
        for i in 0..FOOTER_LEN {
            let mut bad = b.clone();
            bad[i] ^= 0x10;
            assert!(Footer::decode(&bad, 300).is_err(), "flip at {i} accepted");
        }
        assert!(Footer::decode(&b[1..], 300).is_err());
    }

    #[test]
    fn handle_round_trip() {
        let h = BlockHandle {
            offset: 1 << 40,
            size: 4096,
        };
        let mut b = Vec::new();
        h.encode_varint(&mut b);
        assert_eq!(BlockHandle::decode_varint(&b).unwrap(), h);
        b.push(0);
        assert!(BlockHandle::decode_varint(&b).is_err());
        assert!(BlockHandle::decode_varint(&b[..2]).is_err());
        let huge = BlockHandle {
            offset: u64::MAX - 2,
            size: 10,
        };
        assert!(huge.check_within(u64::MAX, "data").is_err());
    }
}

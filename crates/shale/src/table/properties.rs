//! Table properties: what a table holds, stored in its own small block.
//!
//! The block is a sequence of records `tag: varint, len: varint, bytes[len]`. Integers are
//! varints inside their bytes. Readers skip tags they do not know, so new properties can be
//! added without a format version bump; a known tag appearing twice or a required tag
//! missing is corruption.
//!
//! A table written by a store also records its *identity* (tags 17 and 18): the store's id
//! and the table's own file number, so that a table file copied over another one, or in from
//! another store, is found when it is opened ([`crate::table::check_identity`]). Tables
//! written before identities existed (and tables written outside a store) lack both.

use crate::format::{Reader, put_length_prefixed, put_varint64};
use crate::options::Compression;

/// Property tags. On-disk: never renumber; retired tags stay listed as comments.
mod tag {
    pub const NUM_ENTRIES: u64 = 1;
    pub const NUM_TOMBSTONES: u64 = 2;
    pub const SMALLEST_KEY: u64 = 3;
    pub const LARGEST_KEY: u64 = 4;
    pub const SMALLEST_SEQ: u64 = 5;
    pub const LARGEST_SEQ: u64 = 6;
    pub const RAW_KEY_BYTES: u64 = 7;
    pub const RAW_VALUE_BYTES: u64 = 8;
    pub const NUM_DATA_BLOCKS: u64 = 9;
    pub const DATA_BYTES: u64 = 10;
    pub const FILTER_BYTES: u64 = 11;
    pub const COMPRESSION: u64 = 12;
    pub const BLOCK_SIZE: u64 = 13;
    pub const RESTART_INTERVAL: u64 = 14;
    pub const BLOOM_BITS_PER_KEY: u64 = 15;
    pub const NUM_VALUE_POINTERS: u64 = 16;
    pub const STORE_ID: u64 = 17;
    pub const FILE_NUMBER: u64 = 18;
    /// The largest known tag (known tags must be unique).
    pub const LAST: u64 = FILE_NUMBER;
}

/// What a table holds, as recorded when it was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// Entries (puts, pointers and tombstones).
    pub num_entries: u64,
    /// Tombstones among the entries.
    pub num_tombstones: u64,
    /// Entries whose value is a pointer to a value stored elsewhere.
    pub num_value_pointers: u64,
    /// Smallest internal key (empty for an empty table).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty for an empty table).
    pub largest: Vec<u8>,
    /// Smallest sequence number (0 for an empty table).
    pub smallest_seq: u64,
    /// Largest sequence number (0 for an empty table).
    pub largest_seq: u64,
    /// Sum of internal key lengths, before prefix compression.
    pub raw_key_bytes: u64,
    /// Sum of value lengths.
    pub raw_value_bytes: u64,
    /// Data blocks.
    pub num_data_blocks: u64,
    /// Bytes of data blocks on disk, trailers included.
    pub data_bytes: u64,
    /// Bytes of the filter (0 without one).
    pub filter_bytes: u64,
    /// Compression the table was written with (individual blocks may be stored raw).
    pub compression: Compression,
    /// Target data block size.
    pub block_size: u64,
    /// Restart interval of data blocks.
    pub restart_interval: u64,
    /// Bloom bits per key (0: no filter).
    pub bloom_bits_per_key: u64,
    /// The id of the store that wrote the table (its MANIFEST's tag 17); `None` in tables
    /// written before identities existed or outside a store.
    pub store_id: Option<u64>,
    /// The file number the table was written as; `None` as for `store_id`.
    pub file_number: Option<u64>,
}

impl TableProperties {
    /// The encoded properties block.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.smallest.len() + self.largest.len());
        let int = |out: &mut Vec<u8>, t: u64, v: u64| {
            put_varint64(out, t);
            let mut b = Vec::with_capacity(10);
            put_varint64(&mut b, v);
            put_length_prefixed(out, &b);
        };
        int(&mut out, tag::NUM_ENTRIES, self.num_entries);
        int(&mut out, tag::NUM_TOMBSTONES, self.num_tombstones);
        int(&mut out, tag::NUM_VALUE_POINTERS, self.num_value_pointers);
        int(&mut out, tag::SMALLEST_SEQ, self.smallest_seq);
        int(&mut out, tag::LARGEST_SEQ, self.largest_seq);
        int(&mut out, tag::RAW_KEY_BYTES, self.raw_key_bytes);
        int(&mut out, tag::RAW_VALUE_BYTES, self.raw_value_bytes);
        int(&mut out, tag::NUM_DATA_BLOCKS, self.num_data_blocks);
        int(&mut out, tag::DATA_BYTES, self.data_bytes);
        int(&mut out, tag::FILTER_BYTES, self.filter_bytes);
        int(&mut out, tag::COMPRESSION, self.compression as u64);
        int(&mut out, tag::BLOCK_SIZE, self.block_size);
        int(&mut out, tag::RESTART_INTERVAL, self.restart_interval);
        int(&mut out, tag::BLOOM_BITS_PER_KEY, self.bloom_bits_per_key);
        if let Some(id) = self.store_id {
            int(&mut out, tag::STORE_ID, id);
        }
        if let Some(n) = self.file_number {
            int(&mut out, tag::FILE_NUMBER, n);
        }
        put_varint64(&mut out, tag::SMALLEST_KEY);
        put_length_prefixed(&mut out, &self.smallest);
        put_varint64(&mut out, tag::LARGEST_KEY);
        put_length_prefixed(&mut out, &self.largest);
        out
    }

    /// Decode a properties block.
    ///
    /// # Errors
    /// A description when a record is truncated, a known tag repeats or has a bad value, or
    /// the entry count or key range is missing.
    pub fn decode(src: &[u8]) -> std::result::Result<TableProperties, String> {
        let mut p = TableProperties::default();
        let mut seen = 0u64;
        let mut r = Reader::new(src);
        while !r.is_empty() {
            let t = r.varint64()?;
            let v = r.length_prefixed()?;
            // Only known tags must be unique; unknown ones (from a newer writer) are skipped.
            if (1..=tag::LAST).contains(&t) {
                if seen & (1 << t) != 0 {
                    return Err(format!("property tag {t} appears twice"));
                }
                seen |= 1 << t;
            }
            let int = || -> std::result::Result<u64, String> {
                let mut ir = Reader::new(v);
                let x = ir.varint64()?;
                if !ir.is_empty() {
                    return Err(format!("property {t} has trailing bytes"));
                }
                Ok(x)
            };
            match t {
                tag::NUM_ENTRIES => p.num_entries = int()?,
                tag::NUM_TOMBSTONES => p.num_tombstones = int()?,
                tag::NUM_VALUE_POINTERS => p.num_value_pointers = int()?,
                tag::SMALLEST_KEY => p.smallest = v.to_vec(),
                tag::LARGEST_KEY => p.largest = v.to_vec(),
                tag::SMALLEST_SEQ => p.smallest_seq = int()?,
                tag::LARGEST_SEQ => p.largest_seq = int()?,
                tag::RAW_KEY_BYTES => p.raw_key_bytes = int()?,
                tag::RAW_VALUE_BYTES => p.raw_value_bytes = int()?,
                tag::NUM_DATA_BLOCKS => p.num_data_blocks = int()?,
                tag::DATA_BYTES => p.data_bytes = int()?,
                tag::FILTER_BYTES => p.filter_bytes = int()?,
                tag::COMPRESSION => {
                    p.compression = match int()? {
                        0 => Compression::None,
                        1 => Compression::Lz4,
                        2 => Compression::Zstd,
                        c => return Err(format!("unknown compression {c} in properties")),
                    }
                }
                tag::BLOCK_SIZE => p.block_size = int()?,
                tag::RESTART_INTERVAL => p.restart_interval = int()?,
                tag::BLOOM_BITS_PER_KEY => p.bloom_bits_per_key = int()?,
                tag::STORE_ID => p.store_id = Some(int()?),
                tag::FILE_NUMBER => p.file_number = Some(int()?),
                _ => {}
            }
        }
        for (t, name) in [
            (tag::NUM_ENTRIES, "entry count"),
            (tag::SMALLEST_KEY, "smallest key"),
            (tag::LARGEST_KEY, "largest key"),
        ] {
            if seen & (1 << t) == 0 {
                return Err(format!("properties lack the {name}"));
            }
        }
        if p.num_tombstones > p.num_entries {
            return Err(format!(
                "properties claim {} tombstones among {} entries",
                p.num_tombstones, p.num_entries
            ));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_unknown_tags() {
        let p = TableProperties {
            num_entries: 10,
            num_tombstones: 2,
            smallest: b"a\x01\0\0\0\0\0\0\0".to_vec(),
            largest: b"z\x01\0\0\0\0\0\0\0".to_vec(),
            largest_seq: 1 << 50,
            compression: Compression::Lz4,
            ..TableProperties::default()
        };
        let with_identity = TableProperties {
            store_id: Some(u64::MAX - 5),
            file_number: Some(42),
            ..p.clone()
        };
        let e = with_identity.encode();
        assert_eq!(TableProperties::decode(&e).unwrap(), with_identity);
        // The identity records, byte for byte (docs/format/sst.md): tag, length, varint.
        let tail = [
            &[
                17u8, 10, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ][..],
            &[18, 1, 42],
        ]
        .concat();
        assert!(e.windows(tail.len()).any(|w| w == tail.as_slice()), "{e:?}");
        let mut b = p.encode();
        assert_eq!(TableProperties::decode(&b).unwrap(), p);
        // a future tag is skipped
        put_varint64(&mut b, 99);
        put_length_prefixed(&mut b, b"future");
        assert_eq!(TableProperties::decode(&b).unwrap(), p);
        // a repeated tag is not
        let mut twice = p.encode();
        twice.extend_from_slice(&p.encode());
        assert!(TableProperties::decode(&twice).is_err());
        // missing required fields
        assert!(TableProperties::decode(&[]).is_err());
        let e = p.encode();
        for cut in 0..e.len() {
            assert!(TableProperties::decode(&e[..cut]).is_err(), "cut at {cut}");
        }
    }
}

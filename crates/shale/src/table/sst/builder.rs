//! Writes one table file from entries in internal-key order.
//!
//! Data blocks go to the file as they fill, so a table never sits in memory whole; what is
//! kept is the current block, the index block and one 64-bit hash per distinct user key for
//! the filter. `finish` writes the filter, properties, index and footer, then syncs.
//!
//! Not thread-safe: one builder is driven by one flush or compaction job.

use std::cmp::Ordering;

use crate::env::WriteFile;
use crate::error::{Error, Result};
use crate::key::{self, MAX_SEQNO, ValueKind};
use crate::options::{Compression, TableOptions};
use crate::table::block::BlockBuilder;
use crate::table::bloom::BloomBuilder;
use crate::table::format::{TableIdentity, TableSummary};

use super::block_codec::{MAX_UNCOMPRESSED_BLOCK, encode_block, trailer};
use super::footer::{BLOCK_TRAILER_LEN, BlockHandle, Footer};
use crate::table::properties::TableProperties;

/// Builds a table file. See the module docs.
#[derive(Debug)]
pub struct TableBuilder {
    file: WriteFile,
    block_size: usize,
    compression: Compression,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    filter: Option<BloomBuilder>,
    /// Handle of the last data block written, whose index entry waits for the next key so
    /// that its separator can be shortened.
    pending_index: Option<BlockHandle>,
    last_key: Vec<u8>,
    /// Reused: compressed block bytes, separators, encoded handles.
    compress_buf: Vec<u8>,
    sep_buf: Vec<u8>,
    handle_buf: Vec<u8>,
    offset: u64,
    props: TableProperties,
}

impl TableBuilder {
    /// Start a table in `file` (which must be empty).
    pub fn new(file: WriteFile, opts: &TableOptions) -> TableBuilder {
        let block_size = opts.block_size.clamp(64, MAX_UNCOMPRESSED_BLOCK);
        let filter =
            (opts.bloom_bits_per_key > 0).then(|| BloomBuilder::new(opts.bloom_bits_per_key));
        let props = TableProperties {
            compression: opts.compression,
            block_size: block_size as u64,
            restart_interval: opts.block_restart_interval.max(1) as u64,
            bloom_bits_per_key: opts.bloom_bits_per_key as u64,
            ..TableProperties::default()
        };
        TableBuilder {
            offset: file.len(),
            file,
            block_size,
            compression: opts.compression,
            data_block: BlockBuilder::new(opts.block_restart_interval),
            index_block: BlockBuilder::new(1),
            filter,
            pending_index: None,
            last_key: Vec::new(),
            compress_buf: Vec::new(),
            sep_buf: Vec::new(),
            handle_buf: Vec::new(),
            props,
        }
    }

    /// Record `identity` (the store's id and the table's file number) in the table's
    /// properties (`docs/format/sst.md`, properties 17 and 18).
    pub fn with_identity(mut self, identity: TableIdentity) -> TableBuilder {
        self.props.store_id = Some(identity.store_id);
        self.props.file_number = Some(identity.number);
        self
    }

    /// Add an entry. Requires: `ikey` is an internal key sorting strictly after every key
    /// added before (checked in debug builds).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `ikey` is not an internal key; I/O errors from writing
    /// a full block.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let parsed = key::parse_internal_key(ikey).map_err(Error::InvalidArgument)?;
        let first = self.props.num_entries == 0;
        debug_assert!(
            first || key::compare_internal(&self.last_key, ikey) == Ordering::Less,
            "table keys out of order"
        );
        if let Some(handle) = self.pending_index.take() {
            shortest_separator(&self.last_key, ikey, &mut self.sep_buf);
            self.add_index_entry(handle);
        }
        if let Some(f) = &mut self.filter
            && (first || key::user_key(&self.last_key) != parsed.user_key)
        {
            f.add_key(parsed.user_key);
        }

        let p = &mut self.props;
        if first {
            p.smallest = ikey.to_vec();
            p.smallest_seq = parsed.seq;
            p.largest_seq = parsed.seq;
        } else {
            p.smallest_seq = p.smallest_seq.min(parsed.seq);
            p.largest_seq = p.largest_seq.max(parsed.seq);
        }
        p.num_entries += 1;
        match parsed.kind {
            ValueKind::Delete | ValueKind::RangeDelete => p.num_tombstones += 1,
            ValueKind::ValuePointer => p.num_value_pointers += 1,
            ValueKind::Value => {}
        }
        p.raw_key_bytes += ikey.len() as u64;
        p.raw_value_bytes += value.len() as u64;

        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.data_block.add(ikey, value);
        if self.data_block.estimated_size() >= self.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Bytes written so far plus the current block: compaction cuts output files on this.
    pub fn estimated_size(&self) -> u64 {
        self.offset + self.data_block.estimated_size() as u64
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Write the filter, properties, index and footer, then sync the file.
    ///
    /// # Errors
    /// I/O errors from the file. The file is then incomplete and should be deleted.
    pub fn finish(self) -> Result<TableSummary> {
        let (summary, mut file) = self.finish_unsynced()?;
        file.sync()?;
        Ok(summary)
    }

    /// [`TableBuilder::finish`] without the sync: the table image is written and handed to
    /// the OS, and the file is given back for more (a DTable appends its commit record after
    /// its segment, then syncs once, `docs/format/dtable.md`). The summary's size is the
    /// offset just past the image's footer.
    ///
    /// # Errors
    /// I/O errors from the file.
    pub fn finish_unsynced(mut self) -> Result<(TableSummary, WriteFile)> {
        self.flush_data_block()?;
        if let Some(handle) = self.pending_index.take() {
            short_successor(&self.last_key, &mut self.sep_buf);
            self.add_index_entry(handle);
        }
        let filter = match self.filter.take() {
            Some(f) if !f.is_empty() => {
                let bytes = f.finish();
                self.props.filter_bytes = bytes.len() as u64;
                self.write_raw_block(&bytes)?
            }
            _ => BlockHandle::default(),
        };
        self.props.largest = self.last_key.clone();
        let props = self.props.encode();
        let properties = self.write_raw_block(&props)?;
        let mut index_block = std::mem::replace(&mut self.index_block, BlockBuilder::new(1));
        let index = self.write_raw_block(index_block.finish())?;
        let footer = Footer {
            filter,
            index,
            properties,
        };
        let footer = footer.encode();
        self.file.append(&footer)?;
        self.offset += footer.len() as u64;
        self.file.flush()?;
        let p = self.props;
        Ok((
            TableSummary {
                size: self.offset,
                smallest: p.smallest,
                largest: p.largest,
                smallest_seq: p.smallest_seq,
                largest_seq: p.largest_seq,
                entries: p.num_entries,
                tombstones: p.num_tombstones,
            },
            self.file,
        ))
    }

    /// Stop without finishing. The caller deletes the partial file.
    pub fn abandon(self) {}

    fn add_index_entry(&mut self, handle: BlockHandle) {
        self.handle_buf.clear();
        handle.encode_varint(&mut self.handle_buf);
        self.index_block.add(&self.sep_buf, &self.handle_buf);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        debug_assert!(self.pending_index.is_none());
        let raw = self.data_block.finish();
        let (stored, ty) = encode_block(raw, self.compression, &mut self.compress_buf);
        let handle = write_block(&mut self.file, &mut self.offset, stored, ty)?;
        self.data_block.reset();
        self.props.num_data_blocks += 1;
        self.props.data_bytes += handle.size + BLOCK_TRAILER_LEN as u64;
        self.pending_index = Some(handle);
        Ok(())
    }

    /// Write a metadata block uncompressed: it is read once per open and small.
    fn write_raw_block(&mut self, raw: &[u8]) -> Result<BlockHandle> {
        write_block(
            &mut self.file,
            &mut self.offset,
            raw,
            Compression::None as u8,
        )
    }
}

fn write_block(
    file: &mut WriteFile,
    offset: &mut u64,
    stored: &[u8],
    ty: u8,
) -> Result<BlockHandle> {
    let handle = BlockHandle {
        offset: *offset,
        size: stored.len() as u64,
    };
    file.append(stored)?;
    file.append(&trailer(stored, ty))?;
    *offset += stored.len() as u64 + BLOCK_TRAILER_LEN as u64;
    Ok(handle)
}

/// The trailer of a separator key: it sorts before every real entry of its user key.
fn separator_trailer() -> [u8; 8] {
    key::pack_trailer(MAX_SEQNO, ValueKind::FOR_SEEK).to_le_bytes()
}

/// Into `out`, a key `k` with `a <= k < b` (internal order) that is short when possible:
/// the user key of `a` cut after the first byte that can be incremented while staying below
/// `b`'s user key. Falls back to `a`.
pub(crate) fn shortest_separator(a: &[u8], b: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let (ua, ub) = (key::user_key(a), key::user_key(b));
    let common = ua.iter().zip(ub).take_while(|(x, y)| x == y).count();
    if let (Some(&da), Some(&db)) = (ua.get(common), ub.get(common)) {
        // Incrementing the first differing byte keeps us below b if it does not reach db;
        // otherwise keep that byte and increment a later one, which leaves the prefix below
        // b's and lifts the key above a.
        let cut = if da < 0xff && da + 1 < db {
            Some(common)
        } else if da < db {
            ua.iter()
                .skip(common + 1)
                .position(|&x| x != 0xff)
                .map(|p| p + common + 1)
        } else {
            None
        };
        if let Some(i) = cut
            && i + 1 < ua.len()
        {
            out.extend_from_slice(&ua[..i]);
            out.push(ua[i] + 1);
            out.extend_from_slice(&separator_trailer());
            debug_assert!(key::compare_internal(a, out) == Ordering::Less);
            debug_assert!(key::compare_internal(out, b) == Ordering::Less);
            return;
        }
    }
    out.extend_from_slice(a);
}

/// Into `out`, a short key `k >= a`: the user key of `a` cut after its first byte that is
/// not 0xff, incremented. Falls back to `a` when every byte is 0xff.
pub(crate) fn short_successor(a: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let ua = key::user_key(a);
    if let Some(i) = ua.iter().position(|&x| x != 0xff)
        && i + 1 < ua.len()
    {
        out.extend_from_slice(&ua[..i]);
        out.push(ua[i] + 1);
        out.extend_from_slice(&separator_trailer());
        return;
    }
    out.extend_from_slice(a);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;

    fn ik(u: &[u8], s: u64) -> Vec<u8> {
        make_internal_key(u, s, ValueKind::Value)
    }

    #[test]
    fn separators_lie_between() {
        let mut out = Vec::new();
        let cases: [(&[u8], &[u8]); 6] = [
            (b"abcdefgh", b"abzz"),
            (b"abc", b"abd"),
            (b"ab", b"abc"),
            (b"ab\xff\xff", b"ac"),
            (b"a", b"a"),
            (b"apple-pie", b"banana"),
        ];
        for (a, b) in cases {
            let (ka, kb) = (ik(a, 5), if a == b { ik(b, 4) } else { ik(b, 9) });
            shortest_separator(&ka, &kb, &mut out);
            assert_ne!(
                key::compare_internal(&out, &ka),
                Ordering::Less,
                "{a:?} {b:?}"
            );
            assert_eq!(
                key::compare_internal(&out, &kb),
                Ordering::Less,
                "{a:?} {b:?}"
            );
        }
        shortest_separator(&ik(b"abcdefgh", 1), &ik(b"abzz", 1), &mut out);
        assert_eq!(key::user_key(&out), b"abd");
        shortest_separator(&ik(b"apple-pie", 1), &ik(b"banana", 1), &mut out);
        assert_eq!(key::user_key(&out), b"aq");
        shortest_separator(&ik(b"a\xff\xffzz", 1), &ik(b"b", 1), &mut out);
        assert_eq!(key::user_key(&out), b"a\xff\xff{");

        short_successor(&ik(b"hello", 3), &mut out);
        assert_eq!(key::user_key(&out), b"i");
        short_successor(&ik(b"\xff\xff", 3), &mut out);
        assert_eq!(out, ik(b"\xff\xff", 3));
        short_successor(&ik(b"\xff\xffab", 3), &mut out);
        assert_eq!(key::user_key(&out), b"\xff\xffb");
    }
}

//! Reads an HTable: open (footer, migration records, overflow index, cluster index or
//! version 1's whole filter, properties, all kept in memory), the filter cluster (one
//! column block, or all of it), lookups (one bucket or one overflow record), a full
//! iterator and `verify`.
//!
//! Thread-safety: an `HTable` is immutable after open and shared between readers.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use super::cluster::{self, ColumnFilters, MAX_COLUMN_BITS};
use super::writer::{Handle, Migration};
use super::{
    BUCKET_HEADER_LEN, BUCKET_TRAILER_LEN, FOOTER_LEN, FORMAT_VERSION, HTABLE_MAGIC, HashKey,
    MAX_BUCKET_SIZE, MIN_BUCKET_SIZE, OLDEST_FORMAT_VERSION, hashkey, home_bucket, rank,
};
use crate::cache::block_cache::{BlockCache, SharedBytes};
use crate::env::{BlockKind, ReadCause, ReadFile};
use crate::error::{CorruptionContext, Error, Result};
use crate::format::{Reader, crc32c, decode_fixed32, decode_fixed64, unmask_crc};
use crate::iter::InternalIterator;
use crate::key;
use crate::table::bloom::BloomFilter;
use crate::table::format::{TableRead, TableReader};
use crate::table::properties::TableProperties;

/// One entry of the overflow index: an internal key and where its record is.
#[derive(Clone, Debug)]
struct OverflowEntry {
    ikey: Vec<u8>,
    offset: u64,
    len: u32,
}

/// Where a table's filter cluster lies (its cluster index, kept in memory).
#[derive(Clone, Debug)]
struct ClusterIndex {
    /// The blocks' granularity `K`: `2^K` column blocks.
    k: u8,
    /// The granularity of the table's own column filters.
    own_k: u8,
    /// Where each block starts, and (last) where the cluster ends: `2^K + 1` offsets.
    offsets: Vec<u64>,
}

/// A table's whole filter cluster in memory ([`HTable::load_cluster`]): what a layout keeps
/// to answer for a pile of tables without reading.
#[derive(Debug)]
pub struct LoadedCluster {
    k: u8,
    /// The table it was read from (its own entry's number), its path, and the cluster's
    /// offset in it.
    number: u64,
    path: Arc<Path>,
    start: u64,
    /// The blocks, each with its crc (checked when loaded).
    bytes: Vec<u8>,
    /// Where each block starts in `bytes`, then the end.
    offsets: Vec<usize>,
}

impl LoadedCluster {
    /// Ask the cluster about the key with column word `w` ([`cluster::column_word`]) and
    /// bloom hash `h`: `f(table number, may contain)` for each table it holds, the newest
    /// (the table it was read from) first.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the file and offset of a malformed block (a loaded
    /// cluster passed its crc checks, so only a bad writer makes one).
    pub fn probe(&self, w: u32, h: u64, mut f: impl FnMut(u64, bool)) -> Result<()> {
        let j = cluster::column(w, self.k);
        let (Some(&a), Some(&b)) = (self.offsets.get(j), self.offsets.get(j + 1)) else {
            return Err(Error::corruption(
                self.path.to_path_buf(),
                self.start,
                format!("no filter cluster block {j}"),
            ));
        };
        let block = self.bytes.get(a..b.saturating_sub(4)).unwrap_or_default();
        cluster::probe_block(block, self.k, j, w, h, |i, n, m| {
            f(if i == 0 { self.number } else { n }, m);
        })
        .at(&self.path, self.start + a as u64)
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True for a cluster of no bytes (never: a cluster has at least one block).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// An open HTable (one committed generation of its file).
pub struct HTable {
    file: ReadFile,
    size: u64,
    path: Arc<Path>,
    file_number: u64,
    cache: Option<Arc<BlockCache>>,
    /// Whether a bucket of this table went into the cache (see `read_bucket`).
    cached_any: AtomicBool,
    verify_checksums: bool,
    buckets: u64,
    bucket_size: usize,
    /// Where the overflow records end (the first metadata block).
    overflow_end: u64,
    migrations: Vec<Migration>,
    overflow: Vec<OverflowEntry>,
    /// Version 1: the whole-table filter.
    filter: Option<Arc<BloomFilter>>,
    /// Version 2: where the filter cluster is.
    cluster: Option<ClusterIndex>,
    version: u32,
    props: TableProperties,
}

impl std::fmt::Debug for HTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HTable")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("buckets", &self.buckets)
            .field("entries", &self.props.num_entries)
            .finish()
    }
}

/// One item of a bucket: internal key and value.
type Item<'a> = (&'a [u8], &'a [u8]);

/// Decode the items of a bucket (its bytes, without checking its crc).
fn bucket_items(data: &[u8]) -> std::result::Result<Vec<Item<'_>>, String> {
    if data.len() < BUCKET_HEADER_LEN + BUCKET_TRAILER_LEN {
        return Err("bucket shorter than its header and trailer".into());
    }
    let n = u16::from_le_bytes([data[0], data[1]]) as usize;
    let mut r = Reader::new(&data[BUCKET_HEADER_LEN..data.len() - BUCKET_TRAILER_LEN]);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let kl = r.varint32()? as usize;
        let vl = r.varint32()? as usize;
        let k = r.bytes(kl)?;
        let v = r.bytes(vl)?;
        key::parse_internal_key(k)?;
        out.push((k, v));
    }
    Ok(out)
}

/// Decode the items of a bucket (its bytes, without checking its crc): `f(offset of the
/// key, key length, value length)` for each (the value follows its key).
fn bucket_item_spans(
    data: &[u8],
    mut f: impl FnMut(usize, usize, usize),
) -> std::result::Result<(), String> {
    if data.len() < BUCKET_HEADER_LEN + BUCKET_TRAILER_LEN {
        return Err("bucket shorter than its header and trailer".into());
    }
    let n = u16::from_le_bytes([data[0], data[1]]) as usize;
    let mut r = Reader::new(&data[BUCKET_HEADER_LEN..data.len() - BUCKET_TRAILER_LEN]);
    for _ in 0..n {
        let kl = r.varint32()? as usize;
        let vl = r.varint32()? as usize;
        let at = BUCKET_HEADER_LEN + r.position();
        key::parse_internal_key(r.bytes(kl)?)?;
        r.bytes(vl)?;
        f(at, kl, vl);
    }
    Ok(())
}

/// A whole table in memory ([`HTable::load_all`]): the buffers read (buckets and overflow
/// records) and every entry's place in them, in internal-key order.
#[derive(Debug, Default)]
struct Loaded {
    bufs: Vec<Vec<u8>>,
    slots: Vec<Slot>,
}

/// Where one entry of a [`Loaded`] table lies: its key at `bufs[buf][at..at + klen]`, its
/// value right after it; `prefix` is the user key's first 8 bytes (zero-padded) as a
/// big-endian integer, which orders keys as their bytes do whenever two prefixes differ.
#[derive(Clone, Copy, Debug)]
struct Slot {
    prefix: u64,
    buf: u32,
    at: u32,
    klen: u32,
    vlen: u32,
}

impl Slot {
    /// The slot of the item at `data[at..]` (`at`, `klen`, `vlen` within `data`, checked by
    /// the caller), in buffer number `buf`.
    fn new(data: &[u8], buf: u32, at: usize, klen: usize, vlen: usize) -> Slot {
        let uk = key::user_key(data.get(at..at + klen).unwrap_or_default());
        let mut p = [0u8; 8];
        let n = uk.len().min(8);
        if let (Some(d), Some(s)) = (p.get_mut(..n), uk.get(..n)) {
            d.copy_from_slice(s);
        }
        Slot {
            prefix: u64::from_be_bytes(p),
            buf,
            at: at as u32,
            klen: klen as u32,
            vlen: vlen as u32,
        }
    }

    fn key(self, bufs: &[Vec<u8>]) -> &[u8] {
        let at = self.at as usize;
        bufs.get(self.buf as usize)
            .and_then(|b| b.get(at..at + self.klen as usize))
            .unwrap_or_default()
    }

    fn value(self, bufs: &[Vec<u8>]) -> &[u8] {
        let at = self.at as usize + self.klen as usize;
        bufs.get(self.buf as usize)
            .and_then(|b| b.get(at..at + self.vlen as usize))
            .unwrap_or_default()
    }
}

/// Check a block's masked crc32c (the 4 bytes after it).
fn check_crc(data: &[u8], stored: u32, what: &str) -> std::result::Result<(), String> {
    let actual = crc32c(data);
    let expected = unmask_crc(stored);
    if actual != expected {
        return Err(format!(
            "{what} checksum mismatch: stored {expected:08x}, computed {actual:08x}"
        ));
    }
    Ok(())
}

impl HTable {
    /// Open the generation of `file` that ends at byte `len`: read and check the footer and
    /// every metadata block (always under their checksums). Reads count as
    /// [`ReadCause::TableOpen`].
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the file and offset; I/O errors.
    pub fn open(
        file: ReadFile,
        file_number: u64,
        len: u64,
        cache: Option<Arc<BlockCache>>,
        verify_checksums: bool,
    ) -> Result<HTable> {
        let path: Arc<Path> = Arc::from(file.path());
        if file.len() < len {
            return Err(Error::corruption(
                path.to_path_buf(),
                file.len(),
                format!(
                    "the table file holds {} bytes, but {len} were committed",
                    file.len()
                ),
            ));
        }
        if len < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                path.to_path_buf(),
                0,
                format!("file of {len} bytes is shorter than the {FOOTER_LEN}-byte htable footer"),
            ));
        }
        let foff = len - FOOTER_LEN as u64;
        let raw = file.read_at(foff, FOOTER_LEN, ReadCause::TableOpen)?;
        let footer = decode_footer(&raw, len).at(&path, foff)?;
        let read_meta = |h: Handle, what: &str| -> Result<Vec<u8>> {
            let n = usize::try_from(h.size + 4)
                .map_err(|_| Error::corruption(path.to_path_buf(), h.offset, "block too large"))?;
            let mut buf = file.read_at(h.offset, n, ReadCause::TableOpen)?;
            let stored = decode_fixed32(&buf, h.size as usize).at(&path, h.offset)?;
            buf.truncate(h.size as usize);
            check_crc(&buf, stored, what).at(&path, h.offset)?;
            Ok(buf)
        };
        let props_raw = read_meta(footer.properties, "properties block")?;
        let props = TableProperties::decode(&props_raw).at(&path, footer.properties.offset)?;
        let mig_raw = read_meta(footer.migration, "migration block")?;
        let migrations =
            decode_migrations(&mig_raw, footer.buckets).at(&path, footer.migration.offset)?;
        let data_end = footer.buckets * footer.bucket_size as u64;
        let (mut filter, mut cluster) = (None, None);
        if footer.filter.size > 0 {
            if footer.version == 1 {
                let data = read_meta(footer.filter, "filter block")?;
                filter = Some(Arc::new(
                    BloomFilter::new(data).at(&path, footer.filter.offset)?,
                ));
            } else {
                let data = read_meta(footer.filter, "cluster index")?;
                let meta_start = footer.metadata_start();
                cluster = Some(
                    decode_cluster_index(&data, data_end, meta_start)
                        .at(&path, footer.filter.offset)?,
                );
            }
        }
        // The overflow records end where the filter cluster (or the metadata) begins.
        let overflow_end = cluster
            .as_ref()
            .and_then(|c| c.offsets.first().copied())
            .unwrap_or(footer.migration.offset);
        let idx_raw = read_meta(footer.overflow_index, "overflow index")?;
        let overflow = decode_overflow_index(&idx_raw, data_end, overflow_end)
            .at(&path, footer.overflow_index.offset)?;
        Ok(HTable {
            file,
            size: len,
            path,
            file_number,
            cache,
            cached_any: AtomicBool::new(false),
            verify_checksums,
            buckets: footer.buckets,
            bucket_size: footer.bucket_size as usize,
            overflow_end,
            migrations,
            overflow,
            filter,
            cluster,
            version: footer.version,
            props,
        })
    }

    /// Where the filter cluster lies: [start, end).
    #[cfg(test)]
    pub(super) fn cluster_range(&self) -> Option<(u64, u64)> {
        let c = self.cluster.as_ref()?;
        Some((*c.offsets.first()?, *c.offsets.last()?))
    }

    /// The format version of the file.
    pub fn format_version(&self) -> u32 {
        self.version
    }

    /// Whether the table has a filter cluster (version 2 with filters).
    pub fn has_cluster(&self) -> bool {
        self.cluster.is_some()
    }

    /// Ask the filter cluster about the key with column word `w`
    /// ([`cluster::column_word`]) and bloom hash `h`, reading the one column block that
    /// holds its column (through the block cache; a read from the file counts as a
    /// [`BlockKind::Filter`] block): `f(table number, may contain)` for each table of the
    /// cluster, this one first. Returns false, calling nothing, for a table without a
    /// cluster.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the file and the block's offset; I/O errors.
    pub fn cluster_probe(
        &self,
        w: u32,
        h: u64,
        cause: ReadCause,
        mut f: impl FnMut(u64, bool),
    ) -> Result<bool> {
        let Some(c) = &self.cluster else {
            return Ok(false);
        };
        let j = cluster::column(w, c.k);
        let (Some(&a), Some(&b)) = (c.offsets.get(j), c.offsets.get(j + 1)) else {
            return Err(self.corruption(self.overflow_end, format!("no filter cluster block {j}")));
        };
        let cached = self
            .cache
            .as_ref()
            .and_then(|cache| cache.get(self.file_number, a));
        let block = match cached {
            Some(b) => b,
            None => {
                let buf = self.file.read_at(a, (b - a) as usize, cause)?;
                self.file.count_block(cause, BlockKind::Filter);
                cluster::checked_payload(&buf).at(&self.path, a)?;
                let data = SharedBytes::from(buf);
                if let Some(cache) = &self.cache
                    && cause != ReadCause::Compaction
                {
                    cache.insert(self.file_number, a, data.clone());
                }
                data
            }
        };
        let payload = block
            .get(..block.len().saturating_sub(4))
            .unwrap_or_default();
        cluster::probe_block(payload, c.k, j, w, h, |i, n, m| {
            f(if i == 0 { self.file_number } else { n }, m);
        })
        .at(&self.path, a)?;
        Ok(true)
    }

    /// Read the whole filter cluster (one read, counted as one [`BlockKind::Filter`]
    /// block) and check every block's crc; `None` for a table without one.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the file and the offset of a damaged block; I/O errors.
    pub fn load_cluster(&self, cause: ReadCause) -> Result<Option<LoadedCluster>> {
        let Some(c) = &self.cluster else {
            return Ok(None);
        };
        let (Some(&start), Some(&end)) = (c.offsets.first(), c.offsets.last()) else {
            return Ok(None);
        };
        let bytes = self.file.read_at(start, (end - start) as usize, cause)?;
        self.file.count_block(cause, BlockKind::Filter);
        let offsets: Vec<usize> = c.offsets.iter().map(|&o| (o - start) as usize).collect();
        for w in offsets.windows(2) {
            if let [a, b] = *w {
                cluster::checked_payload(bytes.get(a..b).unwrap_or_default())
                    .at(&self.path, start + a as u64)?;
            }
        }
        Ok(Some(LoadedCluster {
            k: c.k,
            number: self.file_number,
            path: Arc::clone(&self.path),
            start,
            bytes,
            offsets,
        }))
    }

    /// The column filters of every table of the cluster, this one first (its number as
    /// the file records it); `None` for a table without a cluster.
    ///
    /// # Errors
    /// As [`HTable::load_cluster`]; [`Error::Corruption`] for a malformed cluster.
    pub fn cluster_tables(&self, cause: ReadCause) -> Result<Option<Vec<ColumnFilters>>> {
        let Some(l) = self.load_cluster(cause)? else {
            return Ok(None);
        };
        let start = self
            .cluster
            .as_ref()
            .and_then(|c| c.offsets.first().copied())
            .unwrap_or(0);
        let payloads: Vec<&[u8]> = l
            .offsets
            .windows(2)
            .map(|w| match *w {
                [a, b] => l.bytes.get(a..b.saturating_sub(4)).unwrap_or_default(),
                _ => &[][..],
            })
            .collect();
        let tables = cluster::decode(&payloads, l.k).at(&self.path, start)?;
        Ok(Some(tables))
    }

    /// Number of buckets.
    pub fn bucket_count(&self) -> u64 {
        self.buckets
    }

    /// Groups placed in the overflow area (entries of the overflow index).
    pub fn overflow_entries(&self) -> usize {
        self.overflow.len()
    }

    /// Buckets that migrated part of their keys to another bucket.
    pub fn migrations(&self) -> usize {
        self.migrations.len()
    }

    fn corruption(&self, offset: u64, detail: impl Into<String>) -> Error {
        Error::corruption(self.path.to_path_buf(), offset, detail)
    }

    /// The bucket that holds the key whose hashkey is `h`, if it is not in the overflow
    /// area: its home, or the bucket its home migrated the key's rank to.
    fn bucket_of(&self, h: &HashKey) -> u64 {
        let home = home_bucket(h, self.buckets);
        match self
            .migrations
            .binary_search_by_key(&(home as u32), |m| m.source)
        {
            Ok(i) => match self.migrations.get(i) {
                Some(m) if rank(h) >= m.mark => u64::from(m.dest),
                _ => home,
            },
            Err(_) => home,
        }
    }

    /// Read bucket `b` through the block cache, its crc checked if `verify`. The cache
    /// rules are those of table blocks (`sst::Table::read_block`): only checked buckets, or
    /// any when the store checks none, go into the cache (one read without the check is
    /// checked on the side before it is cached), and neither compaction reads nor reads
    /// with `fill_cache` off fill it. A file read through a memory map lends the bucket
    /// from the map with no copy; a lent bucket read without the check is not cached.
    fn read_bucket(&self, b: u64, read: TableRead, verify: bool) -> Result<SharedBytes> {
        let cause = read.cause;
        let off = b * self.bucket_size as u64;
        if let Some(c) = &self.cache
            && (!self.file.is_mapped() || self.cached_any.load(AtomicOrdering::Relaxed))
            && let Some(data) = c.get(self.file_number, off)
        {
            return Ok(data);
        }
        let (data, lent) = match self.file.read_shared(off, self.bucket_size, cause) {
            Some(shared) => (shared?, true),
            None => (
                SharedBytes::from(self.file.read_at(off, self.bucket_size, cause)?),
                false,
            ),
        };
        self.file.count_block(cause, BlockKind::Data);
        if verify {
            self.check_bucket(&data, off)?;
        }
        let fills = read.fill_cache && self.cache.is_some() && cause != ReadCause::Compaction;
        let checked = verify
            || (fills && !lent && self.verify_checksums && self.check_bucket(&data, off).is_ok());
        if fills
            && (checked || !(self.verify_checksums || lent))
            && let Some(c) = &self.cache
        {
            if !self.cached_any.load(AtomicOrdering::Relaxed) {
                self.cached_any.store(true, AtomicOrdering::Relaxed);
            }
            c.insert(self.file_number, off, data.clone());
        }
        Ok(data)
    }

    /// Check the crc of the bucket `buf` read at `off`.
    fn check_bucket(&self, buf: &[u8], off: u64) -> Result<()> {
        let stored =
            decode_fixed32(buf, self.bucket_size - BUCKET_TRAILER_LEN).at(&self.path, off)?;
        check_crc(
            &buf[..self.bucket_size - BUCKET_TRAILER_LEN],
            stored,
            "bucket",
        )
        .at(&self.path, off)
    }

    /// Read overflow record `e`, checked.
    fn read_record(&self, e: &OverflowEntry, cause: ReadCause) -> Result<(Vec<u8>, Vec<u8>)> {
        let buf = self.file.read_at(e.offset, e.len as usize, cause)?;
        self.file.count_block(cause, BlockKind::Data);
        decode_record(&buf, &e.ikey).at(&self.path, e.offset)
    }

    /// The overflow entries of `user_key` (its whole group, newest first), if its group is
    /// in the overflow area.
    fn overflow_group(&self, user_key: &[u8]) -> &[OverflowEntry] {
        let lo = self
            .overflow
            .partition_point(|e| key::user_key(&e.ikey) < user_key);
        let hi = lo
            + self
                .overflow
                .get(lo..)
                .unwrap_or_default()
                .iter()
                .take_while(|e| key::user_key(&e.ikey) == user_key)
                .count();
        self.overflow.get(lo..hi).unwrap_or_default()
    }

    /// Every entry, in internal-key order (reads the whole table). The buffers read are
    /// kept and indexed, not copied into two buffers per entry.
    fn load_all(&self, cause: ReadCause) -> Result<Loaded> {
        let n = self.props.num_entries.min(1 << 24) as usize;
        let mut all = Loaded {
            bufs: Vec::with_capacity(self.buckets.min(1 << 20) as usize + self.overflow.len()),
            slots: Vec::with_capacity(n),
        };
        for b in 0..self.buckets {
            let data = self.read_bucket_uncached(b, cause)?;
            let buf = all.bufs.len() as u32;
            bucket_item_spans(&data, |at, klen, vlen| {
                all.slots.push(Slot::new(&data, buf, at, klen, vlen));
            })
            .at(&self.path, b * self.bucket_size as u64)?;
            all.bufs.push(data);
        }
        for e in &self.overflow {
            let buf = self.file.read_at(e.offset, e.len as usize, cause)?;
            self.file.count_block(cause, BlockKind::Data);
            let (at, klen, vlen) = record_span(&buf, &e.ikey).at(&self.path, e.offset)?;
            all.slots
                .push(Slot::new(&buf, all.bufs.len() as u32, at, klen, vlen));
            all.bufs.push(buf);
        }
        let bufs = &all.bufs;
        // Internal keys are unique in a table (the writer refuses a second one), so the order
        // is total and an unstable sort gives the one result. Most comparisons end at the
        // user keys' first 8 bytes, compared as one integer.
        all.slots.sort_unstable_by(|a, b| {
            a.prefix
                .cmp(&b.prefix)
                .then_with(|| key::compare_internal(a.key(bufs), b.key(bufs)))
        });
        Ok(all)
    }

    fn read_bucket_uncached(&self, b: u64, cause: ReadCause) -> Result<Vec<u8>> {
        let off = b * self.bucket_size as u64;
        let buf = self.file.read_at(off, self.bucket_size, cause)?;
        self.file.count_block(cause, BlockKind::Data);
        let stored =
            decode_fixed32(&buf, self.bucket_size - BUCKET_TRAILER_LEN).at(&self.path, off)?;
        check_crc(
            &buf[..self.bucket_size - BUCKET_TRAILER_LEN],
            stored,
            "bucket",
        )
        .at(&self.path, off)?;
        Ok(buf)
    }

    /// Read everything and check every checksum and placement rule; `quick` reads only the
    /// first and last bucket and every overflow record.
    fn check(&self, quick: bool) -> Result<()> {
        let cause = ReadCause::Other;
        // The filter cluster: every block whole, and the table's own filters to check
        // every key against.
        let own = match self.cluster_tables(cause)? {
            Some(mut tables) => {
                let at = self.overflow_end;
                let own = tables.drain(..).next();
                match (&own, &self.cluster) {
                    (Some(o), Some(c)) if o.k != c.own_k => {
                        return Err(self.corruption(
                            at,
                            format!(
                                "the filter cluster's own filters have 2^{} columns, its index \
                                 says 2^{}",
                                o.k, c.own_k
                            ),
                        ));
                    }
                    _ => {}
                }
                own
            }
            None => None,
        };
        let knows = |uk: &[u8]| -> bool {
            let h = crate::table::bloom::hash64(uk);
            match (&own, &self.filter) {
                (Some(o), _) => o.may_contain(cluster::column_word(&hashkey(uk)), h),
                (None, Some(f)) => f.may_contain_hash(h),
                (None, None) => true,
            }
        };
        let mut all: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let last = self.buckets.saturating_sub(1);
        for b in 0..self.buckets {
            if quick && b != 0 && b != last {
                continue;
            }
            let off = b * self.bucket_size as u64;
            let data = self.read_bucket_uncached(b, cause)?;
            let items = bucket_items(&data).at(&self.path, off)?;
            let mut prev: Option<&[u8]> = None;
            for (k, v) in items {
                if prev.is_some_and(|p| key::compare_internal(p, k) != Ordering::Less) {
                    return Err(self.corruption(off, "bucket items are not in increasing order"));
                }
                prev = Some(k);
                let uk = key::user_key(k);
                let h = hashkey(uk);
                if self.bucket_of(&h) != b || !self.overflow_group(uk).is_empty() {
                    return Err(self.corruption(
                        off,
                        format!("bucket {b} holds a key whose place is elsewhere"),
                    ));
                }
                if !knows(uk) {
                    return Err(
                        self.corruption(off, "the filter does not know a key of the bucket")
                    );
                }
                all.push((k.to_vec(), v.to_vec()));
            }
        }
        let mut prev: Option<&[u8]> = None;
        for e in &self.overflow {
            if prev.is_some_and(|p| key::compare_internal(p, &e.ikey) != Ordering::Less) {
                return Err(self.corruption(e.offset, "the overflow index is not in order"));
            }
            prev = Some(&e.ikey);
            let rec = self.read_record(e, cause)?;
            if !knows(key::user_key(&rec.0)) {
                return Err(self.corruption(e.offset, "the filter does not know an overflow key"));
            }
            all.push(rec);
        }
        if quick {
            return Ok(());
        }
        all.sort_by(|a, b| key::compare_internal(&a.0, &b.0));
        let end = self.overflow_end;
        if all
            .windows(2)
            .any(|w| matches!(w, [a, b] if key::compare_internal(&a.0, &b.0) == Ordering::Equal))
        {
            return Err(self.corruption(end, "an internal key is stored twice"));
        }
        if all.len() as u64 != self.props.num_entries {
            return Err(self.corruption(
                end,
                format!(
                    "the buckets hold {} entries, the properties say {}",
                    all.len(),
                    self.props.num_entries
                ),
            ));
        }
        let first = all.first().map(|e| e.0.as_slice()).unwrap_or_default();
        let last = all.last().map(|e| e.0.as_slice()).unwrap_or_default();
        if first != self.props.smallest.as_slice() || last != self.props.largest.as_slice() {
            return Err(self.corruption(
                end,
                "the smallest or largest key differs from the properties",
            ));
        }
        Ok(())
    }
}

fn decode_footer(raw: &[u8], len: u64) -> std::result::Result<super::writer::Footer, String> {
    let magic = decode_fixed64(raw, 84)?;
    if magic != HTABLE_MAGIC {
        return Err(format!("bad htable magic {magic:016x}"));
    }
    let stored = decode_fixed32(raw, 80)?;
    check_crc(raw.get(..80).unwrap_or_default(), stored, "footer")?;
    let version = decode_fixed32(raw, 12)?;
    if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(format!(
            "htable format version {version} (this build reads versions \
             {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}: the file was written by a newer Shale)"
        ));
    }
    let buckets = decode_fixed64(raw, 0)?;
    let bucket_size = decode_fixed32(raw, 8)?;
    if !(MIN_BUCKET_SIZE as u32..=MAX_BUCKET_SIZE as u32).contains(&bucket_size) {
        return Err(format!("bucket size {bucket_size} out of range"));
    }
    let h = |at: usize| -> std::result::Result<Handle, String> {
        Ok(Handle {
            offset: decode_fixed64(raw, at)?,
            size: decode_fixed64(raw, at + 8)?,
        })
    };
    let f = super::writer::Footer {
        version,
        buckets,
        bucket_size,
        migration: h(16)?,
        overflow_index: h(32)?,
        filter: h(48)?,
        properties: h(64)?,
    };
    let meta_end = len - FOOTER_LEN as u64;
    let data_end = buckets
        .checked_mul(u64::from(bucket_size))
        .ok_or("bucket count overflows")?;
    if buckets == 0 || data_end > f.migration.offset {
        return Err(format!(
            "{buckets} buckets of {bucket_size} bytes do not end before the metadata at {}",
            f.migration.offset
        ));
    }
    for (name, hd) in [
        ("migration", f.migration),
        ("overflow index", f.overflow_index),
        ("filter", f.filter),
        ("properties", f.properties),
    ] {
        if name == "filter" && hd.size == 0 {
            continue;
        }
        let end = hd
            .offset
            .checked_add(hd.size)
            .and_then(|e| e.checked_add(4))
            .ok_or("block handle overflows")?;
        if hd.offset < data_end || end > meta_end {
            return Err(format!(
                "the {name} block [{}, {end}) lies outside the metadata area",
                hd.offset
            ));
        }
    }
    Ok(f)
}

/// Decode a cluster index (`docs/format/htable.md` §2.5): its column blocks must lie,
/// one after another, between the buckets' end `data_end` and the metadata at `meta_start`.
fn decode_cluster_index(
    raw: &[u8],
    data_end: u64,
    meta_start: u64,
) -> std::result::Result<ClusterIndex, String> {
    let mut r = Reader::new(raw);
    let k = r.u8()?;
    let own_k = r.u8()?;
    if k > MAX_COLUMN_BITS || own_k > MAX_COLUMN_BITS {
        return Err(format!(
            "filter cluster of 2^{k} blocks, own filters of 2^{own_k} columns (at most \
             2^{MAX_COLUMN_BITS})"
        ));
    }
    let start = r.varint64()?;
    let mut offsets = Vec::with_capacity((1usize << k) + 1);
    offsets.push(start);
    let mut at = start;
    for _ in 0..1usize << k {
        let len = r.varint32()?;
        if len < 5 {
            return Err(format!("filter cluster block of {len} bytes"));
        }
        at = at
            .checked_add(u64::from(len))
            .ok_or("filter cluster overflows")?;
        offsets.push(at);
    }
    if !r.is_empty() {
        return Err("trailing bytes after the cluster index".into());
    }
    if start < data_end || at > meta_start {
        return Err(format!(
            "the filter cluster [{start}, {at}) lies outside [{data_end}, {meta_start})"
        ));
    }
    Ok(ClusterIndex { k, own_k, offsets })
}

fn decode_migrations(raw: &[u8], buckets: u64) -> std::result::Result<Vec<Migration>, String> {
    let mut r = Reader::new(raw);
    let n = r.varint32()? as usize;
    let mut out: Vec<Migration> = Vec::with_capacity(n.min(raw.len() / 12 + 1));
    for _ in 0..n {
        let m = Migration {
            source: r.fixed32()?,
            dest: r.fixed32()?,
            mark: r.fixed32()?,
        };
        if u64::from(m.source) >= buckets || u64::from(m.dest) >= buckets || m.source == m.dest {
            return Err(format!(
                "migration record {} -> {} does not fit {buckets} buckets",
                m.source, m.dest
            ));
        }
        if out.last().is_some_and(|p| p.source >= m.source) {
            return Err("migration records are not sorted by source bucket".into());
        }
        out.push(m);
    }
    if !r.is_empty() {
        return Err("trailing bytes after the migration records".into());
    }
    Ok(out)
}

fn decode_overflow_index(
    raw: &[u8],
    start: u64,
    end: u64,
) -> std::result::Result<Vec<OverflowEntry>, String> {
    let mut r = Reader::new(raw);
    let n = r.varint32()? as usize;
    let mut out = Vec::with_capacity(n.min(raw.len()));
    for _ in 0..n {
        let kl = r.varint32()? as usize;
        let ikey = r.bytes(kl)?.to_vec();
        key::parse_internal_key(&ikey)?;
        let offset = r.varint64()?;
        let len = r.varint32()?;
        if offset < start || offset.saturating_add(u64::from(len)) > end {
            return Err(format!(
                "overflow record at {offset} (+{len}) lies outside the overflow area"
            ));
        }
        out.push(OverflowEntry { ikey, offset, len });
    }
    if !r.is_empty() {
        return Err("trailing bytes after the overflow index".into());
    }
    Ok(out)
}

/// Check an overflow record that the index says holds `ikey`: where its key starts, the key's
/// and the value's lengths.
fn record_span(buf: &[u8], ikey: &[u8]) -> std::result::Result<(usize, usize, usize), String> {
    if buf.len() < 4 {
        return Err("overflow record shorter than its checksum".into());
    }
    let body = buf.get(..buf.len() - 4).unwrap_or_default();
    let stored = decode_fixed32(buf, buf.len() - 4)?;
    check_crc(body, stored, "overflow record")?;
    let mut r = Reader::new(body);
    let kl = r.varint32()? as usize;
    let vl = r.varint32()? as usize;
    let at = r.position();
    let k = r.bytes(kl)?;
    r.bytes(vl)?;
    if !r.is_empty() {
        return Err("trailing bytes in an overflow record".into());
    }
    if k != ikey {
        return Err("the overflow record holds another key than its index entry".into());
    }
    Ok((at, kl, vl))
}

/// Decode an overflow record that the index says holds `ikey`.
fn decode_record(buf: &[u8], ikey: &[u8]) -> std::result::Result<(Vec<u8>, Vec<u8>), String> {
    let (at, kl, vl) = record_span(buf, ikey)?;
    let k = buf.get(at..at + kl).unwrap_or_default();
    let v = buf.get(at + kl..at + kl + vl).unwrap_or_default();
    Ok((k.to_vec(), v.to_vec()))
}

impl TableReader for HTable {
    fn file_number(&self) -> u64 {
        self.file_number
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn file_size(&self) -> u64 {
        self.size
    }

    fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// Version 1's whole-table filter (version 2 tables answer through their filter
    /// cluster, which the trie layout asks: [`HTable::cluster_probe`]).
    fn filter(&self) -> Option<&Arc<BloomFilter>> {
        self.filter.as_ref()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn lookup(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        read: TableRead,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let cause = read.cause;
        let group = self.overflow_group(user_key);
        if !group.is_empty() {
            return match group
                .iter()
                .find(|e| key::compare_internal(&e.ikey, seek_key) != Ordering::Less)
            {
                Some(e) => Ok(Some(self.read_record(e, cause)?)),
                None => Ok(None),
            };
        }
        let h = hashkey(user_key);
        let b = self.bucket_of(&h);
        let verify = read.verify_checksums.unwrap_or(self.verify_checksums);
        let data = self.read_bucket(b, read, verify)?;
        let off = b * self.bucket_size as u64;
        let items = bucket_items(&data).at(&self.path, off)?;
        for (k, v) in items {
            if key::user_key(k) == user_key && key::compare_internal(k, seek_key) != Ordering::Less
            {
                return Ok(Some((k.to_vec(), v.to_vec())));
            }
        }
        Ok(None)
    }

    fn iter(self: Arc<Self>, read: TableRead) -> Box<dyn InternalIterator> {
        Box::new(HTableIter {
            table: self,
            cause: read.cause,
            entries: None,
            pos: 0,
        })
    }

    /// Entries are placed by hash: no offset follows key order. 0 for every key.
    fn approximate_offset_of(&self, _ikey: &[u8]) -> Result<u64> {
        Ok(0)
    }

    fn verify(&self) -> Result<()> {
        self.check(false)
    }

    fn verify_quick(&self) -> Result<()> {
        self.check(true)
    }
}

/// Every entry of one HTable in internal-key order: the whole table is read and sorted at
/// the first positioning (compaction and `verify` read tables whole anyway).
struct HTableIter {
    table: Arc<HTable>,
    cause: ReadCause,
    entries: Option<Loaded>,
    /// Position in `entries.slots`; `slots.len()` (or beyond) is not valid.
    pos: usize,
}

impl HTableIter {
    fn load(&mut self) -> Result<&Loaded> {
        let table = &self.table;
        let cause = self.cause;
        match &mut self.entries {
            Some(e) => Ok(e),
            slot @ None => Ok(slot.insert(table.load_all(cause)?)),
        }
    }

    /// Move to the position `r` holds, or (an error) nowhere.
    fn position(&mut self, r: Result<usize>) -> Result<()> {
        match r {
            Ok(p) => {
                self.pos = p;
                Ok(())
            }
            Err(e) => {
                self.pos = usize::MAX;
                Err(e)
            }
        }
    }
}

impl InternalIterator for HTableIter {
    fn valid(&self) -> bool {
        self.entries
            .as_ref()
            .is_some_and(|e| self.pos < e.slots.len())
    }
    fn seek_to_first(&mut self) -> Result<()> {
        let r = self.load().map(|_| 0);
        self.position(r)
    }
    fn seek_to_last(&mut self) -> Result<()> {
        let r = self
            .load()
            .map(|e| e.slots.len().checked_sub(1).unwrap_or(usize::MAX));
        self.position(r)
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = self.load().map(|e| {
            e.slots.partition_point(|s| {
                key::compare_internal(s.key(&e.bufs), target) == Ordering::Less
            })
        });
        self.position(r)
    }
    fn next(&mut self) -> Result<()> {
        self.pos = self.pos.saturating_add(1);
        Ok(())
    }
    fn prev(&mut self) -> Result<()> {
        self.pos = self.pos.checked_sub(1).unwrap_or(usize::MAX);
        Ok(())
    }
    fn key(&self) -> &[u8] {
        self.entries
            .as_ref()
            .and_then(|e| Some(e.slots.get(self.pos)?.key(&e.bufs)))
            .unwrap_or_default()
    }
    fn value(&self) -> &[u8] {
        self.entries
            .as_ref()
            .and_then(|e| Some(e.slots.get(self.pos)?.value(&e.bufs)))
            .unwrap_or_default()
    }
}

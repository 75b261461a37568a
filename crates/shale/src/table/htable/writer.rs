//! Writes one HTable: collects the entries, then places every key's group of versions in a
//! bucket when the table is finished (`docs/format/htable.md` §3 has the algorithm).
//!
//! Not thread-safe: one writer is driven by one flush or compaction job.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::cluster::{self, ColumnFilters};
use super::{
    BUCKET_HEADER_LEN, BUCKET_TRAILER_LEN, FILL_PERCENT, FORMAT_VERSION, HTABLE_MAGIC, HashKey,
    bucket_size, hashkey, home_bucket, rank,
};
use crate::env::{ReadCause, WriteFile};
use crate::error::{Error, Result};
use crate::format::varint_len;
use crate::format::{crc32c, mask_crc, put_fixed32, put_fixed64, put_varint32, put_varint64};
use crate::key::{self, ValueKind};
use crate::table::bloom::BloomBuilder;
use crate::table::format::{
    KeyDigest, Pile, TableIdentity, TableReader, TableSummary, TableWriter,
};
use crate::table::properties::TableProperties;

/// A region of the file: offset and length (metadata blocks: without their 4-byte crc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Handle {
    pub offset: u64,
    pub size: u64,
}

/// The footer's fields (`docs/format/htable.md` §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Footer {
    /// The format version.
    pub version: u32,
    pub buckets: u64,
    pub bucket_size: u32,
    pub migration: Handle,
    pub overflow_index: Handle,
    pub filter: Handle,
    pub properties: Handle,
}

impl Footer {
    /// Where the metadata blocks start: the lowest offset of a block the footer names.
    pub fn metadata_start(&self) -> u64 {
        [
            self.migration,
            self.overflow_index,
            self.filter,
            self.properties,
        ]
        .iter()
        .filter(|h| h.size > 0 || h.offset > 0)
        .map(|h| h.offset)
        .min()
        .unwrap_or(0)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(super::FOOTER_LEN);
        put_fixed64(&mut out, self.buckets);
        put_fixed32(&mut out, self.bucket_size);
        put_fixed32(&mut out, self.version);
        for h in [
            self.migration,
            self.overflow_index,
            self.filter,
            self.properties,
        ] {
            put_fixed64(&mut out, h.offset);
            put_fixed64(&mut out, h.size);
        }
        let crc = mask_crc(crc32c(&out));
        put_fixed32(&mut out, crc);
        put_fixed64(&mut out, HTABLE_MAGIC);
        out
    }
}

/// One migration record: keys of `source` ranked at or above `mark` live in `dest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Migration {
    pub source: u32,
    pub dest: u32,
    pub mark: u32,
}

/// Writes one HTable. See the module docs.
#[derive(Debug)]
pub struct HTableWriter {
    file: WriteFile,
    bucket_size: usize,
    bloom_bits: usize,
    /// The table's own file number (0 outside a store), recorded in its filter cluster.
    number: u64,
    /// The column filters of the older tables of the pile this table is laid on, newest
    /// first ([`TableWriter::lay_on`]); copied into this table's filter cluster.
    below: Vec<ColumnFilters>,
    /// The format version written: [`FORMAT_VERSION`], or 1 (tests of old files).
    version: u32,
    /// Every key and value added, one after another (one buffer per table, not two per
    /// entry: the allocator was a third of a compaction's CPU).
    arena: Vec<u8>,
    /// Where each entry lies in `arena`, in the order added (sorted in `finish`).
    entries: Vec<Slot>,
    /// The hashkeys callers gave with entries ([`TableWriter::add_hashed`]), one per run
    /// of entries of one user key, indexed by [`Slot::hash`].
    hashes: Vec<HashKey>,
    /// Encoded bytes of the items so far.
    bytes: u64,
    props: TableProperties,
}

/// Encoded length of an item: `varint32 key length, varint32 value length, key, value`.
pub(super) fn item_len(k: &[u8], v: &[u8]) -> usize {
    varint_len(k.len() as u64) + varint_len(v.len() as u64) + k.len() + v.len()
}

pub(super) fn put_item(out: &mut Vec<u8>, k: &[u8], v: &[u8]) {
    put_varint32(out, k.len() as u32);
    put_varint32(out, v.len() as u32);
    out.extend_from_slice(k);
    out.extend_from_slice(v);
}

/// One entry of the writer: its key at `arena[at..at + klen]`, its value right after it,
/// and the index of its user key's hashkey in `HTableWriter::hashes` ([`NO_HASH`]: the
/// caller gave none, and `finish` computes it).
#[derive(Clone, Copy, Debug)]
struct Slot {
    at: usize,
    klen: u32,
    vlen: u32,
    hash: u32,
}

/// [`Slot::hash`] of an entry added without its hashkey.
const NO_HASH: u32 = u32::MAX;

impl Slot {
    fn key(self, arena: &[u8]) -> &[u8] {
        arena
            .get(self.at..self.at + self.klen as usize)
            .unwrap_or_default()
    }

    fn value(self, arena: &[u8]) -> &[u8] {
        let v = self.at + self.klen as usize;
        arena.get(v..v + self.vlen as usize).unwrap_or_default()
    }
}

/// Every version of one user key: entries `start..end` of the sorted entries.
struct Group {
    start: usize,
    end: usize,
    hash: HashKey,
    size: usize,
}

/// Where the groups go: the groups of each bucket, the overflow groups, the migrations.
pub(super) struct Placement {
    pub buckets: Vec<Vec<usize>>,
    pub overflow: Vec<usize>,
    pub migrations: Vec<Migration>,
}

/// Place groups (`(hashkey, encoded size)`, in user-key order) into `m` buckets of
/// `payload` bytes each: the greedy migration of `docs/format/htable.md` §3.
pub(super) fn place(groups: &[(HashKey, usize)], m: u64, payload: usize) -> Placement {
    let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); m as usize];
    let mut overflow = Vec::new();
    for (i, (h, size)) in groups.iter().enumerate() {
        if *size > payload {
            overflow.push(i);
        } else if let Some(b) = buckets.get_mut(home_bucket(h, m) as usize) {
            b.push(i);
        }
    }
    let load = |b: &[usize]| -> usize { b.iter().map(|&g| groups.get(g).map_or(0, |x| x.1)).sum() };
    // Overloaded buckets, the most overloaded first.
    let mut sources: Vec<(usize, usize)> = buckets
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            let l = load(b);
            (l > payload).then_some((l, i))
        })
        .collect();
    sources.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    // The other buckets by free space, the emptiest first (ties: the lowest number).
    let mut dests: BinaryHeap<(usize, Reverse<usize>)> = buckets
        .iter()
        .enumerate()
        .filter(|(_, b)| load(b) <= payload)
        .map(|(i, b)| (payload - load(b), Reverse(i)))
        .collect();
    let mut migrations = Vec::new();
    for &(_, s) in &sources {
        let Some(bucket) = buckets.get_mut(s) else {
            continue;
        };
        let mut held = std::mem::take(bucket);
        let r = |g: &usize| groups.get(*g).map_or(0, |x| rank(&x.0));
        held.sort_by(|a, b| r(a).cmp(&r(b)).then(a.cmp(b)));
        // The first group in rank order that does not fit sets the mark; every group of
        // that rank or above moves (the rank alone tells a reader where a key is).
        let mut used = 0;
        let mut mark = None;
        for g in &held {
            let size = groups.get(*g).map_or(0, |x| x.1);
            if used + size > payload {
                mark = Some(r(g));
                break;
            }
            used += size;
        }
        let Some(mark) = mark else {
            // Unreachable (the bucket is overloaded); keep it as it was.
            if let Some(b) = buckets.get_mut(s) {
                *b = held;
            }
            continue;
        };
        let (stay, movers): (Vec<usize>, Vec<usize>) = held.into_iter().partition(|g| r(g) < mark);
        if let Some(b) = buckets.get_mut(s) {
            *b = stay;
        }
        let Some((mut free, Reverse(d))) = dests.pop() else {
            overflow.extend(movers);
            continue;
        };
        let mut moved = false;
        for g in movers {
            let size = groups.get(g).map_or(0, |x| x.1);
            if size <= free {
                free -= size;
                moved = true;
                if let Some(b) = buckets.get_mut(d) {
                    b.push(g);
                }
            } else {
                overflow.push(g);
            }
        }
        if moved {
            migrations.push(Migration {
                source: s as u32,
                dest: d as u32,
                mark,
            });
        }
        dests.push((free, Reverse(d)));
    }
    for b in &mut buckets {
        b.sort_unstable();
    }
    overflow.sort_unstable();
    migrations.sort_by_key(|m| m.source);
    Placement {
        buckets,
        overflow,
        migrations,
    }
}

impl HTableWriter {
    /// A writer into `file` (empty) recording `identity`.
    pub fn new(
        file: WriteFile,
        options: &crate::options::TableOptions,
        identity: Option<TableIdentity>,
    ) -> HTableWriter {
        let bucket_size = bucket_size(options);
        HTableWriter {
            file,
            bucket_size,
            bloom_bits: options.bloom_bits_per_key,
            number: identity.map_or(0, |i| i.number),
            below: Vec::new(),
            version: FORMAT_VERSION,
            arena: Vec::new(),
            entries: Vec::new(),
            hashes: Vec::new(),
            bytes: 0,
            props: TableProperties {
                block_size: bucket_size as u64,
                bloom_bits_per_key: options.bloom_bits_per_key as u64,
                store_id: identity.map(|i| i.store_id),
                file_number: identity.map(|i| i.number),
                ..TableProperties::default()
            },
        }
    }

    /// Write the old format version 1 (one whole-table filter, no cluster): tests of the
    /// reader's compatibility only.
    #[cfg(test)]
    pub(super) fn version_1(mut self) -> HTableWriter {
        self.version = 1;
        self
    }

    fn append(&mut self, data: &[u8], offset: &mut u64) -> Result<()> {
        self.file.append(data)?;
        *offset += data.len() as u64;
        Ok(())
    }

    /// Write a metadata block and its crc; its handle.
    fn meta_block(&mut self, data: &[u8], offset: &mut u64) -> Result<Handle> {
        let h = Handle {
            offset: *offset,
            size: data.len() as u64,
        };
        self.append(data, offset)?;
        let crc = mask_crc(crc32c(data)).to_le_bytes();
        self.append(&crc, offset)?;
        Ok(h)
    }
}

impl HTableWriter {
    /// Record an entry; `hash` is its user key's hashkey, if the caller gave it.
    fn push(&mut self, ikey: &[u8], value: &[u8], hash: Option<&HashKey>) -> Result<()> {
        let p = key::parse_internal_key(ikey)
            .map_err(|d| Error::InvalidArgument(format!("htable entry: {d}")))?;
        if ikey.len() > u32::MAX as usize || value.len() > u32::MAX as usize {
            return Err(Error::InvalidArgument("htable entry too large".into()));
        }
        let props = &mut self.props;
        if self.entries.is_empty() {
            props.smallest_seq = p.seq;
            props.largest_seq = p.seq;
        } else {
            props.smallest_seq = props.smallest_seq.min(p.seq);
            props.largest_seq = props.largest_seq.max(p.seq);
        }
        props.num_entries += 1;
        match p.kind {
            ValueKind::Delete | ValueKind::RangeDelete => props.num_tombstones += 1,
            ValueKind::ValuePointer => props.num_value_pointers += 1,
            ValueKind::Value => {}
        }
        props.raw_key_bytes += ikey.len() as u64;
        props.raw_value_bytes += value.len() as u64;
        self.bytes += item_len(ikey, value) as u64;
        debug_assert!(
            hash.is_none_or(|h| *h == hashkey(p.user_key)),
            "add_hashed: the digest is not the SHA-1 of the user key"
        );
        let hash = match hash {
            None => NO_HASH,
            // The versions of one key arrive together from a merge: they share one copy.
            Some(h) => match self.entries.last() {
                Some(prev)
                    if prev.hash != NO_HASH
                        && key::user_key(prev.key(&self.arena)) == p.user_key =>
                {
                    prev.hash
                }
                _ if self.hashes.len() < NO_HASH as usize => {
                    self.hashes.push(*h);
                    (self.hashes.len() - 1) as u32
                }
                _ => NO_HASH,
            },
        };
        self.entries.push(Slot {
            at: self.arena.len(),
            klen: ikey.len() as u32,
            vlen: value.len() as u32,
            hash,
        });
        self.arena.extend_from_slice(ikey);
        self.arena.extend_from_slice(value);
        Ok(())
    }
}

impl TableWriter for HTableWriter {
    /// Entries may come in any order (they are placed by hash when the table finishes); an
    /// internal key may appear once.
    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.push(ikey, value, None)
    }

    /// `digest` is used as the key's hashkey: the SHA-1 of its user key, which a compaction
    /// of the trie layout computed to choose the child container.
    fn add_hashed(&mut self, ikey: &[u8], value: &[u8], digest: &KeyDigest) -> Result<()> {
        self.push(ikey, value, Some(digest))
    }

    fn estimated_size(&self) -> u64 {
        self.bytes * 100 / FILL_PERCENT + self.bucket_size as u64
    }

    /// Copy the column filters of `pile`'s cluster that belong to tables still in the pile,
    /// to carry them in this table's cluster, unless that would make the cluster hold more
    /// than `pile.max` tables (then this table starts a new cluster). Best effort: a pile
    /// whose newest table is not an htable of this version, or whose cluster cannot be
    /// read, gives nothing, and readers then ask the older tables' own clusters (the
    /// answers are the same, only more blocks are read).
    fn lay_on(&mut self, pile: &Pile) {
        self.below.clear();
        if self.version < 2 || self.bloom_bits == 0 {
            return;
        }
        let Some(t) = pile.below.as_any().downcast_ref::<super::HTable>() else {
            return;
        };
        let Ok(Some(mut tables)) = t.cluster_tables(ReadCause::Compaction) else {
            return;
        };
        if let Some(own) = tables.first_mut() {
            own.number = TableReader::file_number(t);
        }
        tables.retain(|c| pile.live.contains(&c.number) && c.number != self.number);
        if tables.len() < pile.max {
            self.below = tables;
        }
    }

    fn num_entries(&self) -> u64 {
        self.entries.len() as u64
    }

    fn finish(mut self: Box<Self>) -> Result<TableSummary> {
        let arena = std::mem::take(&mut self.arena);
        let mut entries = std::mem::take(&mut self.entries);
        let hashes = std::mem::take(&mut self.hashes);
        let key_of = |e: &Slot| e.key(&arena);
        // Entries from a flush or a merge arrive in internal-key order: check that (one
        // pass, which also rules out duplicates) before sorting.
        let ordered = entries
            .windows(2)
            .all(|w| matches!(w, [a, b] if key::compare_internal(key_of(a), key_of(b)) == Ordering::Less));
        if !ordered {
            // Internal keys are unique (checked just below), so the order is total and an
            // unstable sort gives the one result.
            entries.sort_unstable_by(|a, b| key::compare_internal(key_of(a), key_of(b)));
            if entries.windows(2).any(|w| {
                matches!(w, [a, b] if key::compare_internal(key_of(a), key_of(b)) == Ordering::Equal)
            }) {
                return Err(Error::InvalidArgument(
                    "htable: an internal key was added twice".into(),
                ));
            }
        }
        // Groups of versions of one user key.
        let mut groups: Vec<Group> = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let (k, v) = (e.key(&arena), e.value(&arena));
            let uk = key::user_key(k);
            match groups.last_mut() {
                Some(g)
                    if entries
                        .get(g.start)
                        .is_some_and(|s| key::user_key(s.key(&arena)) == uk) =>
                {
                    g.end = i + 1;
                    g.size += item_len(k, v);
                }
                _ => groups.push(Group {
                    start: i,
                    end: i + 1,
                    hash: match hashes.get(e.hash as usize) {
                        Some(h) => *h,
                        None => hashkey(uk),
                    },
                    size: item_len(k, v),
                }),
            }
        }
        let bsize = self.bucket_size;
        let payload = bsize - BUCKET_HEADER_LEN - BUCKET_TRAILER_LEN;
        let fitting: u64 = groups
            .iter()
            .filter(|g| g.size <= payload)
            .map(|g| g.size as u64)
            .sum();
        let m = (fitting * 100)
            .div_ceil(payload as u64 * FILL_PERCENT)
            .max(1);
        let sized: Vec<(HashKey, usize)> = groups.iter().map(|g| (g.hash, g.size)).collect();
        let placed = place(&sized, m, payload);

        let mut offset = 0u64;
        let mut bucket = Vec::with_capacity(bsize);
        for gs in &placed.buckets {
            bucket.clear();
            let n: usize = gs
                .iter()
                .filter_map(|&g| groups.get(g))
                .map(|g| g.end - g.start)
                .sum();
            bucket.extend_from_slice(&(n as u16).to_le_bytes());
            for g in gs.iter().filter_map(|&g| groups.get(g)) {
                for e in entries.get(g.start..g.end).unwrap_or_default() {
                    put_item(&mut bucket, e.key(&arena), e.value(&arena));
                }
            }
            bucket.resize(bsize - BUCKET_TRAILER_LEN, 0);
            let crc = mask_crc(crc32c(&bucket));
            put_fixed32(&mut bucket, crc);
            self.append(&bucket, &mut offset)?;
        }
        // Overflow records, then their index.
        let mut index = Vec::new();
        put_varint32(&mut index, 0);
        let mut indexed = 0u32;
        let mut record = Vec::new();
        for g in placed.overflow.iter().filter_map(|&g| groups.get(g)) {
            for e in entries.get(g.start..g.end).unwrap_or_default() {
                let (k, v) = (e.key(&arena), e.value(&arena));
                record.clear();
                put_item(&mut record, k, v);
                let crc = mask_crc(crc32c(&record));
                put_fixed32(&mut record, crc);
                put_varint32(&mut index, k.len() as u32);
                index.extend_from_slice(k);
                put_varint64(&mut index, offset);
                put_varint32(&mut index, record.len() as u32);
                indexed += 1;
                let r = std::mem::take(&mut record);
                self.append(&r, &mut offset)?;
                record = r;
            }
        }
        let overflow_bytes = offset - m * bsize as u64;
        // The filter cluster (version 2): this table's column filters, then the pile's.
        let mut cluster_index = Vec::new();
        let mut cluster_bytes = 0u64;
        if self.version >= 2 && self.bloom_bits > 0 && !groups.is_empty() {
            let k = cluster::column_bits_for(groups.len() as u64);
            let own = ColumnFilters::build(
                self.number,
                k,
                self.bloom_bits,
                groups.iter().filter_map(|g| {
                    let ik = entries.get(g.start)?.key(&arena);
                    Some((cluster::column_word(&g.hash), key::user_key(ik)))
                }),
            );
            let mut tables = Vec::with_capacity(1 + self.below.len());
            tables.push(own);
            tables.append(&mut self.below);
            let kk = cluster::cluster_bits(&tables, bsize / 2);
            let start = offset;
            cluster_index.push(kk);
            cluster_index.push(k);
            put_varint64(&mut cluster_index, start);
            for b in cluster::encode(&tables, kk) {
                put_varint32(&mut cluster_index, b.len() as u32);
                self.append(&b, &mut offset)?;
            }
            cluster_bytes = offset - start;
        }
        // The count, rewritten now that it is known (a varint of fixed width 5).
        let mut head = Vec::new();
        put_varint32(&mut head, indexed);
        index.splice(0..1, head);

        let mut migration = Vec::new();
        put_varint32(&mut migration, placed.migrations.len() as u32);
        for mg in &placed.migrations {
            put_fixed32(&mut migration, mg.source);
            put_fixed32(&mut migration, mg.dest);
            put_fixed32(&mut migration, mg.mark);
        }
        let migration = self.meta_block(&migration, &mut offset)?;
        let overflow_index = self.meta_block(&index, &mut offset)?;
        let filter = if self.version >= 2 {
            if cluster_index.is_empty() {
                Handle::default()
            } else {
                self.props.filter_bytes = cluster_bytes;
                self.meta_block(&cluster_index, &mut offset)?
            }
        } else if self.bloom_bits > 0 && !groups.is_empty() {
            let mut f = BloomBuilder::new(self.bloom_bits);
            for g in &groups {
                if let Some(e) = entries.get(g.start) {
                    f.add_key(key::user_key(e.key(&arena)));
                }
            }
            let bytes = f.finish();
            self.props.filter_bytes = bytes.len() as u64;
            self.meta_block(&bytes, &mut offset)?
        } else {
            Handle::default()
        };
        self.props.smallest = entries
            .first()
            .map(|e| e.key(&arena).to_vec())
            .unwrap_or_default();
        self.props.largest = entries
            .last()
            .map(|e| e.key(&arena).to_vec())
            .unwrap_or_default();
        self.props.num_data_blocks = m;
        self.props.data_bytes = m * bsize as u64 + overflow_bytes;
        let props = self.props.encode();
        let properties = self.meta_block(&props, &mut offset)?;
        let footer = Footer {
            version: self.version,
            buckets: m,
            bucket_size: bsize as u32,
            migration,
            overflow_index,
            filter,
            properties,
        }
        .encode();
        self.append(&footer, &mut offset)?;
        self.file.flush()?;
        self.file.sync()?;
        let p = std::mem::take(&mut self.props);
        Ok(TableSummary {
            size: offset,
            smallest: p.smallest,
            largest: p.largest,
            smallest_seq: p.smallest_seq,
            largest_seq: p.largest_seq,
            entries: p.num_entries,
            tombstones: p.num_tombstones,
        })
    }

    fn abandon(self: Box<Self>) {}
}

//! What the engine knows about one table file without opening it.

use std::sync::{Arc, OnceLock};

use crate::key::SeqNo;
use crate::table::bloom::BloomFilter;

/// Metadata of one table file, as recorded in the MANIFEST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// The file number: the table lives in `{number:06}.sst`.
    pub number: u64,
    /// File size in bytes.
    pub size: u64,
    /// Smallest internal key in the file.
    pub smallest: Vec<u8>,
    /// Largest internal key in the file.
    pub largest: Vec<u8>,
    /// Smallest sequence number of any entry in the file.
    pub smallest_seq: SeqNo,
    /// Largest sequence number of any entry in the file.
    pub largest_seq: SeqNo,
    /// Number of entries (puts and tombstones).
    pub entries: u64,
    /// Number of tombstones among the entries.
    pub tombstones: u64,
    /// The table's filter, kept here once a read has opened the table (not in the MANIFEST).
    pub filter: PinnedFilter,
}

/// A table's bloom filter, kept with its [`FileMeta`] after the first read opens the table,
/// so later reads ask it without a table-cache lookup and open only the tables whose
/// filter lets the key through. A read that meets many tables (level 0, a guard's
/// fragments) would otherwise look up every one of them in the table cache first.
///
/// The filter stays in memory while the file is part of some version, like the filters of
/// open tables in RocksDB with `max_open_files = -1`: about `bits_per_key / 8` bytes per
/// key of the tables that reads have met.
///
/// It is a cache of what the file holds, not metadata: it compares equal whatever it
/// holds and is never written to the MANIFEST.
#[derive(Clone, Default)]
pub struct PinnedFilter(OnceLock<Option<Arc<BloomFilter>>>);

impl PinnedFilter {
    /// `None` until a read has opened the table; then `Some(None)` for a table without a
    /// filter, else its filter.
    #[inline]
    pub fn get(&self) -> Option<Option<&BloomFilter>> {
        self.0.get().map(Option::as_deref)
    }

    /// Keep `filter` (the table's, as opened); the first one set stays.
    pub fn pin(&self, filter: Option<Arc<BloomFilter>>) {
        let _ = self.0.set(filter);
    }
}

impl PartialEq for PinnedFilter {
    fn eq(&self, _: &PinnedFilter) -> bool {
        true
    }
}

impl Eq for PinnedFilter {}

impl std::fmt::Debug for PinnedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "PinnedFilter(loaded)"
        } else {
            "PinnedFilter(not loaded)"
        })
    }
}

impl FileMeta {
    /// The generation of the table file this entry names (its number and committed size),
    /// what the table cache opens.
    pub fn table_id(&self) -> crate::table::TableId {
        crate::table::TableId {
            number: self.number,
            size: self.size,
        }
    }
    /// The smallest user key in the file.
    pub fn smallest_user_key(&self) -> &[u8] {
        crate::key::user_key(&self.smallest)
    }
    /// The largest user key in the file.
    pub fn largest_user_key(&self) -> &[u8] {
        crate::key::user_key(&self.largest)
    }
    /// Whether the file's user-key range intersects `[lo, hi]` (either bound may be open).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        let below = hi.is_some_and(|h| self.smallest_user_key() > h);
        let above = lo.is_some_and(|l| self.largest_user_key() < l);
        !(below || above)
    }
}

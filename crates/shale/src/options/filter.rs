//! The compaction filter: user code that keeps, removes or rewrites entries while flushes
//! and compactions write tables (RocksDB's `CompactionFilter::FilterV2` and its
//! `Decision`). Set through [`crate::Options::compaction_filter`]; a runtime option, not
//! kept in the store's options record (`docs/format/options.md`).
//!
//! # What the filter sees
//!
//! The engine calls [`CompactionFilter::filter`] from its one merge loop
//! (`compaction::merge_into_tables`), so every layout and every value placement runs it the
//! same way:
//!
//! - only for the **newest version of a key in the merge**, and only when **no live
//!   snapshot can see that version** (its sequence number is above every snapshot's): an
//!   entry a snapshot reads is never filtered away or changed under it. Older versions that
//!   snapshots still read are kept as they are, and filtered later, once released;
//! - only for **values**: tombstones never reach it;
//! - with the **user's value**: a value the placement stored elsewhere (the WiscKey value
//!   log's pointers) is read back through the placement first, as RocksDB's integrated
//!   BlobDB does;
//! - during flushes and compactions ([`FilterReason`]), with the level the output goes to.
//!   Recovery's flushes at open do not run it (the log is being replayed); their entries
//!   meet the filter at their first compaction.
//!
//! # What a decision does
//!
//! - [`Decision::Keep`]: the entry is written as it was.
//! - [`Decision::Remove`]: the key reads as deleted from then on. The entry becomes a
//!   tombstone with the same sequence number, so older versions of the key in deeper levels
//!   stay hidden; where no older data can hold the key (the base level for it) nothing is
//!   written at all, as for any tombstone there. A value in the value log becomes garbage
//!   for its collection.
//! - [`Decision::ChangeValue`]: the entry keeps its key and sequence number and gets the new
//!   value, stored **inline** in the table whatever the placement (a value-log record it
//!   replaces becomes garbage). Inline is what every placement can read; a large new value
//!   makes the table larger, and the next flush of a newer version separates it again.
//!
//! # Caveats
//!
//! The filter may be called for the same entry many times (at the flush, then at each
//! compaction), from the flush thread and every compaction thread at once: it must be
//! `Send + Sync` and should give the same answer each time (or, like a TTL, a monotone
//! one). A snapshot taken while a flush or compaction runs is not protected from its
//! decisions (the merge knows the snapshots that existed when it started; RocksDB has the
//! same rule). A panic in the filter is not caught.

/// Why a table is being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterReason {
    /// A memtable is being written out.
    Flush,
    /// Tables are being merged.
    Compaction,
}

/// Where the filter is called from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FilterContext {
    /// A flush or a compaction.
    pub reason: FilterReason,
    /// The level the output goes to (0 for a flush).
    pub level: usize,
}

/// What to do with an entry (RocksDB's `CompactionFilter::Decision`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Write the entry as it is.
    Keep,
    /// Remove the key: it reads as deleted from then on (older versions stay hidden).
    Remove,
    /// Replace the value with these bytes (stored inline).
    ChangeValue(Vec<u8>),
}

/// A compaction filter; see the module documentation for when it is called and what each
/// [`Decision`] does.
pub trait CompactionFilter: Send + Sync + std::fmt::Debug {
    /// Decide what becomes of the newest version of `key`, whose value is `value`.
    fn filter(&self, context: &FilterContext, key: &[u8], value: &[u8]) -> Decision;

    /// A name for logs and errors.
    fn name(&self) -> &str {
        "compaction filter"
    }
}

//! Public types of the database handle: iterator options, snapshots, statistics.

use std::sync::Arc;

use crate::env::{BlockKind, ReadCause, WriteCause};
use crate::key::SeqNo;
use crate::values::PlacementStats;

/// One table file of the store's current version (RocksDB's `LiveFileMetaData`), from
/// [`crate::Db::live_files`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LiveFile {
    /// The level the layout keeps it in.
    pub level: usize,
    /// The file number (the file is `{number:06}.sst` in the store's directory).
    pub number: u64,
    /// Its size in bytes.
    pub size: u64,
    /// The smallest user key it holds.
    pub smallest_key: Vec<u8>,
    /// The largest user key it holds.
    pub largest_key: Vec<u8>,
    /// The smallest and largest sequence numbers of its entries.
    pub seq_range: (SeqNo, SeqNo),
    /// Entries (puts, pointers and tombstones).
    pub entries: u64,
    /// Tombstones among the entries.
    pub tombstones: u64,
}

/// A reader's own choices for one read (LevelDB's and RocksDB's `ReadOptions`, plyvel's
/// `verify_checksums` and `fill_cache` arguments): for [`crate::Db::get_opt`], and for
/// iterators as [`IterOptions::read`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Check the checksum of every table block the read takes from a file: `Some` decides
    /// for this read, `None` (the default) keeps the store's `Options::verify_checksums`
    /// (on by default, as RocksDB's `verify_checksums`; LevelDB and plyvel default to off).
    /// A block in the block cache was checked when it was read, unless the store checks
    /// none: a read that skips the check but fills the cache checks each block it would
    /// keep on the side (a block that fails is returned as read, unchecked, and not kept),
    /// except an uncompressed block lent from a memory map, which is used in place and not
    /// cached. Metadata (footers, indexes, filters), logs and value-log records are always
    /// checked.
    pub verify_checksums: Option<bool>,
    /// Keep the table blocks and value-log records the read brings in in the block cache.
    /// Default true; a one-off pass over much of the store sets it false, so that it does
    /// not push out the blocks other readers reuse. With it on, a scan keeps a value-log
    /// record it copied out of a mapped segment only while the cache has room for it
    /// without evicting (`docs/designs/wisckey.md`, "A scan's cache misses").
    pub fill_cache: bool,
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            verify_checksums: None,
            fill_cache: true,
        }
    }
}

/// Options of an iterator.
#[derive(Clone, Debug, Default)]
pub struct IterOptions {
    /// Only keys `>= lower_bound` are visited.
    pub lower_bound: Option<Vec<u8>>,
    /// Only keys `< upper_bound` are visited.
    pub upper_bound: Option<Vec<u8>>,
    /// Only keys that start with `prefix` are visited.
    pub prefix: Option<Vec<u8>>,
    /// Read at this snapshot instead of the latest state.
    pub snapshot: Option<Snapshot>,
    /// Checksums and block cache for the iterator's reads.
    pub read: ReadOptions,
}

impl IterOptions {
    /// Visit keys that start with `prefix`.
    pub fn prefix(prefix: impl Into<Vec<u8>>) -> Self {
        IterOptions {
            prefix: Some(prefix.into()),
            ..Default::default()
        }
    }
    /// Visit keys in `[lower, upper)`.
    pub fn range(lower: impl Into<Vec<u8>>, upper: impl Into<Vec<u8>>) -> Self {
        IterOptions {
            lower_bound: Some(lower.into()),
            upper_bound: Some(upper.into()),
            ..Default::default()
        }
    }
    /// Read at `snapshot`.
    pub fn at(mut self, snapshot: &Snapshot) -> Self {
        self.snapshot = Some(snapshot.clone());
        self
    }
}

/// A consistent point-in-time view of the store. Cheap to clone; the view is released when
/// the last clone is dropped, which lets compaction discard versions it was keeping.
#[derive(Clone)]
pub struct Snapshot {
    pub(crate) inner: Arc<SnapshotInner>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("seq", &self.inner.seq)
            .finish()
    }
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SeqNo {
        self.inner.seq
    }
}

pub(crate) struct SnapshotInner {
    pub(crate) seq: SeqNo,
    pub(crate) registry: Arc<super::snapshots::SnapshotList>,
    /// On a secondary handle, the view the snapshot was taken on: reads at it go there
    /// (`db/secondary.rs`).
    pub(crate) view: Option<Arc<super::DbInner>>,
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        self.registry.release(self.seq);
    }
}

/// Bytes and files in one level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Table files in the level.
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Bytes read by compactions whose output went to this level.
    pub compaction_read: u64,
    /// Bytes that entered this level from above: for level 0 the user bytes written, for a
    /// deeper level the compaction inputs that came from shallower levels.
    pub compaction_moved_in: u64,
    /// Bytes written by compactions (and flushes, for level 0) into this level.
    pub compaction_written: u64,
    /// Compactions (and flushes, for level 0) that wrote into this level.
    pub compactions: u64,
}

impl LevelStats {
    /// Bytes written into this level per byte that entered it from above (RocksDB's
    /// per-level `W-Amp`); 0 when nothing entered yet.
    pub fn write_amplification(&self) -> f64 {
        if self.compaction_moved_in == 0 {
            0.0
        } else {
            self.compaction_written as f64 / self.compaction_moved_in as f64
        }
    }
}

/// A snapshot of the store's counters. See [`crate::Db::stats`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Key and value bytes of every put and delete accepted since open.
    pub user_bytes_written: u64,
    /// Puts and deletes accepted since open.
    pub user_ops_written: u64,
    /// Bytes written to storage since open, by cause.
    pub written: Vec<(WriteCause, u64)>,
    /// Bytes read from storage since open, by cause.
    pub read: Vec<(ReadCause, u64)>,
    /// Blocks read from storage since open (block-cache hits are not reads), by cause and
    /// kind: every cause with every kind, zeros included. `blocks_read_for(Get, Data)` per
    /// get is what a get costs in data blocks.
    pub blocks_read: Vec<(ReadCause, BlockKind, u64)>,
    /// Per level.
    pub levels: Vec<LevelStats>,
    /// Memtable flushes since open.
    pub flushes: u64,
    /// Compactions since open (trivial moves included).
    pub compactions: u64,
    /// Microseconds writers spent delayed or stopped by the level-0 triggers or a full
    /// set of frozen memtables.
    pub stall_micros: u64,
    /// Bytes held by the mutable and frozen memtables.
    pub memtable_bytes: u64,
    /// Bytes of the block cache in use.
    pub block_cache_bytes: u64,
    /// Block cache hits and misses.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// The newest sequence number.
    pub last_sequence: SeqNo,
    /// The value placement's own counters (for a value log: its segments and garbage
    /// collection); printed by `Display` when it has any.
    pub placement: PlacementStats,
    /// The memory component's own counters (FloDB's membuffer and drains); printed by
    /// `Display` when it has any.
    pub memory: crate::memory::MemoryStats,
    /// Counters since the store was created, kept across restarts.
    pub lifetime: LifetimeStats,
    /// Table files in the store's directory that belong to another store, as the last
    /// sweep of obsolete files found them: never read, never deleted (empty for a
    /// read-only handle, which sweeps nothing; `verify` lists them too).
    pub foreign_tables: Vec<ForeignTable>,
    /// The scan prefetch pool's work since open (jobs accepted, resolved by a worker or by
    /// their own scan, threads spawned): all zeros when scans do not prefetch.
    pub scan_prefetch: crate::iter::prefetch::PoolStats,
}

/// A table file in a store's directory, named like one of the store's tables, that no
/// version lists and that records another store's id or another file number
/// (`docs/format/sst.md`, properties 17 and 18): a file Shale does not own, so the
/// obsolete-file sweep leaves it alone and reports it here instead (issue 17). A table
/// whose identity cannot be read (cut short, or written before tables recorded one) cannot
/// be told from the store's own crash debris and is deleted as before.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ForeignTable {
    /// The file.
    pub file: std::path::PathBuf,
    /// The store id it records.
    pub store_id: u64,
    /// The file number it records (another table's number when the file was renamed).
    pub number: u64,
}

impl ForeignTable {
    pub(crate) fn new(
        dir: &std::path::Path,
        name: &str,
        recorded: crate::table::TableIdentity,
    ) -> ForeignTable {
        ForeignTable {
            file: dir.join(name),
            store_id: recorded.store_id,
            number: recorded.number,
        }
    }
}

impl std::fmt::Display for ForeignTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: a table of store {:016x} (its number {:06}), not this store's: left alone",
            self.file.display(),
            self.store_id,
            self.number
        )
    }
}

/// A store's counters since it was created: kept in the MANIFEST with every commit, so they
/// survive restarts (a crash loses what was counted after the last commit: the writes of
/// at most the memtables not yet flushed, and the log bytes behind them). Stores written
/// before they were kept count from their first open by a build that keeps them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LifetimeStats {
    /// Key and value bytes of every put and delete accepted.
    pub user_bytes_written: u64,
    /// Puts and deletes accepted.
    pub user_ops_written: u64,
    /// Bytes written to storage, by cause.
    pub written: Vec<(WriteCause, u64)>,
    /// Memtable flushes.
    pub flushes: u64,
    /// Compactions (moves included).
    pub compactions: u64,
}

impl LifetimeStats {
    /// Storage bytes written per user byte since creation (0 before any user write).
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            0.0
        } else {
            self.written.iter().map(|&(_, n)| n).sum::<u64>() as f64
                / self.user_bytes_written as f64
        }
    }
}

impl Stats {
    /// Bytes written to storage for every cause together.
    pub fn total_written(&self) -> u64 {
        self.written.iter().map(|&(_, n)| n).sum()
    }
    /// Bytes read from storage for every cause together.
    pub fn total_read(&self) -> u64 {
        self.read.iter().map(|&(_, n)| n).sum()
    }
    /// Blocks of `kind` read from storage for `cause` since open.
    pub fn blocks_read_for(&self, cause: ReadCause, kind: BlockKind) -> u64 {
        self.blocks_read
            .iter()
            .find(|&&(c, k, _)| c == cause && k == kind)
            .map_or(0, |&(_, _, n)| n)
    }
    /// Bytes written for `cause`.
    pub fn written_for(&self, cause: WriteCause) -> u64 {
        self.written
            .iter()
            .find(|&&(c, _)| c == cause)
            .map_or(0, |&(_, n)| n)
    }
    /// Write amplification so far: storage bytes written per user byte written (0 before any
    /// user write).
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            0.0
        } else {
            self.total_written() as f64 / self.user_bytes_written as f64
        }
    }
    /// Bytes of every table file.
    pub fn table_bytes(&self) -> u64 {
        self.levels.iter().map(|l| l.bytes).sum()
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "Level  Files    Size(MB)  CompRead(MB)  MovedIn(MB)  CompWrite(MB)  Comps  W-Amp"
        )?;
        for (i, l) in self.levels.iter().enumerate() {
            writeln!(
                f,
                "L{i:<5} {:>5} {:>11.1} {:>13.1} {:>12.1} {:>14.1} {:>6} {:>6.2}",
                l.files,
                l.bytes as f64 / 1048576.0,
                l.compaction_read as f64 / 1048576.0,
                l.compaction_moved_in as f64 / 1048576.0,
                l.compaction_written as f64 / 1048576.0,
                l.compactions,
                l.write_amplification()
            )?;
        }
        let mb = |n: u64| n as f64 / 1048576.0;
        write!(f, "written(MB):")?;
        for (c, n) in &self.written {
            write!(f, " {}={:.1}", c.name(), mb(*n))?;
        }
        writeln!(f)?;
        write!(f, "read(MB):")?;
        for (c, n) in &self.read {
            write!(f, " {}={:.1}", c.name(), mb(*n))?;
        }
        writeln!(f)?;
        write!(f, "blocks read (not from the block cache):")?;
        for c in ReadCause::ALL {
            let per: Vec<String> = BlockKind::ALL
                .iter()
                .map(|&k| (k, self.blocks_read_for(c, k)))
                .filter(|&(_, n)| n > 0)
                .map(|(k, n)| format!("{}={n}", k.name()))
                .collect();
            if !per.is_empty() {
                write!(f, " {} {}", c.name(), per.join(" "))?;
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "user writes: {} ops, {:.1} MB; write amplification {:.2}",
            self.user_ops_written,
            mb(self.user_bytes_written),
            self.write_amplification()
        )?;
        let l = &self.lifetime;
        writeln!(
            f,
            "since creation: user writes {} ops, {:.1} MB; {:.1} MB written; write amplification {:.2}; flushes {} compactions {}",
            l.user_ops_written,
            mb(l.user_bytes_written),
            mb(l.written.iter().map(|&(_, n)| n).sum()),
            l.write_amplification(),
            l.flushes,
            l.compactions
        )?;
        writeln!(
            f,
            "flushes {} compactions {} stall {:.3}s memtables {:.1} MB block cache {:.1} MB (hits {} misses {}) last seq {}",
            self.flushes,
            self.compactions,
            self.stall_micros as f64 / 1e6,
            mb(self.memtable_bytes),
            mb(self.block_cache_bytes),
            self.block_cache_hits,
            self.block_cache_misses,
            self.last_sequence
        )?;
        write!(f, "{}", self.placement)?;
        let p = &self.scan_prefetch;
        if p.submitted > 0 || p.spawned > 0 {
            writeln!(
                f,
                "scan prefetch: {} values submitted, {} resolved by workers, {} by their scan; {} threads spawned",
                p.submitted, p.by_workers, p.stolen, p.spawned
            )?;
        }
        write!(f, "{}", self.memory)?;
        for t in &self.foreign_tables {
            writeln!(f, "foreign table {t}")?;
        }
        Ok(())
    }
}
